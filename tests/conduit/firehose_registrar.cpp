// tests/conduit/firehose_registrar.cpp - firehose as the transport's local
// registrar (src/conduits/firehose/registrar.hpp) on every conduit that sets
// needs_registration (here: template_registered, whose "NIC" refuses an
// operation its handle does not cover and reads registered shared memory
// through its own mapping of the pages): Put and Get from memory outside
// the segment at and around the bounce limits and across windows, the
// pool's bounds and LRU order through the transport, the bounce fallback
// when every registration is in use (and the backlog when bounce buffers
// are too), leases given back, a cut Put with remote completion, and
// memory unmapped and mapped again at the same address (the memory
// monitor).  The monitor's ring is tested on its own at the end.
#include "conduit_test.hpp"
#include "conduits/firehose/monitor.hpp"
#include "conduits/firehose/registrar.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace conduit_test {
namespace {

using namespace sluice;
using rma::firehose::Registrar;
using rma::firehose::RegistrarConfig;
using rma::firehose::RegistrarStats;

class FirehoseRegistrar : public ConduitTest {};

// False on a conduit that reaches any memory, which has every rank skip
// the test (it has nothing to exercise there); call it on every rank.
bool needs_registration(World &w) {
    const auto c = w.t->capabilities();
    if (c.native_rma && c.needs_registration) return true;
    w.skip(std::string(w.t->name()) + " demands no registration: firehose's registrar has nothing to do");
    return false;
}

std::string pattern(std::size_t n, unsigned seed) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
    return s;
}

char *peer_at(const World &w, std::size_t offset) { return reinterpret_cast<char *>(w.peer_segment) + offset; }

// What the peer's segment holds at `offset`, read back into my segment
// (registered: no firehose on the way back).
std::string peer_bytes(World &w, std::size_t offset, std::size_t n) {
    char *mine = static_cast<char *>(w.segment) + w.segment_size - n;
    EXPECT_EQ(w.t->get(mine, w.peer, peer_at(w, offset), n), Status::ok);
    return std::string(mine, n);
}

// A registrar of its own for one test, in place of the world's.
struct OwnRegistrar {
    OwnRegistrar(World &w, const RegistrarConfig &c) : w(w), before(w.t->local_registrar()) {
        EXPECT_EQ(Registrar::create(*w.t, c, r), Status::ok);
        w.t->local_registrar_set(r.get());
    }
    ~OwnRegistrar() { w.t->local_registrar_set(before); }
    World &w;
    conduit::LocalRegistrar *before;
    std::unique_ptr<Registrar> r;
};

// Window-aligned memory outside the segment.
struct Aligned {
    Aligned(std::size_t align, std::size_t bytes) : base(static_cast<char *>(std::aligned_alloc(align, bytes))) {
        std::memset(base, 0, bytes);
    }
    ~Aligned() { std::free(base); }
    char *base;
};

