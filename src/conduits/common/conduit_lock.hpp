// src/conduits/common/conduit_lock.hpp - the lock of a network conduit whose
// state (queues, buffer lists, the provider's or HCA's objects) one thread
// updates at a time: ofi, ibv.
#pragma once

#include "base/flag.hpp"
#include "base/status.hpp"

#include <chrono>
#include <thread>

namespace sluice::conduit::common {

// Set while this thread holds a conduit's lock: a termination signal that
// interrupts it does not wait in its handler, since the exit (on Sluice's
// signal thread, core/exit.cpp) needs the lock; the thread leaves its
// section and parks at its next poll.  Conduits never take one another's
// lock while holding their own.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local bool in_conduit_lock;

// The conduit whose handler this thread runs (a poll it makes from there
// delivers no request).  Constant-initialized, in the static TLS block:
// one load on every message's path.  Defined in rdma_conduit.cpp.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local const void *delivering_conduit;

class ConduitGuard {
public:
    explicit ConduitGuard(base::SpinLock &lock) : lock_(lock) {
        lock_.lock();
        in_conduit_lock = true;
    }
    // Waits for the lock until `deadline_ns` (base::now_ns) at most:
    // owns() says whether it was taken.
    ConduitGuard(base::SpinLock &lock, std::uint64_t deadline_ns) : lock_(lock) {
        while (!(owns_ = lock_.try_lock()) && base::now_ns() < deadline_ns) std::this_thread::yield();
        if (owns_) in_conduit_lock = true;
    }
    ~ConduitGuard() {
        if (!owns_) return;
        in_conduit_lock = false;
        lock_.unlock();
    }
    bool owns() const { return owns_; }
    // Lets the lock go before the end of the scope.
    void release() {
        in_conduit_lock = false;
        lock_.unlock();
        owns_ = false;
    }
    ConduitGuard(const ConduitGuard &) = delete;
    ConduitGuard &operator=(const ConduitGuard &) = delete;

private:
    base::SpinLock &lock_;
    bool owns_ = true;
};

// Transport::quiesce of such a conduit: everything posted completes before
// finalize goes on.  `reap_idle` reaps completions under the lock and says
// whether nothing is outstanding (true once the conduit is closed);
// `deliver` runs arrivals.
// Gives up after 10 s, reported under `op` with `who` (the conduit and its
// device or provider).
template <class ReapIdle, class Deliver>
void quiesce_wait(const char *op, const char *who, ReapIdle reap_idle, Deliver deliver) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        const bool idle = reap_idle();
        deliver();
        if (idle) return;
        if (std::chrono::steady_clock::now() > deadline) {
            base::report(base::Status::transport, op, "check that every rank is alive",
                         "%s: sends or RDMA operations still incomplete after 10 s", who);
            return;
        }
        base::idle();
    }
}

} // namespace sluice::conduit::common
