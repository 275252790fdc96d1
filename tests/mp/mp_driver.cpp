// tests/mp/mp_driver.cpp - runs the cases of sluice-mp-test under sluicerun
// at 1, 2, 3 and 8 ranks (2 and 4 under SLUICE_TEST_SUBSET), with native
// and reference RMA and with forced AM credits under each credit policy
// (src/credit: static, dynamic, demand, with few credits so senders stall,
// banks run dry and credits move), each job under a hard time
// limit.  A job passes when it exits 0, rank 0 printed PASS, no rank printed
// FAIL, no rank process survives and no shared memory is left.
#include "tests/mp/mp_driver.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace sluice_test;

namespace {

// Each failed call prints one "sluice[rank R] operation: ...; fix: ..." line
// (counted as pieces of text: expect_one_error_line_each says why).
void expect_error_lines(const JobResult &r, int ranks, bool quiet) {
    int expected = expected_error_lines(r);
    EXPECT_EQ(count_occurrences(r.out, "EXPECTED-ERRORS rank"), ranks) << r.describe();
    const int with_fix = count_occurrences(r.err, "; fix: ");
    if (quiet) {
        EXPECT_EQ(with_fix, 0) << "SLUICE_QUIET_ERRORS=1 but errors were printed\n" << r.describe();
    } else {
        // Under an MPI's launcher (tests/mpi/mpirun-launcher) the ranks'
        // stderr reaches the test through mpirun, which forwards each
        // rank's output in pieces of what it read and can cut one rank's
        // line with another's pieces; one such cut fell inside a "; fix: "
        // (332 of 333 found).  One is allowed there: a call that prints no
        // line still loses one on every rank.
        const char *launcher = std::getenv("SLUICETEST_LAUNCHER");
        const int cut = launcher && std::strstr(launcher, "mpirun-launcher") && ranks > 1 ? 1 : 0;
        EXPECT_GE(with_fix, expected - cut) << "each failed call must print a line naming the rank and the fix\n"
                                            << r.describe();
    }
}

bool env_sets(const char *name) { return std::getenv(name) != nullptr; }

} // namespace

// ---- AM ------------------------------------------------------------------
class AmCategories : public MpTest {};
TEST_P(AmCategories, PayloadsZeroOneMaxAndMaxPlusOne) {
    std::vector<std::string> args = {"am"};
    // The same-host default; over a network conduit its own limit applies
    // (the smaller of the two: portals' is 800 bytes).
    if (!env_sets("SLUICE_SMP_MAX_MEDIUM") && GetParam().network.empty()) args.push_back("--max-medium=16384");
    JobResult r = run(args);
    expect_success(r);
    expect_error_lines(r, GetParam().ranks, false);
}
INSTANTIATE_TEST_SUITE_P(Mp, AmCategories, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmCategories, ::testing::ValuesIn(over_network()), config_name);

class AmMaxMediumKnob : public MpTest {};
TEST_P(AmMaxMediumKnob, FollowsSluiceSmpMaxMedium) {
    JobResult r = run({"am", "--max-medium=65536"}, 120,
                      {{"SLUICE_SMP_MAX_MEDIUM", "64K"}, {"SLUICE_SMP_RING_SIZE", "256K"}});
    expect_success(r);
    JobResult small = run({"am", "--max-medium=1024"}, 120, {{"SLUICE_SMP_MAX_MEDIUM", "1K"}});
    expect_success(small);
}
INSTANTIATE_TEST_SUITE_P(Mp, AmMaxMediumKnob, ::testing::Values(Config{2, true, nullptr}), config_name);

