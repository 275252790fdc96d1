// src/conduits/udp/udp_setup.cpp - the udp conduit's sockets and life
// cycle: the address to use, the receiving socket, connected send sockets,
// the peer socket and the source filter, init (the bootstrap exchange),
// the segment, finalize and the counters SLUICE_UDP_STATS prints.  The
// protocol is in udp.cpp (README.md, Design).
#include "conduits/udp/udp.hpp"
#include "conduits/udp/udp_transport.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "conduits/udp/source_filter.hpp"
#include "spawners/bootstrap.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit::udp {
namespace detail {

std::string address_text(const sockaddr_in &a) {
    char ip[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// The local IPv4 address to use and the interface it is on.
static bool address_pick(bool one_host, in_addr &address, std::string &interface, std::string &error) {
    const std::string &want = base::knob_string(knob(Knob::UDP_ADDRESS));
    if (want.empty() && one_host) {
        address.s_addr = htonl(INADDR_LOOPBACK);
        interface = "lo";
        return true;
    }
    in_addr literal{};
    const bool is_literal = !want.empty() && ::inet_pton(AF_INET, want.c_str(), &literal) == 1;
    if (is_literal && literal.s_addr == htonl(INADDR_ANY)) {
        error = "SLUICE_UDP_ADDRESS=0.0.0.0 is not an address peers can send to";
        return false;
    }
    ifaddrs *list = nullptr;
    if (::getifaddrs(&list) != 0) {
        error = std::string("getifaddrs: ") + std::strerror(errno);
        return false;
    }
    std::string seen;
    bool found = false;
    for (ifaddrs *i = list; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
        const in_addr a = reinterpret_cast<const sockaddr_in *>(i->ifa_addr)->sin_addr;
        char text[INET_ADDRSTRLEN];
        ::inet_ntop(AF_INET, &a, text, sizeof text);
        seen += std::string(seen.empty() ? "" : ", ") + i->ifa_name + " " + text;
        if (is_literal ? a.s_addr == literal.s_addr
                       : want.empty() ? !(i->ifa_flags & IFF_LOOPBACK) : want == i->ifa_name) {
            address = a;
            interface = i->ifa_name;
            found = true;
        }
    }
    ::freeifaddrs(list);
    if (found) return true;
    if (want.empty())
        error = "the job spans hosts but this host has no up non-loopback IPv4 interface (it has: " + seen + ")";
    else
        error = "SLUICE_UDP_ADDRESS=" + want + " is neither an address of this host nor an interface with an IPv4 "
                "address (this host has: " + seen + ")";
    return false;
}

static int interface_mtu(int fd, const std::string &interface) {
    ifreq r{};
    std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", interface.c_str());
    if (::ioctl(fd, SIOCGIFMTU, &r) != 0) return 1500;
    return r.ifr_mtu;
}

Status UdpTransport::init_impl() {
    const TransportSetup &s = setup();
    const char *op = "init (udp)";
    Capabilities &caps = capabilities_mutable();
    caps.max_medium = max_medium_bytes;
    caps.max_long = max_long_bytes;
    caps.needs_credits = true;  // a flood would overrun the peer's socket buffer
    caps.acknowledges = true;

    common::reliable::Config &c = protocol_;
    c.window = static_cast<unsigned>(std::clamp<std::int64_t>(base::knob_int(knob(Knob::UDP_WINDOW)), 8, 1024));
    c.ack_delay_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, base::knob_int(knob(Knob::UDP_ACK_DELAY)))) * 1000;
    c.rto_min_ns = static_cast<std::uint64_t>(std::clamp<std::int64_t>(base::knob_int(knob(Knob::UDP_RTO_MIN)), 10, 1'000'000)) * 1000;
    c.rto_max_ns = rto_max_ns;
    c.rto_initial_ns = 10'000'000;  // before any round trip is measured (at least rto_min)
    peer_timeout_s_ = std::max(0.1, base::knob_double(knob(Knob::UDP_PEER_TIMEOUT)));
    c.peer_timeout_ns = static_cast<std::uint64_t>(peer_timeout_s_ * 1e9);

    bool one_host = true;
    for (std::uint32_t h : s.host_of) one_host &= h == s.host_of[s.rank];
    in_addr ip{};
    std::string interface, error;
    if (!address_pick(one_host, ip, interface, error))
        return base::report(Status::transport, op, "set SLUICE_UDP_ADDRESS to an address or interface of this host",
                            "%s", error.c_str());
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
        return base::report(Status::resource, op, "check the limit on open files (ulimit -n)", "socket: %s",
                            std::strerror(errno));
    sockaddr_in mine{};
    mine.sin_family = AF_INET;
    mine.sin_addr = ip;
    socklen_t length = sizeof mine;
    if (::bind(fd_, reinterpret_cast<sockaddr *>(&mine), sizeof mine) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr *>(&mine), &length) != 0)
        return base::report(Status::resource, op, "set SLUICE_UDP_ADDRESS to an address of this host",
                            "cannot bind a UDP socket to %s: %s", address_text(mine).c_str(), std::strerror(errno));
    // A peer socket will share the receiving port (peer_socket_open);
    // shared only once bound (port_socket_open says why).
    const bool peer_socket = base::knob_bool(knob(Knob::UDP_PEER_SOCKET)) && s.peers.size() == 1 && port_share(fd_);
    socket_buffers_set(fd_);
    std::uint16_t send_port = 0;
    connected_socket_open(ip, send_port);

