// tests/exit/exit_driver.cpp - every way a job can end, at 1, 2, 3 and 8
// ranks (2 and 4 under SLUICE_TEST_SUBSET=asan, 3 under tsan): the launcher must return the
// right code well within the time limit, no rank process may survive, and no
// /dev/shm/sluice.<jobid>* object may be left.  Also the launcher's own
// options and failures.
#include "tests/harness.hpp"

#include "sluice_config.h"

#ifdef SLUICE_HAVE_HWLOC
#include <hwloc.h>
#endif
#include <sched.h>

#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <gtest/gtest.h>

using namespace sluice_test;

namespace {

// An exit must be quick: the exit timeout is 2 s + 0.05 s per rank and the
// launcher kills stragglers within 5 s.  The hard limit only guards hangs.
constexpr double must_end_within = 15;
constexpr double hard_limit = 60;

struct ExitCase {
    std::string name;   // test name suffix
    std::string what;   // case of sluice-exit-test
    enum class Who { none, first, last } who = Who::none;
    std::string value;  // code or signal name
    int expected = 0;
    std::vector<std::pair<std::string, std::string>> env = {};
    int launcher_signal = 0;   // "ready" case: signal sent to the launcher
    bool signal_group = false; // ... or to its whole process group
    std::string expect_in_err = {};
};

using Who = ExitCase::Who;

std::vector<ExitCase> exit_cases() {
    // Let the sanitizers leave fatal signals to the program's own handlers.
    std::vector<std::pair<std::string, std::string>> signal_env = {
        {"ASAN_OPTIONS", "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:detect_leaks=0"},
        {"TSAN_OPTIONS", "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0"}};
    std::vector<ExitCase> v = {
        {"Collective7", "collective", Who::none, "7", 7},
        {"ReturnFromMain0", "return", Who::none, "0", 0},
        {"ReturnFromMain5", "return", Who::none, "5", 5},
        {"FinalizeThenReturn0", "finalize-return", Who::none, "0", 0},
        {"FinalizeThenReturn5", "finalize-return", Who::none, "5", 5},
        {"OneRankOthersInBarrier", "barrier", Who::last, "3", 3},
        {"RankZeroOthersInBarrier", "barrier", Who::first, "4", 4},
        {"OneRankOthersSpinning", "spin", Who::last, "5", 5},
        {"RankZeroOthersSpinning", "spin", Who::first, "6", 6},
        {"OneRankOthersPolling", "poll", Who::last, "8", 8},
        {"LibcExitOthersInBarrier", "libc-exit", Who::last, "9", 9},
        {"FromRequestHandler", "request-handler", Who::last, "11", 11},
        {"FromReplyHandler", "reply-handler", Who::last, "12", 12},
        {"FromMediumHandler", "medium-handler", Who::last, "14", 14},
        {"BetweenInitAndAttach", "before-attach", Who::last, "13", 13},
        {"RmaInFlight", "rma", Who::last, "15", 15},
        {"SigintInOneRank", "signal", Who::last, "INT", 128 + SIGINT},
        {"SigtermInOneRank", "signal", Who::last, "TERM", 128 + SIGTERM},
        {"AbortInOneRank", "signal", Who::last, "ABRT", 128 + SIGABRT, signal_env},
        {"SegvInOneRank", "signal", Who::last, "SEGV", 128 + SIGSEGV, signal_env},
        {"SegvInRankZero", "signal", Who::first, "SEGV", 128 + SIGSEGV, signal_env},
        {"SigbusInOneRank", "signal", Who::last, "BUS", 128 + SIGBUS, signal_env},
        {"SigfpeInOneRank", "signal", Who::last, "FPE", 128 + SIGFPE, signal_env},
        {"SigkillInOneRank", "signal", Who::last, "KILL", 128 + SIGKILL},
        {"ErrorsFatal", "errors-fatal", Who::last, "", 1, {{"SLUICE_ERRORS_FATAL", "1"}}, 0, false, "(fatal)"},
        {"SigintToLauncher", "ready", Who::none, "", 128 + SIGINT, {}, SIGINT},
        {"SigtermToLauncher", "ready", Who::none, "", 128 + SIGTERM, {}, SIGTERM},
        {"CtrlCToProcessGroup", "ready", Who::none, "", 128 + SIGINT, {}, SIGINT, true},
    };
    return v;
}

struct Param {
    int ranks;
    ExitCase c;
    std::string network;  // set: SLUICE_NETWORK=it, SLUICE_ROUTE=network (every peer over it)
};

void PrintTo(const Param &p, std::ostream *os) {
    *os << p.c.what << " " << p.c.value << " at " << p.ranks << " ranks";
    if (!p.network.empty()) *os << " over " << p.network;
}

std::vector<Param> params() {
    // ThreadSanitizer watches the threads of one process, which the rank
    // count hardly changes: one count there, two under ASan (4 of them is
    // the count the full run leaves to that subset).
    std::vector<int> ranks = subset() == "tsan" ? std::vector<int>{3}
                             : reduced()        ? std::vector<int>{2, 4}
                                                : std::vector<int>{1, 2, 3, 8};
    std::vector<Param> v;
    for (const auto &c : exit_cases())
        for (int n : ranks) v.push_back({n, c, {}});
    return v;
}

// The same cases with every peer on each network conduit that probes here
// (tests/harness.hpp, network_conduits), plus a peer that stops answering:
// the others end the job once the conduit's SLUICE_<NAME>_PEER_TIMEOUT
// passes (docs/conduits.md), with an error naming the silent rank.
std::string conduit_knob(const std::string &network, const char *name) {
    std::string knob = "SLUICE_";
    for (char ch : network) knob += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return knob + "_" + name;
}
// Under a sanitizer subset over the first of them only (suite_networks).
std::vector<Param> network_params() {
    std::vector<Param> v;
    for (const std::string &network : suite_networks()) {
        std::vector<ExitCase> cases = exit_cases();
        const std::string knob = conduit_knob(network, "PEER_TIMEOUT");
        cases.push_back({"PeerStoppedTimesOut", "stopped", Who::last, "", 1, {{knob, "1.5"}}, 0, false, knob});
        // SLUICE_<NAME>_STATS prints the counters however the job ends,
        // not at finalize alone: at sluice_exit, and at a signal.
        const std::string stats = conduit_knob(network, "STATS");
        const std::string line = network == "udp" ? "] udp: sent " : "): small sends ";
        cases.push_back({"StatsAtSluiceExit", "spin", Who::last, "5", 5, {{stats, "1"}}, 0, false, line});
        cases.push_back({"StatsAtSigtermToLauncher", "ready", Who::none, "", 128 + SIGTERM, {{stats, "1"}}, SIGTERM,
                         false, line});
        for (const auto &c : cases) v.push_back({reduced() ? 2 : 3, c, network});
    }
    return v;
}

// A message the target cannot run (bad input: handlers registered
// differently across ranks): the target's fatal error ends the job, on smp
// (whose Shorts take the header-less delivery path) and on each network
// conduit.
std::vector<Param> refused_params() {
    const std::vector<ExitCase> cases = {
        {"UnregisteredAtTarget", "unregistered", Who::last, "", 1, {}, 0, false, "which is not registered here"},
        {"RegisteredDifferently", "mismatched", Who::last, "", 1, {}, 0, false, "register the handler identically"},
    };
    std::vector<Param> v;
    for (const auto &c : cases) {
        for (int n : {2, 3}) v.push_back({n, c, {}});
        for (const std::string &network : suite_networks()) v.push_back({2, c, network});
    }
    return v;
}

std::string param_name(const ::testing::TestParamInfo<Param> &info) {
    return info.param.c.name + "_N" + std::to_string(info.param.ranks) +
           (info.param.network.empty() ? "" : "_" + info.param.network);
}

void require_programs() {
    ASSERT_TRUE(executable(launcher_path())) << "launcher not built: " << launcher_path();
    ASSERT_TRUE(executable(exit_program())) << "test program not built: " << exit_program();
}

// What every ended job must satisfy.
void expect_clean_end(const JobResult &r) {
    EXPECT_FALSE(r.timed_out) << "the job hung\n" << r.describe();
    EXPECT_TRUE(r.survivors.empty()) << "rank processes survived the job\n" << r.describe();
    EXPECT_TRUE(r.shm_left.empty()) << "shared memory left behind\n" << r.describe();
    EXPECT_FALSE(r.launcher_signaled) << "the launcher itself died by a signal\n" << r.describe();
}

} // namespace

