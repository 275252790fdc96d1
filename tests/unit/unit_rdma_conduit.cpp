// tests/unit/unit_rdma_conduit.cpp - the RDMA conduits' shared layer
// (src/conduits/common/rdma_conduit.hpp, peer_order.hpp) under a conduit
// whose "network" is a list the test fills: PeerOrder puts each stream back
// in order across the 16-bit wrap; the layer delivers in order, one
// handler at a time however many threads poll, nothing from a poll nested
// in a handler, at most poll_budget per poll; it hands every arrival back;
// take() defers; quiesce waits until the conduit is idle; a ping is
// answered with a pong; the wrapper cuts RDMA at Capabilities::rma_piece
// (no piece in its gap), queues the pieces that find no room, and
// notifies a cut Put with remote completion once, after its last piece;
// RDMA with itself is a copy completed by the next poll; NIC atomics run
// from the slots (the result written, the counter dropped, a full pool or
// no room refused); FreeList lends and takes back.
#include "conduits/common/free_list.hpp"
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
struct Slot : common::AtomicSlot {
    Slot *next = nullptr;
};

class ListConduit final : public common::RdmaConduit<Arrival, Slot> {
public:
    ListConduit() : RdmaConduit("list", Capabilities{}) { liveness_setup(2, 30, "SLUICE_LIST_TIMEOUT"); }

    std::deque<Arrival> wire;  // under lock_
    std::vector<int> handled;  // in handler order
    std::atomic<int> inside{0}, overlaps{0}, handed_back{0}, nested_delivered{0};
    std::atomic<int> refuse_first{0};  // take() refuses this many times
    bool nest = false;                 // each handler polls again
    int outstanding = 0;               // what idle() waits for; reap takes one
    std::vector<std::pair<Rank, std::uint8_t>> controls;

