// tests/unit/unit_liveness.cpp - src/conduits/common/liveness.hpp: the
// check runs by elapsed time, however slow the polls, and a peer sent to
// is pinged after half the timeout and taken for dead after the other half.
#include "conduits/common/liveness.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace common = sluice::conduit::common;

namespace {

using Timer = common::LivenessTimer;

// The timer's clock, set by the test.
std::uint64_t fake_now = 0;
std::uint64_t fake_clock() { return fake_now; }

TEST(Liveness, TimerIsDueOncePerPeriodHoweverFewThePolls) {
    Timer t;
    fake_now = 1'000'000'000;
    // The first clock reading is due (nothing ran yet), then not again
    // within the period, however many polls.
    int due = 0;
    for (unsigned i = 0; i < Timer::clock_every; ++i) due += t.due(fake_clock);
    EXPECT_EQ(due, 1);
    fake_now += Timer::liveness_period_ns - 1;
    for (unsigned i = 0; i < 100 * Timer::clock_every; ++i) EXPECT_FALSE(t.due(fake_clock));
    // Slow polls: once a period has passed, the next clock reading is due.
    fake_now += 1;
    due = 0;
    for (unsigned i = 0; i < Timer::clock_every; ++i) due += t.due(fake_clock);
    EXPECT_EQ(due, 1);
}

TEST(Liveness, APeerSentToIsPingedAtHalfTheTimeoutAndDeadAfterTheOtherHalf) {
    common::PeerTable<common::PeerLife> peers;
    peers.reset(3);
    for (sluice::conduit::Rank r = 1; r < 3; ++r) peers.insert(r, std::make_unique<common::PeerLife>());
    const double timeout = 1.0;
    const std::uint64_t s = 1'000'000'000;
    std::vector<sluice::conduit::Rank> pinged, ponged;
    auto ping = [&](sluice::conduit::Rank r) { pinged.push_back(r); };
    auto pong = [&](sluice::conduit::Rank r) { ponged.push_back(r); };
    peers.find(2)->sent = true;
    EXPECT_EQ(common::liveness_check(peers, 0, 10 * s, timeout, ping, pong), 3u);  // owed from now
    EXPECT_TRUE(pinged.empty());
    EXPECT_EQ(common::liveness_check(peers, 0, 10 * s + s / 4, timeout, ping, pong), 3u);
    EXPECT_TRUE(pinged.empty());
    EXPECT_EQ(common::liveness_check(peers, 0, 10 * s + s / 2 + 1, timeout, ping, pong), 3u);
    ASSERT_EQ(pinged, std::vector<sluice::conduit::Rank>{2});
    EXPECT_EQ(common::liveness_check(peers, 0, 11 * s + 2, timeout, ping, pong), 2u);  // silent: rank 2
    // A peer heard from is owed nothing; a pong the network had no room
    // for is sent at the next check.
    peers.find(2)->heard = true;
    peers.find(1)->pong_owed = true;
    EXPECT_EQ(common::liveness_check(peers, 0, 12 * s, timeout, ping, pong), 3u);
    EXPECT_EQ(ponged, std::vector<sluice::conduit::Rank>{1});
    EXPECT_EQ(common::liveness_check(peers, 0, 20 * s, timeout, ping, pong), 3u);
    // Peers never sent to are never pinged.
    EXPECT_EQ(pinged.size(), 1u);
}

// A peer that answered and was sent more in the same period, then fell
// silent (stopped while its senders wait for its credits, sending nothing
// more): still pinged and found, not forgotten because it was heard.
TEST(Liveness, APeerSentToAndHeardInOnePeriodThenSilentIsFound) {
    common::PeerTable<common::PeerLife> peers;
    peers.reset(2);
    peers.insert(1, std::make_unique<common::PeerLife>());
    const double timeout = 1.0;
    const std::uint64_t s = 1'000'000'000;
    std::vector<sluice::conduit::Rank> pinged;
    auto ping = [&](sluice::conduit::Rank r) { pinged.push_back(r); };
    auto pong = [](sluice::conduit::Rank) {};
    // Steady traffic both ways: never pinged.
    for (int i = 0; i < 100; ++i) {
        peers.find(1)->sent = peers.find(1)->heard = true;
        EXPECT_EQ(common::liveness_check(peers, 0, 10 * s + i * s / 50, timeout, ping, pong), 2u);
    }
    EXPECT_TRUE(pinged.empty());
    // Then nothing more either way.
    const std::uint64_t last = 10 * s + 99 * s / 50;
    EXPECT_EQ(common::liveness_check(peers, 0, last + s / 2 + 1, timeout, ping, pong), 2u);
    ASSERT_EQ(pinged, std::vector<sluice::conduit::Rank>{1});
    EXPECT_EQ(common::liveness_check(peers, 0, last + s + 2, timeout, ping, pong), 1u);
}

} // namespace
