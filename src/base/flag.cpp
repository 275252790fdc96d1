// src/base/flag.cpp - the lock bias's state and its start and revocation
// (flag.hpp says how the flags use them).
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

} // namespace

bool lock_bias_start(const char **why) {
    const long offered = membarrier(MEMBARRIER_CMD_QUERY);
    if (offered < 0 || !(offered & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
        if (why) *why = "the kernel offers no private expedited membarrier";
        return false;
    }
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
        if (why) *why = "membarrier registration failed";
        return false;
    }
    // Every other thread sees `started` before the owner takes a flag
    // without a locked instruction; one inside its exchange meanwhile
    // looks again after it (flag_try_take) and revokes.
    lock_bias.started.store(true, std::memory_order_relaxed);
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
        lock_bias.revoked.store(true, std::memory_order_relaxed);
        if (why) *why = "membarrier failed";
        return false;
    }
    lock_biased = true;
    return true;
}

void lock_bias_revoke() {
    // Once per process; a thread that finds another revoking waits for it.
    // No std::call_once: a signal handler may take a flag.
    static std::atomic<int> state{0};  // 0: not yet, 1: under way, 2: done
    int expected = 0;
    if (!state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        while (state.load(std::memory_order_acquire) != 2) cpu_relax();
        return;
    }
    lock_bias.revoked.store(true, std::memory_order_relaxed);
    // Every thread of the process passes a full barrier: the owner sees
    // `revoked` at its next flag, or this thread sees its count.
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
        // Registered at the start, so this cannot fail; if it did, two
        // threads could hold one flag.
        static const char msg[] = "sluice: membarrier failed while revoking the lock bias\n";
        (void)!::write(2, msg, sizeof msg - 1);
        std::abort();
    }
    state.store(2, std::memory_order_release);
}

} // namespace sluice::base