TEST_P(FirehoseRegistrar, PutsAndGetsOutsideTheSegmentArriveWhole) {
    run([](World &w) {
        if (!needs_registration(w) || w.rank != 0) return;
        ASSERT_NE(w.firehose, nullptr);
        const RegistrarStats before = w.firehose->stats();
        // Around both bounce limits (8K Get, 16K Put) and across windows.
        const std::size_t sizes[] = {1, 100, 8192, 8193, 16384, 16385, (200u << 10) + 13, 1u << 20};
        unsigned seed = 1;
        for (std::size_t n : sizes) {
            const std::string src = pattern(n, seed++);
            const std::size_t offset = 64 + seed;
            ASSERT_EQ(w.t->put(w.peer, peer_at(w, offset), src.data(), n), Status::ok) << n;
            EXPECT_TRUE(peer_bytes(w, offset, n) == src) << n;
            std::string dst(n + 2, '\0');
            ASSERT_EQ(w.t->get(dst.data() + 1, w.peer, peer_at(w, offset), n), Status::ok) << n;
            EXPECT_TRUE(dst.substr(1, n) == src) << n;
            EXPECT_EQ(dst[0], '\0');
            EXPECT_EQ(dst[n + 1], '\0');  // the copy out of a bounce buffer stays in bounds
        }
        // At most the limit bounces (5 Puts, 3 Gets here), and so does the
        // short rest of an operation cut at windows.
        RegistrarStats s = w.firehose->stats();
        EXPECT_GE(s.bounced_puts - before.bounced_puts, 5u);
        EXPECT_GE(s.bounced_gets - before.bounced_gets, 3u);
        EXPECT_GE(s.victim.misses - before.victim.misses, 3u);
        EXPECT_EQ(s.leases, 0u);
        // Many at once from one buffer (operations in one window find its
        // registration in use and too small: they bounce or wait), then one
        // at a time twice: the second time every page is registered.
        const std::string big = pattern(64 * 20000, 9);
        std::atomic<std::uint64_t> c{0};
        for (std::size_t i = 0; i < 64; ++i)
            ASSERT_EQ(w.t->put_nb(w.peer, peer_at(w, i * 20000), big.data() + i * 20000, 20000, c), Status::ok);
        ASSERT_TRUE(w.wait_counter(c));
        EXPECT_TRUE(peer_bytes(w, 0, big.size()) == big) << "the bytes at the target differ";
        for (int round = 0; round < 2; ++round) {
            const RegistrarStats was = w.firehose->stats();
            for (std::size_t i = 0; i < 64; ++i)
                ASSERT_EQ(w.t->put(w.peer, peer_at(w, i * 20000), big.data() + i * 20000, 20000), Status::ok);
            s = w.firehose->stats();
            if (round == 1 && s.caching) {
                EXPECT_EQ(s.victim.misses, was.victim.misses);
                EXPECT_GE(s.victim.hits - was.victim.hits, 64u);
            }
        }
        EXPECT_EQ(w.firehose->stats().leases, 0u);
    });
}

TEST_P(FirehoseRegistrar, PoolBoundsLeastRecentlyUsedAndBounceFallback) {
    run([](World &w) {
        if (!needs_registration(w) || w.rank != 0) return;
        // A first Put from the segment: a network conduit that connects on
        // first use answers "retry" until it has, and every retry pins again.
        ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), w.segment, 8), Status::ok);
        constexpr std::size_t window = 64 << 10, piece = 10 << 10;
        RegistrarConfig c;
        c.victim = {window, 2, 2 * window};
        c.put_bounce_limit = c.get_bounce_limit = 4096;
        c.bounce_buffers = 2;
        OwnRegistrar own(w, c);
        Registrar &r = *own.r;
        Aligned mem(window, 4 * window);
        for (std::size_t i = 0; i < 4 * window; ++i) mem.base[i] = static_cast<char>(i * 7 + i / window);
        auto put = [&](std::size_t win, std::size_t n, std::size_t offset) {
            return w.t->put(w.peer, peer_at(w, offset), mem.base + win * window, n);
        };
        ASSERT_EQ(put(0, piece, 0), Status::ok);
        ASSERT_EQ(put(1, piece, 0), Status::ok);
        ASSERT_EQ(put(0, piece, 0), Status::ok);  // a hit: window 0 is now the newer
        ASSERT_EQ(put(2, piece, 0), Status::ok);  // full: window 1 goes
        RegistrarStats s = r.stats();
        if (s.caching) {
            EXPECT_EQ(s.victim.hits, 1u);
            EXPECT_EQ(s.victim.misses, 3u);
            EXPECT_EQ(s.victim.evictions, 1u);
        }
        EXPECT_LE(s.victim.regions, 2u);
        EXPECT_LE(s.victim.peak_pinned_bytes, 2 * window);
        // Two transfers hold both registrations (nothing polls, so they
        // stay in flight); a third window finds the pool busy and goes by
        // bounce buffers, 4 KiB at a time, until those are busy too: the
        // rest waits on the backlog and goes once the others completed.
        std::atomic<std::uint64_t> held{0};
        ASSERT_EQ(w.t->put_nb(w.peer, peer_at(w, 0), mem.base, piece, held), Status::ok);
        ASSERT_EQ(w.t->put_nb(w.peer, peer_at(w, window), mem.base + window, piece, held), Status::ok);
        std::atomic<std::uint64_t> third{0};
        ASSERT_EQ(w.t->put_nb(w.peer, peer_at(w, 2 * window), mem.base + 3 * window, 5 * 4096, third), Status::ok);
        s = r.stats();
        EXPECT_GE(s.victim.busy, 1u);
        EXPECT_EQ(s.bounced_puts, 2u);
        EXPECT_GE(s.bounce_busy, 1u);
        EXPECT_EQ(s.leases, 4u);
        ASSERT_TRUE(w.wait_counter(held));
        ASSERT_TRUE(w.wait_counter(third));
        EXPECT_TRUE(peer_bytes(w, 2 * window, 5 * 4096) == std::string(mem.base + 3 * window, 5 * 4096));
        EXPECT_TRUE(peer_bytes(w, window, piece) == std::string(mem.base + window, piece));
        // A Get the same way: bounced pieces are copied out at completion.
        const std::string want = peer_bytes(w, 0, 3 * 4096);
        ASSERT_EQ(w.t->get_nb(mem.base, w.peer, peer_at(w, 0), piece, held), Status::ok);
        ASSERT_EQ(w.t->get_nb(mem.base + window, w.peer, peer_at(w, 0), piece, held), Status::ok);
        std::memset(mem.base + 3 * window, 0, 3 * 4096);
        ASSERT_EQ(w.t->get_nb(mem.base + 3 * window, w.peer, peer_at(w, 0), 3 * 4096, third), Status::ok);
        EXPECT_GE(r.stats().bounced_gets, 2u);
        ASSERT_TRUE(w.wait_counter(held));
        ASSERT_TRUE(w.wait_counter(third));
        EXPECT_TRUE(std::string(mem.base + 3 * window, 3 * 4096) == want);
        s = r.stats();
        EXPECT_EQ(s.leases, 0u);
        EXPECT_LE(s.victim.regions, 2u);
        EXPECT_LE(s.victim.peak_pinned_bytes, 2 * window);
    });
}