    int mtu = static_cast<int>(base::knob_int(knob(Knob::UDP_MTU)));
    const bool mtu_given = mtu != 0;
    if (!mtu_given) mtu = std::min(interface_mtu(fd_, interface), 65535);  // lo says 65536
    if (mtu < 576 || mtu > 65535)
        return base::report(Status::argument, op, "set SLUICE_UDP_MTU between 576 and 65535 (0: the interface's)",
                            "MTU of %d bytes", mtu);

    if (Status st = job_key_share(); st != Status::ok) return st;

    const AddressRecord record{mine.sin_addr.s_addr, mine.sin_port, send_port, static_cast<std::uint32_t>(mtu), c.window};
    std::vector<std::string> all;
    if (!s.bootstrap->allgather(&record, sizeof record, all))
        return base::report(Status::bootstrap, op, "check that every rank started", "allgather of udp addresses failed");
    addresses_.assign(s.size, PeerAddress{});
    peers_.reset(s.size);
    // Ahead of what it expects, a receiver holds as many datagrams as the
    // largest window of a peer sends.
    c.recv_window = c.window;
    std::uint32_t path_mtu = static_cast<std::uint32_t>(mtu);
    for (Rank r : s.peers) {
        AddressRecord theirs{};
        if (all[r].size() != sizeof theirs)
            return base::report(Status::state, op, "run the same Sluice build on every rank",
                                "rank %u sent a udp address record of %zu bytes", r, all[r].size());
        std::memcpy(&theirs, all[r].data(), sizeof theirs);
        if (theirs.port == 0)
            return base::report(Status::state, op, "run the same Sluice build on every rank",
                                "rank %u sent a udp address without a port", r);
        addresses_[r] = PeerAddress{theirs.ip, theirs.port, theirs.send_port};
        c.recv_window = std::max(c.recv_window, theirs.window);
        if (!mtu_given) path_mtu = std::min(path_mtu, theirs.mtu);
    }
    in_ = RxSocket{fd_};
    if (peer_socket) peer_socket_open(s.peers[0], mine);
    // Without a peer socket (whose connection is the kernel's check), the
    // kernel checks where datagrams come from, if it can.
    if (aside_.fd < 0) source_filter_try(ip);
    // The socket that holds the send port goes to the first peer.
    if (anchor_ >= 0) {
        for (Rank r : s.peers)
            if (addresses_[r].reachable()) {
                connect_peer(peer(r), anchor_);
                anchor_ = -1;
                break;
            }
    }
    datagram_max_ = std::min<std::size_t>(path_mtu - ip_udp_header_bytes, wire::max_datagram);
    buffers_.configure(datagram_max_);
    // A Get's reply of this size is one datagram: no reassembly copy, and
    // on loopback (64 KiB datagrams) a quarter of the requests smp's 16 KiB
    // Medium would take.
    caps.max_packet_medium = std::min(max_medium_bytes, datagram_max_ - wire::encoded_size(true, wire::max_args, 0));
    for (auto &b : rx_) b = buffers_.get();
    expect_.me = s.rank;
    const bool to_myself = std::find(s.peers.begin(), s.peers.end(), s.rank) != s.peers.end();
    expect_.refused_source = to_myself ? ~0u : s.rank;
    expect_.size = s.size;
    expect_.max_message = static_cast<std::uint32_t>(std::max(max_medium_bytes, max_long_bytes));
    queue_limit_ = std::max<std::size_t>(2 * max_long_bytes, std::size_t{c.window} * datagram_max_);

