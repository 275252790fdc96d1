// src/conduits/udp/tests/udp_driver.cpp - sluice-udp-gtest: the udp
// conduit's own multi-process tests, run under sluicerun like those of
// tests/mp/mp_driver.cpp (whose fixture and checks they share through
// tests/mp/mp_driver.hpp): strangers' datagrams dropped and counted (the
// `intruder` case of sluice-udp-check), connected send sockets, the peer
// socket, and smp and udp in one job.  The AM and RMA suites over udp are
// sluice-mp-gtest's Net/ instantiations, which run for every network
// conduit.  Built only when udp is in libsluice (src/conduits/udp/tests/
// Makefile.inc).
#include "tests/mp/mp_driver.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

using namespace sluice_test;

namespace {

std::string udp_check_program() { return build_dir() + "/src/conduits/udp/tests/sluice-udp-check"; }

// The Net/ configurations of udp (sluice-mp-gtest runs its cases over every
// network conduit that probes): none when udp's probe fails here.
std::vector<Config> over_udp() {
    std::vector<Config> v;
    for (const Config &c : over_network())
        if (c.network == "udp") v.push_back(c);
    return v;
}

} // namespace

// ---- udp: strangers on the sockets ------------------------------------------
// Random bytes, a well-formed datagram with another job's secret, stubs
// and oversized datagrams, and, from what a wiretap read of the job's own
// traffic, forgeries with the job's secret but no key, replays and genuine
// datagrams cut short, from an address the receiver knows and from one it
// does not: each receiver's counters (SLUICE_UDP_STATS) show every one
// dropped for its reason, no forged request reaches its handler, and the
// job's own traffic is unaffected.  With
// the kernel's source filter (the default from 3 ranks on) those from the
// unknown address arrive emptied and count as "address"; otherwise (and
// with it, the known address's) each is counted by what the decoder finds
// wrong.  At 2 ranks each rank's one peer has a socket of its own (the
// default): the known address's datagrams come in on it, the unknown
// one's on the receiving socket, where Sluice checks them.
class UdpIntruders : public MpTest {
protected:
    void SetUp() override {
        MpTest::SetUp();
        ASSERT_TRUE(executable(program())) << "test program not built: " << program();
    }
    std::string program() const override { return udp_check_program(); }
};
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
        std::regex sent("INTRUDER rank [0-9]+ known magic ([0-9]+) secret ([0-9]+) truncated ([0-9]+) forged ([0-9]+) "
                        "replay ([0-9]+) unknown magic ([0-9]+) secret ([0-9]+) truncated ([0-9]+) forged ([0-9]+) "
                        "replay ([0-9]+) delivered ([0-9]+)");
        std::regex dropped("udp: .*dropped: truncated ([0-9]+), magic ([0-9]+), secret ([0-9]+), .*forged ([0-9]+), "
                           "address ([0-9]+) \\(checked by ([a-zA-Z' ]+)\\), replay ([0-9]+),.*; MAC on");
        enum { magic, secret, truncated, forged, replay, kinds };
        long known[kinds] = {}, unknown[kinds] = {}, got[kinds] = {}, got_address = 0, delivered = 0;
        for (std::sregex_iterator it(r.out.begin(), r.out.end(), sent), end; it != end; ++it) {
            for (int k = 0; k < kinds; ++k) {
                known[k] += std::stol((*it)[1 + k]);
                unknown[k] += std::stol((*it)[1 + kinds + k]);
            }
            delivered += std::stol((*it)[1 + 2 * kinds]);
        }
        int lines = 0, checked_as_expected = 0;
        for (std::sregex_iterator it(r.err.begin(), r.err.end(), dropped), end; it != end; ++it, ++lines) {
            got[truncated] += std::stol((*it)[1]);
            got[magic] += std::stol((*it)[2]);
            got[secret] += std::stol((*it)[3]);
            got[forged] += std::stol((*it)[4]);
            got_address += std::stol((*it)[5]);
            checked_as_expected += (*it)[6] == mode.checker;
            got[replay] += std::stol((*it)[7]);
        }
        EXPECT_EQ(lines, n) << "every rank prints its udp counters, MAC on\n" << r.describe();
        EXPECT_EQ(checked_as_expected, n) << "who checks addresses: " << mode.checker << "\n" << r.describe();
        for (int k = 0; k < kinds; ++k) {
            EXPECT_EQ(known[k], long{per_kind} * n * (k == truncated ? 3 : 1)) << "kind " << k << "\n" << r.describe();
            EXPECT_EQ(unknown[k], known[k]) << "kind " << k << "\n" << r.describe();
        }
        EXPECT_EQ(delivered, 0) << "forged requests reached their handler\n" << r.describe();
        // From the unknown address: emptied by the kernel's filter, or, when
        // Sluice checks, dropped by the decoder for what is wrong with them,
        // and replays (authentic, well formed) for the address.
        const bool by_filter = std::string(mode.checker) == "the kernel's filter";
        for (int k = 0; k < kinds; ++k) {
            const long from_unknown = by_filter || k == replay ? 0 : unknown[k];
            EXPECT_EQ(got[k], known[k] + from_unknown) << "kind " << k << "\n" << r.describe();
        }
        long unknown_all = 0;
        for (long u : unknown) unknown_all += u;
        EXPECT_EQ(got_address, by_filter ? unknown_all : unknown[replay]) << r.describe();
    }
}
INSTANTIATE_TEST_SUITE_P(Udp, UdpIntruders, ::testing::ValuesIn(over_udp()), config_name);

