// tests/perf/ofi-reference-test.cpp - the bare libfabric reference of the
// ofi section (ofi-reference.hpp) between two processes: this one and a
// forked child, their cards exchanged over a socket pair.  Each provider
// that probes here is tested; the others are skipped with fi_getinfo's
// reason.
#include "tests/perf/ofi-reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::perf {
namespace {

constexpr std::size_t region = 1 << 20;

// The names in /dev/shm that start with "<pid>:", separated by spaces.
std::string shm_files_of(pid_t pid) {
    std::string found;
    const std::string prefix = std::to_string(pid) + ":";
    if (DIR *d = opendir("/dev/shm")) {
        while (const dirent *e = readdir(d))
            if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
                found += (found.empty() ? "" : " ") + std::string(e->d_name);
        closedir(d);
    }
    return found;
}

bool exchange(int fd, const OfiCard &mine, OfiCard &theirs) {
    return write(fd, &mine, sizeof mine) == static_cast<ssize_t>(sizeof mine) &&
           read(fd, &theirs, sizeof theirs) == static_cast<ssize_t>(sizeof theirs);
}

class OfiReferenceTest : public testing::TestWithParam<const char *> {
protected:
    void SetUp() override {
        const std::string why = ofi_probe(GetParam());
        if (!why.empty())
            GTEST_SKIP() << GetParam() << " not usable here: " << why;
    }
    // `parent` runs here, `child` in a forked process (its result is its
    // exit code), the two references connected.
    void run_pair(const std::function<void(OfiReference &)> &parent,
                  const std::function<bool(OfiReference &)> &child, bool delivery) {
        int fds[2];
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            close(fds[0]);
            bool ok = false;
            {
                OfiReference r;
                OfiCard peer;
                ok = r.open(GetParam(), region, delivery) && exchange(fds[1], r.card(), peer) &&
                     r.connect(peer) && child(r);
                if (!ok)
                    std::fprintf(stderr, "child: %s\n", r.error().c_str());
            }  // closed before _exit: shm removes its file in /dev/shm then
            _exit(ok ? 0 : 1);
        }
        close(fds[1]);
        {
            OfiReference r;
            OfiCard peer;
            const bool opened = r.open(GetParam(), region, delivery);
            EXPECT_TRUE(opened) << r.error();
            if (opened && exchange(fds[0], r.card(), peer)) {
                EXPECT_TRUE(r.connect(peer)) << r.error();
                parent(r);
            }
        }
        close(fds[0]);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
        // shm names an unnamed endpoint's region /dev/shm/<pid>:...: the
        // child has closed its own.
        EXPECT_EQ(shm_files_of(pid), "") << "the child left files in /dev/shm";
    }
    // Writes, then reads, checking the bytes on both sides.
    void write_and_read(bool delivery) {
        run_pair(
            [](OfiReference &r) {
                // Write: the child finds our pattern in its target region.
                std::memset(r.local_region(), 0x5a, region);
                EXPECT_FALSE(std::isnan(r.rma(OfiRma::write, region, 3, 2))) << r.error();
                EXPECT_FALSE(std::isnan(r.rma(OfiRma::write, 8, 10, 1))) << r.error();
                EXPECT_TRUE(r.finish()) << r.error();
                // Read: the child's target region holds 0x3c by now.
                EXPECT_TRUE(r.pong(1, true)) << r.error();
                std::memset(r.local_region(), 0, region);
                EXPECT_FALSE(std::isnan(r.rma(OfiRma::read, region, 2, 2))) << r.error();
                EXPECT_EQ(r.local_region()[0], 0x3c);
                EXPECT_EQ(r.local_region()[region - 1], 0x3c);
                EXPECT_TRUE(r.finish()) << r.error();
            },
            [](OfiReference &r) {
                std::memset(r.target_region(), 0, region);
                if (!r.serve())
                    return false;
                const bool written =
                    r.target_region()[0] == 0x5a && r.target_region()[region - 1] == 0x5a;
                std::memset(r.target_region(), 0x3c, region);
                // Tells the parent to read, then serves the read.
                return written && !std::isnan(r.ping(1, 0, true)) && r.serve();
            },
            delivery);
    }
};

TEST_P(OfiReferenceTest, PingPongBothWays) {
    run_pair(
        [](OfiReference &r) {
            const double send = r.ping(200, 20, false);
            EXPECT_FALSE(std::isnan(send)) << r.error();
            EXPECT_GT(send, 0);
            const double inject = r.ping(200, 20, true);
            EXPECT_FALSE(std::isnan(inject)) << r.error();
        },
        [](OfiReference &r) { return r.pong(200, false) && r.pong(200, true); }, false);
}

// Writes complete at the level the conduit asks for over this provider.
TEST_P(OfiReferenceTest, WriteAndReadMoveTheBytesAsTheConduitCompletes) {
    write_and_read(ofi_delivery_complete(GetParam()));
}

// The provider's default completion (transmit complete).
TEST_P(OfiReferenceTest, WriteAndReadMoveTheBytesTransmitComplete) { write_and_read(false); }

INSTANTIATE_TEST_SUITE_P(Providers, OfiReferenceTest, testing::Values("tcp;ofi_rxm", "shm"),
                         [](const testing::TestParamInfo<const char *> &p) {
                             return ofi_tag(p.param);
                         });

TEST(OfiReference, DeliveryCompleteFollowsTheConduitKnob) {
    unsetenv("SLUICE_OFI_DELIVERY_COMPLETE"); // auto: all but shm
    EXPECT_TRUE(ofi_delivery_complete("tcp;ofi_rxm"));
    EXPECT_FALSE(ofi_delivery_complete("shm"));
    setenv("SLUICE_OFI_DELIVERY_COMPLETE", "on", 1);
    EXPECT_TRUE(ofi_delivery_complete("shm"));
    setenv("SLUICE_OFI_DELIVERY_COMPLETE", "0", 1);
    EXPECT_FALSE(ofi_delivery_complete("tcp;ofi_rxm"));
    setenv("SLUICE_OFI_DELIVERY_COMPLETE", "auto", 1);
    EXPECT_TRUE(ofi_delivery_complete("tcp;ofi_rxm"));
    unsetenv("SLUICE_OFI_DELIVERY_COMPLETE");
}

TEST(OfiReference, BadInput) {
    EXPECT_EQ(ofi_tag("tcp;ofi_rxm"), "tcp");
    EXPECT_EQ(ofi_tag("SHM"), "shm");
    EXPECT_EQ(ofi_tag(";x"), "default");
    EXPECT_NE(ofi_probe("no-such-provider"), "");
    OfiReference r;
    EXPECT_FALSE(r.open("no-such-provider", region));
    EXPECT_NE(r.error(), "");
    EXPECT_EQ(r.local_region(), nullptr);
    EXPECT_FALSE(r.connect(OfiCard{}));
    if (!ofi_probe("shm").empty())
        GTEST_SKIP() << "shm not usable here";
    OfiReference s;
    ASSERT_TRUE(s.open("shm", region)) << s.error();
    EXPECT_FALSE(s.connect(OfiCard{})); // a card without an address
    EXPECT_TRUE(std::isnan(s.rma(OfiRma::write, region + 1, 1, 1))); // past the region
    EXPECT_TRUE(std::isnan(s.rma(OfiRma::write, 8, 1, 0)));          // no window
}

} // namespace
} // namespace sluice::perf