TEST_P(FirehoseRegistrar, ACutPutWithRemoteCompletionNotifiesOnceAfterEveryPiece) {
    run([](World &w) {
        if (!needs_registration(w)) return;
        const std::size_t n = (300u << 10) + 5;  // three windows and a bit
        const std::string src = pattern(n + 1, 3);  // sent from its second byte: not page-aligned
        bool whole = false;
        w.on_deliver = [&](World &me, const Delivered &) {
            whole = std::memcmp(static_cast<char *>(me.segment) + 40, src.data() + 1, n) == 0;
        };
        if (w.rank == 0) {
            const std::uint32_t tag = 5;
            conduit::AmMessage m;
            m.header.handler = 9;
            m.header.nargs = 1;
            m.header.source = w.rank;
            m.args = &tag;
            std::atomic<std::uint64_t> c{0};
            ASSERT_EQ(w.t->put_rc(w.peer, peer_at(w, 40), src.data() + 1, n, m, c), Status::ok);
            ASSERT_TRUE(w.wait_counter(c));
        }
        if (w.rank == w.peer || w.rank == 1) {
            ASSERT_TRUE(w.wait_delivered(1));
            for (int i = 0; i < 100; ++i) w.t->poll();
            ASSERT_EQ(w.delivered.size(), 1u);
            EXPECT_EQ(w.delivered[0].header.handler, 9);
            EXPECT_TRUE(whole) << "the notification came before the last piece";
        }
    });
}

