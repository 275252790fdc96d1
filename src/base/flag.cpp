// src/base/flag.cpp - the lock bias's state, its start, and how a thread
// other than the owner takes a flag while a bias may stand (flag.hpp
// says how they fit).
#include "base/flag.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace sluice::base {

LockBias lock_bias;
[[gnu::tls_model("initial-exec")]] constinit thread_local bool lock_biased = false;

namespace {

long membarrier(int cmd) { return ::syscall(__NR_membarrier, cmd, 0, 0); }

// Waits until `busy` is 0, yielding the core after a while (the owner may
// be descheduled inside its window).
void owner_window_wait() {
    for (unsigned spins = 0; lock_bias.busy.load(std::memory_order_acquire) != 0;)
        if (++spins < 256) cpu_relax();
        else sched_yield();
}

std::atomic<bool> started{false};  // the owner registered membarrier and may take flags its way

// Once per process; a thread that finds another revoking waits for it.
// No std::call_once: a signal handler may take a flag.  Before the
// owner's start there is nothing to wait for: the start sees `revoked`
// and does not begin.
void revoke() {
    static std::atomic<int> state{0};  // 0: not yet, 1: under way, 2: done
    int expected = 0;
    if (!state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        while (state.load(std::memory_order_acquire) != 2) cpu_relax();
        return;
    }
    lock_bias.revoked.store(true, std::memory_order_seq_cst);
    if (started.load(std::memory_order_seq_cst)) {
        // Every thread of the process passes a full barrier: a window of
        // the owner that began after it sees `revoked`; one that began
        // before is seen in `busy` and waited for.
        if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
            // Registered at the start, so this cannot fail; if it did,
            // two threads could hold one flag.
            static const char msg[] = "sluice: membarrier failed while revoking the lock bias\n";
            (void)!::write(2, msg, sizeof msg - 1);
            std::abort();
        }
        owner_window_wait();
    }
    lock_bias.done.store(true, std::memory_order_release);
    state.store(2, std::memory_order_release);
}

} // namespace

void lock_bias_prepare() { lock_bias.possible.store(true, std::memory_order_seq_cst); }

bool lock_bias_start(const char **why) {
    if (!lock_bias.possible.load(std::memory_order_relaxed) || lock_bias.revoked.load(std::memory_order_seq_cst)) {
        if (why) *why = "another thread took one of Sluice's locks first";
        return false;
    }
    const long offered = membarrier(MEMBARRIER_CMD_QUERY);
    if (offered < 0 || !(offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
        if (why) *why = "the kernel offers no private expedited membarrier";
        return false;
    }
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
        if (why) *why = "membarrier registration failed";
        return false;
    }
    // Another thread's take under way may not have seen `started`: wait
    // for it (it counts itself in slow_takers before it reads `started`),
    // then begin only if no take revoked the bias meanwhile.
    started.store(true, std::memory_order_seq_cst);
    while (lock_bias.slow_takers.load(std::memory_order_seq_cst) != 0) cpu_relax();
    if (lock_bias.revoked.load(std::memory_order_seq_cst)) {
        if (why) *why = "another thread took one of Sluice's locks first";
        return false;
    }
    lock_biased = true;
    return true;
}

// Another thread's take while a bias may stand or start: it revokes the
// bias (waiting for the owner's window when the owner has begun), then
// takes the flag the usual way.
bool lock_bias_take(std::atomic<bool> &flag) {
    lock_bias.slow_takers.fetch_add(1, std::memory_order_seq_cst);
    revoke();
    lock_bias.slow_takers.fetch_sub(1, std::memory_order_release);
    return !flag.load(std::memory_order_relaxed) && !flag.exchange(true, std::memory_order_acquire);
}

void flag_take_wait(std::atomic<bool> &flag) {
    for (unsigned spins = 0; !flag_try_take(flag);)
        while (flag.load(std::memory_order_relaxed)) {
            if (++spins < 256) cpu_relax();
            else sched_yield();
        }
}

} // namespace sluice::base
