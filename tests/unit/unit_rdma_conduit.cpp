// tests/unit/unit_rdma_conduit.cpp - the RDMA conduits' shared layer
// (src/conduits/common/rdma_conduit.hpp, peer_order.hpp) under a conduit
// whose "network" is a list the test fills: PeerOrder puts each stream back
// in order across the 16-bit wrap; the layer delivers in order, one
// handler at a time however many threads poll, nothing from a poll nested
// in a handler, at most poll_budget per poll; it hands every arrival back;
// take() defers; quiesce waits until the conduit is idle; a ping is
// answered with a pong.
#include "conduits/common/peer_order.hpp"
#include "conduits/common/rdma_conduit.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

namespace {

namespace common = sluice::conduit::common;
using sluice::conduit::Capabilities;
using sluice::conduit::PollMode;
using sluice::conduit::Rank;
using sluice::conduit::Status;

// ---- PeerOrder ----

TEST(PeerOrder, InOrderArrivalsGoStraightThrough) {
    common::PeerOrder<int> o;
    std::vector<int> ready;
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(o.arrived(i, o.next_send(), 0, ready));
    EXPECT_EQ(ready, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(o.held(), 0u);
}

TEST(PeerOrder, EarlyArrivalsWaitForTheOnesBeforeThem) {
    common::PeerOrder<int> o;
    std::vector<int> ready;
    EXPECT_FALSE(o.arrived(3, 3, 0, ready));
    EXPECT_FALSE(o.arrived(1, 1, 0, ready));
    EXPECT_FALSE(o.arrived(2, 2, 0, ready));
    EXPECT_TRUE(ready.empty());
    EXPECT_EQ(o.held(), 3u);
    EXPECT_FALSE(o.in_turn(2));
    EXPECT_TRUE(o.in_turn(0));
    EXPECT_TRUE(o.arrived(0, 0, 0, ready));
    EXPECT_EQ(ready, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(o.held(), 0u);
}

TEST(PeerOrder, StreamsAreOrderedEachOnItsOwn) {
    common::PeerOrder<int, 2> o;
    std::vector<int> ready;
    EXPECT_FALSE(o.arrived(101, 1, 1, ready));  // stream 1, second
    EXPECT_TRUE(o.arrived(0, 0, 0, ready));     // stream 0, first
    EXPECT_TRUE(o.arrived(100, 0, 1, ready));   // stream 1, first: releases 101
    EXPECT_TRUE(o.arrived(1, 1, 0, ready));
    EXPECT_EQ(ready, (std::vector<int>{0, 100, 101, 1}));
}

TEST(PeerOrder, UnsendGivesTheNumberBack) {
    common::PeerOrder<int> o;
    EXPECT_EQ(o.next_send(), 0);
    o.unsend();
    EXPECT_EQ(o.next_send(), 0);
    EXPECT_EQ(o.next_send(), 1);
}

TEST(PeerOrder, TwoHundredThousandMessagesReorderedAcrossTheWrap) {
    common::PeerOrder<std::uint32_t> o;
    std::vector<std::uint32_t> ready;
    std::vector<std::pair<std::uint32_t, std::uint16_t>> window;
    std::uint32_t x = 12345;
    for (std::uint32_t i = 0; i < 200'000; ++i) {
        window.emplace_back(i, o.next_send());
        // Up to 8 in flight, completed in a pseudo-random order.
        while (window.size() > 8 || (i == 199'999 && !window.empty())) {
            x = x * 1103515245u + 12345u;
            const std::size_t k = (x >> 16) % window.size();
            (void)o.arrived(window[k].first, window[k].second, 0, ready);
            window.erase(window.begin() + static_cast<std::ptrdiff_t>(k));
        }
    }
    ASSERT_EQ(ready.size(), 200'000u);
    for (std::uint32_t i = 0; i < ready.size(); ++i) ASSERT_EQ(ready[i], i);
}

// ---- RdmaConduit ----

struct Arrival {
    int id = 0;
    Rank source = 0;
    std::uint16_t seq = 0;
};

// A conduit whose network is `wire`: reap moves what is there to the
// ready queue through each source's PeerOrder.
class ListConduit final : public common::RdmaConduit<Arrival> {
public:
    ListConduit() : RdmaConduit("list", Capabilities{}) { liveness_setup(2, 30, "SLUICE_LIST_TIMEOUT"); }

    std::deque<Arrival> wire;  // under lock_
    std::vector<int> handled;  // in handler order
    std::atomic<int> inside{0}, overlaps{0}, handed_back{0}, nested_delivered{0};
    std::atomic<int> refuse_first{0};  // take() refuses this many times
    bool nest = false;                 // each handler polls again
    int outstanding = 0;               // what idle() waits for; reap takes one
    std::vector<std::pair<Rank, std::uint8_t>> controls;

    int poll_all() { return poll(PollMode::all); }
    void put(int id, Rank source, std::uint16_t seq) {
        Guard g(*this);
        wire.push_back(Arrival{id, source, seq});
    }
    void ping_from(Rank source) {
        Guard g(*this);
        control_arrived(source, common::category_ping);
    }
    void quiesce_now() { quiesce_impl(); }
    const common::Counters &counters() const { return counters_; }
    static constexpr unsigned budget = poll_budget;

protected:
    Status init_impl() override { return Status::ok; }
    Status send_impl(Rank, const sluice::conduit::AmMessage &) override { return Status::ok; }
    Status segment_create_impl(std::size_t, void **, std::string &) override { return Status::transport; }
    Status segment_connect_impl(const std::vector<sluice::conduit::SegmentRecord> &) override { return Status::ok; }

    bool up() const override { return true; }
    void reap() override {
        if (outstanding) --outstanding;
        while (!wire.empty()) {
            const Arrival a = wire.front();
            wire.pop_front();
            heard(a.source);
            if (!order_[a.source].arrived(a, a.seq, 0, ready_)) ++counters_.held;
        }
    }
    bool take(const Arrival &) override {
        if (refuse_first.load() == 0) return true;
        --refuse_first;
        return false;
    }
    void deliver_one(const Arrival &a) override {
        if (inside.fetch_add(1) != 0) ++overlaps;
        handled.push_back(a.id);
        std::this_thread::yield();
        if (nest) nested_delivered += poll_all();
        inside.fetch_sub(1);
    }
    void delivered(const Arrival &) override { ++handed_back; }
    void control_send(Rank peer, std::uint8_t category) override { controls.emplace_back(peer, category); }
    bool idle() override { return outstanding == 0; }
    std::string path(Rank) const override { return "a list"; }

private:
    common::PeerOrder<Arrival> order_[2];
};

TEST(RdmaConduit, DeliversEachPeersMessagesInItsSendOrder) {
    ListConduit c;
    c.put(2, 0, 2);
    c.put(10, 1, 0);
    c.put(1, 0, 1);
    c.put(0, 0, 0);
    c.put(11, 1, 1);
    EXPECT_EQ(c.poll_all(), 5);
    EXPECT_EQ(c.handled, (std::vector<int>{10, 0, 1, 2, 11}));
    EXPECT_EQ(c.handed_back.load(), 5);
    EXPECT_EQ(c.counters().held, 2u);
}

TEST(RdmaConduit, APollDeliversAtMostItsBudget) {
    ListConduit c;
    const int n = static_cast<int>(ListConduit::budget) + 10;
    for (int i = 0; i < n; ++i) c.put(i, 0, static_cast<std::uint16_t>(i));
    EXPECT_EQ(c.poll_all(), static_cast<int>(ListConduit::budget));
    EXPECT_EQ(c.poll_all(), 10);
    EXPECT_EQ(c.handed_back.load(), n);
}

TEST(RdmaConduit, APollNestedInAHandlerDeliversNothing) {
    ListConduit c;
    c.nest = true;
    for (int i = 0; i < 4; ++i) c.put(i, 0, static_cast<std::uint16_t>(i));
    EXPECT_EQ(c.poll_all(), 4);
    EXPECT_EQ(c.nested_delivered.load(), 0);
    EXPECT_EQ(c.handled, (std::vector<int>{0, 1, 2, 3}));
}

TEST(RdmaConduit, RepliesOnlyPollsDeliverNothing) {
    ListConduit c;
    c.put(0, 0, 0);
    EXPECT_EQ(c.poll(PollMode::replies_only), 0);
    EXPECT_EQ(c.poll_all(), 1);
}

TEST(RdmaConduit, OneHandlerAtATimeHoweverManyThreadsPoll) {
    ListConduit c;
    constexpr int n = 3000;
    std::atomic<bool> go{false};
    std::thread feeder([&] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < n; ++i) c.put(i, 0, static_cast<std::uint16_t>(i));
    });
    std::vector<std::thread> pollers;
    for (int t = 0; t < 3; ++t)
        pollers.emplace_back([&] {
            while (!go.load()) std::this_thread::yield();
            while (c.handed_back.load() < n) c.poll_all();
        });
    go.store(true);
    feeder.join();
    for (auto &t : pollers) t.join();
    EXPECT_EQ(c.overlaps.load(), 0);
    ASSERT_EQ(c.handled.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) ASSERT_EQ(c.handled[static_cast<std::size_t>(i)], i);
}

TEST(RdmaConduit, TakeRefusingPutsTheDeliveryOff) {
    ListConduit c;
    c.refuse_first = 1;
    c.put(0, 0, 0);
    EXPECT_EQ(c.poll_all(), 0);
    EXPECT_EQ(c.counters().deferred, 1u);
    EXPECT_EQ(c.poll_all(), 1);
}

TEST(RdmaConduit, QuiesceWaitsUntilIdleAndDeliversMeanwhile) {
    ListConduit c;
    c.outstanding = 5;  // idle after five reaps
    c.put(0, 0, 0);
    c.quiesce_now();
    EXPECT_EQ(c.outstanding, 0);
    EXPECT_EQ(c.handled, (std::vector<int>{0}));
}

TEST(RdmaConduit, APingIsAnsweredWithAPong) {
    ListConduit c;
    c.ping_from(1);
    ASSERT_EQ(c.controls.size(), 1u);
    EXPECT_EQ(c.controls[0].first, 1u);
    EXPECT_EQ(c.controls[0].second, common::category_pong);
}

} // namespace
