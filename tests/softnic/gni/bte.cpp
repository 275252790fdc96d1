// tests/softnic/gni/bte.cpp - the BTE thread (bte.hpp).
#include "bte.hpp"

#include "fabric.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace softnic_gni {
namespace {

struct Engine {
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<Post> queue;
    bool started = false;

    void run() {
        for (;;) {
            Post p;
            {
                std::unique_lock<std::mutex> g(mutex);
                ready.wait(g, [this] { return !queue.empty(); });
                p = queue.front();
                queue.pop_front();
            }
            if (const std::uint32_t us = bte_delay_us()) std::this_thread::sleep_for(std::chrono::microseconds(us));
            post_complete(p);
        }
    }
};

// Never destroyed: the detached thread outlives static destruction.
Engine &engine() {
    static Engine &e = *new Engine;
    return e;
}

} // namespace

bool bte_queue(const Post &p) {
    Engine &e = engine();
    try {
        std::lock_guard<std::mutex> g(e.mutex);
        if (!e.started) {
            std::thread([&e] { e.run(); }).detach();
            e.started = true;
        }
        e.queue.push_back(p);
    } catch (...) {
        return false;  // no exception crosses the C API
    }
    e.ready.notify_one();
    return true;
}

} // namespace softnic_gni