    // With same-host peers on another conduit, a poll that finds nothing
    // here makes the next ones skip the socket (up to 63 of them): their
    // round trips must not pay a system call on every poll.  Without
    // them every poll looks, as a bare socket loop would.
    max_stride_ = 1;
    for (Rank r = 0; r < s.size; ++r)
        if (r != s.rank && s.host_of[r] == s.host_of[s.rank] && !addresses_[r].reachable()) max_stride_ = 64;
    stride_.store(1, std::memory_order_relaxed);
    base::say("udp: %s, datagrams of %zu bytes, window %u", address_text(mine).c_str(), datagram_max_, c.window);
    return Status::ok;
}

Status UdpTransport::job_key_share() {
    // Rank 0 draws the job's secret (64 bits) and MAC key (128 bits) and
    // says whether the job signs (its SLUICE_UDP_MAC), through the
    // bootstrap: never a command line or an environment variable (README.md,
    // Authentication, says what each bootstrap exposes).
    constexpr std::size_t secret_bytes = sizeof expect_.secret, key_at = secret_bytes,
                          signs_at = key_at + wire::mac_key_bytes, size = signs_at + 1;
    std::string shared(size, '\0');
    if (setup().rank == 0) {
        if (::getrandom(shared.data(), signs_at, 0) != static_cast<ssize_t>(signs_at))
            return base::report(Status::resource, "init (udp)", nullptr, "getrandom failed: %s", std::strerror(errno));
        shared[signs_at] = base::knob_bool(knob(Knob::UDP_MAC)) ? 1 : 0;
    }
    const bool shared_ok = setup().bootstrap->broadcast(0, shared) && shared.size() == size;
    if (shared_ok) {
        std::memcpy(&expect_.secret, shared.data(), secret_bytes);
        if (shared[signs_at]) {
            std::uint8_t key[wire::mac_key_bytes];
            std::memcpy(key, shared.data() + key_at, sizeof key);
            mac_ = std::make_unique<wire::Mac>(key);
            ::explicit_bzero(key, sizeof key);
        }
        expect_.mac = mac_.get();
        base::say("udp: datagrams %s", mac_ ? "signed with UMAC-64 under the job's key"
                                            : "not signed (rank 0 has SLUICE_UDP_MAC=0)");
    }
    ::explicit_bzero(shared.data(), shared.size());
    if (!shared_ok)
        return base::report(Status::bootstrap, "init (udp)", "check that every rank started",
                            "broadcast of the job's secret and MAC key failed");
    return Status::ok;
}

Status UdpTransport::segment_create_impl(std::size_t size, void **base, std::string &key) {
    // Only when no same-host conduit owns the segment.
    return own_segment_.create("segment_attach (udp)", size, base, key);
}

Status UdpTransport::segment_connect_impl(const std::vector<SegmentRecord> &all) {
    // Core's poll thread may be delivering while segment_attach runs here
    // (Runtime::ProgressWhileBlocked): the bounds a Long is checked against
    // go in under the delivery flag, which orders them before its next
    // delivery.
    while (!base::flag_try_take(deliver_flag_)) base::cpu_relax();
    segment_.base = all[setup().rank].base;
    segment_.bytes = all[setup().rank].size;
    base::flag_release(deliver_flag_);
    return Status::ok;
}

void UdpTransport::fini_impl() {
    stats_report();
    close_socket();
    Guard g(lock_);
    peers_.clear();
    addresses_ = {};
    ready_.clear();
    buffers_.clear();
    own_segment_.release();
}

void UdpTransport::close_socket() {
    if (in_.fd >= 0 && in_.fd != fd_) ::close(in_.fd);
    in_ = aside_ = RxSocket{};
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (anchor_ >= 0) ::close(anchor_);
    anchor_ = -1;
    peers_.each([](Rank, Peer &p) {
        if (p.fd >= 0) {
            ::close(p.fd);
            p.fd = -1;
        }
    });
}

