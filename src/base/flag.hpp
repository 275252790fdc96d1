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
// either way.
//
// An initialized Sluice always has a second thread (the signal thread,
// core/exit.cpp), and an MPI often starts threads of its own; yet usually
// one thread, the one that called sluice_init, takes every flag.  That
// thread is the flags' *owner* (the lock bias, SLUICE_LOCK_BIAS): it takes
// them with a plain load and store inside a *window* it marks (`busy`),
// until another thread first takes one.  That thread *revokes* the bias:
// it raises `revoked`, makes every thread of the process pass a full
// barrier (membarrier, private expedited), and waits until the owner is
// out of its window; only then do other threads take flags, with the
// locked instructions.  The owner reads `revoked` inside each window (a
// Dekker pair, the membarrier standing for the owner's fence): either it
// sees it and takes flags with locked instructions from then on, or the
// revoking thread waits for its window to end, by which time the flag it
// took reads as taken.  A flag the owner holds stays held across the
// revocation, as any taken flag.  A thread taking a flag while the bias
// starts is waited for by the start (`slow_takers`).
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

// The lock bias (above), base/flag.cpp.
struct LockBias {
    std::atomic<unsigned> busy{0};        // the owner is in a window (nested by a signal handler: > 1)
    std::atomic<bool> revoked{false};     // for the owner: take flags the usual way from now on
    std::atomic<bool> done{false};        // for the others: revoked, and the owner out of its window
    std::atomic<bool> possible{false};    // a bias may start: other threads take flags by lock_bias_take
    std::atomic<unsigned> slow_takers{0}; // other threads inside lock_bias_take
};
extern LockBias lock_bias;
// This thread is the owner and has not seen the bias revoked.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local bool lock_biased;

// At the start of init, before any thread that takes flags exists: a bias
// may start later (lock_bias_start).
void lock_bias_prepare();
// The calling thread becomes the owner when the kernel offers private
// expedited membarrier; false (and `why`) otherwise.  Once, after
// lock_bias_prepare, holding no flag.
bool lock_bias_start(const char **why = nullptr);
// A thread other than the owner takes `flag` while a bias may stand.
bool lock_bias_take(std::atomic<bool> &flag);

// Takes `flag` if it is free, on a thread that does not hold the bias.
inline bool flag_try_take_unbiased(std::atomic<bool> &flag) {
    if (lock_bias.possible.load(std::memory_order_relaxed) && !lock_bias.done.load(std::memory_order_acquire))
        [[unlikely]]
        return lock_bias_take(flag);
    if (process_single_threaded()) {
        if (flag.load(std::memory_order_relaxed)) return false;
        flag.store(true, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        return true;
    }
    return !flag.load(std::memory_order_relaxed) && !flag.exchange(true, std::memory_order_acquire);
}

// Takes `flag` if it is free.  Not recursive, so that it inlines whole
// into every hot path.
inline bool flag_try_take(std::atomic<bool> &flag) {
    if (lock_biased) [[likely]] {
        const unsigned busy = lock_bias.busy.load(std::memory_order_relaxed);
        lock_bias.busy.store(busy + 1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        if (lock_bias.revoked.load(std::memory_order_relaxed)) [[unlikely]] {
            lock_bias.busy.store(busy, std::memory_order_release);
            lock_biased = false;
            return flag_try_take_unbiased(flag);
        }
        const bool free = !flag.load(std::memory_order_relaxed);
        if (free) flag.store(true, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        lock_bias.busy.store(busy, std::memory_order_release);
        return free;
    }
    return flag_try_take_unbiased(flag);
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
// it yields the core, since the holder may be descheduled.  The free
// flag's take inlines; the wait is out of line (base/flag.cpp).
void flag_take_wait(std::atomic<bool> &flag);
inline void flag_take(std::atomic<bool> &flag) {
    if (flag_try_take(flag)) [[likely]]
        return;
    flag_take_wait(flag);
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
// threaded or on the owner, a signal handler or another thread that adds
// to the same counter between the load and the store loses its addition;
// no counter kept this way may decide correctness.
template <class T> inline void count_add(std::atomic<T> &counter, T n) {
    if (lock_biased || process_single_threaded()) counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    else counter.fetch_add(n, std::memory_order_relaxed);
}

// Raises a statistics counter to `v` if it is below (the most seen).
template <class T> inline void count_max(std::atomic<T> &counter, T v) {
    T seen = counter.load(std::memory_order_relaxed);
    while (seen < v && !counter.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
    }
}

} // namespace sluice::base
