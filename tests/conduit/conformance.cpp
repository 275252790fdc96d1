// tests/conduit/conformance.cpp - one conformance suite for every conduit in
// the registry, driving its Transport directly (no core): AM categories at
// their limits, ordering, retry and the RDMA backlog, memory registration
// and keys, RDMA completion, Put with remote completion and the two-part
// Long's reassembly in src/am, bad input.  See tests/conduit/README.md.
#include "am/am.hpp"
#include "conduit_test.hpp"
#include "tests/harness.hpp"
#include "sluice_config.h"

#include "base/status.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace conduit_test {
namespace {

using namespace sluice;
using conduit::AmCategory;
using conduit::AmMessage;
using conduit::PollMode;

class Conformance : public ConduitTest {};

AmMessage message(World &w, AmCategory c, std::uint8_t handler, const std::uint32_t *args, unsigned nargs,
                  const void *payload = nullptr, std::size_t n = 0, std::uint64_t dest = 0) {
    AmMessage m;
    m.header.handler = handler;
    m.header.category = c;
    m.header.nargs = static_cast<std::uint8_t>(nargs);
    m.header.source = w.rank;
    m.header.payload_length = n;
    m.header.dest_addr = dest;
    m.args = args;
    m.payload = payload;
    return m;
}

std::size_t packed_long(const Transport &t) {
    return std::min(t.capabilities().max_long, t.capabilities().max_packed_long);
}

std::string pattern(std::size_t n, unsigned seed) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
    return s;
}

// False (and says why) when the conduit has no native RDMA to test.
bool has_rdma(const Transport &t, const char *what) {
    if (t.capabilities().native_rma) return true;
    std::printf("[ conduit  ] %s: no native RDMA (src/rma runs Put/Get over AM): %s not exercised\n", t.name(), what);
    return false;
}

// Rank 0 sends, the peer (or rank 0 itself in loopback) receives.
bool sender(const World &w) { return w.rank == 0; }
bool receiver(const World &w) { return w.size == 1 || w.rank == 1; }

TEST_P(Conformance, EveryCategoryAtZeroOneMaxAndMaxPlusOne) {
    run([](World &w) {
        Transport &t = *w.t;
        const std::size_t medium = t.capabilities().max_medium, longest = std::min<std::size_t>(packed_long(t), w.segment_size);
        std::uint32_t args[17];
        for (unsigned i = 0; i < 17; ++i) args[i] = 0x1000u + i;
        if (sender(w)) {
            for (unsigned nargs : {0u, 1u, 16u}) EXPECT_EQ(t.send_short(w.peer, 1, 0, 0, args, nargs), Status::ok);
            EXPECT_EQ(t.send(w.peer, message(w, AmCategory::short_, 1, args, 17)), Status::argument);
            for (std::size_t len : {std::size_t{0}, std::size_t{1}, medium}) {
                const std::string p = pattern(len, 7);
                EXPECT_EQ(t.send(w.peer, message(w, AmCategory::medium, 2, args, 2, p.data(), len)), Status::ok) << len;
            }
            const std::string big = pattern(std::max(medium, longest) + 1, 9);
            EXPECT_EQ(t.send(w.peer, message(w, AmCategory::medium, 2, args, 2, big.data(), medium + 1)),
                      Status::too_large);
            for (std::size_t len : {std::size_t{0}, std::size_t{1}, longest}) {
                const std::string p = pattern(len, 11);
                EXPECT_EQ(t.send(w.peer, message(w, AmCategory::long_, 3, args, 3, p.data(), len, w.peer_segment)),
                          Status::ok) << len;
            }
            if (longest < w.segment_size) {
                EXPECT_EQ(t.send(w.peer, message(w, AmCategory::long_, 3, args, 3, big.data(), longest + 1, w.peer_segment)),
                          Status::too_large);
            }
        }
        const std::size_t expected = 9;
        if (!receiver(w)) return;
        ASSERT_TRUE(w.wait_delivered(expected)) << w.delivered.size() << " of " << expected;
        const unsigned shorts[3] = {0, 1, 16};
        for (unsigned i = 0; i < 3; ++i) {
            const Delivered &d = w.delivered[i];
            EXPECT_EQ(d.header.handler, 1);
            EXPECT_EQ(d.args.size(), shorts[i]);
            for (unsigned a = 0; a < d.args.size(); ++a) EXPECT_EQ(d.args[a], 0x1000u + a);
        }
        const std::size_t mediums[3] = {0, 1, medium};
        for (unsigned i = 0; i < 3; ++i) {
            const Delivered &d = w.delivered[3 + i];
            EXPECT_EQ(d.header.category, AmCategory::medium);
            EXPECT_EQ(d.payload, pattern(mediums[i], 7)) << mediums[i];
            EXPECT_EQ(d.args, (std::vector<std::uint32_t>{0x1000, 0x1001}));
        }
        const std::size_t longs[3] = {0, 1, longest};
        for (unsigned i = 0; i < 3; ++i) {
            const Delivered &d = w.delivered[6 + i];
            EXPECT_EQ(d.header.category, AmCategory::long_);
            EXPECT_EQ(d.header.dest_addr, reinterpret_cast<std::uint64_t>(w.segment));
            EXPECT_EQ(d.payload, pattern(longs[i], 11)) << longs[i];
        }
    });
}