class JobExit : public ::testing::TestWithParam<Param> {};

TEST_P(JobExit, EndsWithTheRightCodeLeavingNothingBehind) {
    require_programs();
    const Param &p = GetParam();
    JobSpec spec;
    spec.ranks = p.ranks;
    spec.program = {exit_program(), p.c.what};
    if (p.c.who != Who::none) spec.program.push_back(std::to_string(p.c.who == Who::first ? 0 : p.ranks - 1));
    if (!p.c.value.empty()) spec.program.push_back(p.c.value);
    spec.env = p.c.env;
    if (!p.network.empty()) {
        spec.env.emplace_back("SLUICE_NETWORK", p.network);
        spec.env.emplace_back("SLUICE_ROUTE", "network");
    }
    spec.time_limit = hard_limit;
    if (p.c.launcher_signal) {
        spec.ready_line = "READY";
        spec.ready_signal = p.c.launcher_signal;
        spec.signal_group = p.c.signal_group;
    }
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_EQ(r.code, p.c.expected) << r.describe();
    EXPECT_EQ(static_cast<int>(r.rank_pids.size()), p.ranks) << "not every rank started\n" << r.describe();
    EXPECT_LT(r.seconds, must_end_within * time_scale()) << "the exit took too long\n" << r.describe();
    EXPECT_EQ(r.err.find("FAIL rank"), std::string::npos) << r.describe();
    if (p.c.launcher_signal) {
        EXPECT_TRUE(r.signal_sent) << "rank 0 never printed READY\n" << r.describe();
    }
    if (!p.c.expect_in_err.empty()) {
        EXPECT_NE(r.err.find(p.c.expect_in_err), std::string::npos) << r.describe();
    }
    if (p.c.what == "stopped") {
        const std::string silent = "rank " + std::to_string(p.ranks - 1) + " (";
        EXPECT_NE(r.err.find(silent), std::string::npos) << "the error must name the silent rank\n" << r.describe();
    }
}

