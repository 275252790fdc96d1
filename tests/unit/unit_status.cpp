// tests/unit/unit_status.cpp - status strings, the one-line error report,
// quiet and fatal modes, fatal signals, verbose narration.
#include "base/status.hpp"
#include "tests/unit/unit_env.hpp"

#include <csignal>
#include <cstdlib>
#include <set>
#include <thread>

using namespace sluice::base;
using sluice_test::CleanEnvironment;
using sluice_test::StderrCapture;

namespace {

// Death tests re-execute this program ("threadsafe": the process has
// threads).  Under an emulator without binfmt handlers (a cross build's
// tests under qemu-aarch64) the program cannot execute itself:
// GoogleTest's own GTEST_DEATH_TEST_STYLE=fast, when set, forks instead.
void death_style() {
    const char *style = std::getenv("GTEST_DEATH_TEST_STYLE");
    GTEST_FLAG_SET(death_test_style, style && *style ? style : "threadsafe");
}

const Status all_statuses[] = {Status::ok,       Status::not_ready, Status::argument, Status::rank,
                               Status::handler,  Status::segment,   Status::too_large, Status::context,
                               Status::state,    Status::resource,  Status::bootstrap, Status::transport};

[[noreturn]] void exit_42(int) { ::_exit(42); }

} // namespace

TEST(StatusString, EveryStatusHasItsOwnText) {
    std::set<std::string> seen;
    for (Status s : all_statuses) {
        const char *text = status_string(s);
        ASSERT_NE(text, nullptr);
        EXPECT_GT(std::strlen(text), 3u);
        EXPECT_TRUE(seen.insert(text).second) << "two statuses share \"" << text << "\"";
        EXPECT_STRNE(text, "unknown status");
    }
    EXPECT_STREQ(status_string(static_cast<Status>(-99)), "unknown status");
    EXPECT_STREQ(status_string(static_cast<Status>(42)), "unknown status");
}

TEST(StatusString, ValuesMatchTheCApi) {
    EXPECT_EQ(static_cast<int>(Status::ok), 0);
    EXPECT_EQ(static_cast<int>(Status::not_ready), 1);
    EXPECT_EQ(static_cast<int>(Status::argument), -1);
    EXPECT_EQ(static_cast<int>(Status::transport), -10);
}

TEST_F(CleanEnvironment, ReportPrintsOneLineNamingRankOperationAndFix) {
    log_rank_set(3);
    StderrCapture cap;
    cap.start();
    Status s = report(Status::rank, "sluice_put", "use a rank below sluice_size()", "rank %d is not below %d", 5, 2);
    std::string err = cap.stop();
    EXPECT_EQ(s, Status::rank);
    const std::string expected = "sluice[rank 3] sluice_put: rank 5 is not below 2; fix: use a rank below sluice_size()";
    EXPECT_EQ(std::string(last_error()), expected);
    EXPECT_EQ(err, expected + "\n");
    log_rank_set(-1);
}

TEST_F(CleanEnvironment, ReportWithoutFixAndBeforeTheRankIsKnown) {
    log_rank_set(-1);
    EXPECT_EQ(log_rank(), -1);
    StderrCapture cap;
    cap.start();
    (void)report(Status::state, "sluice_barrier", nullptr, "not initialized");
    std::string err = cap.stop();
    EXPECT_EQ(std::string(last_error()), "sluice[rank ?] sluice_barrier: not initialized");
    EXPECT_EQ(err, "sluice[rank ?] sluice_barrier: not initialized\n");
}

TEST_F(CleanEnvironment, QuietErrorsPrintNothingButKeepTheMessage) {
    set("SLUICE_QUIET_ERRORS", "1");
    (void)knobs_load();
    log_rank_set(0);
    StderrCapture cap;
    cap.start();
    (void)report(Status::segment, "sluice_get", "stay in the segment", "address %p", static_cast<void *>(nullptr));
    std::string err = cap.stop();
    EXPECT_EQ(err, "");
    EXPECT_NE(std::string(last_error()).find("sluice[rank 0] sluice_get: address"), std::string::npos);
    EXPECT_NE(std::string(last_error()).find("; fix: stay in the segment"), std::string::npos);
    log_rank_set(-1);
}

TEST_F(CleanEnvironment, LongMessagesAreCutSafely) {
    set("SLUICE_QUIET_ERRORS", "1");
    (void)knobs_load();
    std::string huge(5000, 'x');
    (void)report(Status::argument, "op", "fix it", "%s", huge.c_str());
    std::string msg = last_error();
    EXPECT_LT(msg.size(), 1024u);
    EXPECT_EQ(msg.rfind("sluice[rank", 0), 0u) << msg.substr(0, 40);
}