// Requests of one peer arrive in order, one handler at a time, and a reply
// sent from a handler reaches the requester in order too.
TEST_P(Conformance, PerPeerOrderOneHandlerAtATime) {
    run([](World &w) {
        constexpr std::uint32_t count = 1500;
        Transport &t = *w.t;
        w.on_deliver = [](World &self, const Delivered &d) {
            if (d.header.flags & conduit::am_flag_reply) return;
            const std::uint32_t a[1] = {d.args[0]};
            // Replies poll only for replies while they wait: no nesting.
            EXPECT_EQ(self.t->send_short(d.header.source, 5, conduit::am_flag_reply, 0, a, 1), Status::ok);
        };
        if (sender(w)) {
            const std::string p = pattern(200, 3);
            for (std::uint32_t i = 0; i < count; ++i) {
                const std::uint32_t a[1] = {i};
                if (i % 3) ASSERT_EQ(t.send_short(w.peer, 4, 0, 0, a, 1), Status::ok);
                else ASSERT_EQ(t.send(w.peer, message(w, AmCategory::medium, 4, a, 1, p.data(), p.size())), Status::ok);
            }
        }
        // Loopback: my requests and the replies to them; a pair: one of each.
        const std::size_t want = w.size == 1 ? 2 * count : count;
        ASSERT_TRUE(w.wait_delivered(want)) << w.delivered.size();
        std::uint32_t next_request = 0, next_reply = 0;
        for (const Delivered &d : w.delivered) {
            EXPECT_FALSE(d.nested);
            std::uint32_t &next = (d.header.flags & conduit::am_flag_reply) ? next_reply : next_request;
            EXPECT_EQ(d.args[0], next) << "out of order";
            next = d.args[0] + 1;
        }
    });
}

// Shorts that arrive while a handler polls (a reply waiting for room does)
// are queued, not delivered inside it, and later delivered in order with
// their arguments intact, however the conduit holds them meanwhile (mpi:
// in their posted receives, copied out when those are due again).
TEST_P(Conformance, ShortsQueuedWhileAHandlerPolls) {
    run([](World &w) {
        constexpr std::uint32_t count = 400;
        Transport &t = *w.t;
        w.on_deliver = [](World &self, const Delivered &d) {
            if (d.args.empty() || d.args[0] % 50 != 0) return;
            for (int i = 0; i < 2000; ++i) (void)self.t->poll(PollMode::all);
        };
        if (sender(w)) {
            for (std::uint32_t i = 0; i < count; ++i) {
                const std::uint32_t a[3] = {i, ~i, i * 7u};
                ASSERT_EQ(t.send_short(w.peer, 6, 0, 0, a, 3), Status::ok);
            }
        }
        if (!receiver(w)) return;
        ASSERT_TRUE(w.wait_delivered(count)) << w.delivered.size();
        for (std::uint32_t i = 0; i < count; ++i) {
            const Delivered &d = w.delivered[i];
            EXPECT_FALSE(d.nested) << i;
            ASSERT_EQ(d.args.size(), 3u) << i;
            EXPECT_EQ(d.args[0], i) << "out of order";
            EXPECT_EQ(d.args[1], ~i);
            EXPECT_EQ(d.args[2], i * 7u);
        }
    });
}

