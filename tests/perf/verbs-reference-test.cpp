// tests/perf/verbs-reference-test.cpp - the bare verbs reference between two
// processes (a fork), on the software verbs NIC: run by verbs-reference.sh
// under tests/softnic/verbs/softnic-run.  The cards travel over a socket
// pair; the child checks what the parent's writes left in its region.
#include "tests/perf/verbs-reference.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

using namespace sluice::perf;

namespace {

constexpr std::size_t region_bytes = 4 << 20;

bool swap_cards(int fd, const VerbsCard &mine, VerbsCard &theirs) {
    return ::write(fd, &mine, sizeof mine) == static_cast<ssize_t>(sizeof mine) &&
           ::read(fd, &theirs, sizeof theirs) == static_cast<ssize_t>(sizeof theirs);
}

// The child: answers pings, serves RDMA, then checks its region holds the
// parent's pattern (exit 0) or not (exit 3).
[[noreturn]] void child(int fd, std::uint32_t pings) {
    VerbsReference r;
    VerbsCard peer;
    if (!r.open("", region_bytes) || !swap_cards(fd, r.card(), peer) || !r.connect(peer)) {
        std::fprintf(stderr, "child: %s\n", r.error().c_str());
        ::_exit(1);
    }
    char go;
    if (::read(fd, &go, 1) != 1) ::_exit(1);
    if (!r.pong(pings)) { std::fprintf(stderr, "child pong: %s\n", r.error().c_str()); ::_exit(2); }
    if (!r.serve()) { std::fprintf(stderr, "child serve: %s\n", r.error().c_str()); ::_exit(2); }
    for (std::size_t i = 0; i < region_bytes; i += 4096)
        if (r.region()[i] != 'w') ::_exit(3);
    ::_exit(0);
}

} // namespace

TEST(VerbsReference, PingWriteReadBetweenTwoProcesses) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    constexpr std::uint32_t pings = 300;
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(sv[0]);
        child(sv[1], pings);
    }
    ::close(sv[1]);
    VerbsReference r;
    ASSERT_TRUE(r.open("", region_bytes)) << r.error();
    VerbsCard peer;
    ASSERT_TRUE(swap_cards(sv[0], r.card(), peer));
    ASSERT_TRUE(r.connect(peer)) << r.error();
    std::printf("[ verbs    ] %s, peer QP %u\n", r.describe().c_str(), peer.qpn);
    ASSERT_EQ(::write(sv[0], "g", 1), 1);

    const double rtt = r.ping(pings, 30);
    EXPECT_TRUE(std::isfinite(rtt)) << r.error();
    std::memset(r.region(), 'w', region_bytes);
    const double w8 = r.rma(VerbsRma::write, 8, 200, 1);
    const double w4m = r.rma(VerbsRma::write, region_bytes, 8, 4);
    std::memset(r.region(), 0, region_bytes);
    const double r4m = r.rma(VerbsRma::read, region_bytes, 2, 1);
    EXPECT_TRUE(std::isfinite(w8) && std::isfinite(w4m) && std::isfinite(r4m)) << r.error();
    // The read brought the child's region back: the pattern the writes left.
    EXPECT_EQ(r.region()[0], 'w');
    EXPECT_EQ(r.region()[region_bytes - 1], 'w');
    std::printf("[ verbs    ] 8 B ping-pong %.0f ns; 8 B write %.0f ns; 4 MiB write %.2f GB/s; 4 MiB read %.2f GB/s\n",
                rtt, w8 / 200, 8.0 * region_bytes / w4m, 2.0 * region_bytes / r4m);

    ASSERT_TRUE(r.finish()) << r.error();
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    ::close(sv[0]);
}

TEST(VerbsReference, NamesAMissingDevice) {
    VerbsReference r;
    EXPECT_FALSE(r.open("nosuch0", 4096));
    EXPECT_NE(r.error().find("nosuch0"), std::string::npos) << r.error();
    EXPECT_FALSE(std::isfinite(r.ping(1, 0)));
}

TEST(VerbsReference, ABadRemoteKeyFailsWithTheStatus) {
    // Two QPs of one process; the writer holds the target's key altered.
    VerbsReference writer, target;
    ASSERT_TRUE(writer.open("", 4096) && target.open("", 4096)) << writer.error() << target.error();
    VerbsCard card = target.card();
    card.rkey ^= 0x1000;
    ASSERT_TRUE(writer.connect(card) && target.connect(writer.card())) << writer.error() << target.error();
    EXPECT_FALSE(std::isfinite(writer.rma(VerbsRma::write, 8, 1, 1)));
    EXPECT_NE(writer.error().find("remote access error"), std::string::npos) << writer.error();
}