void UdpTransport::connected_socket_open(in_addr ip, std::uint16_t &port) {
    connected_limit_ = static_cast<unsigned>(std::max<std::int64_t>(0, base::knob_int(knob(Knob::UDP_CONNECTED_PEERS))));
    port = 0;
    if (connected_limit_ == 0) return;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr = ip;
    anchor_ = port_socket_open(a);
    if (anchor_ < 0) {
        base::say("udp: no connected sockets (%s): every send goes through the receiving socket", std::strerror(errno));
        return;
    }
    send_address_ = a;
    port = a.sin_port;
}

bool UdpTransport::port_share(int fd) {
    const int on = 1;
    return ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) == 0;
}

// SO_REUSEPORT is set before a bind that joins a port (at's, when given),
// and after a bind to a port of the kernel's choice: with it set before,
// the kernel may choose a port that another socket of this user holds
// with SO_REUSEPORT, another rank's, and the two ranks' datagrams are then
// shared out between them, each dropping the other's as misrouted.
int UdpTransport::port_socket_open(sockaddr_in &at) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    const bool join = at.sin_port != 0;
    socklen_t length = sizeof at;
    if ((join && !port_share(fd)) || ::bind(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) != 0 ||
        (!join && !port_share(fd)) || ::getsockname(fd, reinterpret_cast<sockaddr *>(&at), &length) != 0) {
        ::close(fd);
        return -1;
    }
    socket_buffers_set(fd);
    return fd;
}

Peer &UdpTransport::peer_make(Rank r) {
    auto p = std::make_unique<Peer>();
    p->address = address_of(addresses_[r]);
    p->tx = common::reliable::Sender(protocol_);
    p->rx = common::reliable::Receiver(protocol_);
    return peers_.insert(r, std::move(p));
}

void UdpTransport::connect_peer(Peer &p, int fd) {
    p.connect_tried = true;
    if (fd < 0) {
        if (send_address_.sin_port == 0 || connected_ >= connected_limit_) return;
        sockaddr_in at = send_address_;
        if ((fd = port_socket_open(at)) < 0) return;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr *>(&p.address), sizeof p.address) != 0) {
        ::close(fd);
        return;
    }
    p.fd = fd;
    ++connected_;
}

void UdpTransport::peer_socket_open(Rank r, sockaddr_in mine) {
    sockaddr_in from = address_of(addresses_[r]);
    if (addresses_[r].send_port) from.sin_port = addresses_[r].send_port;
    const int off = 0;
    const int fd = port_socket_open(mine);
    const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr *>(&from), sizeof from) == 0 &&
                    ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &off, sizeof off) == 0;
    const int error = errno;
    (void)::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &off, sizeof off);
    if (!ok) {
        if (fd >= 0) ::close(fd);
        base::say("udp: no socket of rank %u's own (%s): its datagrams come in on the receiving socket", r,
                  std::strerror(error));
        return;
    }
    // Until it is first found empty, it may hold a stranger's datagram
    // that came in before the connect: it asks for addresses till then.
    in_ = RxSocket{fd, SourceCheck::switching};
    aside_ = RxSocket{fd_};
    peer_socket_rank_ = r;
    peer_socket_port_ = from.sin_port;
    base::say("udp: rank %u's datagrams come in on a socket connected to %s", r, address_text(from).c_str());
}

void UdpTransport::peer_socket_follow(std::uint16_t port) {
    sockaddr_in from = address_of(addresses_[peer_socket_rank_]);
    from.sin_port = port;
    peer_socket_port_ = port;
    if (::connect(in_.fd, reinterpret_cast<const sockaddr *>(&from), sizeof from) == 0) {
        base::say("udp: rank %u sends from %s: its socket follows", peer_socket_rank_, address_text(from).c_str());
        return;
    }
    base::say("udp: rank %u sends from %s, and its socket cannot follow (%s): back to the receiving socket alone",
              peer_socket_rank_, address_text(from).c_str(), std::strerror(errno));
    ::close(in_.fd);
    in_ = aside_;
    aside_ = RxSocket{};
    peer_socket_rank_ = no_rank;
}

