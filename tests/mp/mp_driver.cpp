// tests/mp/mp_driver.cpp - runs the cases of sluice-mp-test under sluicerun
// at 1, 2, 3, 4 and 8 ranks (2 and 4 under SLUICE_TEST_SUBSET), with native
// and reference RMA and with forced AM credits under each credit policy
// (src/credit: static, dynamic, demand, with few credits so senders stall,
// banks run dry and credits move), each job under a hard time
// limit.  A job passes when it exits 0, rank 0 printed PASS, no rank printed
// FAIL, no rank process survives and no shared memory is left.
#include "tests/harness.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <regex>
#include <unistd.h>

using namespace sluice_test;

namespace {

struct Config {
    int ranks = 2;
    bool native_rma = true;
    const char *credits = nullptr;  // SLUICE_CREDIT_POLICY with SLUICE_CREDIT_FLOW=1, null: not set
    std::string network = {};       // SLUICE_ROUTE=network SLUICE_NETWORK=this: every peer over it
};

void PrintTo(const Config &c, std::ostream *os) {
    *os << c.ranks << " ranks, " << (c.native_rma ? "native" : "reference") << " RMA";
    if (c.credits) *os << ", SLUICE_CREDIT_FLOW=1 SLUICE_CREDIT_POLICY=" << c.credits;
    if (!c.network.empty()) *os << ", SLUICE_ROUTE=network SLUICE_NETWORK=" << c.network;
}

std::string config_name(const ::testing::TestParamInfo<Config> &info) {
    std::string n = "N" + std::to_string(info.param.ranks);
    n += info.param.native_rma ? "_native" : "_reference";
    if (info.param.credits) n += std::string("_credits_") + info.param.credits;
    if (!info.param.network.empty()) n += "_" + info.param.network;
    return n;
}

std::vector<int> rank_counts() {
    if (reduced()) return {2, 4};
    return {1, 2, 3, 4, 8};
}

std::vector<Config> by_ranks() {
    std::vector<Config> v;
    for (int n : rank_counts()) v.push_back({n, true, nullptr});
    return v;
}
// Static credits at every rank count; the moving policies at the largest
// two, where credits have somewhere to move.
std::vector<Config> by_ranks_and_credits() {
    std::vector<Config> v;
    const std::vector<int> counts = rank_counts();
    for (int n : counts) {
        v.push_back({n, true, nullptr});
        v.push_back({n, true, "static"});
        if (n >= counts[counts.size() - 2]) {
            v.push_back({n, true, "dynamic"});
            v.push_back({n, true, "demand"});
        }
    }
    return v;
}
std::vector<Config> by_ranks_and_rma() {
    std::vector<Config> v;
    for (int n : rank_counts()) {
        v.push_back({n, true, nullptr});
        v.push_back({n, false, nullptr});
    }
    return v;
}

// The network conduits of this build whose probe succeeds here, from
// `sluice-info --conduit-list=network` (so a new conduit needs no line in
// this file); the others are named on stderr with their probe's reason.
bool network_conduits_listed = false;  // sluice-info answered
const std::vector<std::string> &network_conduits() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        const std::string command = build_dir() + "/sluice-info --conduit-list=network";
        std::FILE *p = ::popen(command.c_str(), "r");
        if (!p) return v;
        char line[1024];
        while (std::fgets(line, sizeof line, p)) {
            std::string l(line);
            if (!l.empty() && l.back() == '\n') l.pop_back();
            const std::size_t tab1 = l.find('\t'), tab2 = l.find('\t', tab1 + 1);
            if (tab2 == std::string::npos) continue;
            const std::string name = l.substr(0, tab1), probe = l.substr(tab2 + 1);
            if (probe == "ok") v.push_back(name);
            else std::fprintf(stderr, "mp tests: network conduit %s not run here: %s\n", name.c_str(), probe.c_str());
        }
        network_conduits_listed = ::pclose(p) == 0;
        return v;
    }();
    return names;
}