INSTANTIATE_TEST_SUITE_P(Exit, JobExit, ::testing::ValuesIn(params()), param_name);
INSTANTIATE_TEST_SUITE_P(Net, JobExit, ::testing::ValuesIn(network_params()), param_name);
INSTANTIATE_TEST_SUITE_P(Refused, JobExit, ::testing::ValuesIn(refused_params()), param_name);

// ---- the launcher itself ---------------------------------------------------

TEST(Launcher, DryRunStartsNothing) {
    require_programs();
    JobSpec spec;
    spec.ranks = 4;
    spec.launcher_options = {"-t"};
    spec.program = {exit_program(), "return", "0"};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_EQ(r.code, 0) << r.describe();
    EXPECT_TRUE(r.rank_pids.empty()) << "-t started ranks\n" << r.describe();
    EXPECT_FALSE(r.out.empty() && r.err.empty()) << "-t printed nothing\n" << r.describe();
}

TEST(Launcher, VerboseRunStillReturnsTheJobCode) {
    require_programs();
    JobSpec spec;
    spec.ranks = 2;
    spec.launcher_options = {"-v"};
    spec.program = {exit_program(), "collective", "7"};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_EQ(r.code, 7) << r.describe();
    EXPECT_FALSE(r.err.empty() && r.out.empty()) << "-v said nothing\n" << r.describe();
}

// The CPUs a rank of a job started with --bind=BINDING should run on,
// from hwloc's topology of this machine (its default load leaves out the
// CPUs a cgroup or cpuset disallows, as the launcher's does): rank i on
// object (i mod objects) of the binding's type; none: this process's own.
std::set<int> cpus_expected(const std::string &binding, unsigned rank) {
    std::set<int> out;
    if (binding == "none") {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int c = 0; c < CPU_SETSIZE; ++c)
                if (CPU_ISSET(c, &set)) out.insert(c);
        return out;
    }