void UdpTransport::source_filter_try(in_addr ip) {
    std::string why = "SLUICE_UDP_SOURCE_FILTER=0";
    if (base::knob_bool(knob(Knob::UDP_SOURCE_FILTER))) {
        std::vector<Source> sources;
        for (Rank r : setup().peers) {
            const PeerAddress &a = addresses_[r];
            sources.push_back(Source{a.ip, a.port});
            if (a.send_port) sources.push_back(Source{a.ip, a.send_port});
        }
        if (source_filter_attach(fd_, sources, ip, why)) {
            in_.check = SourceCheck::switching;
            in_.filter = true;
            return;
        }
    }
    base::say("udp: source addresses are checked here, not by the kernel: %s", why.c_str());
}

void UdpTransport::socket_buffers_set(int fd) {
    const int want = static_cast<int>(std::min<std::size_t>(base::knob_size(knob(Knob::UDP_SOCKET_BUFFER)), 1u << 30));
    // Root may go beyond net.core.[rw]mem_max; anyone else gets at most that.
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
        (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
    if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof want) != 0)
        (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
}

[[noreturn]] void UdpTransport::peer_silent(Rank r) {
    std::string where;
    {
        Guard g(lock_);
        where = address_text(address_of(addresses_[r]));
    }
    char fix[200];
    std::snprintf(fix, sizeof fix,
                  "check that rank %u is alive and polls; a rank that computes without polling for longer "
                  "needs a larger SLUICE_UDP_PEER_TIMEOUT or SLUICE_PROGRESS_THREAD=1", r);
    base::fatal("udp", fix, "rank %u (%s) has acknowledged nothing for %.1f s (SLUICE_UDP_PEER_TIMEOUT=%g): taking it for dead",
                r, where.c_str(), peer_timeout_s_, peer_timeout_s_);
}

void UdpTransport::stats_report_impl() {
    if (fd_ >= 0 && base::knob_bool(knob(Knob::UDP_STATS))) stats_print();
}

void UdpTransport::stats_print() {
    Guard g(lock_);
    std::string drops;
    for (std::size_t i = 1; i < wire::drop_reasons; ++i)
        drops += std::string(wire::drop_name(static_cast<wire::Drop>(i))) + " " + std::to_string(counters_.wire[i]) + ", ";
    std::uint64_t retransmitted = 0;
    peers_.each([&](Rank, const Peer &p) { retransmitted += p.tx.retransmitted(); });
    std::fprintf(stderr,
                 "sluice[rank %u] udp: sent %llu (retransmitted %llu, acks alone %llu, refused by the kernel %llu, "
                 "payload sent in place %llu), "
                 "received %llu; dropped: %saddress %llu (checked by %s), replay %llu, duplicate %llu, beyond window %llu; "
                 "MAC %s\n",
                 setup().rank, static_cast<unsigned long long>(counters_.sent),
                 static_cast<unsigned long long>(retransmitted),
                 static_cast<unsigned long long>(counters_.acks_sent),
                 static_cast<unsigned long long>(counters_.send_errors),
                 static_cast<unsigned long long>(counters_.in_place),
                 static_cast<unsigned long long>(counters_.received), drops.c_str(),
                 static_cast<unsigned long long>(counters_.address),
                 aside_.fd >= 0 ? "a connected socket and Sluice" : in_.filter ? "the kernel's filter" : "Sluice",
                 static_cast<unsigned long long>(counters_.replay),
                 static_cast<unsigned long long>(counters_.duplicate),
                 static_cast<unsigned long long>(counters_.window), mac_ ? "on" : "off");
    std::vector<Rank> touched = peers_.touched();
    std::sort(touched.begin(), touched.end());
    for (Rank r : touched) {
        const common::reliable::Sender &tx = peers_.find(r)->tx;
        if (tx.srtt_ns())
            std::fprintf(stderr, "sluice[rank %u] udp: to rank %u: round trip %.1f us (+- %.1f), retransmission timeout %.1f us\n",
                         setup().rank, r, tx.srtt_ns() / 1e3, tx.rttvar_ns() / 1e3, tx.rto_ns() / 1e3);
    }
}

} // namespace detail

std::unique_ptr<Transport> make_udp_transport() { return std::make_unique<detail::UdpTransport>(); }

} // namespace sluice::conduit::udp
