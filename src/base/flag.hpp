// src/base/flag.hpp - the flags (try-locks, spinlocks) and statistics
// counters of the hot paths, without a locked instruction while the process
// has one thread.
//
// A locked exchange or add waits for the store buffer to drain; on a round
// trip that takes a few of them per message that is tens of nanoseconds
// (a 2-rank smp Short round trip measured about 30 ns of them).  While
// the process has only ever had one thread (glibc's
// __libc_single_threaded), nothing else can race for a flag, so a plain
// load and store do.  A signal handler on this thread still sees a flag
// taken.  A thread created later is created by this thread, outside the
// code that holds a flag, and sees every flag through pthread_create; from
// then on the locked instructions are used.  A release is a release store
// either way.  An initialized Sluice always has a second thread (the
// signal thread, core/exit.cpp), so in a job the locked instructions run.
#pragma once

#include <atomic>
#include <mutex>

#include <sched.h>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define SLUICE_HAVE_SINGLE_THREADED 1
#endif

namespace sluice::base {

// Whether the process has only ever had one thread: glibc 2.32 and later
// say so (__libc_single_threaded); without it (an older glibc, another C
// library) the answer is always no, and every flag uses the locked
// instructions.
inline bool process_single_threaded() {
#ifdef SLUICE_HAVE_SINGLE_THREADED
    return __libc_single_threaded;
#else
    return false;
#endif
}

// Takes `flag` if it is free.
inline bool flag_try_take(std::atomic<bool> &flag) {
    if (process_single_threaded()) {
        if (flag.load(std::memory_order_relaxed)) return false;
        flag.store(true, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        return true;
    }
    return !flag.load(std::memory_order_relaxed) && !flag.exchange(true, std::memory_order_acquire);
}

// Tells the core this thread spins on a load: on x86 PAUSE (the sibling
// hyperthread gets the pipeline, and leaving the loop does not flush it),
// on aarch64 YIELD, on POWER the low-priority hint; elsewhere nothing,
// the loop is then only a loop.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield" ::: "memory");
#elif defined(__powerpc64__) || defined(__powerpc__)
    asm volatile("or 27,27,27" ::: "memory");
#else
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Takes `flag`, spinning while another thread holds it; after 256 spins
// it yields the core, since the holder may be descheduled.
inline void flag_take(std::atomic<bool> &flag) {
    for (unsigned spins = 0; !flag_try_take(flag);)
        while (flag.load(std::memory_order_relaxed)) {
            if (++spins < 256) cpu_relax();
            else sched_yield();
        }
}

inline void flag_release(std::atomic<bool> &flag) { flag.store(false, std::memory_order_release); }

// The one spin lock of the hot paths (ring producers of a same-host
// conduit, the credit engine, conduits' own state): the flag above as a
// BasicLockable, so std::lock_guard and std::unique_lock take it.  For sections of a few
// dozen instructions that never block; anything longer takes a mutex.
class SpinLock {
public:
    void lock() { flag_take(flag_); }
    bool try_lock() { return flag_try_take(flag_); }
    void unlock() { flag_release(flag_); }
    // For code that hands the flag to flag_try_take itself (a conduit's reply
    // path tries the request queue's lock without waiting).
    std::atomic<bool> &flag() { return flag_; }

private:
    std::atomic<bool> flag_{false};
};

// Holds a SpinLock for a scope (std::lock_guard, named for grep).
using SpinGuard = std::lock_guard<SpinLock>;

// Adds `n` to a counter that only statistics and heuristics read.  Single-
// threaded, a signal handler that adds to the same counter between the load
// and the store loses its addition; no counter kept this way may decide
// correctness.
template <class T> inline void count_add(std::atomic<T> &counter, T n) {
    if (process_single_threaded()) counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    else counter.fetch_add(n, std::memory_order_relaxed);
}

// Raises a statistics counter to `v` if it is below (the most seen).
template <class T> inline void count_max(std::atomic<T> &counter, T v) {
    T seen = counter.load(std::memory_order_relaxed);
    while (seen < v && !counter.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
    }
}

} // namespace sluice::base