// The smp payload pool (src/conduits/smp/README.md): Mediums of every size
// up to the largest, sent and prepared (committed shorter, cancelled), with
// a pool of two blocks per half, so senders find it full and wait for
// receivers to free blocks, and with no pool (through the queues' rings).
class SmpPayloadPool : public MpTest {};
TEST_P(SmpPayloadPool, TwoBlocksPerHalfAndNone) {
    for (const char *pool : {"64K", "0"}) {
        SCOPED_TRACE(std::string("SLUICE_SMP_PAYLOAD_POOL=") + pool);
        expect_success(run({"flood", std::to_string(scaled(3000, 1000, 600))}, 120, {{"SLUICE_SMP_PAYLOAD_POOL", pool}}));
        expect_success(run({"am", "--max-medium=16384"}, 120, {{"SLUICE_SMP_PAYLOAD_POOL", pool}}));
        expect_success(run({"prepare"}, 120, {{"SLUICE_SMP_PAYLOAD_POOL", pool}}));
    }
}
INSTANTIATE_TEST_SUITE_P(Mp, SmpPayloadPool, ::testing::Values(Config{4, true, nullptr}), config_name);

class AmArguments : public MpTest {};
TEST_P(AmArguments, ZeroToSixteenInEveryCategoryThroughCAndCpp) { expect_success(run({"args"})); }
INSTANTIATE_TEST_SUITE_P(Mp, AmArguments, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmArguments, ::testing::ValuesIn(over_network()), config_name);

class AmChains : public MpTest {};
TEST_P(AmChains, RequestReplyRoundTripsAndMultiHopTokens) {
    expect_success(run({"chain", std::to_string(scaled(300, 100, 60)), std::to_string(scaled(20, 8, 5))}));
}
INSTANTIATE_TEST_SUITE_P(Mp, AmChains, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmChains, ::testing::ValuesIn(over_network()), config_name);

class AmHiddenReplies : public MpTest {};
TEST_P(AmHiddenReplies, HandlersThatNeverReplyDoNotStallTheSender) {
    expect_success(run({"hidden", std::to_string(scaled(2000, 500, 300))}));
}
INSTANTIATE_TEST_SUITE_P(Mp, AmHiddenReplies, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmHiddenReplies, ::testing::ValuesIn(over_network()), config_name);

// SLUICE_FLAG_IMMEDIATE on every conduit: requests and Puts that would
// wait answer not ready instead, nothing lost (mp_immediate.cpp).
class AmImmediate : public MpTest {};
TEST_P(AmImmediate, WouldBlockInsteadOfPolling) {
    JobResult r = run({"immediate"});
    expect_success(r);
    expect_error_lines(r, GetParam().ranks, false);
}
INSTANTIATE_TEST_SUITE_P(Mp, AmImmediate, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmImmediate, ::testing::ValuesIn(over_network()), config_name);

class AmFlood : public MpTest {};
TEST_P(AmFlood, ThousandsOutstandingInBothDirections) {
    expect_success(run({"flood", std::to_string(scaled(5000, 2000, 1000))}));
}
INSTANTIATE_TEST_SUITE_P(Mp, AmFlood, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmFlood, ::testing::ValuesIn(over_network()), config_name);

