// tests/unit/unit_credit_memory.cpp - SLUICE_CREDIT_MEMORY: the defaults by
// job size brought within a bound of request-buffer memory per rank
// (src/credit/knobs.cpp, fit_memory), through config_from_knobs as a
// conduit calls it.
#include "credit/knobs.hpp"
#include "unit_env.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using sluice::credit::Config;
using sluice::credit::Policy;

// The udp conduit's largest request: a credit of 4116 bytes.
constexpr std::size_t udp_request = 16464;
constexpr std::uint64_t two_mib = 2u << 20;

class CreditMemory : public sluice_test::CleanEnvironment {
protected:
    Config config(unsigned nodes, std::vector<std::string> *notes_out = nullptr) {
        std::vector<std::string> notes;
        Config c = sluice::credit::config_from_knobs(nodes, 0, udp_request, notes);
        if (notes_out) *notes_out = notes;
        return c;
    }
};

TEST_F(CreditMemory, SmallJobsKeepTheTable) {
    const Config c = config(2);
    const Config table = Config::defaults(2, 0);
    EXPECT_EQ(c.policy, Policy::dynamic);
    EXPECT_EQ(c.per_peer, table.per_peer);
    EXPECT_EQ(c.banked, table.banked);
    EXPECT_LE(c.receive_bytes(), two_mib);
}

TEST_F(CreditMemory, SharesAndBankShrinkTogether) {
    const Config table = Config::defaults(16, 0);
    const Config c = config(16);
    EXPECT_EQ(c.policy, Policy::dynamic);
    EXPECT_LT(c.per_peer, table.per_peer);
    EXPECT_GE(c.per_peer, c.min_credits);
    EXPECT_LT(c.banked, table.banked);
    EXPECT_LE(c.receive_bytes(), two_mib);
    EXPECT_GT(c.receive_bytes(), two_mib * 9 / 10);  // the bound is used, not wasted
}

TEST_F(CreditMemory, DynamicKeepsAnEighthForItsBank) {
    // 99 peers x 4 credits and 63 banked fit 509; 112 peers x 4 and 63 do not.
    const Config c = config(100);
    EXPECT_EQ(c.policy, Policy::dynamic);
    EXPECT_EQ(c.per_peer, 4u);
    EXPECT_GE(c.banked, 509u / 8);
    EXPECT_LE(c.total_credits(), 509u);
    EXPECT_EQ(config(113).policy, Policy::demand);
    EXPECT_EQ(config(112).policy, Policy::dynamic);
}

TEST_F(CreditMemory, DemandWhereTheLeastSharesDoNotFit) {
    // 255 peers x 4 credits of 4116 bytes is 4 MiB: dynamic cannot fit.
    const Config c = config(256);
    EXPECT_EQ(c.policy, Policy::demand);
    EXPECT_EQ(c.total_credits(), two_mib / c.credit_bytes);
    EXPECT_LE(c.receive_bytes(), two_mib);
}

TEST_F(CreditMemory, NeverAboveTheBoundAtAnySize) {
    for (unsigned n : {2u, 3u, 8u, 16u, 33u, 64u, 100u, 128u, 256u, 1000u, 1024u, 1025u, 4096u, 100000u}) {
        const Config c = config(n);
        EXPECT_LE(c.receive_bytes(), two_mib) << n << " ranks";
        EXPECT_GE(c.total_credits(), 15u) << n << " ranks: a full request must stay grantable";
        if (c.policy != Policy::demand) {
            EXPECT_GE(c.per_peer, c.min_credits) << n << " ranks";
        }
    }
}

TEST_F(CreditMemory, ZeroIsNoBound) {
    set("SLUICE_CREDIT_MEMORY", "0");
    sluice::base::knobs_load();
    const Config c = config(256);
    const Config table = Config::defaults(256, 0);
    EXPECT_EQ(c.policy, Policy::dynamic);
    EXPECT_EQ(c.per_peer, table.per_peer);
    EXPECT_GT(c.receive_bytes(), two_mib);
}

TEST_F(CreditMemory, ALargerBoundKeepsDynamicLonger) {
    set("SLUICE_CREDIT_MEMORY", "16M");
    sluice::base::knobs_load();
    EXPECT_EQ(config(256).policy, Policy::dynamic);
    EXPECT_LE(config(256).receive_bytes(), 16u << 20);
}

TEST_F(CreditMemory, AChosenPolicyStaysAndSaysItIsOver) {
    set("SLUICE_CREDIT_POLICY", "dynamic");
    sluice::base::knobs_load();
    std::vector<std::string> notes;
    const Config c = config(256, &notes);
    EXPECT_EQ(c.policy, Policy::dynamic);
    EXPECT_EQ(c.per_peer, c.min_credits);
    bool said = false;
    for (const std::string &n : notes) said = said || n.find("SLUICE_CREDIT_MEMORY=2097152 is less than") != std::string::npos;
    EXPECT_TRUE(said);
}

TEST_F(CreditMemory, KnobsSetByHandAreKept) {
    set("SLUICE_CREDIT_PER_PEER", "8");
    set("SLUICE_CREDIT_BANKED", "100");
    sluice::base::knobs_load();
    const Config c = config(64);
    EXPECT_EQ(c.per_peer, 8u);
    EXPECT_EQ(c.banked, 100u);
    EXPECT_EQ(c.policy, Policy::dynamic);
}

TEST_F(CreditMemory, ReceiveSpaceWins) {
    set("SLUICE_CREDIT_RECV_SPACE", "8M");
    sluice::base::knobs_load();
    const Config c = config(16);
    EXPECT_EQ(c.policy, Policy::dynamic);
    EXPECT_GT(c.receive_bytes(), two_mib);
    EXPECT_LE(c.receive_bytes(), 8u << 20);
}

TEST_F(CreditMemory, DemandByHandTakesTheBoundAsItsBank) {
    set("SLUICE_CREDIT_POLICY", "demand");
    sluice::base::knobs_load();
    const Config c = config(16);
    EXPECT_EQ(c.policy, Policy::demand);
    EXPECT_EQ(c.total_credits(), Config::defaults(16, 0).banked < two_mib / c.credit_bytes
                                     ? Config::defaults(16, 0).banked
                                     : two_mib / c.credit_bytes);
}

} // namespace
