// tests/unit/unit_spin_lock.cpp - base::SpinLock (src/base/flag.hpp), the
// one spin lock of smp, the credit engine and the udp conduit: a lock guard
// takes and releases it, try_lock fails while it is held, and threads
// exclude each other (waiting with cpu_relax, which compiles to PAUSE, YIELD
// or nothing).
#include "base/flag.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace base = sluice::base;

namespace {

TEST(SpinLock, GuardTakesAndReleases) {
    base::SpinLock l;
    {
        base::SpinGuard g(l);
        EXPECT_TRUE(l.flag().load());
        EXPECT_FALSE(l.try_lock());
    }
    EXPECT_FALSE(l.flag().load());
    EXPECT_TRUE(l.try_lock());
    EXPECT_FALSE(l.try_lock());
    l.unlock();
    std::unique_lock<base::SpinLock> u(l, std::try_to_lock);
    EXPECT_TRUE(u.owns_lock());
}

// Threads that take the lock by lock(), try_lock() and a guard lose no
// increment of a plain counter; one thread holding it long makes the others
// spin past the 256 relaxes into sched_yield.
TEST(SpinLock, ThreadsExclude) {
    constexpr int threads = 4, rounds = 100000;
    base::SpinLock l;
    std::uint64_t guarded = 0;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (int i = 0; i < rounds; ++i) {
                if ((i + t) % 3 == 0) {
                    base::SpinGuard g(l);
                    guarded = guarded + 1;
                    if (i % 10000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
                } else if ((i + t) % 3 == 1) {
                    while (!l.try_lock()) base::cpu_relax();
                    guarded = guarded + 1;
                    l.unlock();
                } else {
                    l.lock();
                    guarded = guarded + 1;
                    l.unlock();
                }
            }
        });
    for (auto &t : pool) t.join();
    EXPECT_EQ(guarded, std::uint64_t{threads} * rounds);
    EXPECT_FALSE(l.flag().load());
}

} // namespace