// The test: memory a Put registered is unmapped, new memory with
// other contents is mapped at the same address, and a Put from it must
// carry the new contents.  Shared memory, so the template's "NIC" keeps
// reaching the old pages through a registration made for them.
TEST_P(FirehoseRegistrar, MemoryUnmappedAndMappedAgainIsRegisteredAnew) {
    run([](World &w) {
        if (!needs_registration(w) || w.rank != 0) return;
        constexpr std::size_t bytes = 256 << 10, n = 64 << 10;  // above the bounce limits
        auto map = [](void *at) {
            return ::mmap(at, bytes, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);
        };
        // Another thread (the sanitizer's allocator, a NIC's progress
        // thread) may map into the hole between munmap and mmap; then the
        // round is tried again at a new address.
        void *m = MAP_FAILED;
        char *buf = nullptr;
        RegistrarStats before;
        for (int round = 0; round < 20 && m == MAP_FAILED; ++round) {
            m = map(nullptr);
            ASSERT_NE(m, MAP_FAILED);
            buf = static_cast<char *>(m) + 4096;
            std::memset(buf, 'A', n);
            ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), buf, n), Status::ok);
            ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), buf, n), Status::ok);
            EXPECT_TRUE(peer_bytes(w, 0, n) == std::string(n, 'A')) << "the bytes at the target differ";
            before = w.firehose->stats();
            ASSERT_EQ(::munmap(m, bytes), 0);
            void *again = map(m);
            if (again != m) {
                if (again != MAP_FAILED) ::munmap(again, bytes);
                m = MAP_FAILED;
            }
        }
        ASSERT_NE(m, MAP_FAILED) << "the address was taken by another thread in 20 rounds";
        std::memset(buf, 'B', n);
        ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), buf, n), Status::ok);
        EXPECT_TRUE(peer_bytes(w, 0, n) == std::string(n, 'B')) << "the bytes at the target differ";
        RegistrarStats s = w.firehose->stats();
        if (s.caching) {
            EXPECT_GE(s.victim.invalidated - before.victim.invalidated, 1u);
        }
        // The same through mmap(MAP_FIXED) over the mapping, and madvise.
        void *over = ::mmap(m, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        ASSERT_EQ(over, m);
        std::memset(buf, 'C', n);
        ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), buf, n), Status::ok);
        EXPECT_TRUE(peer_bytes(w, 0, n) == std::string(n, 'C')) << "the bytes at the target differ";
        ASSERT_EQ(::munmap(m, bytes), 0);
        if (!s.caching) return;
        std::string priv(n, 'D');
        ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), priv.data(), n), Status::ok);
        const std::uint64_t invalidated = w.firehose->stats().victim.invalidated;
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        auto *first = reinterpret_cast<char *>((reinterpret_cast<std::uintptr_t>(priv.data()) + page - 1) & ~(page - 1));
        ASSERT_EQ(::madvise(first, page, MADV_DONTNEED), 0);
        ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), priv.data(), n), Status::ok);
        EXPECT_GE(w.firehose->stats().victim.invalidated, invalidated + 1);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        // free() of a block malloc mapped by itself (glibc: 32 MiB and more
        // always are) unmaps it from inside libc: seen too.  Sanitizers keep
        // freed memory in quarantine and unmap with their own system calls.
        char *block = static_cast<char *>(std::malloc(40u << 20));
        ASSERT_NE(block, nullptr);
        std::memset(block + (8u << 20), 'E', n);
        ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), block + (8u << 20), n), Status::ok);
        const std::uint64_t before_free = w.firehose->stats().victim.invalidated;
        std::free(block);
        ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), priv.data(), n), Status::ok);  // a pin reads the monitor
        EXPECT_GE(w.firehose->stats().victim.invalidated, before_free + 1);
#endif
    });
}

// SLUICE_FIREHOSE_MEMHOOKS=0: nobody would say memory went away, so a
// registration goes when its last transfer ends.
TEST_P(FirehoseRegistrar, WithoutTheMonitorNothingIsCached) {
    run([](World &w) {
        if (!needs_registration(w) || w.rank != 0) return;
        RegistrarConfig c;
        c.monitor = false;
        OwnRegistrar own(w, c);
        EXPECT_FALSE(own.r->stats().caching);
        const std::string src = pattern(100000, 4);
        for (int i = 0; i < 2; ++i) {
            ASSERT_EQ(w.t->put(w.peer, peer_at(w, 0), src.data(), src.size()), Status::ok);
            EXPECT_TRUE(peer_bytes(w, 0, src.size()) == src);
            EXPECT_EQ(own.r->stats().victim.regions, 0u);
        }
        const RegistrarStats s = own.r->stats();
        EXPECT_EQ(s.victim.hits, 0u);
        EXPECT_GE(s.victim.misses, 2u);
        EXPECT_LE(s.victim.peak_pinned_bytes, 2 * c.victim.region_bytes);
        EXPECT_NE(own.r->stats_line().find("not caching"), std::string::npos) << own.r->stats_line();
        EXPECT_NE(w.firehose->stats_line().find(std::string("firehose ") + w.t->name() + ": "), std::string::npos);
    });
}

