// tests/unit/unit_reliable.cpp - src/conduits/common/reliable.hpp, the
// reliability protocol as a state machine: two ends wired through a lossy,
// reordering "network" the test controls, with the time passed in.  In
// order, loss, reorder, duplicate, window full, timeout and backoff, the
// round trip estimate, peer timeout, and the sequence wrap.
#include "conduits/common/reliable.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace rel = sluice::conduit::common::reliable;
using Arrival = rel::Receiver::Arrival;

namespace {

rel::Config config() {
    rel::Config c;
    c.window = 8;
    c.recv_window = 8;
    c.ack_delay_ns = 50'000;
    c.rto_min_ns = 1'000'000;
    c.rto_max_ns = 16'000'000;
    c.rto_initial_ns = 1'000'000;
    c.peer_timeout_ns = 100'000'000;
    return c;
}

// Every packet delivered, in order: the receiver's view of a stream.
struct Sink {
    rel::Receiver rx{config()};
    std::vector<std::uint32_t> delivered;
    Arrival take(std::uint32_t seq, std::uint64_t now) {
        const Arrival a = rx.data(seq, now);
        if (a == Arrival::in_order) {
            delivered.push_back(seq);
            for (std::uint32_t s; rx.next_held(s);) delivered.push_back(s);
        }
        return a;
    }
};

std::vector<std::uint32_t> numbers(std::uint32_t from, unsigned n) {
    std::vector<std::uint32_t> v;
    for (unsigned i = 0; i < n; ++i) v.push_back(from + i);
    return v;
}

TEST(Reliable, InOrderAcksFreeTheWindowAndMeasureTheRoundTrip) {
    rel::Sender tx(config());
    Sink sink;
    std::vector<std::uint32_t> sent, freed;
    for (int i = 0; i < 8; ++i) {
        ASSERT_TRUE(tx.window_open());
        sent.push_back(tx.sent(1000));
    }
    EXPECT_FALSE(tx.window_open());  // window full: the caller queues
    EXPECT_EQ(sent.front(), rel::first_seq);
    for (std::uint32_t s : sent) EXPECT_EQ(sink.take(s, 1100), Arrival::in_order);
    EXPECT_EQ(sink.delivered, sent);
    EXPECT_TRUE(sink.rx.ack_owed());
    EXPECT_TRUE(sink.rx.ack_due(1100));  // a quarter window (2) came: at once
    EXPECT_EQ(sink.rx.ack(), sent.back());
    EXPECT_EQ(sink.rx.sack(), 0u);
    EXPECT_EQ(tx.acked(sink.rx.ack(), sink.rx.sack(), 201'000, [&](std::uint32_t s) { freed.push_back(s); }),
              rel::Sender::no_resend);
    sink.rx.ack_carried();
    EXPECT_FALSE(sink.rx.ack_owed());
    EXPECT_EQ(freed, sent);
    EXPECT_TRUE(tx.window_open());
    EXPECT_EQ(tx.srtt_ns(), 200'000u);
    EXPECT_EQ(tx.rto_ns(), 1'000'000u);  // 200 + 4 x 100 us, raised to rto_min
    EXPECT_EQ(tx.retransmitted(), 0u);
}

TEST(Reliable, UnstampedSendsTakeTheirTimeFromStamp) {
    // A caller that reads the clock only once its packets left (udp's
    // sends off the round trip's path) sends them unstamped, then stamps.
    rel::Sender tx(config());
    EXPECT_EQ(tx.oldest(), rel::first_seq);  // nothing in flight: the next number
    const std::uint32_t a = tx.sent(5'000'000);
    const std::uint32_t b = tx.sent(rel::unstamped), c = tx.sent(rel::unstamped);
    EXPECT_EQ(tx.oldest(), a);
    EXPECT_EQ(tx.next_due(), 6'000'000u);  // the unstamped ones set no deadline
    tx.stamp(5'500'000);
    EXPECT_EQ(tx.next_due(), 6'000'000u);
    std::vector<std::uint32_t> resent;
    auto resend = [&](std::uint32_t s) { resent.push_back(s); };
    EXPECT_FALSE(tx.timers(6'000'000, resend));
    EXPECT_EQ(resent, std::vector<std::uint32_t>{a});  // b and c left at 5.5 ms, not at 0
    EXPECT_EQ(tx.next_due(), 6'500'000u);
    tx.timers(6'500'000, resend);
    EXPECT_EQ(resent, (std::vector<std::uint32_t>{a, b, c}));
    // Their round trip counts from the stamp: b acked at 5.7 ms (a, sent
    // again, gives no sample).
    rel::Sender fresh(config());
    fresh.sent(rel::unstamped);
    fresh.stamp(1'000'000);
    fresh.acked(fresh.oldest(), 0, 1'300'000, [](std::uint32_t) {});
    EXPECT_EQ(fresh.srtt_ns(), 300'000u);
    EXPECT_EQ(fresh.oldest(), fresh.next_seq());
    // The peer timeout counts from the stamp too.
    fresh.sent(rel::unstamped);
    fresh.stamp(200'000'000);
    EXPECT_FALSE(fresh.timers(200'000'000 + 100'000'000, [](std::uint32_t) {}));
    EXPECT_TRUE(fresh.timers(200'000'000 + 100'000'001, [](std::uint32_t) {}));
}

TEST(Reliable, RoundTripEstimateSmoothsAndIsClamped) {
    rel::Sender tx(config());
    auto one = [&](std::uint64_t at, std::uint64_t rtt) {
        tx.sent(at);
        tx.acked(tx.next_seq() - 1, 0, at + rtt, [](std::uint32_t) {});
    };
    one(0, 400'000);  // first: srtt 400, deviation 200 us; 1.2 ms
    EXPECT_EQ(tx.rttvar_ns(), 200'000u);
    EXPECT_EQ(tx.rto_ns(), 1'200'000u);
    one(1'000'000, 1'200'000);  // delta 800: deviation (600 + 800) / 4, srtt (2800 + 1200) / 8
    EXPECT_EQ(tx.rttvar_ns(), 350'000u);
    EXPECT_EQ(tx.srtt_ns(), 500'000u);
    EXPECT_EQ(tx.rto_ns(), 1'900'000u);
    one(10'000'000, 40'000'000);  // a long stall: capped at rto_max
    EXPECT_EQ(tx.rto_ns(), 16'000'000u);
}

TEST(Reliable, LoneDataAckWaitsForTheDelay) {
    rel::Sender tx(config());
    Sink sink;
    EXPECT_EQ(sink.take(tx.sent(0), 10), Arrival::in_order);
    EXPECT_TRUE(sink.rx.ack_owed());
    EXPECT_FALSE(sink.rx.ack_due(10 + 49'999));
    EXPECT_EQ(sink.rx.ack_deadline(), 10u + 50'000);
    EXPECT_TRUE(sink.rx.ack_due(10 + 50'000));
}

TEST(Reliable, LossIsResentAfterTheTimeoutWithBackoff) {
    rel::Sender tx(config());
    Sink sink;
    const std::uint32_t lost = tx.sent(0);
    EXPECT_EQ(tx.next_due(), 1'000'000u);
    std::vector<std::uint32_t> resent;
    auto resend = [&](std::uint32_t s) { resent.push_back(s); };
    EXPECT_FALSE(tx.timers(999'999, resend));
    EXPECT_TRUE(resent.empty());
    EXPECT_FALSE(tx.timers(1'000'000, resend));
    EXPECT_EQ(resent, std::vector<std::uint32_t>{lost});
    EXPECT_EQ(tx.next_due(), 3'000'000u);  // doubled: 2 ms after the resend
    EXPECT_FALSE(tx.timers(2'999'999, resend));
    EXPECT_EQ(resent.size(), 1u);
    EXPECT_FALSE(tx.timers(3'000'000, resend));  // lost again
    EXPECT_EQ(resent.size(), 2u);
    EXPECT_EQ(tx.next_due(), 7'000'000u);   // 4 ms
    tx.timers(7'000'000, resend);
    tx.timers(15'000'000, resend);
    tx.timers(31'000'000, resend);
    EXPECT_EQ(tx.next_due(), 47'000'000u);  // 16 ms: capped at rto_max
    EXPECT_EQ(tx.retransmitted(), 5u);
    // It gets through; a retransmission gives no round trip sample (Karn).
    EXPECT_EQ(sink.take(lost, 47'000'000), Arrival::in_order);
    tx.acked(sink.rx.ack(), sink.rx.sack(), 47'000'100, [](std::uint32_t) {});
    EXPECT_EQ(tx.srtt_ns(), 0u);
    EXPECT_EQ(tx.in_flight(), 0u);
    EXPECT_EQ(tx.next_due(), 47'000'000u);  // stale until the next timers()
    EXPECT_FALSE(tx.timers(47'000'200, resend));
    EXPECT_EQ(tx.next_due(), rel::no_deadline);
}

TEST(Reliable, ReorderIsHeldSelectivelyAckedAndTheHoleResentAtOnce) {
    rel::Sender tx(config());
    Sink sink;
    std::vector<std::uint32_t> s;
    for (int i = 0; i < 5; ++i) s.push_back(tx.sent(0));
    // s[0] is late; s[1], s[3] arrive first.
    EXPECT_EQ(sink.take(s[1], 10), Arrival::early);
    EXPECT_EQ(sink.take(s[3], 10), Arrival::early);
    EXPECT_TRUE(sink.rx.ack_due(10));  // a hole: at once
    EXPECT_EQ(sink.rx.ack(), s[0] - 1);
    EXPECT_EQ(sink.rx.sack(), 0b101u);  // s[0]+1 and s[0]+3: bits 0 and 2
    EXPECT_EQ(sink.rx.held(), 2u);
    EXPECT_TRUE(sink.delivered.empty());
    // The sender learns of the hole and resends s[0] now, once.
    EXPECT_EQ(tx.acked(sink.rx.ack(), sink.rx.sack(), 20, [](std::uint32_t) { FAIL(); }),
              static_cast<std::int64_t>(s[0]));
    EXPECT_EQ(tx.acked(sink.rx.ack(), sink.rx.sack(), 21, [](std::uint32_t) { FAIL(); }), rel::Sender::no_resend);
    // The selectively acked ones are not resent by their timers.
    std::vector<std::uint32_t> resent;
    tx.timers(1'000'000, [&](std::uint32_t x) { resent.push_back(x); });
    EXPECT_EQ(resent, (std::vector<std::uint32_t>{s[2], s[4]}));
    EXPECT_EQ(sink.take(s[0], 30), Arrival::in_order);
    EXPECT_EQ(sink.delivered, (std::vector<std::uint32_t>{s[0], s[1]}));
    EXPECT_EQ(sink.take(s[2], 31), Arrival::in_order);
    EXPECT_EQ(sink.delivered, numbers(s[0], 4));
    EXPECT_EQ(sink.take(s[4], 32), Arrival::in_order);
    EXPECT_EQ(sink.delivered, numbers(s[0], 5));
    EXPECT_EQ(sink.rx.held(), 0u);
    EXPECT_EQ(sink.rx.sack(), 0u);
}

TEST(Reliable, DuplicatesAreDroppedAndAckedAgain) {
    rel::Sender tx(config());
    Sink sink;
    const std::uint32_t a = tx.sent(0), b = tx.sent(0), c = tx.sent(0);
    EXPECT_EQ(sink.take(a, 1), Arrival::in_order);
    sink.rx.ack_carried();
    EXPECT_EQ(sink.take(a, 2), Arrival::duplicate);  // delivered already
    EXPECT_TRUE(sink.rx.ack_due(2));                 // its ack was lost: again, at once
    EXPECT_EQ(sink.take(c, 3), Arrival::early);
    EXPECT_EQ(sink.take(c, 4), Arrival::duplicate);  // held already
    EXPECT_EQ(sink.take(b, 5), Arrival::in_order);
    EXPECT_EQ(sink.delivered, (std::vector<std::uint32_t>{a, b, c}));
    // An old ack, and the same ack twice, free nothing more.
    int freed = 0;
    tx.acked(a, 0, 10, [&](std::uint32_t) { ++freed; });
    tx.acked(a, 0, 11, [&](std::uint32_t) { ++freed; });
    tx.acked(a - 5, 0, 12, [&](std::uint32_t) { ++freed; });
    EXPECT_EQ(freed, 1);
    EXPECT_EQ(tx.in_flight(), 2u);
}

TEST(Reliable, BeyondTheReceiveWindowIsDropped) {
    Sink sink;
    const std::uint32_t e = sink.rx.expected();
    EXPECT_EQ(sink.take(e + 8, 0), Arrival::beyond);
    EXPECT_EQ(sink.take(e + 7, 0), Arrival::early);
    EXPECT_EQ(sink.take(e - 1, 0), Arrival::duplicate);
    EXPECT_EQ(sink.rx.held(), 1u);
}

TEST(Reliable, SilentPeerIsNoticedAfterThePeerTimeout) {
    rel::Sender tx(config());
    auto ignore = [](std::uint32_t) {};
    tx.sent(0);
    EXPECT_FALSE(tx.timers(50'000'000, ignore));
    tx.heard(60'000'000);  // anything from the peer counts
    EXPECT_FALSE(tx.timers(150'000'000, ignore));
    EXPECT_TRUE(tx.timers(160'000'001, ignore));
    // Nothing in flight: never silent.
    rel::Sender idle(config());
    EXPECT_FALSE(idle.timers(10'000'000'000, ignore));
}

TEST(Reliable, ManyPacketsAcrossTheWrapUnderLossAndReorder) {
    // 5000 packets through a network that drops every 7th transmission and
    // swaps neighbours: every one delivered exactly once, in order.
    rel::Config c = config();
    c.window = c.recv_window = 32;
    rel::Sender tx(c);
    rel::Receiver rx(c);
    std::vector<std::uint32_t> delivered, wire;
    std::uint64_t now = 0;
    unsigned transmissions = 0, sent = 0;
    auto put_on_wire = [&](std::uint32_t s) {
        if (++transmissions % 7) wire.push_back(s);
    };
    while (delivered.size() < 5000) {
        now += 10'000;
        while (sent < 5000 && tx.window_open()) {
            put_on_wire(tx.sent(now));
            ++sent;
        }
        for (std::size_t i = 1; i < wire.size(); i += 2) std::swap(wire[i - 1], wire[i]);
        for (std::uint32_t s : wire)
            if (rx.data(s, now) == Arrival::in_order) {
                delivered.push_back(s);
                for (std::uint32_t h; rx.next_held(h);) delivered.push_back(h);
            }
        wire.clear();
        const std::int64_t again = tx.acked(rx.ack(), rx.sack(), now, [](std::uint32_t) {});
        rx.ack_carried();
        if (again != rel::Sender::no_resend) put_on_wire(static_cast<std::uint32_t>(again));
        if (now >= tx.next_due()) {
            ASSERT_FALSE(tx.timers(now, put_on_wire));
        }
        ASSERT_LT(now, 10'000'000'000u) << "stuck at " << delivered.size();
    }
    EXPECT_EQ(delivered, numbers(rel::first_seq, 5000));  // crosses 2^32 after 1024
    EXPECT_GT(tx.retransmitted(), 0u);
}

} // namespace