    // RDMA: rdma() takes a piece when fewer than `room` are
    // posted; reap completes them all.
    std::vector<std::size_t> pieces, offsets;  // lengths and offsets handed over
    std::vector<sluice::conduit::RmaOp *> posted;
    std::size_t room = 0;
    std::vector<char> local_buf, remote_buf;  // `bytes` each (rdma); offsets are into remote_buf
    std::atomic<int> sends{0};
    bool atomic_space = true;             // atomic_room's answer
    bool hold_atomics = false;            // reap leaves them in flight
    std::vector<Slot *> atomics_posted;   // reap completes them, fetched = op1 + 100
    void rdma(std::size_t piece, std::size_t posted_at_once, std::size_t bytes) {
        local_buf.assign(bytes, 0);
        remote_buf.assign(bytes, 0);
        sluice::conduit::TransportSetup two;
        two.size = 2;
        two.peers = {1};
        (void)init(two);
        capabilities_mutable().native_rma = true;
        capabilities_mutable().rma_piece = piece;
        room = posted_at_once;
    }
    void gap(std::size_t low, std::size_t high) {
        capabilities_mutable().rma_piece_gap_low = low;
        capabilities_mutable().rma_piece_gap_high = high;
    }

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
    Status send_impl(Rank, const sluice::conduit::AmMessage &) override {
        ++sends;
        return Status::ok;
    }
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, sluice::conduit::RmaOp *op,
                bool &later) override {
        auto *there = reinterpret_cast<void *>(remote);
        if (peer == setup().rank) return write ? self_rma(there, local, n, op, later) : self_rma(local, there, n, op, later);
        Guard g(*this);
        if (posted.size() >= room) return Status::not_ready;
        pieces.push_back(n);
        offsets.push_back(static_cast<std::size_t>(reinterpret_cast<const char *>(remote) - remote_buf.data()));
        posted.push_back(op);
        later = true;
        return Status::ok;
    }
    Status segment_create_impl(std::size_t, void **, std::string &) override { return Status::transport; }
    Status segment_connect_impl(const std::vector<sluice::conduit::SegmentRecord> &) override { return Status::ok; }

    std::string nic_atomics_support(sluice_dt_t, std::uint64_t) override { return ""; }
    Status atomics_create() override {
        atomic_.create([](Slot &) {});
        return Status::ok;
    }
    bool atomic_room(Rank) override { return atomic_space; }
    Status atomic_post(Slot *s, std::uint64_t, sluice_aop_t, sluice_dt_t, std::uint64_t op1, std::uint64_t) override {
        s->fetched = op1 + 100;
        atomics_posted.push_back(s);
        return Status::ok;
    }

    bool up() const override { return true; }
    bool stats_wanted() const override { return false; }
    void stats_print() override {}
    void reap() override {
        if (!hold_atomics) {
            for (Slot *s : atomics_posted) atomic_.done(s, true);
            atomics_posted.clear();
        }
        for (sluice::conduit::RmaOp *op : posted) rma_complete(op);
        posted.clear();
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

// ---- the wrapper's RDMA pieces (Capabilities::rma_piece) ----

TEST(RdmaConduit, TheWrapperCutsATransferAtThePieceSize) {
    ListConduit c;
    c.rdma(1000, 100, 3500);
    std::atomic<std::uint64_t> counter{0};
    ASSERT_EQ(c.put_nb(1, c.remote_buf.data(), c.local_buf.data(), 3500, counter), Status::ok);
    EXPECT_EQ(c.pieces, (std::vector<std::size_t>{1000, 1000, 1000, 500}));
    EXPECT_EQ(c.offsets, (std::vector<std::size_t>{0, 1000, 2000, 3000}));
    EXPECT_EQ(counter.load(), 1u);  // until every piece completed
    c.rma_wait(counter);
    EXPECT_EQ(counter.load(), 0u);
}

TEST(RdmaConduit, NoPieceFallsInTheGap) {
    ListConduit c;
    c.rdma(4096, 100, 8192);
    c.gap(880, 2048);
    std::atomic<std::uint64_t> counter{0};
    // A full piece would leave 904 bytes: it gives up 2048 of its own.
    ASSERT_EQ(c.put_nb(1, c.remote_buf.data(), c.local_buf.data(), 5000, counter), Status::ok);
    EXPECT_EQ(c.pieces, (std::vector<std::size_t>{2048, 2952}));
    c.pieces.clear();
    // Within a piece but in the gap: the gap's low end, then the rest.
    ASSERT_EQ(c.put_nb(1, c.remote_buf.data(), c.local_buf.data(), 1900, counter), Status::ok);
    EXPECT_EQ(c.pieces, (std::vector<std::size_t>{880, 880, 140}));
    c.pieces.clear();
    ASSERT_EQ(c.put_nb(1, c.remote_buf.data(), c.local_buf.data(), 8192, counter), Status::ok);
    EXPECT_EQ(c.pieces, (std::vector<std::size_t>{4096, 4096}));
    c.rma_wait(counter);
}

TEST(RdmaConduit, PiecesWithoutRoomWaitOnTheBacklogAndGoInOrder) {
    ListConduit c;
    c.rdma(100, 2, 1000);
    std::atomic<std::uint64_t> counter{0};
    ASSERT_EQ(c.get_nb(c.local_buf.data(), 1, c.remote_buf.data(), 1000, counter), Status::ok);
    EXPECT_EQ(c.pieces.size(), 2u);
    // An immediate transfer behind them is refused, nothing started.
    std::atomic<std::uint64_t> other{0};
    EXPECT_EQ(c.put_nb(1, c.remote_buf.data(), c.local_buf.data(), 10, other, true), Status::not_ready);
    EXPECT_EQ(other.load(), 0u);
    c.rma_wait(counter);
    ASSERT_EQ(c.pieces.size(), 10u);
    for (std::size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(c.pieces[i], 100u);
        EXPECT_EQ(c.offsets[i], 100 * i);
    }
}

TEST(RdmaConduit, ACutPutWithRemoteCompletionNotifiesOnceAfterItsLastPiece) {
    ListConduit c;
    c.rdma(100, 100, 250);
    sluice::conduit::AmMessage notify;
    notify.header.category = sluice::conduit::AmCategory::short_;
    std::atomic<std::uint64_t> counter{0};
    ASSERT_EQ(c.put_rc(1, c.remote_buf.data(), c.local_buf.data(), 250, notify, counter), Status::ok);
    EXPECT_EQ(c.pieces, (std::vector<std::size_t>{100, 100, 50}));
    EXPECT_EQ(c.sends.load(), 0);
    c.rma_wait(counter);
    EXPECT_EQ(c.sends.load(), 1);
}

// ---- RDMA with itself, NIC atomics, FreeList ----

TEST(RdmaConduit, RdmaWithItselfIsACopyCompletedByTheNextPoll) {
    ListConduit c;
    c.rdma(1000, 100, 64);
    for (std::size_t i = 0; i < 64; ++i) c.local_buf[i] = static_cast<char>(i + 1);
    std::atomic<std::uint64_t> counter{0};
    ASSERT_EQ(c.put_nb(0, c.remote_buf.data(), c.local_buf.data(), 64, counter), Status::ok);
    EXPECT_EQ(c.remote_buf, c.local_buf);  // copied at once
    EXPECT_TRUE(c.pieces.empty());          // never reached the "network"
    EXPECT_EQ(counter.load(), 1u);          // completed by the poll, like a transfer
    (void)c.poll_all();
    EXPECT_EQ(counter.load(), 0u);
}

TEST(RdmaConduit, NicAtomicsRunFromTheSlots) {
    ListConduit c;
    c.rdma(1000, 100, 64);
    std::atomic<std::uint64_t> counter{0};
    std::uint64_t result = 0;
    ASSERT_EQ(c.nic_atomic(1, 0, SLUICE_OP_FADD, SLUICE_DT_U64, 5, 0, &result, counter), Status::ok);
    EXPECT_EQ(counter.load(), 1u);
    (void)c.poll_all();
    EXPECT_EQ(counter.load(), 0u);
    EXPECT_EQ(result, 105u);
    EXPECT_STREQ(c.nic_atomics_name(), "list");
    // No room: refused, nothing started, counted as the network full.
    c.atomic_space = false;
    EXPECT_EQ(c.nic_atomic(1, 0, SLUICE_OP_ADD, SLUICE_DT_U64, 1, 0, nullptr, counter), Status::not_ready);
    EXPECT_EQ(counter.load(), 0u);
    EXPECT_EQ(c.counters().full, 1u);
    // Every slot in flight: the next one waits for a completion.
    c.atomic_space = true;
    c.hold_atomics = true;
    std::uint32_t results[300] = {};
    std::size_t started = 0;
    while (started < 300 &&
           c.nic_atomic(1, 0, SLUICE_OP_FINC, SLUICE_DT_U32, started, 0, &results[started], counter) == Status::ok)
        ++started;
    EXPECT_EQ(started, common::AtomicSlots<Slot>::count);
    EXPECT_EQ(counter.load(), started);
    c.hold_atomics = false;
    (void)c.poll_all();
    EXPECT_EQ(counter.load(), 0u);
    for (std::size_t i = 0; i < started; ++i) ASSERT_EQ(results[i], i + 100);  // 4 bytes each, in place
}

TEST(FreeList, LendsInOrderAndCounts) {
    struct Item {
        Item *next = nullptr;
    } items[3];
    common::FreeList<Item> f;
    EXPECT_TRUE(f.empty());
    EXPECT_EQ(f.take(), nullptr);
    f.fill(items, 3);
    EXPECT_EQ(f.size(), 3u);
    EXPECT_EQ(f.take(), &items[0]);
    EXPECT_EQ(f.take(), &items[1]);
    f.give(&items[0]);
    EXPECT_EQ(f.front(), &items[0]);
    EXPECT_EQ(f.size(), 2u);
    f.clear();
    EXPECT_TRUE(f.empty());
    EXPECT_EQ(f.size(), 0u);
}

} // namespace