#ifdef SLUICE_HAVE_HWLOC
    hwloc_topology_t topology = nullptr;
    if (hwloc_topology_init(&topology) == 0 && hwloc_topology_load(topology) == 0) {
        hwloc_obj_type_t type = binding == "numa"     ? HWLOC_OBJ_NUMANODE
                                : binding == "socket" ? HWLOC_OBJ_PACKAGE
                                : hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE
                                                                                        : HWLOC_OBJ_PU;
        const int count = hwloc_get_nbobjs_by_type(topology, type);
        if (count > 0) {
            hwloc_obj_t obj = hwloc_get_obj_by_type(topology, type, rank % static_cast<unsigned>(count));
            for (int c = hwloc_bitmap_first(obj->cpuset); c >= 0; c = hwloc_bitmap_next(obj->cpuset, c))
                out.insert(c);
        }
    }
    if (topology) hwloc_topology_destroy(topology);
#endif
    return out;
}

// Each rank prints the CPUs sched_getaffinity gives it (sluice-exit-test
// affinity): they must be those hwloc's object for the rank holds.
class LauncherBind : public ::testing::TestWithParam<std::string> {};
TEST_P(LauncherBind, EachRankRunsWhereItsBindingSays) {
    require_programs();
    JobSpec spec;
    spec.ranks = 4;
    spec.launcher_options = {"--bind=" + GetParam()};
    spec.program = {exit_program(), "affinity"};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    expect_clean_end(r);
#ifndef SLUICE_HAVE_HWLOC
    if (GetParam() != "none") {
        EXPECT_NE(r.code, 0) << r.describe();
        EXPECT_NE(r.err.find("needs hwloc"), std::string::npos) << r.describe();
        return;
    }
#endif
    EXPECT_EQ(r.code, 0) << r.describe();
    EXPECT_EQ(r.rank_pids.size(), 4u) << r.describe();
    std::map<unsigned, std::set<int>> seen;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        unsigned rank = 0;
        char list[4096] = {};
        if (std::sscanf(line.c_str(), "affinity %u %4095s", &rank, list) != 2) continue;
        std::set<int> cpus;
        for (char *p = list; *p;) {
            cpus.insert(static_cast<int>(std::strtol(p, &p, 10)));
            if (*p == ',') ++p;
        }
        seen[rank] = cpus;
    }
    ASSERT_EQ(seen.size(), 4u) << "every rank must say where it runs\n" << r.describe();
    for (const auto &[rank, cpus] : seen) {
        const std::set<int> want = cpus_expected(GetParam(), rank);
        EXPECT_FALSE(want.empty()) << "hwloc gives no CPUs for rank " << rank;
        EXPECT_EQ(cpus, want) << "rank " << rank << " with --bind=" << GetParam() << "\n" << r.describe();
    }
}
INSTANTIATE_TEST_SUITE_P(Launcher, LauncherBind, ::testing::Values("core", "socket", "numa", "none"));

TEST(Launcher, MissingProgramFailsQuickly) {
    require_programs();
    JobSpec spec;
    spec.ranks = 3;
    spec.program = {"/nonexistent/sluice-no-such-program"};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_NE(r.code, 0) << r.describe();
    EXPECT_NE(r.err.find("sluice-no-such-program"), std::string::npos) << "the error must name the program\n"
                                                                        << r.describe();
}

TEST(Launcher, BadRankCountIsRejected) {
    require_programs();
    for (const char *n : {"0", "-3", "many"}) {
        JobSpec spec;
        spec.ranks = 0;  // build the command line by hand
        spec.program = {launcher_path(), "-n", n, "--", exit_program(), "return", "0"};
        spec.time_limit = 30;
        JobResult r = run_job(spec);
        expect_clean_end(r);
        EXPECT_NE(r.code, 0) << "-n " << n << " was accepted\n" << r.describe();
        EXPECT_TRUE(r.rank_pids.empty()) << r.describe();
        EXPECT_FALSE(r.err.empty()) << "no message for -n " << n << "\n" << r.describe();
    }
}