// A flood larger than any queue: every send returns (retrying inside, never
// dropping), everything arrives; RDMA operations beyond the conduit's room
// are backlogged without waiting and complete from poll.
TEST_P(Conformance, BacklogAndRetry) {
    run([](World &w) {
        Transport &t = *w.t;
        constexpr std::uint32_t count = 20000;
        if (sender(w)) {
            for (std::uint32_t i = 0; i < count; ++i) ASSERT_EQ(t.send_short(w.peer, 6, 0, 0, &i, 1), Status::ok);
        }
        if (receiver(w)) {
            ASSERT_TRUE(w.wait_delivered(count));
            for (std::uint32_t i = 0; i < count; ++i) ASSERT_EQ(w.delivered[i].args[0], i);
        }
        if (!has_rdma(t, "the RDMA backlog")) return;
        ASSERT_TRUE(w.barrier());
        // Many puts without a poll in between: none may wait for room.
        std::atomic<std::uint64_t> counter{0};
        const std::size_t before = w.delivered.size();
        const std::string p = pattern(4096, 1);
        for (unsigned i = 0; i < 1000; ++i)
            ASSERT_EQ(t.put_nb(w.peer, reinterpret_cast<char *>(w.peer_segment) + (i % 64) * 4096, p.data(), p.size(),
                               counter), Status::ok);
        EXPECT_EQ(w.delivered.size(), before) << "a non-blocking put polled";
        ASSERT_TRUE(w.wait_counter(counter));
        std::printf("[ conduit  ] %s: %llu of 1000 puts backlogged, %llu completed from poll\n", t.name(),
                    static_cast<unsigned long long>(t.stats().rma_backlogged.load()),
                    static_cast<unsigned long long>(t.stats().rma_deferred.load()));
    });
}

TEST_P(Conformance, RegistrationAndKeys) {
    run([](World &w) {
        Transport &t = *w.t;
        std::vector<char> buffer(1 << 16);
        conduit::MemRegion r;
        ASSERT_EQ(t.mem_register(buffer.data(), buffer.size(), r), Status::ok);
        EXPECT_TRUE(r.registered);
        EXPECT_EQ(r.base, buffer.data());
        EXPECT_EQ(r.size, buffer.size());
        EXPECT_EQ(t.mem_register(buffer.data(), buffer.size(), r), Status::state);  // twice
        t.mem_deregister(r);
        EXPECT_FALSE(r.registered);
        t.mem_deregister(r);  // idempotent
        conduit::MemRegion bad;
        EXPECT_EQ(t.mem_register(nullptr, 64, bad), Status::argument);
        EXPECT_FALSE(bad.registered);
        // A corrupt key is refused where the conduit publishes one.
        if (!w.rkey.empty()) {
            std::vector<conduit::SegmentRecord> recs(w.size);
            recs[w.peer].base = w.peer_segment;
            recs[w.peer].size = w.segment_size;
            recs[w.peer].rkeys.emplace_back(t.name(), w.rkey.substr(1));
            recs[w.rank].base = reinterpret_cast<std::uint64_t>(w.segment);
            recs[w.rank].size = w.segment_size;
            EXPECT_NE(t.segment_connect(recs), Status::ok);
        } else {
            std::printf("[ conduit  ] %s: publishes no remote key (nothing to corrupt)\n", t.name());
        }
    });
}