// Every peer but the rank itself over each network conduit (issue 6): the AM
// and RMA suites on the network path, on one host.  A conduit that needs
// credits runs its own credit engine (dynamic policy).
std::vector<Config> over_network(const std::vector<int> &counts) {
    std::vector<Config> v;
    for (const std::string &network : network_conduits())
        for (int n : counts) v.push_back({n, true, nullptr, network});
    return v;
}
std::vector<Config> over_network() { return over_network(reduced() ? std::vector<int>{2} : std::vector<int>{2, 3, 4}); }
// udp's own tests (its sockets, its counters), when udp is built.
std::vector<Config> over_udp() {
    std::vector<Config> v;
    for (const Config &c : over_network())
        if (c.network == "udp") v.push_back(c);
    return v;
}

// Preconditions every job needs; a missing piece is a build problem, not a skip.
void require_programs() {
    ASSERT_TRUE(executable(launcher_path())) << "launcher not built: " << launcher_path();
    ASSERT_TRUE(executable(mp_program())) << "test program not built: " << mp_program();
}

class MpTest : public ::testing::TestWithParam<Config> {
protected:
    void SetUp() override { require_programs(); }

    JobResult run(std::vector<std::string> args, double limit = 120,
                  std::vector<std::pair<std::string, std::string>> env = {}) {
        const Config &c = GetParam();
        JobSpec spec;
        spec.ranks = c.ranks;
        spec.program = {mp_program()};
        for (auto &a : args) spec.program.push_back(a);
        spec.env = std::move(env);
        if (!c.native_rma) spec.env.emplace_back("SLUICE_NATIVE_RMA", "0");
        if (!c.network.empty()) {
            spec.env.emplace_back("SLUICE_ROUTE", "network");
            spec.env.emplace_back("SLUICE_NETWORK", c.network);
        }
        if (c.credits) {
            // 4 per peer (static, dynamic) and 16 to lend: senders stall,
            // the bank runs dry, revokes and reclaims happen.
            spec.env.emplace_back("SLUICE_CREDIT_FLOW", "1");
            spec.env.emplace_back("SLUICE_CREDIT_POLICY", c.credits);
            spec.env.emplace_back("SLUICE_CREDIT_PER_PEER", "4");
            spec.env.emplace_back("SLUICE_CREDIT_BANKED", "16");
            spec.env.emplace_back("SLUICE_CREDIT_STATS", "/dev/null");
        }
        spec.time_limit = limit;
        return run_job(spec);
    }
    // Iteration counts: full at up to 4 ranks, smaller oversubscribed at 8,
    // smaller again in the sanitizer subset.
    unsigned scaled(unsigned full, unsigned at8, unsigned subset) const {
        if (reduced()) return subset;
        return GetParam().ranks >= 8 ? at8 : full;
    }
};

void expect_success(const JobResult &r) {
    EXPECT_FALSE(r.timed_out) << "the job hung\n" << r.describe();
    EXPECT_EQ(r.code, 0) << r.describe();
    EXPECT_NE(r.out.find("PASS "), std::string::npos) << "rank 0 did not report PASS\n" << r.describe();
    EXPECT_EQ(r.err.find("FAIL rank"), std::string::npos) << r.describe();
    EXPECT_TRUE(r.survivors.empty()) << "rank processes survived the job\n" << r.describe();
    EXPECT_TRUE(r.shm_left.empty()) << "shared memory left behind\n" << r.describe();
}

// Sum of the "EXPECTED-ERRORS rank R n" lines the ranks printed.
int expected_error_lines(const JobResult &r) {
    int total = 0;
    std::regex line("EXPECTED-ERRORS rank [0-9]+ ([0-9]+)");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end; it != end; ++it)
        total += std::stoi((*it)[1]);
    return total;
}

// Each failed call prints one "sluice[rank R] operation: ...; fix: ..." line.
void expect_error_lines(const JobResult &r, int ranks, bool quiet) {
    int expected = expected_error_lines(r);
    EXPECT_EQ(count_occurrences(r.out, "EXPECTED-ERRORS rank"), ranks) << r.describe();
    std::vector<std::string> lines = lines_with(r.err, "sluice[rank");
    int with_fix = 0;
    for (const auto &l : lines)
        if (l.find("; fix: ") != std::string::npos) ++with_fix;
    if (quiet) {
        EXPECT_EQ(with_fix, 0) << "SLUICE_QUIET_ERRORS=1 but errors were printed\n" << r.describe();
    } else {
        EXPECT_GE(with_fix, expected) << "each failed call must print a line naming the rank and the fix\n"
                                      << r.describe();
    }
}

