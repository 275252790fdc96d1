// tests/conduit/firehose.cpp - firehose's victim pool (src/conduits/firehose) on
// every conduit's memory-domain hooks: hits, misses and eviction in LRU
// order within the bounds, reference counts, refusal when every
// registration is in use, growth within a window, invalidation (unused and
// in use), transfers cut at windows, and bad configurations.
#include "conduit_test.hpp"
#include "conduits/firehose/victim.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

namespace conduit_test {
namespace {

using namespace sluice;
using rma::firehose::VictimConfig;
using rma::firehose::VictimPool;

constexpr std::size_t window = 64 << 10;

// Memory of `windows` whole windows, window-aligned.
struct Windows {
    explicit Windows(std::size_t windows) : bytes(windows * window) {
        base = static_cast<char *>(std::aligned_alloc(window, bytes));
        std::memset(base, 0, bytes);
    }
    ~Windows() { std::free(base); }
    char *at(std::size_t w, std::size_t offset = 0) const { return base + w * window + offset; }
    std::size_t bytes;
    char *base;
};

std::unique_ptr<VictimPool> pool(Transport &t, std::size_t regions, std::size_t bytes = 64 * window) {
    std::unique_ptr<VictimPool> p;
    EXPECT_EQ(VictimPool::create(t, VictimConfig{window, regions, bytes}, p), Status::ok);
    return p;
}

class Firehose : public ConduitTest {};

TEST_P(Firehose, HitsMissesAndLeastRecentlyUsedEviction) {
    run([](World &w) {
        Windows mem(3);
        auto p = pool(*w.t, 2);
        VictimPool::Pin a, b, c;
        ASSERT_EQ(p->acquire(mem.at(0, 100), 1000, a), Status::ok);
        ASSERT_TRUE(a.region && a.region->registered);
        EXPECT_LE(a.region->base, static_cast<void *>(mem.at(0, 100)));
        EXPECT_GE(static_cast<char *>(a.region->base) + a.region->size, mem.at(0, 1100));
        p->release(a);
        ASSERT_EQ(p->acquire(mem.at(0, 200), 500, a), Status::ok);  // same pages: a hit
        p->release(a);
        ASSERT_EQ(p->acquire(mem.at(1), 8, b), Status::ok);
        p->release(b);
        ASSERT_EQ(p->acquire(mem.at(0, 100), 8, a), Status::ok);  // window 0 is now the newer
        p->release(a);
        ASSERT_EQ(p->acquire(mem.at(2), 8, c), Status::ok);  // full: evicts window 1, the oldest
        p->release(c);
        auto s = p->stats();
        EXPECT_EQ(s.hits, 2u);
        EXPECT_EQ(s.misses, 3u);
        EXPECT_EQ(s.evictions, 1u);
        EXPECT_EQ(s.regions, 2u);
        ASSERT_EQ(p->acquire(mem.at(0, 100), 8, a), Status::ok);  // still there
        p->release(a);
        EXPECT_EQ(p->stats().hits, 3u);
        ASSERT_EQ(p->acquire(mem.at(1), 8, b), Status::ok);  // was evicted
        p->release(b);
        EXPECT_EQ(p->stats().misses, 4u);
    });
}

TEST_P(Firehose, RegistrationsInUseAreNeverEvicted) {
    run([](World &w) {
        Windows mem(2);
        auto p = pool(*w.t, 1);
        VictimPool::Pin a1, a2, b;
        ASSERT_EQ(p->acquire(mem.at(0), 64, a1), Status::ok);
        ASSERT_EQ(p->acquire(mem.at(0), 64, a2), Status::ok);  // two transfers share it
        EXPECT_EQ(p->acquire(mem.at(1), 64, b), Status::not_ready);
        p->release(a1);
        EXPECT_EQ(p->acquire(mem.at(1), 64, b), Status::not_ready);  // a2 still uses it
        p->release(a2);
        ASSERT_EQ(p->acquire(mem.at(1), 64, b), Status::ok);
        p->release(b);
        const auto s = p->stats();
        EXPECT_EQ(s.busy, 2u);
        EXPECT_EQ(s.evictions, 1u);
        EXPECT_EQ(s.regions, 1u);
    });
}

TEST_P(Firehose, AByteBoundHoldsLikeARegionBound) {
    run([](World &w) {
        Windows mem(2);
        auto p = pool(*w.t, 8, window);  // one window's bytes
        VictimPool::Pin a, b;
        ASSERT_EQ(p->acquire(mem.at(0), window, a), Status::ok);
        EXPECT_EQ(p->stats().pinned_bytes, window);
        EXPECT_EQ(p->acquire(mem.at(1), 8, b), Status::not_ready);
        p->release(a);
        ASSERT_EQ(p->acquire(mem.at(1), 8, b), Status::ok);
        EXPECT_LE(p->stats().pinned_bytes, window);
        p->release(b);
    });
}

TEST_P(Firehose, AnUnusedRegistrationGrowsToCoverMoreOfItsWindow) {
    run([](World &w) {
        Windows mem(1);
        auto p = pool(*w.t, 4);
        VictimPool::Pin a, b;
        ASSERT_EQ(p->acquire(mem.at(0), 8, a), Status::ok);
        const std::size_t first = p->stats().pinned_bytes;
        p->release(a);
        ASSERT_EQ(p->acquire(mem.at(0, window - 8), 8, b), Status::ok);  // the last page
        EXPECT_EQ(p->stats().regions, 1u);
        EXPECT_EQ(p->stats().pinned_bytes, window);
        EXPECT_LT(first, window);
        EXPECT_EQ(b.region->base, static_cast<void *>(mem.at(0)));
        p->release(b);
        ASSERT_EQ(p->acquire(mem.at(0, 4096), 8, a), Status::ok);  // covered now: a hit
        p->release(a);
        EXPECT_EQ(p->stats().misses, 2u);
        EXPECT_EQ(p->stats().hits, 1u);
    });
}

TEST_P(Firehose, InvalidatedMemoryIsRegisteredAnew) {
    run([](World &w) {
        auto p = pool(*w.t, 4);
        // Memory mapped, pinned, unmapped, and new memory mapped at the same
        // address: the pool must not hand out the old registration.
        void *m = ::mmap(nullptr, 2 * window, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(m, MAP_FAILED);
        char *at = reinterpret_cast<char *>((reinterpret_cast<std::uintptr_t>(m) + window - 1) & ~(window - 1));
        VictimPool::Pin a;
        ASSERT_EQ(p->acquire(at, 4096, a), Status::ok);
        p->release(a);
        ASSERT_EQ(::munmap(at, window), 0);
        p->invalidate(at, window);  // what a memory monitor does on the unmap
        EXPECT_EQ(p->stats().regions, 0u);
        void *again = ::mmap(at, window, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        ASSERT_EQ(again, static_cast<void *>(at));
        ASSERT_EQ(p->acquire(at, 4096, a), Status::ok);
        p->release(a);
        auto s = p->stats();
        EXPECT_EQ(s.misses, 2u);
        EXPECT_EQ(s.hits, 0u);
        EXPECT_EQ(s.invalidated, 1u);
        // Invalidated while a transfer uses it: not handed out again, and
        // gone once that transfer ends.
        VictimPool::Pin held, other;
        ASSERT_EQ(p->acquire(at, 64, held), Status::ok);
        p->invalidate(at + 100, 1);
        EXPECT_EQ(p->acquire(at, 64, other), Status::not_ready);
        EXPECT_EQ(p->stats().regions, 1u);
        p->release(held);
        EXPECT_EQ(p->stats().regions, 0u);
        ::munmap(m, 2 * window);
        // A range far larger than what is registered, and one that misses.
        Windows mem(2);
        ASSERT_EQ(p->acquire(mem.at(1), 8, a), Status::ok);
        p->release(a);
        p->invalidate(mem.at(0), 8);  // another window: nothing to do
        EXPECT_EQ(p->stats().regions, 1u);
        p->invalidate(nullptr, SIZE_MAX / 2);
        EXPECT_EQ(p->stats().regions, 0u);
    });
}

TEST_P(Firehose, TransfersAreCutAtWindowsAndBadInputIsRefused) {
    run([](World &w) {
        Windows mem(3);
        auto p = pool(*w.t, 4);
        std::vector<std::pair<const void *, std::size_t>> cut;
        ASSERT_EQ(p->pieces(mem.at(0, window - 10), window + 20,
                            [&](const void *a, std::size_t n) {
                                cut.emplace_back(a, n);
                                return Status::ok;
                            }),
                  Status::ok);
        ASSERT_EQ(cut.size(), 3u);
        EXPECT_EQ(cut[0], std::make_pair(static_cast<const void *>(mem.at(0, window - 10)), std::size_t{10}));
        EXPECT_EQ(cut[1], std::make_pair(static_cast<const void *>(mem.at(1)), window));
        EXPECT_EQ(cut[2], std::make_pair(static_cast<const void *>(mem.at(2)), std::size_t{10}));
        int calls = 0;
        EXPECT_EQ(p->pieces(mem.at(0), 3 * window, [&](const void *, std::size_t) { return ++calls == 2 ? Status::segment : Status::ok; }),
                  Status::segment);
        EXPECT_EQ(calls, 2);
        VictimPool::Pin pin;
        EXPECT_EQ(p->acquire(mem.at(0, window - 10), 20, pin), Status::argument);  // crosses a window
        EXPECT_EQ(p->acquire(mem.at(0), 0, pin), Status::argument);
        EXPECT_EQ(p->acquire(nullptr, 8, pin), Status::argument);
        std::unique_ptr<VictimPool> bad;
        EXPECT_EQ(VictimPool::create(*w.t, VictimConfig{3000, 4, window}, bad), Status::argument);
        EXPECT_EQ(VictimPool::create(*w.t, VictimConfig{window, 0, window}, bad), Status::argument);
        EXPECT_EQ(VictimPool::create(*w.t, VictimConfig{window, 4, window - 1}, bad), Status::argument);
        EXPECT_EQ(bad, nullptr);
    });
}

CONDUIT_TEST_SUITE(Firehose);

} // namespace
} // namespace conduit_test
