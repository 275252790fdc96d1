// tests/perf/portals-reference-test.cpp - the bare Portals 4 reference of
// the portals section (portals-reference.hpp) between two processes: this
// one (rank 0) and a child (rank 1) forked before either touches Portals,
// each with an NI of its own over the reference implementation's UDP
// transport, the cards exchanged over a socket pair.  The child checks
// what the parent's Puts left in its region and reports over the socket
// pair (the library's event loop, libev's default loop, reaps children
// itself: waitpid may find none).  Round trips take milliseconds there
// (two spinning threads per process on a small machine), so the counts are
// small.
#include "tests/perf/portals-reference.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

using namespace sluice::perf;

namespace {

constexpr std::size_t region_bytes = 4 << 20;
// How sluice-bench's portals section cuts 4 MiB with the conduit's
// defaults: pieces of the inline limit, 250 in flight.
constexpr std::size_t piece = 880;
constexpr std::uint32_t window = 250;

// A byte for every offset, so a piece landing at the wrong offset shows.
char pattern(std::size_t i) { return static_cast<char>((i * 2654435761u) >> 13); }

bool swap_cards(int fd, const PortalsCard &mine, PortalsCard &theirs) {
    return ::write(fd, &mine, sizeof mine) == static_cast<ssize_t>(sizeof mine) &&
           ::read(fd, &theirs, sizeof theirs) == static_cast<ssize_t>(sizeof theirs);
}

[[noreturn]] void child_report(int fd, char stage) {
    (void)!::write(fd, &stage, 1);
    ::_exit(stage);
}

// The child: answers pings (spinning, then yielding), serves RMA, then
// checks its region holds the parent's pattern: reports 0 if it does, a
// stage number if not.
[[noreturn]] void child(int fd, std::uint32_t pings) {
    PortalsReference r;
    PortalsCard peer;
    if (!r.open(region_bytes, 1) || !swap_cards(fd, r.card(), peer) || !r.connect(peer)) {
        std::fprintf(stderr, "child: %s\n", r.error().c_str());
        child_report(fd, 1);
    }
    char go;
    if (::read(fd, &go, 1) != 1) child_report(fd, 1);
    if (!r.pong(pings, PortalsWait::spin) || !r.pong(pings, PortalsWait::yield)) {
        std::fprintf(stderr, "child pong: %s\n", r.error().c_str());
        child_report(fd, 2);
    }
    if (!r.serve()) {
        std::fprintf(stderr, "child serve: %s\n", r.error().c_str());
        child_report(fd, 2);
    }
    for (std::size_t i = 0; i < region_bytes; ++i)
        if (r.region()[i] != pattern(i)) {
            std::fprintf(stderr, "child: byte %zu of the region is not the parent's\n", i);
            child_report(fd, 3);
        }
    r.close();
    child_report(fd, 0);
}

} // namespace

TEST(PortalsReference, PingPutGetBetweenTwoProcesses) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    constexpr std::uint32_t pings = 30;
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(sv[0]);
        child(sv[1], pings);
    }
    ::close(sv[1]);
    PortalsReference r;
    ASSERT_TRUE(r.open(region_bytes, 0)) << r.error();
    PortalsCard peer;
    ASSERT_TRUE(swap_cards(sv[0], r.card(), peer));
    ASSERT_TRUE(r.connect(peer)) << r.error();
    std::printf("[ portals  ] %s; peer pid %u\n", r.describe().c_str(), peer.pid);
    ASSERT_EQ(::write(sv[0], "g", 1), 1);

    const double rtt = r.ping(pings, 5, PortalsWait::spin);
    EXPECT_TRUE(std::isfinite(rtt)) << r.error();
    const double rtt_yield = r.ping(pings, 5, PortalsWait::yield);
    EXPECT_TRUE(std::isfinite(rtt_yield)) << r.error();
    for (std::size_t i = 0; i < region_bytes; ++i)
        r.region()[i] = pattern(i);
    const double p8 = r.rma(PortalsRma::put, 8, 20, 1);
    const double p4m = r.rma(PortalsRma::put, region_bytes, 1, window, piece);
    std::memset(r.region(), 0, region_bytes);
    const double g4m = r.rma(PortalsRma::get, region_bytes, 1, window, piece);
    EXPECT_TRUE(std::isfinite(p8) && std::isfinite(p4m) && std::isfinite(g4m)) << r.error();
    // The Get brought the child's region back: what the Puts left there.
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < region_bytes; ++i)
        wrong += r.region()[i] != pattern(i);
    EXPECT_EQ(wrong, 0u) << "bytes the Get brought back that the Puts did not leave";
    std::printf("[ portals  ] 8 B ping-pong %.0f ns (PtlEQPoll: %.0f ns); 8 B Put+ACK %.0f ns; "
                "4 MiB Put %.3f GB/s; 4 MiB Get %.3f GB/s (%zu B pieces, %u in flight)\n",
                rtt, rtt_yield, p8 / 20, 1.0 * region_bytes / p4m, 1.0 * region_bytes / g4m, piece, window);

    ASSERT_TRUE(r.finish()) << r.error();
    char stage = -1;
    ASSERT_EQ(::read(sv[0], &stage, 1), 1);
    EXPECT_EQ(stage, 0) << "the child failed at stage " << int(stage);
    (void)::waitpid(pid, nullptr, 0);
    r.close();
    ::close(sv[0]);
}

TEST(PortalsReference, NothingBeforeOpen) {
    PortalsReference r;
    EXPECT_FALSE(r.connect(PortalsCard{}));
    EXPECT_FALSE(std::isfinite(r.ping(1, 0, PortalsWait::spin)));
    EXPECT_FALSE(r.finish());
    EXPECT_EQ(r.describe(), "not open");
}