// Credit knobs: statistics written per rank; a bad policy named with the
// choices; a fixed receive space that cannot hold the shares named too.
class CreditKnobs : public MpTest {};
TEST_P(CreditKnobs, StatisticsFileAndBadValues) {
    char dir[] = "/tmp/sluice-credit-stats.XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    const std::string pattern = std::string(dir) + "/stats.%r";
    JobResult r = run({"hidden", "500"}, 120,
                      {{"SLUICE_CREDIT_FLOW", "1"}, {"SLUICE_CREDIT_POLICY", "demand"}, {"SLUICE_CREDIT_BANKED", "16"},
                       {"SLUICE_CREDIT_STATS", pattern}});
    expect_success(r);
    for (int rank = 0; rank < GetParam().ranks; ++rank) {
        const std::string path = std::string(dir) + "/stats." + std::to_string(rank);
        std::FILE *f = std::fopen(path.c_str(), "r");
        ASSERT_NE(f, nullptr) << "no statistics file " << path;
        char line[256] = {};
        ASSERT_NE(std::fgets(line, sizeof line, f), nullptr);
        std::fclose(f);
        EXPECT_NE(std::string(line).find("rank " + std::to_string(rank) + " of"), std::string::npos) << line;
        EXPECT_NE(std::string(line).find("policy demand"), std::string::npos) << line;
        std::remove(path.c_str());
    }
    ::rmdir(dir);

    JobResult bad = run({"basic"}, 60, {{"SLUICE_CREDIT_FLOW", "1"}, {"SLUICE_CREDIT_POLICY", "greedy"}});
    expect_success(bad);
    EXPECT_NE(bad.err.find("SLUICE_CREDIT_POLICY=greedy is not one of auto, static, dynamic, demand"), std::string::npos)
        << bad.describe();
    JobResult space = run({"basic"}, 60,
                          {{"SLUICE_CREDIT_FLOW", "1"}, {"SLUICE_CREDIT_POLICY", "dynamic"}, {"SLUICE_CREDIT_RECV_SPACE", "1K"}});
    expect_success(space);
    EXPECT_NE(space.err.find("SLUICE_CREDIT_RECV_SPACE=1024 holds"), std::string::npos) << space.describe();
}
INSTANTIATE_TEST_SUITE_P(Mp, CreditKnobs, ::testing::Values(Config{3, true, nullptr}), config_name);