// The template's "NIC" is a real check of the hook: without a registrar
// an operation on memory outside the segment is refused; leases of
// operations never completed are given back at fini.
TEST(FirehoseTemplate, UnregisteredBuffersAreRefusedAndFiniGivesLeasesBack) {
    ::setenv("SLUICE_QUIET_ERRORS", "1", 1);
    for (const Conduit &c : conduits_under_test()) {
        if (c.name != "template_registered") continue;
        const std::string failed = run_world(c, [](World &w) {
            ASSERT_NE(w.firehose, nullptr);
            // Aligned, so the 20000 bytes sit in one firehose window: one lease each.
            constexpr std::size_t bytes = 20000;
            std::unique_ptr<char, decltype(&std::free)> owned(static_cast<char *>(std::aligned_alloc(32768, 32768)),
                                                              &std::free);
            char *heap = owned.get();
            std::memset(heap, 'h', bytes);
            w.t->local_registrar_set(nullptr);
            EXPECT_EQ(w.t->put(w.peer, peer_at(w, 0), heap, bytes), Status::argument);
            EXPECT_EQ(w.t->get(heap, w.peer, peer_at(w, 0), bytes), Status::argument);
            EXPECT_EQ(w.t->put(w.peer, peer_at(w, 0), w.segment, 100), Status::ok);  // the segment is registered
            w.t->local_registrar_set(w.firehose);
            EXPECT_EQ(w.t->put(w.peer, peer_at(w, 0), heap, bytes), Status::ok);
            std::atomic<std::uint64_t> never{0};
            ASSERT_EQ(w.t->put_nb(w.peer, peer_at(w, 0), heap, bytes, never), Status::ok);
            ASSERT_EQ(w.t->get_nb(heap, w.peer, peer_at(w, 0), 100, never), Status::ok);
            EXPECT_EQ(w.firehose->stats().leases, 2u);
            w.t->fini();  // nothing polled: both still in flight
            const RegistrarStats s = w.firehose->stats();
            EXPECT_EQ(s.leases, 0u);
            EXPECT_EQ(s.victim.regions, 0u);
            EXPECT_EQ(s.victim.pinned_bytes, 0u);
            EXPECT_TRUE(std::string(heap, bytes) == std::string(20000, 'h'));  // the abandoned Get copied nothing out
        });
        EXPECT_EQ(failed, "");
        return;
    }
    FAIL() << "template_registered is not in the registry";
}

TEST(FirehoseMonitor, RangesAreReadInOrderAndALostRingDropsEverything) {
    using namespace rma::firehose;
    std::vector<std::pair<std::uintptr_t, std::size_t>> seen;
    auto gone = [](void *v, std::uintptr_t a, std::size_t n) {
        static_cast<std::vector<std::pair<std::uintptr_t, std::size_t>> *>(v)->emplace_back(a, n);
    };
    const char *why = "";
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer builds install none (monitor.cpp), and say why.
    EXPECT_FALSE(monitor::install(&why));
    EXPECT_NE(std::string(why).find("ThreadSanitizer"), std::string::npos) << why;
#elif defined(__x86_64__) && defined(__GLIBC__)
    EXPECT_TRUE(monitor::install(&why)) << why;  // where the hooks exist, they go in
#endif
    std::uint64_t at = monitor::position();
    monitor::record(reinterpret_cast<void *>(0x1000), 10);
    monitor::record(reinterpret_cast<void *>(0x5000), 0);  // empty: nothing
    monitor::record(reinterpret_cast<void *>(0x3000), 30);
    monitor::drain(at, gone, &seen);
    EXPECT_EQ(at, monitor::position());
    std::vector<std::pair<std::uintptr_t, std::size_t>> mine;
    for (const auto &r : seen)
        if (r.first == 0x1000 || r.first == 0x3000 || r.first == 0x5000) mine.push_back(r);
    EXPECT_EQ(mine, (std::vector<std::pair<std::uintptr_t, std::size_t>>{{0x1000, 10}, {0x3000, 30}}));
    seen.clear();
    monitor::drain(at, gone, &seen);
    EXPECT_TRUE(seen.empty());  // nothing new (nothing else in this process unmaps meanwhile)
    for (int i = 0; i < 5000; ++i) monitor::record(reinterpret_cast<void *>(0x10000), 1);
    monitor::drain(at, gone, &seen);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0], std::make_pair(std::uintptr_t{0}, SIZE_MAX));
    EXPECT_EQ(at, monitor::position());
}

CONDUIT_TEST_SUITE(FirehoseRegistrar);

} // namespace
} // namespace conduit_test