// SLUICE_BACKTRACE=1 on a crash: with libdw, the frames name the demangled
// function and the file:line of the test program's source.
TEST(Backtrace, FatalSignalNamesFunctionAndSourceLine) {
#ifndef SLUICE_HAVE_LIBDW
    GTEST_SKIP() << "built without libdw (configure found no elfutils/libdwfl.h): plain backtraces only";
#endif
    require_programs();
    JobSpec spec;
    spec.ranks = 1;
    spec.program = {exit_program(), "signal", "0", "SEGV"};
    spec.env = {{"SLUICE_BACKTRACE", "1"},
                {"ASAN_OPTIONS", "handle_segv=0:detect_leaks=0"},
                {"TSAN_OPTIONS", "handle_segv=0:report_signal_unsafe=0"}};  // libdw allocates: fatal path only
    spec.time_limit = hard_limit;
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_EQ(r.code, 128 + SIGSEGV) << r.describe();
    EXPECT_NE(r.err.find("die_by(std::"), std::string::npos) << "no demangled die_by(...) frame\n" << r.describe();
    EXPECT_NE(r.err.find("exit_test.cpp:"), std::string::npos) << "no file:line of the test source\n" << r.describe();
    EXPECT_EQ(r.err.find("_ZN"), std::string::npos) << "a mangled name is left\n" << r.describe();
}

// The job failed and said `setting` (NAME=VALUE) was refused once, with
// its range.
void expect_refused_once(const JobResult &r, const std::string &setting, const std::string &range) {
    EXPECT_NE(r.code, 0) << setting << " was accepted\n" << r.describe();
    const std::string all = r.out + r.err;
    const std::size_t at = all.find(setting);
    ASSERT_NE(at, std::string::npos) << r.describe();
    EXPECT_EQ(all.find(setting, at + 1), std::string::npos) << "reported twice\n" << r.describe();
    EXPECT_NE(all.find(range), std::string::npos) << r.describe();
}

// A knob value outside its range ends the job before any rank starts, with
// one message naming knob, value and range (not one per process).
TEST(Launcher, KnobOutOfRangeIsRefusedOnce) {
    require_programs();
    JobSpec spec;
    spec.ranks = 2;
    spec.program = {exit_program(), "return", "0"};
    spec.env = {{"SLUICE_CREDIT_MIN", "20"}};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_TRUE(r.rank_pids.empty()) << r.describe();
    expect_refused_once(r, "SLUICE_CREDIT_MIN=20", "1 to 15");
}

// Without sluicerun (a singleton here; mpirun and srun alike) the ranks
// refuse the value themselves: rank 0 says so once and init fails.
TEST(Launcher, KnobOutOfRangeIsRefusedWithoutTheLauncher) {
    require_programs();
    JobSpec spec;
    spec.ranks = 0;
    spec.program = {exit_program(), "return", "0"};
    spec.env = {{"SLUICE_EXIT_TIMEOUT", "-1"}};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    EXPECT_FALSE(r.timed_out) << r.describe();
    EXPECT_TRUE(r.shm_left.empty()) << r.describe();
    expect_refused_once(r, "SLUICE_EXIT_TIMEOUT=-1", "0 or more");
}

// A Put before any segment is attached: the error says that, and how to
// fix it, not that the address is outside a segment.
TEST(Rma, PutBeforeAttachSaysNoSegmentIsAttached) {
    require_programs();
    JobSpec spec;
    spec.ranks = 2;
    spec.program = {exit_program(), "put-before-attach", "1"};
    spec.env = {{"SLUICE_ERRORS_FATAL", "1"}};
    spec.time_limit = hard_limit;
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_EQ(r.code, 1) << r.describe();
    EXPECT_NE(r.err.find("no segment is attached yet"), std::string::npos) << r.describe();
    EXPECT_NE(r.err.find("sluice_segment_attach"), std::string::npos) << r.describe();
    EXPECT_EQ(r.err.find("outside the segment"), std::string::npos) << r.describe();
}