// ---- udp: Get replies in whole datagrams ---------------------------------------
// The reference Get answers in whole datagrams (Capabilities::get_piece):
// nbi-get's 16 Gets of 4 MiB at the largest datagram (65507 bytes) take
// 16 x 65 replies of 65379 bytes, where smp's 16 KiB Medium (the job's,
// beside smp) took 4096 and a 64 KiB Medium (udp alone) 2048 datagrams.  Rank 1's counters
// show it: data datagrams are those sent less the acks alone.  Each goes
// out with its payload read in place from the segment, not copied into
// the datagram (AmMessage::payload_stable), which the in-place count shows.
class UdpGetReplies : public UdpIntruders {};
TEST_P(UdpGetReplies, OneDatagramEach) {
    JobResult r = run({"nbi-get", "16", "4194304"}, 120, {{"SLUICE_UDP_STATS", "1"}, {"SLUICE_UDP_MTU", "65535"}});
    expect_success(r);
    EXPECT_NE(r.out.find("PASS nbi-get"), std::string::npos) << r.describe();
    std::smatch m;
    const std::regex counters("sluice\\[rank 1\\] udp: sent ([0-9]+) \\(retransmitted ([0-9]+), acks alone ([0-9]+), "
                              "refused by the kernel [0-9]+, payload sent in place ([0-9]+)\\)");
    ASSERT_TRUE(std::regex_search(r.err, m, counters)) << r.describe();
    const long data = std::stol(m[1]) - std::stol(m[3]);
    EXPECT_GE(data, 16 * 65) << r.describe();
    EXPECT_LE(data, 16 * 65 + std::stol(m[2]) + 16) << "Get replies of more than one datagram\n" << r.describe();
    const long in_place = std::stol(m[4]);
    EXPECT_GE(in_place, 16 * 65) << "Get replies copied into their datagrams\n" << r.describe();
    EXPECT_LE(in_place, data) << r.describe();
}
INSTANTIATE_TEST_SUITE_P(Udp, UdpGetReplies, ::testing::ValuesIn(over_udp()), config_name);

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

// ---- ports of the kernel's choice --------------------------------------------
// In a network namespace of its own, whose ephemeral port range is 40000 to
// 40023, 16 of those ports held by a process of this user with SO_REUSEPORT
// set (as other ranks hold their receiving and send ports), a 2-rank job
// over udp (a peer socket on each rank's receiving port, connected sockets
// on its send port) must get ports of its own for both: a socket that asks
// for SO_REUSEPORT before the kernel chooses its port may be given one of
// the held ones, and the holder then gets its datagrams.
TEST(UdpPorts, NoRankSharesAPortAnotherProcessHolds) {
    require_programs();
    ASSERT_EQ(::geteuid(), 0u) << "this test needs root for unshare --net (CI runs as root)";
    JobSpec spec;
    spec.ranks = 0;
    const std::string script = "ip link set lo up && echo '40000 40023' > /proc/sys/net/ipv4/ip_local_port_range && "
                               "exec \"$0\" \"$@\"";
    spec.program = {"/usr/bin/unshare", "--net", "sh", "-c", script, udp_check_program(), "--hold-ports", "40000", "16", "--",
                    launcher_path(), "-n", "2", "--", mp_program(), "am"};
    spec.env = {{"SLUICE_ROUTE", "network"}, {"SLUICE_NETWORK", "udp"},  {"SLUICE_UDP_ADDRESS", "127.0.0.1"},
                {"SLUICE_VERBOSE", "1"},      {"SLUICE_UDP_STATS", "1"}, {"SLUICE_UDP_PEER_TIMEOUT", "10"}};
    JobResult r = run_job(spec);
    expect_success(r);
    const std::regex bound(R"(sluice\[rank \d+\] udp: 127\.0\.0\.1:(\d+), datagrams)");
    int ranks = 0;
    for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), bound); it != std::sregex_iterator(); ++it) {
        const int port = std::stoi((*it)[1].str());
        EXPECT_TRUE(port >= 40016 && port <= 40023) << "a rank's receiving port is " << port
                                                     << ", one the holder holds\n" << r.describe();
        ++ranks;
    }
    EXPECT_EQ(ranks, 2) << r.describe();
    EXPECT_EQ(count_occurrences(r.err, "datagrams come in on a socket connected to"), 2) << r.describe();
    EXPECT_EQ(count_occurrences(r.err, ", misrouted 0,"), 2) << r.describe();
}

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