TEST_F(CleanEnvironment, LastErrorIsPerThread) {
    set("SLUICE_QUIET_ERRORS", "1");
    (void)knobs_load();
    (void)report(Status::rank, "main thread", "fix", "first");
    std::string in_thread_before, in_thread_after;
    std::thread t([&] {
        in_thread_before = last_error();
        (void)report(Status::handler, "other thread", "fix", "second");
        in_thread_after = last_error();
    });
    t.join();
    EXPECT_EQ(in_thread_before, "");
    EXPECT_NE(in_thread_after.find("other thread: second"), std::string::npos);
    EXPECT_NE(std::string(last_error()).find("main thread: first"), std::string::npos);
}

TEST(Fatal, PrintsAndExitsWithCodeOne) {
    death_style();
    EXPECT_EXIT(
        {
            log_rank_set(2);
            fatal("sluice_init", "set SLUICE_SPAWNER", "boom %d", 7);
        },
        ::testing::ExitedWithCode(1), "sluice\\[rank 2\\] sluice_init: boom 7; fix: set SLUICE_SPAWNER \\(fatal\\)");
}

TEST(Fatal, GoesThroughTheExitHook) {
    death_style();
    EXPECT_EXIT(
        {
            fatal_hook_set(exit_42);
            fatal("op", nullptr, "through the hook");
        },
        ::testing::ExitedWithCode(42), "through the hook");
}

TEST_F(CleanEnvironment, ErrorsFatalMakesReportFatal) {
    death_style();
    set("SLUICE_ERRORS_FATAL", "1");
    EXPECT_EXIT(
        {
            (void)knobs_load();
            (void)report(Status::rank, "sluice_put", "fix", "rank 9");
        },
        ::testing::ExitedWithCode(1), "rank 9.*fatal");
}

// The report is already "prefix op: what; fix: how": fatal prints it once.
TEST_F(CleanEnvironment, ErrorsFatalPrintsTheReportOnce) {
    death_style();
    set("SLUICE_ERRORS_FATAL", "1");
    EXPECT_EXIT(
        {
            (void)knobs_load();
            log_rank_set(1);
            (void)report(Status::rank, "put", "use a rank below 4", "rank 9");
        },
        ::testing::ExitedWithCode(1), "^sluice\\[rank 1\\] put: rank 9; fix: use a rank below 4 \\(fatal\\)\n$");
}

TEST(FatalSignals, NameTheSignalAndDieByIt) {
    death_style();
    EXPECT_EXIT(
        {
            log_rank_set(1);
            fatal_signals_install();
            ::raise(SIGSEGV);
        },
        ::testing::KilledBySignal(SIGSEGV), "sluice\\[rank 1\\] fatal signal SIGSEGV");
    EXPECT_EXIT(
        {
            fatal_signals_install();
            ::raise(SIGFPE);
        },
        ::testing::KilledBySignal(SIGFPE), "fatal signal SIGFPE");
    EXPECT_EXIT(
        {
            fatal_signals_install();
            ::abort();
        },
        ::testing::KilledBySignal(SIGABRT), "fatal signal SIGABRT");
}

TEST_F(CleanEnvironment, BacktraceOnFatalSignal) {
    death_style();
    set("SLUICE_BACKTRACE", "1");
    EXPECT_EXIT(
        {
            (void)knobs_load();
            fatal_signals_install();
            ::raise(SIGBUS);
        },
        ::testing::KilledBySignal(SIGBUS), "fatal signal SIGBUS(.|\n)*backtrace:");
}

TEST_F(CleanEnvironment, SayOnlyWhenVerbose) {
    log_rank_set(2);
    StderrCapture cap;
    cap.start();
    say("quiet %d", 1);
    std::string err = cap.stop();
    EXPECT_EQ(err, "");
    set("SLUICE_VERBOSE", "1");
    (void)knobs_load();
    cap.start();
    say("starting %d ranks", 4);
    err = cap.stop();
    EXPECT_EQ(err, "sluice[rank 2] starting 4 ranks\n");
    log_rank_set(-1);
}

TEST(Clock, MonotonicNanoseconds) {
    std::uint64_t a = now_ns(), b = now_ns();
    EXPECT_GT(a, 0u);
    EXPECT_GE(b, a);
}