// A rank that finds itself alone while the launcher's variables say N ranks
// must stop with an error that says so, not run as a singleton.
TEST(Launcher, RankWithoutItsLauncherStopsWithAClearError) {
    require_programs();
    JobSpec spec;
    spec.ranks = 0;
    spec.program = {exit_program(), "return", "0"};
    spec.env = {{"SLUICE_SIZE", "4"}, {"SLUICE_RANK", "1"}};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    expect_clean_end(r);
    EXPECT_NE(r.code, 0) << "ran as a singleton although SLUICE_SIZE=4\n" << r.describe();
    EXPECT_NE(r.err.find("fix"), std::string::npos) << r.describe();
}

// ---- the harness itself: it must see what it is meant to catch ------------

TEST(Harness, SeesSurvivorsAndLeftoverSharedMemoryAndCleansUp) {
    // A "job" that leaves a detached process and a shm object of its job id.
    JobSpec spec;
    spec.ranks = 0;
    spec.program = {"/bin/sh", "-c",
                    "sleep 300 & echo > \"$SLUICETEST_PIDDIR/$!\"; "
                    "echo x > \"/dev/shm/sluice.$SLUICE_JOB_ID.left\"; exit 3"};
    spec.time_limit = 30;
    JobResult r = run_job(spec);
    EXPECT_EQ(r.code, 3) << r.describe();
    EXPECT_FALSE(r.timed_out) << r.describe();
    ASSERT_EQ(r.survivors.size(), 1u) << r.describe();
    EXPECT_EQ(r.shm_left.size(), 1u) << r.describe();
    // ... and it cleaned both up.
    EXPECT_NE(::kill(r.survivors[0], 0), 0);
    EXPECT_NE(::access(("/dev/shm/sluice." + r.job_id + ".left").c_str(), F_OK), 0);
}

TEST(Harness, KillsAHungJobAtTheDeadline) {
    JobSpec spec;
    spec.ranks = 0;
    spec.program = {"/bin/sh", "-c", "echo > \"$SLUICETEST_PIDDIR/$$\"; exec sleep 300"};
    spec.time_limit = 1.0 / time_scale();
    JobResult r = run_job(spec);
    EXPECT_TRUE(r.timed_out) << r.describe();
    EXPECT_LT(r.seconds, 10) << r.describe();
    EXPECT_TRUE(r.survivors.empty()) << r.describe();
    ASSERT_EQ(r.rank_pids.size(), 1u) << r.describe();
    EXPECT_NE(::kill(r.rank_pids[0], 0), 0) << "the hung process is still there";
}

// A Sluice job that hangs (every rank polls for ever): at the deadline each
// rank is sent SIGABRT and, under SLUICE_BACKTRACE=1 (which the harness
// sets but for ThreadSanitizer builds, and this test sets for all), names
// the signal and prints its stack before it ends; nothing is left.
TEST(Harness, AHungJobShowsWhereEachRankWaited) {
    require_programs();
    JobSpec spec;
    spec.ranks = 2;
    spec.program = {exit_program(), "ready"};
    spec.env = {{"SLUICE_BACKTRACE", "1"},
                {"TSAN_OPTIONS", "report_signal_unsafe=0"}};  // the backtrace is the fatal path only
    spec.time_limit = 5;
    JobResult r = run_job(spec);
    EXPECT_TRUE(r.timed_out) << r.describe();
    EXPECT_NE(r.out.find("READY"), std::string::npos) << "the ranks did not reach their loop\n" << r.describe();
    EXPECT_EQ(r.code, 128 + SIGABRT) << "SIGABRT did not end the ranks\n" << r.describe();
    EXPECT_FALSE(r.launcher_signaled) << "the launcher was killed, not ended by its ranks\n" << r.describe();
    for (const char *rank : {"sluice[rank 0] fatal signal SIGABRT", "sluice[rank 1] fatal signal SIGABRT"})
        EXPECT_NE(r.err.find(rank), std::string::npos) << rank << " missing\n" << r.describe();
    EXPECT_NE(r.err.find("backtrace:"), std::string::npos) << r.describe();
    EXPECT_TRUE(r.survivors.empty()) << r.describe();
    EXPECT_TRUE(r.shm_left.empty()) << r.describe();
}
