// tests/mp/mp_driver.hpp - what the multi-process GoogleTest drivers share:
// a job's configuration (ranks, RMA, credits, network conduit) and its name,
// the network conduits that probe here, the MpTest fixture that runs one job
// per configuration and the checks every passing job meets.  Used by
// mp_driver.cpp and by the conduits' own drivers (e.g.
// src/conduits/udp/tests/udp_driver.cpp).
#pragma once

#include "tests/harness.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace sluice_test {

struct Config {
    int ranks = 2;
    bool native_rma = true;
    const char *credits = nullptr;  // SLUICE_CREDIT_POLICY with SLUICE_CREDIT_FLOW=1, null: not set
    std::string network = {};       // SLUICE_ROUTE=network SLUICE_NETWORK=this: every peer over it
};

inline void PrintTo(const Config &c, std::ostream *os) {
    *os << c.ranks << " ranks, " << (c.native_rma ? "native" : "reference") << " RMA";
    if (c.credits) *os << ", SLUICE_CREDIT_FLOW=1 SLUICE_CREDIT_POLICY=" << c.credits;
    if (!c.network.empty()) *os << ", SLUICE_ROUTE=network SLUICE_NETWORK=" << c.network;
}

inline std::string config_name(const ::testing::TestParamInfo<Config> &info) {
    std::string n = "N" + std::to_string(info.param.ranks);
    n += info.param.native_rma ? "_native" : "_reference";
    if (info.param.credits) n += std::string("_credits_") + info.param.credits;
    if (!info.param.network.empty()) n += "_" + info.param.network;
    return n;
}

// The rank counts every multi-process suite runs at, and the configurations
// built from them: one rank, one peer, an odd count, more ranks than cores
// four times over; the sanitizer subsets run 2 and 4 (the full run leaves 4
// to them).
inline std::vector<int> rank_counts() {
    if (reduced()) return {2, 4};
    return {1, 2, 3, 8};
}

inline std::vector<Config> by_ranks() {
    std::vector<Config> v;
    for (int n : rank_counts()) v.push_back({n, true, nullptr});
    return v;
}
// Static credits at every rank count; the moving policies at the largest
// two, where credits have somewhere to move.  The sanitizer subset runs
// each policy once: the default and static at 2 ranks, dynamic and demand
// at 4.
inline std::vector<Config> by_ranks_and_credits() {
    std::vector<Config> v;
    if (reduced()) {
        v.push_back({2, true, nullptr});
        v.push_back({2, true, "static"});
        v.push_back({4, true, "dynamic"});
        v.push_back({4, true, "demand"});
        return v;
    }
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
inline std::vector<Config> by_ranks_and_rma() {
    std::vector<Config> v;
    for (int n : rank_counts()) {
        v.push_back({n, true, nullptr});
        v.push_back({n, false, nullptr});
    }
    return v;
}

// Every peer but the rank itself over each network conduit (issue 6): the AM
// and RMA suites on the network path, on one host, at 2 and 3 ranks (one
// peer; several, an odd count); 4 and 8 ranks run on smp, where the suites
// load every core the same way.  A conduit that needs credits runs its own
// credit engine (dynamic policy).
inline std::vector<Config> over_network(const std::vector<int> &counts) {
    std::vector<Config> v;
    for (const std::string &network : suite_networks())
        for (int n : counts) v.push_back({n, true, nullptr, network});
    return v;
}
inline std::vector<Config> over_network() { return over_network(reduced() ? std::vector<int>{2} : std::vector<int>{2, 3}); }

// Preconditions every job needs; a missing piece is a build problem, not a skip.
inline void require_programs() {
    ASSERT_TRUE(executable(launcher_path())) << "launcher not built: " << launcher_path();
    ASSERT_TRUE(executable(mp_program())) << "test program not built: " << mp_program();
}

// A job of `program()` (sluice-mp-test unless a suite says otherwise) per
// configuration.
class MpTest : public ::testing::TestWithParam<Config> {
protected:
    void SetUp() override { require_programs(); }
    virtual std::string program() const { return mp_program(); }

    JobResult run(std::vector<std::string> args, double limit = 120,
                  std::vector<std::pair<std::string, std::string>> env = {}) {
        const Config &c = GetParam();
        JobSpec spec;
        spec.ranks = c.ranks;
        spec.program = {program()};
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

// Several hosts on one machine: each rank runs sluice-mp-test in its own
// UTS namespace with the host name NAME<rank % hosts>, so ranks of one
// name share the smp conduit and the others reach each other over the
// network conduit.  Needs unshare(CLONE_NEWUTS) (root): fake_hosts_allowed()
// says whether it is, for the test to skip saying why.
class FakeHostsTest : public MpTest {
protected:
    std::string program() const override { return "/bin/sh"; }
    static bool fake_hosts_allowed() { return std::system("unshare -u true > /dev/null 2>&1") == 0; }
    JobResult run_on_hosts(const std::string &name, int hosts, const std::string &args, double limit,
                           std::vector<std::pair<std::string, std::string>> env = {}) {
        const std::string inner = "hostname " + name + "$((SLUICE_RANK % " + std::to_string(hosts) + ")); exec " +
                                  mp_program() + " " + args;
        return run({"-c", "exec unshare -u sh -c '" + inner + "'"}, limit, std::move(env));
    }
};

inline void expect_success(const JobResult &r) {
    EXPECT_FALSE(r.timed_out) << "the job hung\n" << r.describe();
    EXPECT_EQ(r.code, 0) << r.describe();
    EXPECT_NE(r.out.find("PASS "), std::string::npos) << "rank 0 did not report PASS\n" << r.describe();
    EXPECT_EQ(r.err.find("FAIL rank"), std::string::npos) << r.describe();
    EXPECT_TRUE(r.survivors.empty()) << "rank processes survived the job\n" << r.describe();
    EXPECT_TRUE(r.shm_left.empty()) << "shared memory left behind\n" << r.describe();
}

// Sum of the "EXPECTED-ERRORS rank R n" lines the ranks printed: the calls
// each refused on purpose.
inline int expected_error_lines(const JobResult &r) {
    int total = 0;
    const std::regex line("EXPECTED-ERRORS rank [0-9]+ ([0-9]+)");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end; it != end; ++it)
        total += std::stoi((*it)[1]);
    return total;
}

// Every rank reported its refused calls (at least one in all, unless
// `some` is false), and each refused call printed exactly one
// "sluice[rank R] ...; fix: ..." line: no more, no less.  Counted as
// pieces of text, not lines: an MPI launcher forwards the ranks' stderr
// in pieces, and a line of one rank may be cut by a piece of another's
// (seen under Open MPI's mpirun: "... is prepasluice[rank 0] ...").
inline void expect_one_error_line_each(const JobResult &r, int ranks, bool some = true) {
    const int expected = expected_error_lines(r);
    EXPECT_EQ(count_occurrences(r.out, "EXPECTED-ERRORS rank"), ranks) << r.describe();
    if (some) {
        EXPECT_GT(expected, 0) << "no rank reported its refused calls\n" << r.describe();
    }
    EXPECT_EQ(count_occurrences(r.err, "; fix: "), expected)
        << "each refused call must print exactly one line naming the rank and the fix\n"
        << r.describe();
    EXPECT_GE(count_occurrences(r.err, "sluice[rank "), expected) << "each refused call's line must name the rank\n"
                                                                  << r.describe();
}

} // namespace sluice_test
