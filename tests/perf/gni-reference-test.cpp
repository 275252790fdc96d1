// tests/perf/gni-reference-test.cpp - the bare uGNI reference between two
// processes (a fork, before either opens the NIC), on the software uGNI
// NIC: run by gni-reference.sh under tests/softnic/gni/softnic-run.  The
// cards travel over a socket pair; the child checks what the parent's
// puts left in its region, the parent what its gets brought back.
#include "tests/perf/gni-reference.hpp"
#include "tests/perf/reference-test.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace sluice::perf;

namespace {

constexpr std::size_t region_bytes = 4 << 20;

// The child: answers pings, serves the transfers, then checks its region
// holds the parent's pattern (exit 0) or not (exit 3).
[[noreturn]] void child(int fd, std::uint32_t pings) {
    GniReference r;
    GniCard peer;
    if (!r.open("", GniReference::inst_base + 1, region_bytes) || !swap_cards(fd, r.card(), peer) ||
        !r.connect(peer)) {
        std::fprintf(stderr, "child: %s\n", r.error().c_str());
        ::_exit(1);
    }
    char go;
    if (::read(fd, &go, 1) != 1) ::_exit(1);
    if (!r.pong(pings)) { std::fprintf(stderr, "child pong: %s\n", r.error().c_str()); ::_exit(2); }
    if (!r.serve()) { std::fprintf(stderr, "child serve: %s\n", r.error().c_str()); ::_exit(2); }
    if (!region_holds_pattern(r.region(), region_bytes)) ::_exit(3);
    ::_exit(0);
}

} // namespace

TEST(GniReference, PingPutGetBetweenTwoProcesses) {
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
    GniReference r;
    ASSERT_TRUE(r.open("", GniReference::inst_base, region_bytes)) << r.error();
    GniCard peer;
    ASSERT_TRUE(swap_cards(sv[0], r.card(), peer));
    ASSERT_TRUE(r.connect(peer)) << r.error();
    std::printf("[ gni      ] %s, peer instance %u\n", r.describe().c_str(), peer.inst_id);
    ASSERT_EQ(::write(sv[0], "g", 1), 1);

    const double rtt = r.ping(pings, 30);
    EXPECT_TRUE(std::isfinite(rtt)) << r.error();
    // 8 B by FMA, 4 MiB by the BTE.
    const TransferTimes t =
        transfers_check(r, region_bytes, GniRma::fma_put, GniRma::bte_put, GniRma::fma_get, GniRma::bte_get);
    std::printf("[ gni      ] SMSG ping-pong %.0f ns; 8 B FMA put %.0f ns, get %.0f ns; 4 MiB BTE put %.2f GB/s, "
                "get %.2f GB/s\n",
                rtt, t.put_small / 200, t.get_small / 200, 8.0 * region_bytes / t.put_large,
                2.0 * region_bytes / t.get_large);

    ASSERT_TRUE(r.finish()) << r.error();
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    ::close(sv[0]);
}

TEST(GniReference, NamesALibraryThatDoesNotOpen) {
    GniReference r;
    EXPECT_FALSE(r.open("/nonexistent/libugni.so.0", GniReference::inst_base + 2, 4096));
    EXPECT_NE(r.error().find("/nonexistent/libugni.so.0"), std::string::npos) << r.error();
    EXPECT_FALSE(std::isfinite(r.ping(2, 0)));
}

TEST(GniReference, NamesAMissingCredential) {
    const char *cookie = std::getenv("PMI_GNI_COOKIE");
    ASSERT_NE(cookie, nullptr) << "run under tests/softnic/gni/softnic-run";
    const std::string saved = cookie;
    ::unsetenv("PMI_GNI_COOKIE");
    GniReference r;
    const bool opened = r.open("", GniReference::inst_base + 3, 4096);
    ::setenv("PMI_GNI_COOKIE", saved.c_str(), 1);
    EXPECT_FALSE(opened);
    EXPECT_NE(r.error().find("PMI_GNI_COOKIE"), std::string::npos) << r.error();
}

TEST(GniReference, ABadRemoteHandleFailsTheTransfer) {
    // Three domains of one process: two writers bound to one target, the
    // second holding the target's region handle altered (another
    // generation), so the NIC finds no registration for it.
    GniReference target, good, bad;
    ASSERT_TRUE(target.open("", GniReference::inst_base + 4, 4096) &&
                good.open("", GniReference::inst_base + 5, 4096) && bad.open("", GniReference::inst_base + 6, 4096))
        << target.error() << good.error() << bad.error();
    GniCard card = target.card();
    ASSERT_TRUE(good.connect(card) && target.connect(good.card())) << good.error() << target.error();
    card.region_handle[0] ^= std::uint64_t{1} << 40;
    ASSERT_TRUE(bad.connect(card)) << bad.error();
    EXPECT_TRUE(std::isfinite(good.rma(GniRma::fma_put, 8, 1, 1))) << good.error();
    EXPECT_FALSE(std::isfinite(bad.rma(GniRma::fma_put, 8, 1, 1)));
    EXPECT_NE(bad.error().find("completed in error"), std::string::npos) << bad.error();
}