TEST_P(Conformance, RdmaCompletion) {
    run([](World &w) {
        Transport &t = *w.t;
        if (!has_rdma(t, "RDMA completion")) return;
        char *remote = reinterpret_cast<char *>(w.peer_segment);
        // Each rank writes its own half of the peer's segment.
        const std::size_t half = w.segment_size / 2, mine = w.size == 1 ? 0 : w.rank * half;
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{4096}, half}) {
            const std::string p = pattern(n, static_cast<unsigned>(n));
            std::atomic<std::uint64_t> c{0};
            ASSERT_EQ(t.put_nb(w.peer, remote + mine, p.data(), n, c), Status::ok);
            ASSERT_TRUE(w.wait_counter(c));
            std::string back(n, 'x');
            ASSERT_EQ(t.get_nb(back.data(), w.peer, remote + mine, n, c), Status::ok);
            ASSERT_TRUE(w.wait_counter(c));
            EXPECT_EQ(back, p) << n;
            // Blocking calls wait for their own completion.
            std::string q = pattern(n, 99), r(n, 'y');
            ASSERT_EQ(t.put(w.peer, remote + mine, q.data(), n), Status::ok);
            ASSERT_EQ(t.get(r.data(), w.peer, remote + mine, n), Status::ok);
            EXPECT_EQ(r, q) << n;
        }
    });
}

// Put with remote completion: the notification arrives after the bytes.
TEST_P(Conformance, PutWithRemoteCompletion) {
    run([](World &w) {
        Transport &t = *w.t;
        if (!has_rdma(t, "Put with remote completion")) return;
        const std::size_t n = 256 * 1024;
        const std::string p = pattern(n, 5);
        std::uint64_t at = reinterpret_cast<std::uint64_t>(w.segment);
        w.on_deliver = [n, at](World &, const Delivered &d) {
            if (d.header.handler == 7) {
                EXPECT_EQ(std::memcmp(reinterpret_cast<const char *>(at), pattern(n, 5).data(), n), 0)
                    << "notified before the bytes landed";
            }
        };
        if (sender(w)) {
            std::atomic<std::uint64_t> c{0};
            const std::uint32_t tag = 77;
            ASSERT_EQ(t.put_rc(w.peer, reinterpret_cast<void *>(w.peer_segment), p.data(), n,
                               message(w, AmCategory::short_, 7, &tag, 1), c), Status::ok);
            ASSERT_TRUE(w.wait_counter(c));
            AmMessage wrong = message(w, AmCategory::long_, 7, &tag, 1);
            EXPECT_EQ(t.put_rc(w.peer, reinterpret_cast<void *>(w.peer_segment), p.data(), 1, wrong, c), Status::argument);
        }
        if (receiver(w)) {
            ASSERT_TRUE(w.wait_delivered(1));
            EXPECT_EQ(w.delivered[0].header.handler, 7);
            EXPECT_EQ(w.delivered[0].args, std::vector<std::uint32_t>{77});
        }
    });
}

TEST_P(Conformance, BadInput) {
    run([](World &w) {
        Transport &t = *w.t;
        std::uint32_t a[1] = {1};
        EXPECT_EQ(t.send(w.size + 3, message(w, AmCategory::short_, 1, a, 1)), Status::rank);
        const std::string p(16, 'z');
        // A Long outside the peer's segment never reaches the conduit.
        EXPECT_EQ(t.send(w.peer, message(w, AmCategory::long_, 1, a, 1, p.data(), p.size(),
                                         w.peer_segment + w.segment_size - 8)), Status::segment);
        EXPECT_EQ(t.send(w.peer, message(w, AmCategory::long_, 1, a, 1, p.data(), p.size(), 8)), Status::segment);
        for (int i = 0; i < 100; ++i) {
            t.poll();
        }
        EXPECT_TRUE(w.delivered.empty());
    });
}

