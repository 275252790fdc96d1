// tests/perf/lapi-reference-test.cpp - the bare LAPI reference between two
// processes (a fork, before either opens LAPI), on the software LAPI, in
// interrupt and in polling mode: run by lapi-reference.sh under
// tests/softnic/lapi/softnic-run, which sets the job's MP_PARTITION.  Each
// process first opens a LAPI handle of its own, as the conduit does in a
// sluice-bench job, so the reference measured takes that handle.  The
// cards travel over a socket pair; the child checks what the parent's
// puts left in its region, the parent what its gets brought back.
#include "tests/perf/lapi-reference.hpp"
#include "tests/perf/reference-test.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace sluice::perf;

namespace {

constexpr std::size_t region_bytes = 4 << 20;

// Task `task` of a job of two, as POE would start it.
void join_as(int task) {
    ::setenv("MP_PROCS", "2", 1);
    ::setenv("MP_CHILD", std::to_string(task).c_str(), 1);
}

// The child: answers pings, serves the transfers, then checks its region
// holds the parent's pattern (exit 0) or not (exit 3).
[[noreturn]] void child(int fd, bool polling, std::uint32_t pings) {
    join_as(1);
    LapiReference holder, r;  // holder: the handle a conduit would hold
    LapiCard peer;
    if (!holder.open("", polling, 4096) || !r.open("", polling, region_bytes) || !swap_cards(fd, r.card(), peer) ||
        !r.connect(peer)) {
        std::fprintf(stderr, "child: %s%s\n", holder.error().c_str(), r.error().c_str());
        ::_exit(1);
    }
    char go;
    if (::read(fd, &go, 1) != 1) ::_exit(1);
    if (!r.pong(pings)) { std::fprintf(stderr, "child pong: %s\n", r.error().c_str()); ::_exit(2); }
    if (!r.serve()) { std::fprintf(stderr, "child serve: %s\n", r.error().c_str()); ::_exit(2); }
    if (!region_holds_pattern(r.region(), region_bytes)) ::_exit(3);
    // The parent's gets are over once it waited for this exit.
    r.close();
    holder.close();
    ::_exit(0);
}

class LapiReferenceTest : public ::testing::TestWithParam<bool> {};

} // namespace

TEST_P(LapiReferenceTest, PingPutGetBetweenTwoProcesses) {
    const bool polling = GetParam();
    ASSERT_NE(std::getenv("MP_PARTITION"), nullptr) << "run under tests/softnic/lapi/softnic-run";
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    constexpr std::uint32_t pings = 300;
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(sv[0]);
        child(sv[1], polling, pings);
    }
    ::close(sv[1]);
    join_as(0);
    LapiReference holder, r;
    ASSERT_TRUE(holder.open("", polling, 4096)) << holder.error();
    EXPECT_NE(holder.describe().find("its own handle"), std::string::npos) << holder.describe();
    ASSERT_TRUE(r.open("", polling, region_bytes)) << r.error();
    EXPECT_NE(r.describe().find("live handle"), std::string::npos) << r.describe();
    EXPECT_NE(r.describe().find(polling ? "polling mode" : "interrupt mode"), std::string::npos) << r.describe();
    LapiCard peer;
    ASSERT_TRUE(swap_cards(sv[0], r.card(), peer));
    ASSERT_EQ(peer.task, 1u);
    ASSERT_TRUE(r.connect(peer)) << r.error();
    std::printf("[ lapi     ] %s, peer task %u\n", r.describe().c_str(), peer.task);
    ASSERT_EQ(::write(sv[0], "g", 1), 1);

    const double rtt = r.ping(pings, 30);
    EXPECT_TRUE(std::isfinite(rtt)) << r.error();
    const TransferTimes t = transfers_check(r, region_bytes, LapiRma::put, LapiRma::put, LapiRma::get, LapiRma::get);
    std::printf("[ lapi     ] Amsend ping-pong %.0f ns; 8 B put %.0f ns, get %.0f ns; 4 MiB put %.2f GB/s, "
                "get %.2f GB/s\n",
                rtt, t.put_small / 200, t.get_small / 200, 8.0 * region_bytes / t.put_large,
                2.0 * region_bytes / t.get_large);

    ASSERT_TRUE(r.finish()) << r.error();
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    ::close(sv[0]);
}

INSTANTIATE_TEST_SUITE_P(Mode, LapiReferenceTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "polling" : "interrupt"; });

TEST(LapiReference, NamesALibraryThatDoesNotOpen) {
    LapiReference r;
    EXPECT_FALSE(r.open("/nonexistent/liblapi.so.1", false, 4096));
    EXPECT_NE(r.error().find("/nonexistent/liblapi.so.1"), std::string::npos) << r.error();
    EXPECT_FALSE(std::isfinite(r.ping(2, 0)));
}

TEST(LapiReference, NamesTheVariableLapiInitLacks) {
    // No other handle is live here: the reference calls LAPI_Init, which
    // wants POE's MP_PROCS.
    ::unsetenv("MP_PROCS");
    ::setenv("MP_CHILD", "0", 1);
    LapiReference r;
    EXPECT_FALSE(r.open("", false, 4096));
    EXPECT_NE(r.error().find("LAPI_Init"), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("MP_PROCS"), std::string::npos) << r.error();
}

TEST(LapiReference, RefusesACardOfAnotherJob) {
    // A job of one task, under a key of its own.
    const char *key = std::getenv("MP_PARTITION");
    ASSERT_NE(key, nullptr) << "run under tests/softnic/lapi/softnic-run";
    const std::string job = key;
    ::setenv("MP_PARTITION", std::to_string(std::strtoull(key, nullptr, 10) + 1).c_str(), 1);
    ::setenv("MP_PROCS", "1", 1);
    ::setenv("MP_CHILD", "0", 1);
    LapiReference r;
    const bool opened = r.open("", true, 4096);
    ::setenv("MP_PARTITION", job.c_str(), 1);
    ASSERT_TRUE(opened) << r.error();
    LapiCard card = r.card();
    card.task = 5;  // past NUM_TASKS
    EXPECT_FALSE(r.connect(card));
    EXPECT_NE(r.error().find("task 5"), std::string::npos) << r.error();
    // Its own card: an 8 B put to itself lands (polling: in its own wait).
    ASSERT_TRUE(r.connect(r.card())) << r.error();
    std::memset(r.region(), 'a', 8);
    EXPECT_TRUE(std::isfinite(r.rma(LapiRma::put, 8, 4, 2))) << r.error();
}
