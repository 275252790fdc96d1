// src/base/flag.hpp - the flags (try-locks, spinlocks) and statistics
// counters of the hot paths, without a locked instruction while the process
// has one thread.
//
// A locked exchange or add waits for the store buffer to drain; on a round
// trip that takes a few of them per message that is tens of nanoseconds
// (the same-host conduit's README measured about 30 ns of a 2-rank Short round
// trip).  While the process has only ever had one thread (glibc's
// __libc_single_threaded), nothing else can race for a flag, so a plain
// load and store do.  A signal handler on this thread still sees a flag
// taken.  A thread created later is created by this thread, outside the
// code that holds a flag, and sees every flag through pthread_create; from
// then on the locked instructions are used.  A release is a release store
// either way.
#pragma once

#include <atomic>

#include <sched.h>
#include <sys/single_threaded.h>

namespace sluice::base {

// Takes `flag` if it is free.
inline bool flag_try_take(std::atomic<bool> &flag) {
    if (__libc_single_threaded) {
        if (flag.load(std::memory_order_relaxed)) return false;
        flag.store(true, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        return true;
    }
    return !flag.load(std::memory_order_relaxed) && !flag.exchange(true, std::memory_order_acquire);
}

// Takes `flag`, spinning while another thread holds it; after 256 spins
// it yields the core, since the holder may be descheduled.
inline void flag_take(std::atomic<bool> &flag) {
    for (unsigned spins = 0; !flag_try_take(flag);)
        while (flag.load(std::memory_order_relaxed)) {
            if (++spins < 256) __builtin_ia32_pause();
            else sched_yield();
        }
}

inline void flag_release(std::atomic<bool> &flag) { flag.store(false, std::memory_order_release); }

// Adds `n` to a counter that only statistics and heuristics read.  Single-
// threaded, a signal handler that adds to the same counter between the load
// and the store loses its addition; no counter kept this way may decide
// correctness.
template <class T> inline void count_add(std::atomic<T> &counter, T n) {
    if (__libc_single_threaded) counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    else counter.fetch_add(n, std::memory_order_relaxed);
}

} // namespace sluice::base