// A conduit with packets declares the largest Medium one of them carries
// with 16 arguments: the reference Get answers in such pieces, so it must
// be a Medium the conduit sends and delivers intact.
TEST_P(Conformance, PacketMediumArrivesWhole) {
    run([](World &w) {
        Transport &t = *w.t;
        const std::size_t packet = t.capabilities().max_packet_medium;
        if (!packet) {
            std::printf("[ conduit  ] %s: no packets (max_packet_medium 0): Get replies are the job's Medium\n", t.name());
            return;
        }
        EXPECT_LE(packet, t.capabilities().max_medium);
        std::uint32_t args[16];
        for (unsigned i = 0; i < 16; ++i) args[i] = 0x2000u + i;
        const std::string p = pattern(packet, 5);
        if (sender(w)) {
            EXPECT_EQ(t.send(w.peer, message(w, AmCategory::medium, 2, args, 16, p.data(), packet)), Status::ok);
        }
        if (!receiver(w)) return;
        ASSERT_TRUE(w.wait_delivered(1));
        EXPECT_EQ(w.delivered[0].payload, p);
        EXPECT_EQ(w.delivered[0].args.size(), 16u);
    });
}

// The reference Get's reply size: whole packets, at least one; without
// packets the job's largest Medium.
TEST(ConformanceCapabilities, GetRepliesAreWholePackets) {
    conduit::Capabilities c;
    c.max_medium = 65536;
    EXPECT_EQ(c.get_piece(16384), 16384u);  // no packets (smp)
    EXPECT_EQ(c.get_piece(0), 1u);
    c.max_packet_medium = 65379;            // udp on loopback
    EXPECT_EQ(c.get_piece(16384), 65379u);  // beside smp's Medium: one datagram, a quarter of the requests
    EXPECT_EQ(c.get_piece(65536), 65379u);  // udp alone: not a 64 KiB Medium and a 157-byte datagram
    c.max_packet_medium = 1344;             // udp at an MTU of 1500
    EXPECT_EQ(c.get_piece(16384), 16128u);  // 12 full datagrams
    EXPECT_EQ(c.get_piece(1000), 1344u);
    c.max_packet_medium = 100000;           // never above max_medium
    EXPECT_EQ(c.get_piece(16384), 65536u);
}

// Every conduit configure built (into libsluice or for the tests only) is
// under test: a conduit that drops out of the registry, e.g. a test-only one
// no longer linked in, fails here instead of vanishing from the suite.  In
// the MPI-launched mode, the mpi conduit is.
TEST(ConformanceRegistry, EveryBuiltConduitIsUnderTest) {
    if (mpi_launched()) {
        // Started by mpirun: the mpi conduit alone, registered by loading
        // libsluice-mpi before the registry was first read.
        const std::vector<Conduit> tested = conduits_under_test();
        ASSERT_EQ(tested.size(), 1u);
        EXPECT_TRUE(tested[0].name == "mpi" || tested[0].name == "mpi_alone") << tested[0].name;
        EXPECT_NE(tested[0].create, nullptr) << "libsluice-mpi did not register the mpi conduit";
        return;
    }
    std::vector<std::string> built;
#define SLUICE_CONDUIT_IN_LIBRARY(name) built.push_back(#name);
#define SLUICE_CONDUIT_IN_TESTS(name) built.push_back(#name);
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_IN_TESTS
    ASSERT_FALSE(built.empty()) << "conduits.def lists no conduit: sluice_config.h not included?";
    const std::vector<Conduit> tested = conduits_under_test();
    for (const std::string &name : built) {
        if (sluice_test::network_skipped(name)) continue;  // its own test runs the suite (SLUICETEST_NETWORK_SKIP)
        EXPECT_TRUE(std::any_of(tested.begin(), tested.end(), [&](const Conduit &c) { return c.name == name; }))
            << name << " is built but not in the registry the suite runs over";
    }
}

} // namespace

CONDUIT_TEST_SUITE(Conformance);

} // namespace conduit_test
