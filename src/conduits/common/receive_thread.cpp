// src/conduits/common/receive_thread.cpp - the receive thread
// (receive_thread.hpp).
#include "conduits/common/receive_thread.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <ctime>
#include <utility>

namespace sluice::conduit::common {
namespace {

void nap(std::uint64_t ns) {
    const timespec t{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    ::nanosleep(&t, nullptr);
}

} // namespace

void receive_nap() {
    const std::int64_t rate = base::knob_int(base::Knob::RCV_THREAD_RATE);
    nap(rate > 1000 ? 1'000'000'000 / static_cast<std::uint64_t>(rate) : 1'000'000);
}

void ReceiveThread::start(std::function<void()> wait, std::function<void()> progress) {
    stop_.store(false);
    thread_ = std::thread([this, wait = std::move(wait), progress = std::move(progress)] {
        const std::int64_t rate = base::knob_int(base::Knob::RCV_THREAD_RATE);
        const std::uint64_t spacing = rate > 0 ? 1'000'000'000 / static_cast<std::uint64_t>(rate) : 0;
        std::uint64_t last = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
            wait();
            if (stop_.load(std::memory_order_relaxed)) break;
            if (spacing) {
                const std::uint64_t now = base::now_ns();
                if (now - last < spacing) nap(spacing - (now - last));
                last = base::now_ns();
            }
            wakeups_.fetch_add(1, std::memory_order_relaxed);
            progress();
        }
    });
}

void ReceiveThread::stop() {
    if (!thread_.joinable()) return;
    stop_.store(true);
    if (std::this_thread::get_id() == thread_.get_id()) thread_.detach();
    else thread_.join();
}

} // namespace sluice::conduit::common
