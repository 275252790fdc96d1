// src/conduits/common/receive_thread.hpp - the receive thread of a network
// conduit (SLUICE_RCV_THREAD: ofi, ibv): a thread that sleeps on the
// network's wait object and runs arriving AMs while the application is not
// calling Sluice.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

namespace sluice::conduit::common {

// A receive thread's wait when the network has nothing to sleep on: a
// millisecond, or SLUICE_RCV_THREAD_RATE's spacing when that is shorter.
void receive_nap();

class ReceiveThread {
public:
    ReceiveThread() = default;
    ReceiveThread(const ReceiveThread &) = delete;
    ReceiveThread &operator=(const ReceiveThread &) = delete;
    ~ReceiveThread() { stop(); }

    // Starts the thread.  It calls `wait()`, which returns once the network
    // has something or after at most about 100 ms (so that a stop is
    // noticed), then `progress()`, which polls every transport of the rank
    // as the application's poll would, handlers included; and again, until
    // stop().  SLUICE_RCV_THREAD_RATE spaces the wake-ups.  Start it from
    // the first poll: before, the layers above may not be ready for a poll
    // from another thread.
    void start(std::function<void()> wait, std::function<void()> progress);
    // Joins the thread (or detaches it, when a handler on it is the one
    // ending the job).  Idempotent.
    void stop();
    bool running() const { return thread_.joinable(); }
    std::uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }

private:
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> wakeups_{0};
};

} // namespace sluice::conduit::common
