// tests/unit/unit_flag.cpp - src/base/flag.hpp: a flag is taken once, a
// signal handler on the holding thread sees it taken, and with several
// threads the flags still exclude and the counters still count; under the
// lock bias the owner takes flags without locked instructions until
// another thread revokes it, and the flags exclude throughout.
#include "base/flag.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

// The lock bias is the process's, started once: each case runs in a
// child process forked from the test (a death test that must exit with
// 0; forked, not re-executed, so that it runs under qemu-user too).
int lock_bias_start_or_skip() {
    base::lock_bias_prepare();
    const char *why = nullptr;
    if (!base::lock_bias_start(&why)) {
        std::fprintf(stderr, "no lock bias here: %s\n", why);
        return 77;
    }
    return 0;
}

// The owner counts under a flag, alone, then with a second thread that
// revokes the bias mid-run: no increment is lost, and the owner ends on
// the locked instructions.
int owner_then_revoked() {
    if (int s = lock_bias_start_or_skip()) return s;
    constexpr int rounds = 200000;
    std::atomic<bool> flag{false};
    std::uint64_t guarded = 0;
    std::atomic<bool> go{false};
    for (int i = 0; i < rounds; ++i) {
        base::flag_take(flag);
        guarded = guarded + 1;
        base::flag_release(flag);
    }
    if (!base::lock_biased || base::lock_bias.revoked.load()) return 2;
    std::thread other([&] {
        while (!go.load()) {
        }
        for (int i = 0; i < rounds; ++i) {
            base::flag_take(flag);
            guarded = guarded + 1;
            base::flag_release(flag);
        }
    });
    go.store(true);
    for (int i = 0; i < rounds; ++i) {
        base::flag_take(flag);
        guarded = guarded + 1;
        base::flag_release(flag);
    }
    other.join();
    if (guarded != 3ull * rounds) return 3;
    base::flag_take(flag);  // the owner's first take since it finished sees the revocation
    base::flag_release(flag);
    if (base::lock_biased || !base::lock_bias.done.load()) return 4;
    return flag.load() ? 5 : 0;
}

// The owner holds flag a (taken its way) while another thread revokes the
// bias: that thread takes flag b at once (a flag the owner holds does not
// hold up the others: it waits only for the owner's take in progress) and
// finds a taken; the owner then finds b taken, on the locked path.
int revoked_while_held() {
    if (int s = lock_bias_start_or_skip()) return s;
    std::atomic<bool> a{false}, b{false};
    if (!base::flag_try_take(a)) return 2;
    bool took_b = false, took_a = true;
    std::thread([&] {
        took_b = base::flag_try_take(b);
        took_a = base::flag_try_take(a);
    }).join();
    if (!took_b) return 3;
    if (took_a) return 4;
    if (base::flag_try_take(b)) return 5;  // the thread holds b
    if (base::lock_biased) return 6;       // the owner switched at that take
    base::flag_release(a);
    base::flag_release(b);
    return base::flag_try_take(b) && base::flag_try_take(a) ? 0 : 7;
}

// Threads take flags while the owner starts the bias (the start waits for
// a take under way, or a take revokes the bias before it begins), then
// all count under one flag: no increment is lost either way.
int start_during_takes() {
    base::lock_bias_prepare();
    constexpr int rounds = 100000, threads = 2;
    std::atomic<bool> flag{false};
    std::uint64_t guarded = 0;
    std::atomic<int> ready{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            ready.fetch_add(1);
            for (int i = 0; i < rounds; ++i) {
                base::flag_take(flag);
                guarded = guarded + 1;
                base::flag_release(flag);
            }
        });
    while (ready.load() < threads) {
    }
    (void)base::lock_bias_start();
    for (int i = 0; i < rounds; ++i) {
        base::flag_take(flag);
        guarded = guarded + 1;
        base::flag_release(flag);
    }
    for (auto &t : pool) t.join();
    return guarded == std::uint64_t{threads + 1} * rounds ? 0 : 2;
}

TEST(FlagLockBias, OwnerAloneThenRevokedLosesNoIncrement) {
    EXPECT_EXIT(std::exit(owner_then_revoked()), ::testing::ExitedWithCode(0), "");
}

TEST(FlagLockBias, RevokingThreadWaitsOnlyForTheOwnersTake) {
    EXPECT_EXIT(std::exit(revoked_while_held()), ::testing::ExitedWithCode(0), "");
}

TEST(FlagLockBias, StartWhileOtherThreadsTakeLosesNoIncrement) {
    for (int i = 0; i < 5; ++i) EXPECT_EXIT(std::exit(start_during_takes()), ::testing::ExitedWithCode(0), "");
}

} // namespace
