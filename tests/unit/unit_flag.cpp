// tests/unit/unit_flag.cpp - src/base/flag.hpp: a flag is taken once, a
// signal handler on the holding thread sees it taken, and with several
// threads the flags still exclude and the counters still count.
#include "base/flag.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <thread>
#include <vector>

namespace base = sluice::base;

namespace {

TEST(Flag, TakenOnceReleasedThenFreeAgain) {
    std::atomic<bool> flag{false};
    EXPECT_TRUE(base::flag_try_take(flag));
    EXPECT_TRUE(flag.load());
    EXPECT_FALSE(base::flag_try_take(flag));
    EXPECT_FALSE(base::flag_try_take(flag));
    base::flag_release(flag);
    EXPECT_FALSE(flag.load());
    base::flag_take(flag);
    EXPECT_FALSE(base::flag_try_take(flag));
    base::flag_release(flag);
    EXPECT_TRUE(base::flag_try_take(flag));
}

std::atomic<bool> *signal_flag = nullptr;
volatile sig_atomic_t signal_saw_free = -1;
void on_signal(int) { signal_saw_free = base::flag_try_take(*signal_flag) ? 1 : 0; }

// The reason the single-threaded path keeps a compiler barrier: a handler
// that interrupts the holder must find the flag taken.
TEST(Flag, SignalHandlerOnTheHolderSeesItTaken) {
    std::atomic<bool> flag{false};
    signal_flag = &flag;
    struct sigaction sa = {}, old = {};
    sa.sa_handler = on_signal;
    ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
    ASSERT_TRUE(base::flag_try_take(flag));
    std::raise(SIGUSR1);
    EXPECT_EQ(signal_saw_free, 0);
    base::flag_release(flag);
    std::raise(SIGUSR1);  // free now: the handler takes it
    EXPECT_EQ(signal_saw_free, 1);
    EXPECT_TRUE(flag.load());
    sigaction(SIGUSR1, &old, nullptr);
}

TEST(Flag, CountAddAdds) {
    std::atomic<std::uint64_t> c{5};
    base::count_add<std::uint64_t>(c, 1);
    base::count_add<std::uint64_t>(c, 10);
    EXPECT_EQ(c.load(), 16u);
}

// Once a thread exists the locked instructions are back: four threads
// taking one flag around a plain counter lose no increment, and count_add
// loses none either.
TEST(Flag, ThreadsExcludeAndCount) {
    constexpr int threads = 4, rounds = 200000;
    std::atomic<bool> flag{false};
    std::uint64_t guarded = 0;
    std::atomic<std::uint64_t> counted{0};
    std::atomic<int> tries_failed{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                if (i % 2) {
                    base::flag_take(flag);
                } else {
                    while (!base::flag_try_take(flag)) tries_failed.fetch_add(1, std::memory_order_relaxed);
                }
                guarded = guarded + 1;
                base::flag_release(flag);
                base::count_add<std::uint64_t>(counted, 1);
            }
        });
    EXPECT_FALSE(__libc_single_threaded);
    for (auto &t : pool) t.join();
    EXPECT_EQ(guarded, std::uint64_t{threads} * rounds);
    EXPECT_EQ(counted.load(), std::uint64_t{threads} * rounds);
    EXPECT_FALSE(flag.load());
}

} // namespace