// ---- RMA -------------------------------------------------------------------
class Rma : public MpTest {};
TEST_P(Rma, PutGetOneByteTo16MiBEveryCompletionMode) { expect_success(run({"rma"}, 240)); }
INSTANTIATE_TEST_SUITE_P(Mp, Rma, ::testing::ValuesIn(by_ranks_and_rma()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, Rma, ::testing::ValuesIn(over_network()), config_name);

// ---- collectives, queries ---------------------------------------------------
class BarrierStorm : public MpTest {};
TEST_P(BarrierStorm, ThousandsOfBarriersWithAMsInterleaved) {
    expect_success(run({"barrier", std::to_string(scaled(5000, 5000, 500)), std::to_string(scaled(2000, 2000, 200))},
                       180));
}
INSTANTIATE_TEST_SUITE_P(Mp, BarrierStorm, ::testing::ValuesIn(by_ranks()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, BarrierStorm, ::testing::ValuesIn(over_network()), config_name);

// The README's program: a request to the right neighbour, a Put, a barrier,
// many times, then a request with a reply right before finalize.  Several
// jobs per configuration, since a request left in a ring shows in some runs
// only; every other job sends to the left, where the barrier's own messages
// do not follow the request.
class Delivery : public MpTest {};
TEST_P(Delivery, EveryRequestRunsBeforeBarrierAndFinalizeReturn) {
    const int jobs = reduced() ? 2 : 3;
    for (int j = 0; j < jobs; ++j) {
        JobResult r = run({"delivery", std::to_string(scaled(200, 50, 30)), j % 2 ? "left" : "right"});
        expect_success(r);
        if (::testing::Test::HasFailure()) break;
    }
}
std::vector<Config> delivery_configs() {
    std::vector<Config> v;
    for (int n : reduced() ? std::vector<int>{1, 2, 3} : std::vector<int>{1, 2, 3, 8}) v.push_back({n, true, nullptr});
    return v;
}
INSTANTIATE_TEST_SUITE_P(Mp, Delivery, ::testing::ValuesIn(delivery_configs()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, Delivery,
                         ::testing::ValuesIn(over_network(reduced() ? std::vector<int>{2, 3} : std::vector<int>{2, 3, 8})),
                         config_name);

class Allgather : public MpTest {};
TEST_P(Allgather, EveryLengthUpToMaxMedium) {
    expect_success(run({"allgather", std::to_string(scaled(20, 8, 5))}));
}
INSTANTIATE_TEST_SUITE_P(Mp, Allgather, ::testing::ValuesIn(by_ranks()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, Allgather, ::testing::ValuesIn(over_network()), config_name);

class HostQueries : public MpTest {};
TEST_P(HostQueries, RanksHostsAndSegments) {
    JobResult r = run({"host"});
    expect_success(r);
    expect_error_lines(r, GetParam().ranks, false);
}
INSTANTIATE_TEST_SUITE_P(Mp, HostQueries, ::testing::ValuesIn(by_ranks()), config_name);

class Basic : public MpTest {};
TEST_P(Basic, InitPutGetBarrierFinalize) {
    expect_success(run({"basic", std::to_string(GetParam().ranks)}));
}
INSTANTIATE_TEST_SUITE_P(Mp, Basic, ::testing::ValuesIn(by_ranks()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, Basic, ::testing::ValuesIn(over_network()), config_name);

// Without a launcher a Sluice program is a 1-rank job.
TEST(Singleton, WithoutLauncherIsOneRank) {
    require_programs();
    JobSpec spec;
    spec.ranks = 0;
    spec.program = {mp_program(), "basic", "1"};
    spec.time_limit = 60;
    expect_success(run_job(spec));
}

// ---- threads ---------------------------------------------------------------
class Threads : public MpTest {};
TEST_P(Threads, FourThreadsPerRankIssueAMsAndRMA) {
    expect_success(run({"threads", std::to_string(scaled(400, 400, 100)), std::to_string(scaled(150, 150, 30))}, 180));
}
INSTANTIATE_TEST_SUITE_P(Mp, Threads,
                         ::testing::Values(Config{2, true, nullptr}, Config{2, false, nullptr}, Config{4, true, nullptr},
                                           Config{4, false, nullptr}, Config{2, true, "static"}),
                         config_name);
INSTANTIATE_TEST_SUITE_P(Net, Threads, ::testing::ValuesIn(over_network({2})), config_name);

// ---- choosing the network conduit (SLUICE_NETWORK) --------------------------
// Each job runs `basic` over the network path (SLUICE_ROUTE=network) with
// SLUICE_NETWORK set on every rank, or set differently on rank 1 alone.
class NetworkChoice : public ::testing::TestWithParam<std::string> {
protected:
    JobResult run(const std::string &everyone, const std::string &rank1 = "",
                  std::vector<std::pair<std::string, std::string>> env = {{"SLUICE_VERBOSE", "1"}},
                  std::vector<std::string> launcher_options = {}) {
        require_programs();
        JobSpec spec;
        spec.launcher_options = std::move(launcher_options);
        spec.ranks = 3;
        spec.program = {mp_program(), "basic", "3"};
        if (!rank1.empty())
            spec.program = {"sh", "-c", "if [ \"$SLUICE_RANK\" = 1 ]; then export SLUICE_NETWORK='" + rank1 +
                                             "'; fi && exec \"$0\" \"$@\"",
                            mp_program(), "basic", "3"};
        spec.env = {{"SLUICE_ROUTE", "network"}, {"SLUICE_NETWORK", everyone}};
        for (auto &e : env) spec.env.push_back(std::move(e));
        spec.time_limit = 60;
        return run_job(spec);
    }
    // The job failed at start-up, cleanly, with `message` said by rank 0 only.
    void expect_refused(const JobResult &r, const std::string &message) {
        EXPECT_FALSE(r.timed_out) << r.describe();
        EXPECT_NE(r.code, 0) << r.describe();
        EXPECT_NE(r.err.find("sluice[rank 0] init: " + message), std::string::npos) << r.describe();
        EXPECT_EQ(r.err.find("sluice[rank 1] init:"), std::string::npos) << "said once, by rank 0\n" << r.describe();
        EXPECT_EQ(r.err.find("sluice[rank 2] init:"), std::string::npos) << "said once, by rank 0\n" << r.describe();
        EXPECT_TRUE(r.survivors.empty()) << r.describe();
        EXPECT_TRUE(r.shm_left.empty()) << r.describe();
    }
};

TEST_P(NetworkChoice, TheListedConduitCarriesTheJob) {
    const std::string &name = GetParam();
    JobResult r = run("no-such-conduit-is-not-listed-here," + name);
    EXPECT_NE(r.code, 0) << "an unknown name is refused even before a good one\n" << r.describe();
    r = run(" " + name + " ");
    expect_success(r);
    EXPECT_EQ(count_occurrences(r.err, "network conduit: " + name + " (first of SLUICE_NETWORK= " + name +
                                           "  whose probe succeeds"),
              3)
        << r.describe();
    EXPECT_EQ(count_occurrences(r.err, "over " + name + "\n"), 3) << r.describe();
    // Without SLUICE_VERBOSE: SLUICE_VERBOSEENV=1 has rank 0 say the choice,
    // sluicerun -v says what it would be on the launching host.
    r = run(name, "", {{"SLUICE_VERBOSE", "0"}, {"SLUICE_VERBOSEENV", "1"}}, {"-v"});
    expect_success(r);
    const std::string choice = "network conduit: " + name + " (first of SLUICE_NETWORK=" + name;
    EXPECT_EQ(count_occurrences(r.err, "sluice[rank 0] " + choice), 1) << r.describe();
    EXPECT_EQ(count_occurrences(r.err, "sluice[rank 1] " + choice), 0) << r.describe();
    EXPECT_EQ(count_occurrences(r.err, "sluicerun: network conduit here: " + name + " (first of SLUICE_NETWORK=" + name),
              1)
        << r.describe();
}

TEST_P(NetworkChoice, AnUnknownNameSaysDidYouMeanAndTheBuiltOnes) {
    const std::string &name = GetParam();
    JobResult r = run(name + "x");
    expect_refused(r, "SLUICE_NETWORK=" + name + "x: this build has no network conduit '" + name + "x'; did you mean '" +
                          name + "'? (network conduits built: ");
}

TEST_P(NetworkChoice, RanksThatDisagreeAreNamedWithTheirChoices) {
    const std::string &name = GetParam();
    JobResult r = run(name, "bogus");
    expect_refused(r, "the ranks chose different network conduits: " + name +
                          " on ranks 0, 2; none (SLUICE_NETWORK=bogus: this build has no network conduit 'bogus'");
    r = run(name, name);  // the same choice, spelled by rank 1 alone: fine
    expect_success(r);
}
// The list the Net/ suites run over comes from sluice-info: if it cannot
// answer, they would silently not run.
TEST(NetworkConduits, SluiceInfoListsThem) {
    (void)network_conduits();
    EXPECT_TRUE(network_conduits_listed) << build_dir() << "/sluice-info --conduit-list=network failed";
}

INSTANTIATE_TEST_SUITE_P(Net, NetworkChoice, ::testing::ValuesIn(suite_networks()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });
// A build without a network conduit (--disable-udp) has nothing to choose.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NetworkChoice);

// ---- bad input -------------------------------------------------------------
class BadInput : public MpTest {};
TEST_P(BadInput, ClearErrorsAndNoCorruption) {
    JobResult r = run({"bad"});
    expect_success(r);
    expect_error_lines(r, GetParam().ranks, false);
}
INSTANTIATE_TEST_SUITE_P(Mp, BadInput, ::testing::ValuesIn(by_ranks_and_rma()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, BadInput, ::testing::ValuesIn(over_network()), config_name);

class BadInputQuiet : public MpTest {};
TEST_P(BadInputQuiet, QuietErrorsStillReturnTheStatus) {
    JobResult r = run({"bad"}, 120, {{"SLUICE_QUIET_ERRORS", "1"}});
    expect_success(r);
    expect_error_lines(r, GetParam().ranks, true);
}
INSTANTIATE_TEST_SUITE_P(Mp, BadInputQuiet, ::testing::Values(Config{2, true, nullptr}), config_name);
