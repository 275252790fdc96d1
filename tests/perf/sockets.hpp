// tests/perf/sockets.hpp - the bare socket references of the udp section:
// an 8 B UDP ping-pong on 127.0.0.1 and a TCP stream on 127.0.0.1.  Both
// sides of each live here, so the two rank processes of a Sluice job (or two
// processes the driver forks) run the same loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::perf {

// How the bare UDP ping-pong waits for its datagram: spinning on
// recv(MSG_DONTWAIT), as Sluice's udp conduit polls (it never blocks in the
// kernel), or in a blocking recv.
enum class UdpWait { spin, block };

// What the serving side runs while it waits for the first datagram or byte
// of a chunk (the worker: sluice_poll).  Until the peer starts, it may still
// need this side's runtime: under loss, the answer that lets it start can
// need sending again.
using Idle = void (*)();

// One UDP socket bound to 127.0.0.1, connected to its peer's.  Each datagram
// carries a 64-bit sequence number (8 B).  The pinger sends again when no
// answer came within `resend_ns`, so a lost datagram (udp-loss.sh) costs
// time, never a hang; the ponger answers every datagram it gets and sends
// the last answer of a chunk three times, since nobody asks again after it.
class UdpPingPong {
public:
    UdpPingPong() = default;
    ~UdpPingPong();
    UdpPingPong(const UdpPingPong &) = delete;
    UdpPingPong &operator=(const UdpPingPong &) = delete;

    bool open();                          // bind 127.0.0.1, port chosen by the kernel
    std::uint16_t port() const { return port_; }
    bool connect_to(std::uint16_t peer_port);

    // Pinger: `n` round trips; returns the ns the last `n - lead` took, or
    // NaN if the peer stopped answering for a second.  With `trips`, the
    // single round trips of those are appended to it, timed from send to
    // send as the AM's are (the clock is read after each send anyway).
    double ping(std::uint32_t n, std::uint32_t lead, UdpWait wait,
                std::vector<double> *trips = nullptr);
    // Ponger: answers until the last of the next `n` pings is answered (or
    // a second passes without a datagram); runs `idle` until the first comes.
    void pong(std::uint32_t n, UdpWait wait, Idle idle = nullptr);

    std::uint64_t resends() const { return resends_; }

    static constexpr double resend_ns = 1e6;

private:
    bool receive(std::uint64_t &value, UdpWait wait);

    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::uint64_t seq_ = 0;  // both sides count the same sequence
    std::uint64_t resends_ = 0;
};

// A TCP connection on 127.0.0.1 with large socket buffers: one side writes
// `count` messages of `bytes`, the other reads them all and answers one
// byte, so the writer's clock covers delivery.
class TcpStream {
public:
    TcpStream() = default;
    ~TcpStream();
    TcpStream(const TcpStream &) = delete;
    TcpStream &operator=(const TcpStream &) = delete;

    bool listen_any();                    // the reader: listen on 127.0.0.1
    std::uint16_t port() const { return port_; }
    bool connect_to(std::uint16_t peer_port); // the writer
    bool accept_one();                    // the reader, after the writer connected

    // ns to write `count` messages of `bytes` and get the answer; NaN on error.
    double write_messages(std::uint32_t count, std::size_t bytes);
    // Runs `idle` until the first byte is there.
    bool read_messages(std::uint32_t count, std::size_t bytes, Idle idle = nullptr);

    static constexpr int buffer_bytes = 4 << 20;

private:
    int listen_fd_ = -1;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    char *buffer_ = nullptr;
    std::size_t buffer_size_ = 0;
    char *buffer_of(std::size_t bytes);
};

// The driver's own UDP ping-pong: two processes it forks, pinned to the
// first two CPUs it may use, like the cache-line ping-pong.  ns per round
// trip, NaN on failure.
double udp_pingpong_forked(long iters, UdpWait wait, double timeout);

// UDP sockets this process holds (its descriptors found in /proc/net/udp
// and udp6): tells whether a job's traffic really went over a UDP conduit.
int udp_sockets_open();

} // namespace sluice::perf