bool env_sets(const char *name) { return std::getenv(name) != nullptr; }

} // namespace

// ---- AM ------------------------------------------------------------------
class AmCategories : public MpTest {};
TEST_P(AmCategories, PayloadsZeroOneMaxAndMaxPlusOne) {
    std::vector<std::string> args = {"am"};
    if (!env_sets("SLUICE_SMP_MAX_MEDIUM")) args.push_back("--max-medium=16384");
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

// ---- udp: strangers on the sockets ------------------------------------------
// Random bytes, a well-formed datagram with another job's secret, stubs
// and oversized datagrams, from an address the receiver knows and from one
// it does not: each receiver's counters (SLUICE_UDP_STATS) show every one
// dropped for its reason, and the job's own traffic is unaffected.  With
// the kernel's source filter (the default from 3 ranks on) those from the
// unknown address arrive emptied and count as "address"; otherwise (and
// with it, the known address's) each is counted by what the decoder finds
// wrong.  At 2 ranks each rank's one peer has a socket of its own (the
// default): the known address's datagrams come in on it, the unknown
// one's on the receiving socket, where Sluice checks them.
class UdpIntruders : public MpTest {};
TEST_P(UdpIntruders, StrangersDatagramsAreDroppedAndCounted) {
    const int per_kind = 100;
    const int n = GetParam().ranks;
    struct Mode {
        const char *filter, *peer_socket, *checker;
    };
    const Mode two[] = {{"1", "1", "a connected socket and Sluice"},
                        {"0", "1", "a connected socket and Sluice"},
                        {"1", "0", "the kernel's filter"},
                        {"0", "0", "Sluice"}};
    const Mode more[] = {{"1", "1", "the kernel's filter"}, {"0", "1", "Sluice"}};
    for (const Mode &mode : n == 2 ? std::vector<Mode>(std::begin(two), std::end(two))
                                   : std::vector<Mode>(std::begin(more), std::end(more))) {
        SCOPED_TRACE(std::string("SLUICE_UDP_SOURCE_FILTER=") + mode.filter + " SLUICE_UDP_PEER_SOCKET=" + mode.peer_socket);
        JobResult r = run({"intruder", std::to_string(per_kind)}, 120,
                          {{"SLUICE_UDP_STATS", "1"},
                           {"SLUICE_UDP_MTU", "576"},
                           {"SLUICE_UDP_SOURCE_FILTER", mode.filter},
                           {"SLUICE_UDP_PEER_SOCKET", mode.peer_socket}});
        expect_success(r);
        EXPECT_EQ(count_occurrences(r.out, "INTRUDER rank"), n) << r.describe();
        std::regex sent("INTRUDER rank [0-9]+ known magic ([0-9]+) secret ([0-9]+) truncated ([0-9]+) "
                        "unknown magic ([0-9]+) secret ([0-9]+) truncated ([0-9]+)");
        std::regex dropped("udp: .*dropped: truncated ([0-9]+), magic ([0-9]+), secret ([0-9]+), .*"
                           "address ([0-9]+) \\(checked by ([a-zA-Z' ]+)\\)");
        long known[3] = {}, unknown[3] = {}, got[3] = {}, got_address = 0;  // magic, secret, truncated
        for (std::sregex_iterator it(r.out.begin(), r.out.end(), sent), end; it != end; ++it)
            for (int k = 0; k < 3; ++k) {
                known[k] += std::stol((*it)[1 + k]);
                unknown[k] += std::stol((*it)[4 + k]);
            }
        int lines = 0, checked_as_expected = 0;
        for (std::sregex_iterator it(r.err.begin(), r.err.end(), dropped), end; it != end; ++it, ++lines) {
            got[2] += std::stol((*it)[1]);
            got[0] += std::stol((*it)[2]);
            got[1] += std::stol((*it)[3]);
            got_address += std::stol((*it)[4]);
            checked_as_expected += (*it)[5] == mode.checker;
        }
        EXPECT_EQ(lines, n) << "every rank prints its udp counters\n" << r.describe();
        EXPECT_EQ(checked_as_expected, n) << "who checks addresses: " << mode.checker << "\n" << r.describe();
        EXPECT_EQ(known[0], long{per_kind} * n) << r.describe();
        EXPECT_EQ(unknown[0], long{per_kind} * n) << r.describe();
        const bool by_filter = std::string(mode.checker) == "the kernel's filter";
        for (int k = 0; k < 3; ++k)
            EXPECT_EQ(got[k], known[k] + (by_filter ? 0 : unknown[k])) << "kind " << k << "\n" << r.describe();
        EXPECT_EQ(got_address, by_filter ? unknown[0] + unknown[1] + unknown[2] : 0) << r.describe();
    }
}
INSTANTIATE_TEST_SUITE_P(Udp, UdpIntruders, ::testing::ValuesIn(over_udp()), config_name);

// ---- udp: connected send sockets ----------------------------------------------
// With SLUICE_UDP_CONNECTED_PEERS=0 every send goes through the receiving
// socket; with 1, each rank sends to one peer through a connected socket
// and to the others through the receiving one, so every receiver accepts
// a peer's two source ports.  Nothing may be dropped for its address.
class UdpConnectedPeers : public ::testing::TestWithParam<std::string> {};
TEST_P(UdpConnectedPeers, FloodAndRmaWithSomeOrNoConnectedSockets) {
    require_programs();
    for (const char *which : {"flood", "rma"}) {
        JobSpec spec;
        spec.ranks = 4;
        spec.program = {mp_program(), which};
        if (std::string(which) == "flood") spec.program.push_back("2000");
        spec.env = {{"SLUICE_ROUTE", "network"}, {"SLUICE_UDP_CONNECTED_PEERS", GetParam()}, {"SLUICE_UDP_STATS", "1"}};
        spec.time_limit = 180;
        JobResult r = run_job(spec);
        expect_success(r);
        EXPECT_EQ(count_occurrences(r.err, ", address 0 ("), 4) << "no datagram dropped for its source address\n"
                                                             << r.describe();
    }
}
INSTANTIATE_TEST_SUITE_P(Udp, UdpConnectedPeers, ::testing::Values("0", "1"),
                         [](const ::testing::TestParamInfo<std::string> &info) { return "limit" + info.param; });

// ---- udp: the peer socket ------------------------------------------------------
// A rank whose only udp peer is one rank receives that peer's datagrams on a
// socket connected to the port the peer sends from.  Two layouts:
// - 2 ranks without connected send sockets (SLUICE_UDP_CONNECTED_PEERS=0):
//   each sends from its receiving port, and each peer socket is connected
//   to it from the start;
// - 3 ranks on two "hosts" (UTS namespaces, as MixedRoutes): rank 0 alone,
//   ranks 1 and 2 together, so ranks 1 and 2 each have rank 0 as their one
//   udp peer.  Rank 0 may connect one socket (SLUICE_UDP_CONNECTED_PEERS=1
//   for it alone): rank 1 gets it, rank 2 gets datagrams from rank 0's
//   receiving port although rank 0 published a send port, so rank 2's peer
//   socket must follow when the first of them reaches its receiving socket.
// Floods and RMA must run exactly as elsewhere, nothing dropped for its
// address.
class UdpPeerSocket : public ::testing::TestWithParam<std::string> {};
TEST_P(UdpPeerSocket, FloodAndRmaOnThePeersOwnSocket) {
    require_programs();
    const bool hosts = GetParam() == "two_hosts";
    if (hosts) {
        ASSERT_EQ(::geteuid(), 0u) << "this test needs root for unshare --uts (CI runs as root)";
    }
    for (const char *which : {"flood", "rma"}) {
        SCOPED_TRACE(which);
        JobSpec spec;
        spec.ranks = hosts ? 3 : 2;
        std::vector<std::string> args = {mp_program(), which};
        if (std::string(which) == "flood") args.push_back("2000");
        if (hosts) {
            const std::string command =
                "hostname peer-socket-$((SLUICE_RANK > 0)) && "
                "if [ \"$SLUICE_RANK\" = 0 ]; then export SLUICE_UDP_CONNECTED_PEERS=1; fi && exec \"$0\" \"$@\"";
            spec.program = {"unshare", "--uts", "sh", "-c", command};
            spec.program.insert(spec.program.end(), args.begin(), args.end());
            spec.env = {{"SLUICE_UDP_ADDRESS", "127.0.0.1"}};
        } else {
            spec.program = args;
            spec.env = {{"SLUICE_ROUTE", "network"}, {"SLUICE_UDP_CONNECTED_PEERS", "0"}};
        }
        spec.env.insert(spec.env.end(), {{"SLUICE_VERBOSE", "1"}, {"SLUICE_UDP_STATS", "1"}, {"SLUICE_UDP_PEER_TIMEOUT", "20"}});
        spec.time_limit = 180;
        JobResult r = run_job(spec);
        expect_success(r);
        EXPECT_EQ(count_occurrences(r.err, "datagrams come in on a socket connected to"), 2) << r.describe();
        EXPECT_EQ(count_occurrences(r.err, "its socket follows"), hosts ? 1 : 0) << r.describe();
        EXPECT_EQ(count_occurrences(r.err, "cannot follow"), 0) << r.describe();
        EXPECT_EQ(count_occurrences(r.err, ", address 0 ("), spec.ranks) << "nothing dropped for its source address\n"
                                                                       << r.describe();
        if (hosts) {
            EXPECT_EQ(count_occurrences(r.err, "sluice[rank 2] udp: rank 0 sends from 127.0.0.1:"), 1)
                << "rank 0 has no connected socket for rank 2\n" << r.describe();
        }
    }
}
INSTANTIATE_TEST_SUITE_P(Udp, UdpPeerSocket, ::testing::Values("two_ranks", "two_hosts"),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

// ---- smp and udp in one job --------------------------------------------------
// Two "hosts" on this machine: each rank runs in its own UTS namespace named
// after rank / 2 (`unshare --uts`, root), so pairs of ranks share a host and
// talk over smp while the rest of the job goes over udp.  A rank waiting on
// one transport must keep the other moving (the credit wait and a full
// queue poll every transport), or the job deadlocks.
class MixedRoutes : public ::testing::TestWithParam<std::vector<std::string>> {};
TEST_P(MixedRoutes, SameHostPairsOverSmpTheRestOverUdp) {
    require_programs();
    ASSERT_EQ(::geteuid(), 0u) << "this test needs root for unshare --uts (CI runs as root)";
    JobSpec spec;
    spec.ranks = 4;
    std::string command = "hostname mixed-$((SLUICE_RANK / 2)) && exec \"$0\" \"$@\"";
    spec.program = {"unshare", "--uts", "sh", "-c", command, mp_program()};
    for (const auto &a : GetParam()) spec.program.push_back(a);
    spec.env = {{"SLUICE_UDP_ADDRESS", "127.0.0.1"}, {"SLUICE_UDP_PEER_TIMEOUT", "20"}, {"SLUICE_VERBOSE", "1"}};
    spec.time_limit = 120;
    JobResult r = run_job(spec);
    expect_success(r);
    // Each rank routed one peer over smp and two over udp.
    EXPECT_EQ(count_occurrences(r.err, "routing: 2 peers over smp, 2 over udp"), 4) << r.describe();
}
INSTANTIATE_TEST_SUITE_P(Udp, MixedRoutes,
                         ::testing::ValuesIn(reduced() ? std::vector<std::vector<std::string>>{{"flood", "1000"}}
                                                       : std::vector<std::vector<std::string>>{{"flood", "2000"},
                                                                                               {"hidden", "1000"},
                                                                                               {"chain", "100", "5"},
                                                                                               {"rma"}}),
                         [](const ::testing::TestParamInfo<std::vector<std::string>> &info) { return info.param[0]; });

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

INSTANTIATE_TEST_SUITE_P(Net, NetworkChoice, ::testing::ValuesIn(network_conduits()),
                         [](const ::testing::TestParamInfo<std::string> &info) { return info.param; });

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
