// src/conduits/udp/tests/unit_source_filter.cpp - the udp conduit's kernel check of
// datagram sources (src/conduits/udp/source_filter.hpp), on real sockets of
// this process on loopback addresses (all of 127/8 is local on Linux): a
// datagram from a known address and port arrives whole, any other arrives
// with 0 bytes, in any mix of addresses and ports up to the limit; past the
// limit nothing is attached.
#include "conduits/udp/source_filter.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace udp = sluice::conduit::udp;

namespace {

in_addr loopback(int last) {
    in_addr a{};
    a.s_addr = htonl(0x7f000000u | static_cast<std::uint32_t>(last));
    return a;
}

// A UDP socket on `ip`, port of the kernel's choice.
struct Sock {
    int fd = -1;
    sockaddr_in at{};
    explicit Sock(in_addr ip) {
        fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        at.sin_family = AF_INET;
        at.sin_addr = ip;
        socklen_t n = sizeof at;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr *>(&at), &n) != 0)
            ADD_FAILURE() << "cannot open a UDP socket on " << inet_ntoa(ip);
    }
    ~Sock() {
        if (fd >= 0) ::close(fd);
    }
    Sock(const Sock &) = delete;
    Sock &operator=(const Sock &) = delete;
    udp::Source source() const { return udp::Source{at.sin_addr.s_addr, at.sin_port}; }
};

// Sends 5 bytes from `from` to `to` and returns the length `to` receives
// (-1: nothing within a second).
ssize_t through(const Sock &from, const Sock &to) {
    const char bytes[5] = {1, 2, 3, 4, 5};
    if (::sendto(from.fd, bytes, sizeof bytes, 0, reinterpret_cast<const sockaddr *>(&to.at), sizeof to.at) != 5)
        return -2;
    pollfd p{to.fd, POLLIN, 0};
    if (::poll(&p, 1, 1000) != 1) return -1;
    char got[16];
    return ::recv(to.fd, got, sizeof got, MSG_DONTWAIT);
}

TEST(UdpSourceFilter, TheKernelTreatsUdpDatagramsAsTheFilterExpects) {
    std::string why;
    EXPECT_TRUE(udp::source_filter_works(loopback(1), why)) << why;
}

TEST(UdpSourceFilter, KnownAddressAndPortPassWholeAnythingElseArrivesEmpty) {
    Sock receiver(loopback(1));
    Sock a1(loopback(1)), b1(loopback(1));           // 127.0.0.1, two ports
    Sock a2(loopback(2)), b2(loopback(2)), c2(loopback(2));  // 127.0.0.2, three ports
    Sock a3(loopback(3));                              // 127.0.0.3
    std::string why;
    // a1 and b2, c2 are known (c2 twice: duplicates are allowed).
    ASSERT_TRUE(udp::source_filter_attach(receiver.fd, {b2.source(), a1.source(), c2.source(), c2.source()},
                                          loopback(1), why))
        << why;
    EXPECT_EQ(through(a1, receiver), 5);
    EXPECT_EQ(through(b1, receiver), 0) << "known address, unknown port";
    EXPECT_EQ(through(b2, receiver), 5);
    EXPECT_EQ(through(c2, receiver), 5);
    EXPECT_EQ(through(a2, receiver), 0) << "known address, unknown port";
    EXPECT_EQ(through(a3, receiver), 0) << "unknown address";
}

TEST(UdpSourceFilter, AsManySourcesAsTheLimitAllPass) {
    Sock receiver(loopback(1));
    std::vector<std::unique_ptr<Sock>> senders;
    std::vector<udp::Source> sources;
    for (std::size_t i = 0; i < udp::source_filter_max; ++i) {
        // three addresses, many ports each
        senders.push_back(std::make_unique<Sock>(loopback(10 + static_cast<int>(i % 3))));
        sources.push_back(senders.back()->source());
    }
    std::string why;
    ASSERT_TRUE(udp::source_filter_attach(receiver.fd, sources, loopback(1), why)) << why;
    for (const auto &s : senders) EXPECT_EQ(through(*s, receiver), 5) << "from " << inet_ntoa(s->at.sin_addr);
    Sock stranger(loopback(10));
    EXPECT_EQ(through(stranger, receiver), 0);
}

TEST(UdpSourceFilter, BeyondTheLimitNothingIsAttached) {
    Sock receiver(loopback(1)), sender(loopback(1));
    std::vector<udp::Source> sources(udp::source_filter_max + 1, sender.source());
    std::string why;
    EXPECT_FALSE(udp::source_filter_attach(receiver.fd, sources, loopback(1), why));
    EXPECT_NE(why.find("more than the"), std::string::npos) << why;
    Sock stranger(loopback(1));
    EXPECT_EQ(through(stranger, receiver), 5) << "no filter: every datagram arrives whole";
}

TEST(UdpSourceFilter, ABadSocketIsRefusedWithTheReason) {
    std::string why;
    EXPECT_FALSE(udp::source_filter_attach(-1, {}, loopback(1), why));
    EXPECT_NE(why.find("SO_ATTACH_FILTER"), std::string::npos) << why;
}

} // namespace
