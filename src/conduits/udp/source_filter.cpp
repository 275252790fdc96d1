// src/conduits/udp/source_filter.cpp - the kernel's check of datagram
// sources (source_filter.hpp).
#include "conduits/udp/source_filter.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sluice::conduit::udp {
namespace {

// What the filter returns: a length to cut the datagram to.  A UDP socket's
// filter sees the datagram from its UDP header on, and the kernel keeps at
// least that header, so "1" leaves a payload of 0 bytes.
constexpr std::uint32_t keep_whole = 0xffffffffu;
constexpr std::uint32_t keep_header = 1;

sock_filter statement(std::uint16_t code, std::uint32_t k) { return sock_filter{code, 0, 0, k}; }
sock_filter jump_if_equal(std::uint32_t k, std::uint8_t if_true, std::uint8_t if_false) {
    return sock_filter{BPF_JMP | BPF_JEQ | BPF_K, if_true, if_false, k};
}

// The program: the source address, then per address a block that skips
// itself when the address differs, else tests the ports:
//
//        ld   [net + 12]               source IPv4 address
//        jeq  #address1, 0, skip1      (skip1: to the next block)
//        ldh  [0]                      UDP source port
//        jeq  #port1, whole, 0
//        jeq  #port2, whole, 0  ...
//        ret  #1                       known address, unknown port
// whole: ret  #-1
//        jeq  #address2, ...           next block; the accumulator still
//        ...                           holds the address
//        ret  #1                       unknown address
//
// Jump offsets are 8 bits: at most source_filter_max ports per block keeps
// every one in range.
std::vector<sock_filter> program(std::vector<Source> sources) {
    std::sort(sources.begin(), sources.end(), [](const Source &a, const Source &b) {
        return a.ip != b.ip ? a.ip < b.ip : a.port < b.port;
    });
    sources.erase(std::unique(sources.begin(), sources.end(),
                              [](const Source &a, const Source &b) { return a.ip == b.ip && a.port == b.port; }),
                  sources.end());
    std::vector<sock_filter> code;
    code.push_back(statement(BPF_LD | BPF_W | BPF_ABS, static_cast<std::uint32_t>(SKF_NET_OFF) + 12));
    for (std::size_t first = 0, end; first < sources.size(); first = end) {
        end = first;
        while (end < sources.size() && sources[end].ip == sources[first].ip) ++end;
        const auto ports = static_cast<std::uint8_t>(end - first);
        code.push_back(jump_if_equal(ntohl(sources[first].ip), 0, static_cast<std::uint8_t>(ports + 3)));
        code.push_back(statement(BPF_LD | BPF_H | BPF_ABS, 0));
        for (std::uint8_t i = 0; i < ports; ++i)
            code.push_back(jump_if_equal(ntohs(sources[first + i].port), static_cast<std::uint8_t>(ports - i), 0));
        code.push_back(statement(BPF_RET | BPF_K, keep_header));
        code.push_back(statement(BPF_RET | BPF_K, keep_whole));
    }
    code.push_back(statement(BPF_RET | BPF_K, keep_header));
    return code;
}

// A UDP socket bound to `ip` on a port of the kernel's choice, or -1.
int socket_on(in_addr ip, sockaddr_in &bound) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    bound = sockaddr_in{};
    bound.sin_family = AF_INET;
    bound.sin_addr = ip;
    socklen_t length = sizeof bound;
    if (::bind(fd, reinterpret_cast<sockaddr *>(&bound), sizeof bound) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &length) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// The next datagram on `fd` within 200 ms: its length (-1: none) and source port.
ssize_t receive_one(int fd, std::uint16_t &port) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) != 1) return -1;
    char byte[2];
    sockaddr_in from{};
    socklen_t length = sizeof from;
    const ssize_t n = ::recvfrom(fd, byte, sizeof byte, MSG_DONTWAIT | MSG_TRUNC, reinterpret_cast<sockaddr *>(&from), &length);
    port = from.sin_port;
    return n;
}

bool program_attach(int fd, const std::vector<Source> &sources, std::string &why) {
    std::vector<sock_filter> code = program(sources);
    const sock_fprog prog{static_cast<unsigned short>(code.size()), code.data()};
    if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
        why = std::string("SO_ATTACH_FILTER: ") + std::strerror(errno);
        return false;
    }
    return true;
}

} // namespace

bool source_filter_attach(int fd, const std::vector<Source> &sources, in_addr ip, std::string &why) {
    if (sources.size() > source_filter_max) {
        why = std::to_string(sources.size()) + " source addresses, more than the " +
              std::to_string(source_filter_max) + " a filter checks";
        return false;
    }
    return source_filter_works(ip, why) && program_attach(fd, sources, why);
}

bool source_filter_works(in_addr ip, std::string &why) {
    sockaddr_in at[3];
    int fd[3];
    for (int i = 0; i < 3; ++i) fd[i] = socket_on(ip, at[i]);
    bool ok = fd[0] >= 0 && fd[1] >= 0 && fd[2] >= 0;
    if (!ok) why = std::string("cannot open test sockets: ") + std::strerror(errno);
    // fd[0] receives; fd[1] is known, fd[2] is not.
    if (ok) ok = program_attach(fd[0], {Source{ip.s_addr, at[1].sin_port}}, why);
    if (ok) {
        const char byte = 1;
        for (int i = 1; i < 3; ++i)
            (void)::sendto(fd[i], &byte, 1, 0, reinterpret_cast<const sockaddr *>(&at[0]), sizeof at[0]);
        std::uint16_t port[2] = {0, 0};
        const ssize_t known = receive_one(fd[0], port[0]);
        const ssize_t stranger = receive_one(fd[0], port[1]);
        ok = known == 1 && port[0] == at[1].sin_port && stranger == 0 && port[1] == at[2].sin_port;
        if (!ok)
            why = "a test datagram from a known port arrived with " + std::to_string(known) +
                  " bytes and one from an unknown port with " + std::to_string(stranger) + " (expected 1 and 0)";
    }
    for (int f : fd)
        if (f >= 0) ::close(f);
    return ok;
}

} // namespace sluice::conduit::udp
