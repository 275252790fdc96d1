// src/conduits/udp/udp.cpp - the udp conduit: reliable active messages over
// UDP datagrams (README.md has the design, the knobs and the wire format).
//
// One non-blocking UDP socket per rank receives everything (a socket filter
// of the peers' addresses lets the kernel check sources, source_filter.hpp,
// so receives need not ask for them); sends go through a
// socket connected to the peer (up to SLUICE_UDP_CONNECTED_PEERS of them, all
// on one shared send port) or through the receiving socket. Each ordered pair
// of ranks has its own sequence numbers: the sender numbers every datagram and
// keeps it until the receiver acknowledges it, sending it again after a
// timeout that follows the measured round trip and doubles on every retry; the
// receiver accepts datagrams in order, holding early ones in a window, so
// every handler runs exactly once and the fragments of a message arrive one
// after the other. Acks ride on data going back, or go alone after
// SLUICE_UDP_ACK_DELAY; a selective-ack bitmap lets the sender resend only the
// holes.  Sends and floods of receives are batched with sendmmsg and recvmmsg.
// A round trip's lone datagrams take a shorter path both ways: send_alone
// on the way out, and on the way in a poll that runs the handler straight
// from its receive buffer (progress's `direct`, deliver_held).
//
// Locking: `lock_` covers the sockets, every peer's state and the buffers.
// Handlers run outside it, on one thread at a time (`deliver_flag_`), in
// each peer's order.  A handler whose send waits for room polls
// (Transport::send_retry); that nested poll receives and processes acks but
// delivers nothing: room comes back with acks alone.
#include "conduits/udp/udp.hpp"

#include "base/flag.hpp"
#include "base/knobs.hpp"
#include "conduits/udp/source_filter.hpp"
#include "conduits/udp/wire.hpp"

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
#include <array>
#include <bit>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit::udp {
namespace {

constexpr unsigned batch = 32;                   // datagrams per recvmmsg / sendmmsg
constexpr std::size_t max_medium_bytes = 65536;
constexpr std::size_t max_long_bytes = 1u << 20;
constexpr std::uint64_t rto_max_ns = 200'000'000;
constexpr std::uint64_t no_deadline = ~std::uint64_t{0};
// The time of a datagram send_impl stages before reading the clock.
constexpr std::uint64_t unstamped = 0;
constexpr unsigned sack_bits = 32;
// Sequence numbers start 1024 short of their wrap, as Linux starts its
// jiffies 5 minutes short of theirs: every job that sends a peer more than
// 1024 datagrams crosses it, so the wrap is tested all the time, not after
// 2^32 datagrams in some long run.
constexpr std::uint32_t first_seq = 0u - 1024;
constexpr unsigned ip_udp_header_bytes = 28;
// The length receive() gives a datagram the source filter emptied.
constexpr std::size_t from_stranger = ~std::size_t{0};
// With a peer socket, the receiving socket (strangers, and the peer's
// datagrams before the peer socket was connected) is read on every
// aside_every-th poll.
constexpr unsigned aside_every = 64;
constexpr Rank no_rank = ~Rank{0};

// Sequence numbers wrap: they are compared by signed distance.
inline std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b); }

// Set while this thread is inside one of the conduit's socket calls.
thread_local bool in_socket_call = false;
// This thread's identity for Lock (the address of a thread-local).
thread_local char thread_marker;

// The spin lock (base::SpinLock) that its holder may take again from inside one of the
// conduit's socket calls: an exit that starts in a signal handler which
// interrupted recvmmsg or sendmmsg must still send and receive.  The
// interrupted call never resumes (exit does not return).
class Lock {
public:
    // False when this was such a re-entry: the caller must not unlock.
    bool lock() {
        if (in_socket_call && owner_.load(std::memory_order_relaxed) == &thread_marker) return false;
        lock_.lock();
        owner_.store(&thread_marker, std::memory_order_relaxed);
        return true;
    }
    void unlock() {
        owner_.store(nullptr, std::memory_order_relaxed);
        lock_.unlock();
    }
    // Held by this thread outside a socket call: its state may be half
    // updated, so an exit must not run here (Transport::signal_exit_safe).
    bool held_mid_update() const {
        return owner_.load(std::memory_order_relaxed) == &thread_marker && !in_socket_call;
    }

private:
    base::SpinLock lock_;
    std::atomic<const char *> owner_{nullptr};
};

class Guard {
public:
    explicit Guard(Lock &l) : lock_(l), taken_(l.lock()) {}
    ~Guard() {
        if (!taken_) return;
        lock_.unlock();
        // A termination signal arrived while the lock was held: exit now.
        if (__builtin_expect(base::signal_deferred.load(std::memory_order_relaxed) != 0, 0)) base::signal_deferred_run();
    }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

private:
    Lock &lock_;
    bool taken_;
};

// Datagram-sized buffers, reused: a datagram sent stays in its buffer until
// it is acknowledged, a datagram received until its handler has run.
class Buffers {
public:
    void configure(std::size_t bytes) { bytes_ = bytes; }
    std::uint8_t *get() {
        if (free_.empty()) {
            all_.emplace_back(new std::uint8_t[bytes_]);  // not zeroed: pages are touched only as used
            return all_.back().get();
        }
        std::uint8_t *b = free_.back();
        free_.pop_back();
        return b;
    }
    void put(std::uint8_t *b) { free_.push_back(b); }
    void clear() {
        free_.clear();
        all_.clear();
    }

private:
    std::size_t bytes_ = 0;
    std::vector<std::uint8_t *> free_;
    std::vector<std::unique_ptr<std::uint8_t[]>> all_;
};

// A datagram I sent (or will send when the window has room) to a peer.
struct Outbound {
    std::uint8_t *bytes = nullptr;
    std::uint32_t length = 0;
    std::uint32_t seq = 0;
    std::uint64_t sent_ns = 0;  // last transmission
    std::uint16_t tries = 0;    // transmissions so far
    bool sacked = false;        // the receiver has it (selective ack); not yet freed
};

// A datagram received in order (or early), waiting for its handler.
struct Received {
    std::uint8_t *buffer = nullptr;
    wire::Datagram datagram;
};

// A first-in first-out queue on one growing power-of-two array, indexed
// from its front: a round trip pushes and pops one element without
// allocating (std::deque allocates and frees a block every few).
template <class T> class Fifo {
public:
    bool empty() const { return head_ == tail_; }
    std::size_t size() const { return tail_ - head_; }
    T &operator[](std::size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    T &front() { return (*this)[0]; }
    T &back() { return (*this)[size() - 1]; }
    void push_back(const T &v) {
        if (size() == slots_.size()) grow();
        slots_[tail_++ & (slots_.size() - 1)] = v;
    }
    T pop_front() { return slots_[head_++ & (slots_.size() - 1)]; }
    void clear() {
        slots_.clear();
        head_ = tail_ = 0;
    }

private:
    void grow() {
        std::vector<T> bigger(std::max<std::size_t>(16, 2 * slots_.size()));
        for (std::size_t i = 0; i < size(); ++i) bigger[i] = slots_[(head_ + i) & (slots_.size() - 1)];
        tail_ = size();
        head_ = 0;
        slots_.swap(bigger);
    }
    std::vector<T> slots_;
    std::size_t head_ = 0, tail_ = 0;
};

// The message whose fragments are arriving from one peer.  Touched only by
// the thread that holds the delivery flag.
struct Assembly {
    bool open = false;
    AmHeader header;
    std::uint32_t args[wire::max_args] = {};
    std::uint32_t received = 0;
    std::vector<std::uint8_t> medium;  // a Medium payload of several datagrams
};

struct Peer {
    sockaddr_in address{};
    std::uint16_t send_port = 0;  // network order: the port its connected sockets send from (0: none)
    int fd = -1;                  // my socket connected to it, or -1: sendto on the receiving socket
    bool connect_tried = false;
    bool reachable = false;  // routed over this transport
    bool active = false;     // in UdpTransport::active_
    // sending
    std::uint32_t next_seq = first_seq;
    Fifo<Outbound> out;             // [0, in_flight) sent and unacknowledged, then waiting for the window
    std::size_t in_flight = 0;
    std::size_t waiting_bytes = 0;  // bytes of out beyond in_flight
    std::uint64_t waiting_since_ns = 0;  // in_flight became non-zero, or an ack last freed some
    std::uint64_t heard_ns = 0;          // a valid datagram last came from the peer
    std::uint64_t srtt_ns = 0, rttvar_ns = 0, rto_ns = 0;
    // receiving
    std::uint32_t expected = first_seq;  // next sequence number accepted in order
    std::vector<Received> early;    // held out of order (early_slot; allocated on first use)
    std::size_t early_count = 0;
    bool ack_owed = false;          // received data not yet acknowledged
    bool ack_now = false;           // acknowledge at the next flush (a hole, a duplicate, a probe)
    std::uint64_t ack_due_ns = 0;
    unsigned ack_pending = 0;       // datagrams received since the last ack
    std::array<std::uint8_t, wire::header_bytes> ack_datagram{};
    Assembly assembly;
};

struct Counters {
    std::uint64_t sent = 0, retransmitted = 0, acks_sent = 0, received = 0, send_errors = 0;
    std::uint64_t wire[wire::drop_reasons] = {};
    std::uint64_t address = 0, duplicate = 0, window = 0;
};

std::string address_text(const sockaddr_in &a) {
    char ip[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// The local IPv4 address to use and the interface it is on.
bool address_pick(bool one_host, in_addr &address, std::string &interface, std::string &error) {
    const std::string &want = base::knob_string(base::Knob::UDP_ADDRESS);
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

int interface_mtu(int fd, const std::string &interface) {
    ifreq r{};
    std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", interface.c_str());
    if (::ioctl(fd, SIOCGIFMTU, &r) != 0) return 1500;
    return r.ifr_mtu;
}

// Who checks that a datagram comes from a peer's address: this code
// (receives ask for the address), or the kernel, which takes over from
// the first time the socket is found empty after the source filter
// (source_filter.hpp) was attached or the peer socket connected
// ("switching").
enum class SourceCheck : std::uint8_t { user, switching, kernel };
// A socket datagrams are received on.
struct RxSocket {
    int fd = -1;
    SourceCheck check = SourceCheck::user;
    bool filter = false;  // the source filter is attached
    unsigned batch = 1;   // slots offered to the next recvmmsg
    bool busy = false;    // the last receive found datagrams
};

// What every rank tells the others at start-up.
struct AddressRecord {
    std::uint32_t ip;         // network order
    std::uint16_t port;       // network order: the receiving socket's
    std::uint16_t send_port;  // network order: the connected sockets' (0: none)
    std::uint32_t mtu;
    std::uint32_t window;
};

class UdpTransport final : public Transport {
public:
    UdpTransport() : Transport("udp", Capabilities{}) {}
    ~UdpTransport() override { close_socket(); }

protected:
    Status init_impl() override {
        const TransportSetup &s = setup();
        const char *op = "init (udp)";
        Capabilities &caps = capabilities_mutable();
        caps.max_medium = max_medium_bytes;
        caps.max_long = max_long_bytes;
        caps.needs_credits = true;  // a flood would overrun the peer's socket buffer
        caps.acknowledges = true;

        window_ = static_cast<unsigned>(std::clamp<std::int64_t>(base::knob_int(base::Knob::UDP_WINDOW), 8, 1024));
        ack_delay_ns_ = static_cast<std::uint64_t>(std::max<std::int64_t>(0, base::knob_int(base::Knob::UDP_ACK_DELAY))) * 1000;
        rto_min_ns_ = static_cast<std::uint64_t>(std::clamp<std::int64_t>(base::knob_int(base::Knob::UDP_RTO_MIN), 10, 1'000'000)) * 1000;
        peer_timeout_s_ = std::max(0.1, base::knob_double(base::Knob::UDP_PEER_TIMEOUT));
        peer_timeout_ns_ = static_cast<std::uint64_t>(peer_timeout_s_ * 1e9);

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
        // A peer socket will share the receiving port (peer_socket_open).
        const int on = 1;
        const bool peer_socket = base::knob_bool(base::Knob::UDP_PEER_SOCKET) && s.peers.size() == 1 &&
                                 ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) == 0;
        if (::bind(fd_, reinterpret_cast<sockaddr *>(&mine), sizeof mine) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr *>(&mine), &length) != 0)
            return base::report(Status::resource, op, "set SLUICE_UDP_ADDRESS to an address of this host",
                                "cannot bind a UDP socket to %s: %s", address_text(mine).c_str(), std::strerror(errno));
        socket_buffers_set(fd_);
        std::uint16_t send_port = 0;
        connected_socket_open(ip, send_port);

        int mtu = static_cast<int>(base::knob_int(base::Knob::UDP_MTU));
        const bool mtu_given = mtu != 0;
        if (!mtu_given) mtu = std::min(interface_mtu(fd_, interface), 65535);  // lo says 65536
        if (mtu < 576 || mtu > 65535)
            return base::report(Status::argument, op, "set SLUICE_UDP_MTU between 576 and 65535 (0: the interface's)",
                                "MTU of %d bytes", mtu);

        // The secret: rank 0's random 64 bits, through the bootstrap.
        std::string secret(8, '\0');
        if (s.rank == 0 && ::getrandom(secret.data(), 8, 0) != 8)
            return base::report(Status::resource, op, nullptr, "getrandom failed: %s", std::strerror(errno));
        if (!s.bootstrap->broadcast(0, secret) || secret.size() != 8)
            return base::report(Status::bootstrap, op, "check that every rank started", "broadcast of the job secret failed");
        std::memcpy(&expect_.secret, secret.data(), 8);

        const AddressRecord record{mine.sin_addr.s_addr, mine.sin_port, send_port, static_cast<std::uint32_t>(mtu), window_};
        std::vector<std::string> all;
        if (!s.bootstrap->allgather(&record, sizeof record, all))
            return base::report(Status::bootstrap, op, "check that every rank started", "allgather of udp addresses failed");
        peers_ = std::vector<Peer>(s.size);
        recv_window_ = window_;
        std::uint32_t path_mtu = static_cast<std::uint32_t>(mtu);
        for (Rank r : s.peers) {
            AddressRecord theirs{};
            if (all[r].size() != sizeof theirs)
                return base::report(Status::state, op, "run the same Sluice build on every rank",
                                    "rank %u sent a udp address record of %zu bytes", r, all[r].size());
            std::memcpy(&theirs, all[r].data(), sizeof theirs);
            Peer &p = peers_[r];
            p.address.sin_family = AF_INET;
            p.address.sin_addr.s_addr = theirs.ip;
            p.address.sin_port = theirs.port;
            p.send_port = theirs.send_port;
            p.reachable = true;
            p.rto_ns = std::max(rto_min_ns_, std::uint64_t{10'000'000});  // before any round trip is measured
            recv_window_ = std::max(recv_window_, theirs.window);
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
                if (peers_[r].reachable && !peers_[r].connect_tried) {
                    connect_peer(peers_[r], anchor_);
                    anchor_ = -1;
                    break;
                }
        }
        datagram_max_ = std::min<std::size_t>(path_mtu - ip_udp_header_bytes, wire::max_datagram);
        buffers_.configure(datagram_max_);
        for (auto &b : rx_) b = buffers_.get();
        expect_.me = s.rank;
        expect_.size = s.size;
        expect_.max_message = static_cast<std::uint32_t>(std::max(max_medium_bytes, max_long_bytes));
        queue_limit_ = std::max<std::size_t>(2 * max_long_bytes, std::size_t{window_} * datagram_max_);

        // With same-host peers on another conduit, a poll that finds nothing
        // here makes the next ones skip the socket (up to 63 of them): their
        // round trips must not pay a system call on every poll.  Without
        // them every poll looks, as a bare socket loop would.
        max_stride_ = 1;
        for (Rank r = 0; r < s.size; ++r)
            if (r != s.rank && s.host_of[r] == s.host_of[s.rank] && !peers_[r].reachable) max_stride_ = 64;
        stride_.store(1, std::memory_order_relaxed);
        base::say("udp: %s, datagrams of %zu bytes, window %u", address_text(mine).c_str(), datagram_max_, window_);
        return Status::ok;
    }

    Status send_impl(Rank peer, const AmMessage &m) override {
        const AmHeader &h = m.header;
        const std::size_t total = h.category == AmCategory::short_ ? 0 : h.payload_length;
        if (h.nargs > wire::max_args || total > expect_.max_message)
            return base::report(Status::too_large, "send (udp)", "this is a Sluice bug: src/am checks sizes first",
                                "message of %zu bytes with %u arguments to rank %u", total, h.nargs, peer);
        wire::Am am;
        am.handler = h.handler;
        am.category = static_cast<std::uint8_t>(h.category);
        am.nargs = h.nargs;
        am.flags = h.flags;
        am.credit = (h.flags & am_flag_credit) ? h.credit : 0;
        am.dest_addr = h.category == AmCategory::long_ ? h.dest_addr : 0;
        std::copy(m.args, m.args + h.nargs, am.args);
        return send_am(peer, am, static_cast<const std::uint8_t *>(m.payload), total);
    }

    // A round trip's message: src/am checked it (at most 16 arguments).
    Status send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                           const std::uint32_t *args, unsigned nargs) override {
        wire::Am am;
        am.handler = handler;
        am.nargs = static_cast<std::uint8_t>(nargs);
        am.flags = flags;
        am.credit = credit;
        std::copy(args, args + nargs, am.args);
        return send_am(peer, am, nullptr, 0);
    }

    // A message of `total` payload bytes with its AM section, checked.
    Status send_am(Rank peer, const wire::Am &am, const std::uint8_t *payload, std::size_t total) {
        Peer &p = peers_[peer];
        Guard g(lock_);
        if (p.waiting_bytes > queue_limit_) return Status::not_ready;
        wire::Header w;
        w.kind = wire::Kind::data;
        w.secret = expect_.secret;
        w.source = setup().rank;
        w.dest = peer;
        w.message_length = static_cast<std::uint32_t>(total);
        const unsigned nargs = am.nargs;
        if (p.in_flight == p.out.size() && p.in_flight < window_ && tx_count_ == 0 &&
            total <= datagram_max_ - wire::encoded_size(true, nargs, 0))
            return send_alone(peer, p, w, am, payload, total);
        std::size_t offset = 0;
        do {
            const bool first = offset == 0;
            const std::size_t room = datagram_max_ - wire::encoded_size(first, first ? nargs : 0, 0);
            const std::size_t n = std::min(room, total - offset);
            w.seq = p.next_seq++;
            w.fragment_offset = static_cast<std::uint32_t>(offset);
            std::uint8_t *buf = buffers_.get();
            const std::size_t length =
                wire::encode(w, first ? &am : nullptr, payload + offset, n, buf, datagram_max_, expect_.max_message);
            p.out.push_back(Outbound{buf, static_cast<std::uint32_t>(length), w.seq});
            p.waiting_bytes += length;
            offset += n;
        } while (offset < total);
        // A handler this thread's poll runs (a reply, most often) sends
        // at that poll's time: it is at most the handlers' run time old,
        // which only lengthens the round trip samples a little.
        if (delivering_ && poll_now_) {
            window_fill(peer, p, poll_now_);
            tx_flush();
            return Status::ok;
        }
        // Anywhere else the clock is read once the datagrams have left, not
        // before: it is then off the round trip's path.  The lock is held
        // throughout, so no one sees the datagrams unstamped; a round trip
        // sample then leaves out the send call itself.
        const std::size_t first = p.in_flight;
        window_fill(peer, p, unstamped);
        tx_flush();
        const std::uint64_t now = base::now_ns();
        if (first == 0 && p.in_flight) p.waiting_since_ns = now;
        for (std::size_t j = first; j < p.in_flight; ++j) {
            p.out[j].sent_ns = now;
            timer_due_ns_ = std::min(timer_due_ns_, now + timeout_of(p, p.out[j]));
        }
        return Status::ok;
    }

    // Under lock_: a message of one datagram, with the window open and
    // nothing waiting or staged ahead of it (a round trip's request or
    // reply).  It leaves at once with the freshest ack, through its own
    // system call, and its bookkeeping follows it off the latency path.
    // The clock is the one send_impl would stamp it with.
    Status send_alone(Rank r, Peer &p, wire::Header &w, const wire::Am &am, const std::uint8_t *payload,
                      std::size_t n) {
        w.seq = p.next_seq++;
        w.ack = p.expected - 1;
        w.sack = sack_of(p);
        std::uint8_t *buf = buffers_.get();
        // Built from a message src/am checked, to fit (send_impl): no checks.
        const auto length = static_cast<std::uint32_t>(wire::write(w, &am, payload, n, buf));
        ack_carried(p);
        if (!p.connect_tried) connect_peer(p, -1);
        transmit(buf, length, p.fd, &p.address);
        const std::uint64_t now = delivering_ && poll_now_ ? poll_now_ : base::now_ns();
        p.out.push_back(Outbound{buf, length, w.seq, now, 1});
        if (p.in_flight++ == 0) p.waiting_since_ns = now;
        timer_due_ns_ = std::min(timer_due_ns_, now + timeout_of(p, p.out.back()));
        activate(r, p);
        return Status::ok;
    }

    // A poll for replies only (a reply waiting for room on some transport)
    // runs no handler here: room on udp comes back with acks alone, and a
    // request handler must not run nested inside another handler.
    int poll_impl(PollMode mode) override {
        if (ready_count_.load(std::memory_order_relaxed) == 0) {
            const unsigned s = skipped_.load(std::memory_order_relaxed) + 1;
            if (s < stride_.load(std::memory_order_relaxed)) {
                skipped_.store(s, std::memory_order_relaxed);
                return 0;
            }
        }
        skipped_.store(0, std::memory_order_relaxed);
        if (mode == PollMode::replies_only || delivering_) {
            progress(false);
            return 0;
        }
        // The datagram a round trip waits for goes from the receive straight
        // to its handler, not through the ready queue.
        bool direct = false;
        progress(false, &direct);
        return direct ? deliver_held(&direct_) : deliver_ready();
    }

    Status segment_create_impl(std::size_t size, void **base, std::string &key) override {
        // Only when no same-host conduit owns the segment: private memory.
        key.clear();
        *base = nullptr;
        if (size == 0) return Status::ok;
        void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return base::report(Status::resource, "segment_attach (udp)", "ask for a smaller segment",
                                "cannot map %zu bytes: %s", size, std::strerror(errno));
        own_segment_ = p;
        own_segment_bytes_ = size;
        *base = p;
        return Status::ok;
    }

    Status segment_connect_impl(const std::vector<SegmentRecord> &all) override {
        segment_base_ = all[setup().rank].base;
        segment_bytes_ = all[setup().rank].size;
        return Status::ok;
    }

    // Exit from inside a handler: that handler never returns, so the next
    // poll on this thread must be free to deliver (the exit messages).
    void dispatch_abandon_impl() override {
        if (!delivering_) return;
        delivering_ = false;
        deliver_flag_.store(false, std::memory_order_release);
    }

    bool signal_exit_safe_impl() const override { return !lock_.held_mid_update(); }

    // Ends when everything sent is acknowledged; the timers' peer timeout
    // (peer_silent) ends the job if a peer stops answering.
    void quiesce_impl() override {
        for (;;) {
            const bool idle = progress(true);
            deliver_ready();
            if (idle) break;
            base::idle();
        }
    }

    void fini_impl() override {
        if (fd_ >= 0 && base::knob_bool(base::Knob::UDP_STATS)) stats_print();
        close_socket();
        Guard g(lock_);
        peers_.clear();
        ready_.clear();
        buffers_.clear();
        if (own_segment_) ::munmap(own_segment_, own_segment_bytes_);
        own_segment_ = nullptr;
    }

private:
    void close_socket() {
        if (in_.fd >= 0 && in_.fd != fd_) ::close(in_.fd);
        in_ = aside_ = RxSocket{};
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        if (anchor_ >= 0) ::close(anchor_);
        anchor_ = -1;
        for (Peer &p : peers_)
            if (p.fd >= 0) {
                ::close(p.fd);
                p.fd = -1;
            }
    }

    // Sends to a peer go through a socket connected to it, up to
    // SLUICE_UDP_CONNECTED_PEERS peers: a connected socket's send skips the
    // route lookup an unconnected sendto makes every time (a round trip on
    // loopback costs about 6 % less).  They all send from one port, shared
    // with SO_REUSEPORT, that every rank publishes next to its receiving
    // port, so a receiver knows both source ports of a peer.  Nothing is
    // ever received on them: peers send to the receiving port.
    //
    // At init: the first of those sockets, bound so that the port is known
    // (`anchor_`, connected to the first peer once addresses are known).
    // If it cannot be opened, every send goes through the receiving socket
    // (send port 0).
    void connected_socket_open(in_addr ip, std::uint16_t &port) {
        connected_limit_ = static_cast<unsigned>(std::max<std::int64_t>(0, base::knob_int(base::Knob::UDP_CONNECTED_PEERS)));
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

    // A socket bound with SO_REUSEPORT to `at` (port 0: a new port, written
    // back), so that others can share the port: the send port's, or the
    // peer socket on the receiving port.  -1 on failure.
    int port_socket_open(sockaddr_in &at) {
        const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        const int on = 1;
        socklen_t length = sizeof at;
        if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0 ||
            ::bind(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) != 0 ||
            ::getsockname(fd, reinterpret_cast<sockaddr *>(&at), &length) != 0) {
            ::close(fd);
            return -1;
        }
        socket_buffers_set(fd);
        return fd;
    }

    // Under lock_ (or at init): gives `p` its connected socket, `fd` or a
    // new one on the send port.  On any failure `p` keeps using sendto.
    void connect_peer(Peer &p, int fd) {
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

    // A rank whose only udp peer is `r` receives r's datagrams on a socket
    // of their own: bound to the receiving port and connected to the port r
    // sends from (its send port, or its receiving port when it has none).
    // The kernel delivers a datagram to the socket whose connection matches
    // its sender, so finding the socket is the source check, and it costs
    // nothing (the source filter costs each datagram about 50 ns, asking
    // for the address more).  Everything else, strangers and whatever r
    // sent before the connect, reaches the receiving socket, read aside.
    // SO_REUSEPORT lets both sockets bind the port; it is cleared on both
    // afterwards, so that no other socket can join it.
    void peer_socket_open(Rank r, sockaddr_in mine) {
        const Peer &p = peers_[r];
        sockaddr_in from = p.address;
        if (p.send_port) from.sin_port = p.send_port;
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

    // Under lock_: the peer socket's rank sends from `port` (its
    // receiving one: it has no connected socket for me), which its
    // datagrams reaching the receiving socket show.  The peer socket
    // follows; if it cannot, everything is received on the receiving
    // socket, its sources checked here.
    void peer_socket_follow(std::uint16_t port) {
        sockaddr_in from = peers_[peer_socket_rank_].address;
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

    // At init: the source filter on the receiving socket, if the knob and
    // the kernel allow; else Sluice checks every address.
    void source_filter_try(in_addr ip) {
        std::string why = "SLUICE_UDP_SOURCE_FILTER=0";
        if (base::knob_bool(base::Knob::UDP_SOURCE_FILTER)) {
            std::vector<Source> sources;
            for (Rank r : setup().peers) {
                const Peer &p = peers_[r];
                sources.push_back(Source{p.address.sin_addr.s_addr, p.address.sin_port});
                if (p.send_port) sources.push_back(Source{p.address.sin_addr.s_addr, p.send_port});
            }
            if (source_filter_attach(fd_, sources, ip, why)) {
                in_.check = SourceCheck::switching;
                in_.filter = true;
                return;
            }
        }
        base::say("udp: source addresses are checked here, not by the kernel: %s", why.c_str());
    }

    void socket_buffers_set(int fd) {
        const int want = static_cast<int>(std::min<std::size_t>(base::knob_size(base::Knob::UDP_SOCKET_BUFFER), 1u << 30));
        // Root may go beyond net.core.[rw]mem_max; anyone else gets at most that.
        if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
            (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
        if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof want) != 0)
            (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
    }

    // One round of protocol work: receive a batch, run the timers, send
    // what is due.  `quiescing`: acknowledge everything owed at once.
    // `direct`: set when the first datagram received in order went to
    // direct_ instead of the ready queue, which it does if nothing is
    // queued before it and this thread can take the delivery flag (it then
    // holds it: deliver_held).
    // Returns true when nothing I sent is unacknowledged and no ack is owed.
    //
    // Inlined, with receive(), into the poll: the receive an idle poll
    // spins on is then made one frame below poll_impl.  Every frame
    // between a system call and the loop that spins on it costs a
    // mispredicted return each time the call comes back (about 7.5 ns here:
    // the kernel's return mitigations leave the return stack empty), on
    // every empty poll and on the round trip's path (README, Performance).
    [[gnu::always_inline]] bool progress(bool quiescing, bool *direct = nullptr) {
        Rank silent = no_rank;
        bool idle = true;
        poll_now_ = 0;
        {
            Guard g(lock_);
            if (fd_ < 0) return true;
            ack_deferred_apply();
            const std::uint64_t now = base::now_ns();
            direct_wanted_ = direct;
            int got = receive(in_, now);
            if (aside_.fd >= 0 && (quiescing || ++aside_polls_ == aside_every)) {
                // Drained, a few batches at most: strangers must not pile up.
                aside_polls_ = 0;
                for (int k = 0, n; k < 8 && (n = receive_outline(aside_, now)) > 0; ++k) got += n;
            }
            direct_wanted_ = nullptr;
            // Nothing is due before the earliest deadline: the last pass of
            // the timers left it, and every new one lowers it (stage,
            // ack_owe).
            if (quiescing || now >= timer_due_ns_) {
                // A deferred ack first: what it acknowledges is not resent.
                ack_deferred_apply();
                timers(now, quiescing, silent);
            }
            poll_now_ = now;
            if (tx_count_) tx_flush();
            const unsigned stride = stride_.load(std::memory_order_relaxed);
            stride_.store(got ? 1 : std::min(stride * 2, max_stride_), std::memory_order_relaxed);
            idle = active_.empty();
        }
        if (silent != no_rank) peer_silent(silent);
        return idle;
    }

    // Under lock_.  Returns how many datagrams arrived.
    //
    // recvmmsg tries one datagram more than it finds: with a batch of 32 a
    // lone datagram costs a second, failed receive.  So the batch follows
    // the traffic: 1 while datagrams come one at a time (a round trip: a
    // poll that finds one is followed by polls that find none), doubling
    // while full batches come back to back (a flood), and back to 1 as soon
    // as the socket is found empty (the flood is over).  A batch of one is a
    // recvfrom, which copies in no message header: it is the system call
    // an idle or round-trip poll spins on.  (An idle poll on an empty
    // recvmmsg of 32 slots, as after a flood before this, cost 550 ns
    // against 340 ns.)
    //
    // Once the kernel checks sources (x.check), the sender's address is not
    // asked for, and with the source filter a datagram of 0 bytes is one the
    // filter emptied.
    [[gnu::always_inline]] int receive(RxSocket &x, std::uint64_t now) {
        if (x.batch != 1) return receive_outline(x, now);
        sockaddr_in from;
        socklen_t from_length = sizeof from;
        const bool ask = x.check != SourceCheck::kernel;
        in_socket_call = true;
        const ssize_t got = ::recvfrom(x.fd, rx_[0], datagram_max_, MSG_DONTWAIT | MSG_TRUNC,
                                       ask ? reinterpret_cast<sockaddr *>(&from) : nullptr, ask ? &from_length : nullptr);
        in_socket_call = false;
        if (got < 0) return received(x, -1, nullptr, nullptr, now);
        // MSG_TRUNC: a longer datagram reports its whole length.
        const std::size_t length = length_of(x, static_cast<std::size_t>(got), got > static_cast<ssize_t>(datagram_max_), from_length);
        return received(x, 1, &length, ask ? &from : nullptr, now);
    }

    // receive() for a batch (a flood), and for the aside socket: out of
    // line, where a frame more costs nothing worth counting.
    [[gnu::noinline]] int receive_outline(RxSocket &x, std::uint64_t now) {
        if (x.batch == 1) return receive(x, now);
        sockaddr_in from[batch];
        std::size_t length[batch];
        mmsghdr msgs[batch];
        iovec iov[batch];
        const bool ask = x.check != SourceCheck::kernel;
        for (unsigned i = 0; i < x.batch; ++i) {
            iov[i] = {rx_[i], datagram_max_};
            msgs[i] = {};
            msgs[i].msg_hdr.msg_name = ask ? &from[i] : nullptr;
            msgs[i].msg_hdr.msg_namelen = ask ? sizeof from[i] : 0;
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        in_socket_call = true;
        const int n = ::recvmmsg(x.fd, msgs, x.batch, MSG_DONTWAIT, nullptr);
        in_socket_call = false;
        for (int i = 0; i < n; ++i)
            length[i] = length_of(x, msgs[i].msg_len, (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0, msgs[i].msg_hdr.msg_namelen);
        return received(x, n, length, ask ? from : nullptr, now);
    }

    // The length receive() gives a datagram: 0 when it was truncated or its
    // address is not one (and the kernel does not check sources), and
    // from_stranger when the source filter emptied it.
    static std::size_t length_of(const RxSocket &x, std::size_t got, bool truncated, socklen_t from_length) {
        const bool ask = x.check != SourceCheck::kernel;
        if (truncated || (ask && from_length != sizeof(sockaddr_in))) return 0;
        return got == 0 && x.filter && x.check != SourceCheck::user ? from_stranger : got;
    }

    // What a receive found: `n` datagrams (-1: the call failed) in rx_,
    // of `length` bytes, from `from` (null once the kernel checks sources).
    [[gnu::always_inline]] int received(RxSocket &x, int n, const std::size_t *length, const sockaddr_in *from,
                                        std::uint64_t now) {
        // Every datagram queued before the filter was attached has been
        // read (and its address checked) once the socket is found empty.
        if (n < 0 && x.check == SourceCheck::switching && (errno == EAGAIN || errno == EWOULDBLOCK))
            x.check = SourceCheck::kernel;
        const bool full = n == static_cast<int>(x.batch);
        if (full && x.busy) x.batch = std::min(2 * x.batch, batch);
        else if (n > 0 && !full) x.batch = std::max(1u, x.batch / 2);
        else if (n < 0) x.batch = 1;
        x.busy = n > 0;
        for (int i = 0; i < n; ++i)
            if (arrived(rx_[i], length[i], from ? &from[i] : nullptr, now)) rx_[i] = buffers_.get();
        return std::max(n, 0);
    }

    // Under lock_.  One datagram of `n` bytes (0: truncated, from_stranger:
    // emptied by the source filter); `from` is its sender, or null when the
    // kernel checked it.  True when it was kept (its buffer is taken).
    bool arrived(std::uint8_t *buf, std::size_t n, const sockaddr_in *from, std::uint64_t now) {
        if (n == from_stranger) {
            ++counters_.address;
            return false;
        }
        // While this receive may still hand a datagram straight to its
        // handler (nothing queued before it, and this thread takes the
        // delivery flag, which guards direct_), the datagram is decoded
        // where the handler will find it: no copy on the round trip's path.
        const bool mine = direct_wanted_ && ready_.empty() && base::flag_try_take(deliver_flag_);
        wire::Datagram local;
        wire::Datagram &d = mine ? direct_.datagram : local;
        const bool kept = arrived_checked(buf, n, from, now, d, mine);
        if (mine) {
            if (*direct_wanted_) direct_wanted_ = nullptr;  // one a receive
            else base::flag_release(deliver_flag_);         // not delivered directly after all
        }
        return kept;
    }

    // arrived(), once the datagram is decoded into `d`; `mine`: this thread
    // holds the delivery flag and `d` is direct_'s, so an in-order data
    // datagram goes to its handler directly.
    bool arrived_checked(std::uint8_t *buf, std::size_t n, const sockaddr_in *from, std::uint64_t now,
                         wire::Datagram &d, bool mine) {
        if (const wire::Drop why = wire::decode(buf, n, expect_, d); why != wire::Drop::none) {
            ++counters_.wire[static_cast<std::size_t>(why)];
            return false;
        }
        const Rank source = d.header.source;
        Peer &p = peers_[source];
        if (!p.reachable || (from && (from->sin_addr.s_addr != p.address.sin_addr.s_addr ||
                                      (from->sin_port != p.address.sin_port &&
                                       (from->sin_port != p.send_port || p.send_port == 0))))) {
            ++counters_.address;
            return false;
        }
        if (from && source == peer_socket_rank_ && from->sin_port != peer_socket_port_ && from->sin_port == p.address.sin_port)
            peer_socket_follow(from->sin_port);
        ++counters_.received;
        p.heard_ns = now;
        // The datagram a round trip waits for runs its handler before the
        // ack it carries is taken in: that waits for this thread's next
        // progress (ack_deferred_apply), off the path from this receive to
        // the reply's (or the next request's) send.
        const bool direct = mine && d.header.kind == wire::Kind::data && d.header.seq == p.expected;
        ack_deferred_apply();  // acks are taken in in order
        if (direct) ack_deferred_ = AckDeferred{source, d.header.ack, d.header.sack, now};
        else acked(source, p, d.header.ack, d.header.sack, now);
        switch (d.header.kind) {
        case wire::Kind::ack: return false;
        case wire::Kind::probe:
            ack_owe(source, p, now, true);
            return false;
        case wire::Kind::data: break;
        }
        const std::int32_t ahead = seq_diff(d.header.seq, p.expected);
        if (ahead < 0) {  // had it: the ack was lost
            ++counters_.duplicate;
            ack_owe(source, p, now, true);
            return false;
        }
        if (ahead >= static_cast<std::int32_t>(recv_window_)) {
            ++counters_.window;
            return false;
        }
        if (ahead > 0) {  // early: hold it, and tell the sender of the hole at once
            if (p.early.empty()) p.early.resize(std::bit_ceil(recv_window_));
            Received &slot = early_slot(p, d.header.seq);
            const bool keep = slot.buffer == nullptr;
            if (keep) {
                slot = Received{buf, d};
                ++p.early_count;
            } else {
                ++counters_.duplicate;
            }
            ack_owe(source, p, now, true);
            return keep;
        }
        ++p.expected;
        ack_owe(source, p, now, ++p.ack_pending >= window_ / 4);
        bool kept = true;
        if (direct) {
            // Its datagram was decoded in place.  A Short AM is then whole
            // in direct_ (its arguments copied out): the buffer stays with
            // the receive, and nothing is given back after the handler.
            kept = !is_short(d);
            direct_.buffer = kept ? buf : nullptr;
            *direct_wanted_ = true;
        } else {
            ready_.push_back(Received{buf, d});
        }
        while (p.early_count) {
            Received &slot = early_slot(p, p.expected);
            if (!slot.buffer) break;
            ready_.push_back(slot);
            slot.buffer = nullptr;
            --p.early_count;
            ++p.expected;
        }
        ready_count_.store(ready_.size(), std::memory_order_release);
        return kept;
    }

    static bool is_short(const wire::Datagram &d) {
        return d.has_am && d.am.category == static_cast<std::uint8_t>(AmCategory::short_);
    }

    // Under lock_: the ack of a datagram delivered directly, if one waits,
    // taken in now.
    void ack_deferred_apply() {
        if (ack_deferred_.peer == no_rank) return;
        const AckDeferred a = ack_deferred_;
        ack_deferred_.peer = no_rank;
        acked(a.peer, peers_[a.peer], a.ack, a.sack, a.now);
    }

    void ack_owe(Rank r, Peer &p, std::uint64_t now, bool at_once) {
        if (!p.ack_owed) p.ack_due_ns = now + ack_delay_ns_;
        p.ack_owed = true;
        p.ack_now |= at_once;
        timer_due_ns_ = std::min(timer_due_ns_, p.ack_now ? now : p.ack_due_ns);
        activate(r, p);
    }

    // Under lock_: the peer's cumulative and selective ack.
    void acked(Rank r, Peer &p, std::uint32_t ack, std::uint32_t sack, std::uint64_t now) {
        bool freed = false;
        while (p.in_flight && seq_diff(p.out.front().seq, ack) <= 0) {
            const Outbound &o = p.out.front();
            if (o.tries == 1) rtt_sample(p, now - o.sent_ns);  // Karn: never from a retransmission
            buffers_.put(o.bytes);
            p.out.pop_front();
            --p.in_flight;
            freed = true;
        }
        if (freed) p.waiting_since_ns = now;
        if (sack && p.in_flight) {
            const std::uint32_t front = p.out.front().seq;
            for (unsigned i = 0; i < sack_bits; ++i) {
                if (!(sack >> i & 1)) continue;
                const std::uint32_t index = ack + 2 + i - front;
                if (index < p.in_flight) p.out[index].sacked = true;
            }
            // The receiver has later datagrams but not this one: resend it
            // now rather than at its timeout (once; then the timer rules).
            Outbound &hole = p.out.front();
            if (!hole.sacked && hole.tries == 1) stage(r, p, hole, now);
        }
        if (freed) window_fill(r, p, now);
    }

    void rtt_sample(Peer &p, std::uint64_t sample) {
        if (!p.srtt_ns) {
            p.srtt_ns = sample;
            p.rttvar_ns = sample / 2;
        } else {
            const std::uint64_t delta = p.srtt_ns > sample ? p.srtt_ns - sample : sample - p.srtt_ns;
            p.rttvar_ns = (3 * p.rttvar_ns + delta) / 4;
            p.srtt_ns = (7 * p.srtt_ns + sample) / 8;
        }
        p.rto_ns = std::clamp(p.srtt_ns + 4 * p.rttvar_ns, rto_min_ns_, rto_max_ns);
    }

    // Under lock_: sends what the window allows.
    void window_fill(Rank r, Peer &p, std::uint64_t now) {
        while (p.in_flight < p.out.size() && p.in_flight < window_) {
            Outbound &o = p.out[p.in_flight++];
            p.waiting_bytes -= o.length;
            if (p.in_flight == 1) p.waiting_since_ns = now;
            stage(r, p, o, now);
        }
    }

    // Under lock_: queues one data datagram for the next tx_flush, with the
    // freshest ack (which then need not go alone).
    void stage(Rank r, Peer &p, Outbound &o, std::uint64_t now) {
        wire::ack_update(o.bytes, p.expected - 1, sack_of(p));
        ack_carried(p);
        if (o.tries++) ++counters_.retransmitted;
        o.sent_ns = now;
        if (now != unstamped) timer_due_ns_ = std::min(timer_due_ns_, now + timeout_of(p, o));
        tx_add(o.bytes, o.length, p);
        activate(r, p);
    }

    // A datagram on its way to `p` carries the ack of all it has sent me.
    static void ack_carried(Peer &p) {
        p.ack_owed = p.ack_now = false;
        p.ack_pending = 0;
    }

    // How long `o` waits for its ack before it is sent again.
    std::uint64_t timeout_of(const Peer &p, const Outbound &o) const {
        return std::min(p.rto_ns << std::min<unsigned>(o.tries - 1, 16), rto_max_ns);
    }

    std::uint32_t sack_of(const Peer &p) const {
        if (!p.early_count) return 0;
        std::uint32_t bits = 0;
        for (unsigned i = 0; i < sack_bits && i + 1 < recv_window_; ++i) {
            const Received &slot = early_slot(p, p.expected + 1 + i);
            if (slot.buffer && slot.datagram.header.seq == p.expected + 1 + i) bits |= 1u << i;
        }
        return bits;
    }

    // Where datagram `seq` waits while it is early: a power-of-two array,
    // so that consecutive numbers take consecutive slots across the wrap.
    // (One body for a Peer and a const Peer.)
    template <class P> static auto early_slot(P &p, std::uint32_t seq) -> decltype(p.early[0]) {
        return p.early[seq & (p.early.size() - 1)];
    }

    void activate(Rank r, Peer &p) {
        if (p.active) return;
        p.active = true;
        active_.push_back(r);
    }

    // Under lock_: retransmissions, acks that are due, peers gone silent.
    // Sets timer_due_ns_ to the earliest deadline left.
    void timers(std::uint64_t now, bool quiescing, Rank &silent) {
        std::uint64_t due = no_deadline;
        for (std::size_t i = 0; i < active_.size();) {
            const Rank r = active_[i];
            Peer &p = peers_[r];
            for (std::size_t j = 0; j < p.in_flight; ++j) {
                Outbound &o = p.out[j];
                if (o.sacked) continue;
                if (now - o.sent_ns >= timeout_of(p, o)) stage(r, p, o, now);
                due = std::min(due, o.sent_ns + timeout_of(p, o));
            }
            if (p.in_flight && !silent_reported_) {
                const std::uint64_t since = std::max(p.heard_ns, p.waiting_since_ns);
                if (now - since > peer_timeout_ns_) {
                    silent = r;
                    silent_reported_ = true;
                }
                due = std::min(due, since + peer_timeout_ns_ + 1);
            }
            if (p.ack_owed && (p.ack_now || quiescing || now >= p.ack_due_ns)) ack_send(r, p);
            if (p.ack_owed) due = std::min(due, p.ack_due_ns);
            if (p.out.empty() && !p.ack_owed) {
                p.active = false;
                active_[i] = active_.back();
                active_.pop_back();
                continue;
            }
            ++i;
        }
        timer_due_ns_ = due;
    }

    void ack_send(Rank r, Peer &p) {
        wire::Header h;
        h.kind = wire::Kind::ack;
        h.secret = expect_.secret;
        h.source = setup().rank;
        h.dest = r;
        h.ack = p.expected - 1;
        h.sack = sack_of(p);
        const std::size_t n = wire::encode(h, nullptr, nullptr, 0, p.ack_datagram.data(), p.ack_datagram.size(), 0);
        ack_carried(p);
        ++counters_.acks_sent;
        tx_add(p.ack_datagram.data(), n, p);
    }

    void tx_add(std::uint8_t *bytes, std::size_t n, Peer &p) {
        if (!p.connect_tried) connect_peer(p, -1);
        if (tx_count_ == batch) tx_flush();
        tx_[tx_count_++] = Staged{bytes, n, &p.address, p.fd};
    }

    // Under lock_: sends what was staged, one system call for each run of
    // datagrams that leave through the same socket.  A datagram the kernel
    // refuses (a full socket buffer, a firewall, a peer's port closed) is
    // as good as lost: its timer sends it again.
    void tx_flush() {
        for (unsigned first = 0, end; first < tx_count_; first = end) {
            end = first + 1;
            while (end < tx_count_ && tx_[end].fd == tx_[first].fd) ++end;
            tx_send(first, end);
        }
        tx_count_ = 0;
    }

    // Staged datagrams [first, end), all to go through one socket: a
    // peer's connected one (no address given) or the receiving one.  A
    // lone datagram (a round trip's) goes with send or sendto.
    void tx_send(unsigned first, unsigned end) {
        if (end - first == 1) {
            transmit(tx_[first].bytes, tx_[first].length, tx_[first].fd, tx_[first].to);
            return;
        }
        const bool connected = tx_[first].fd >= 0;
        mmsghdr msgs[batch];
        iovec iov[batch];
        for (unsigned i = first; i < end; ++i) {
            iov[i] = {tx_[i].bytes, tx_[i].length};
            msgs[i] = {};
            msgs[i].msg_hdr.msg_name = connected ? nullptr : tx_[i].to;
            msgs[i].msg_hdr.msg_namelen = connected ? 0 : sizeof(sockaddr_in);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        for (unsigned done = first; done < end;) {
            in_socket_call = true;
            const int n = ::sendmmsg(connected ? tx_[first].fd : fd_, msgs + done, end - done, 0);
            in_socket_call = false;
            if (n > 0) {
                done += static_cast<unsigned>(n);
                counters_.sent += static_cast<unsigned>(n);
            } else if (errno != EINTR) {
                ++counters_.send_errors;
                ++done;
            }
        }
    }

    // Under lock_: one datagram through `fd` (a peer's connected socket) or,
    // when it is -1, through the receiving socket to `to`.
    void transmit(const std::uint8_t *bytes, std::size_t length, int fd, const sockaddr_in *to) {
        for (;;) {
            in_socket_call = true;
            const ssize_t n = fd >= 0 ? ::send(fd, bytes, length, 0)
                                      : ::sendto(fd_, bytes, length, 0, reinterpret_cast<const sockaddr *>(to), sizeof *to);
            in_socket_call = false;
            if (n >= 0) {
                ++counters_.sent;
                return;
            }
            if (errno != EINTR) {
                ++counters_.send_errors;
                return;
            }
        }
    }

    // Runs the handlers of datagrams received in order, a batch at most,
    // on one thread at a time and never nested in a handler.
    int deliver_ready() {
        if (delivering_ || ready_count_.load(std::memory_order_acquire) == 0) return 0;
        if (!base::flag_try_take(deliver_flag_)) return 0;
        return deliver_held(nullptr);
    }

    // With the delivery flag taken: runs `first` (received in order before
    // anything in the ready queue), then the queue.
    int deliver_held(const Received *first) {
        delivering_ = true;
        // One lock per datagram: it returns the last one's buffer and takes
        // the next.  One at a time, so a handler that exits leaves the rest
        // queued for the exit's own polls.
        int n = first ? consume(*first) : 0;
        std::uint8_t *done = first ? first->buffer : nullptr;
        for (unsigned k = 0; k <= batch && delivering_; ++k) {
            // Nothing to give back and nothing queued (a round trip's
            // Short): no lock.  A datagram queued just after this look is
            // delivered by the next poll, as one queued just after the
            // look under the lock would be.
            if (!done && ready_count_.load(std::memory_order_relaxed) == 0) break;
            Received r;
            {
                Guard g(lock_);
                if (done) buffers_.put(done);
                if (ready_.empty() || k == batch) break;
                r = ready_.pop_front();
                ready_count_.store(ready_.size(), std::memory_order_relaxed);
            }
            done = r.buffer;
            n += consume(r);
        }
        if (delivering_) {
            delivering_ = false;
            deliver_flag_.store(false, std::memory_order_release);
        }
        return n;
    }

    // One in-order datagram: starts or continues its peer's message and runs
    // the handler once the message is whole.  Returns 1 if a handler ran.
    int consume(const Received &r) {
        const wire::Datagram &d = r.datagram;
        const Rank source = d.header.source;
        Assembly &a = peers_[source].assembly;
        if (is_short(d)) {  // whole in one datagram
            a.open = false;
            deliver_short(source, d.am.handler, d.am.flags, d.am.credit, d.am.args, d.am.nargs);
            return 1;
        }
        if (d.has_am) {
            a.open = true;
            a.received = 0;
            a.header = AmHeader{};
            a.header.handler = d.am.handler;
            a.header.category = static_cast<AmCategory>(d.am.category);
            a.header.nargs = d.am.nargs;
            a.header.flags = d.am.flags;
            a.header.credit = d.am.credit;
            a.header.source = source;
            a.header.payload_length = d.header.message_length;
            a.header.dest_addr = d.am.dest_addr;
            std::copy(d.am.args, d.am.args + d.am.nargs, a.args);
            if (a.header.category == AmCategory::long_ && !segment_holds(a.header.dest_addr, d.header.message_length))
                base::fatal("AM receive (udp)", "this is a Sluice bug: senders check Long targets",
                            "a Long of %u bytes from rank %u to %#llx is outside this rank's segment",
                            d.header.message_length, source, static_cast<unsigned long long>(a.header.dest_addr));
            if (a.header.category == AmCategory::medium && d.payload_length < d.header.message_length)
                a.medium.resize(d.header.message_length);
        } else if (!a.open || d.header.fragment_offset != a.received) {
            base::fatal("AM receive (udp)", "this is a Sluice bug",
                        "fragment at offset %u of a message from rank %u, expected offset %u", d.header.fragment_offset,
                        source, a.open ? a.received : 0);
        }
        const std::uint32_t offset = d.header.fragment_offset;
        void *payload = nullptr;
        if (a.header.category == AmCategory::long_) {
            payload = reinterpret_cast<void *>(a.header.dest_addr);
            if (d.payload_length) std::memcpy(static_cast<char *>(payload) + offset, d.payload, d.payload_length);
        } else if (a.header.category == AmCategory::medium) {
            if (d.has_am && d.payload_length == d.header.message_length) {
                payload = const_cast<std::uint8_t *>(d.payload);  // whole in one datagram: no copy
            } else {
                std::memcpy(a.medium.data() + offset, d.payload, d.payload_length);
                payload = a.medium.data();
            }
        }
        a.received += static_cast<std::uint32_t>(d.payload_length);
        if (a.received < d.header.message_length) return 0;
        a.open = false;
        deliver(a.header, a.args, payload);
        return 1;
    }

    bool segment_holds(std::uint64_t addr, std::uint64_t n) const {
        return addr >= segment_base_ && n <= segment_bytes_ && addr - segment_base_ <= segment_bytes_ - n;
    }

    [[noreturn]] void peer_silent(Rank r) {
        std::string where;
        {
            Guard g(lock_);
            where = address_text(peers_[r].address);
        }
        char fix[200];
        std::snprintf(fix, sizeof fix,
                      "check that rank %u is alive and polls; a rank that computes without polling for longer "
                      "needs a larger SLUICE_UDP_PEER_TIMEOUT or SLUICE_PROGRESS_THREAD=1", r);
        base::fatal("udp", fix, "rank %u (%s) has acknowledged nothing for %.1f s (SLUICE_UDP_PEER_TIMEOUT=%g): taking it for dead",
                    r, where.c_str(), peer_timeout_s_, peer_timeout_s_);
    }

    void stats_print() {
        Guard g(lock_);
        std::string drops;
        for (std::size_t i = 1; i < wire::drop_reasons; ++i)
            drops += std::string(wire::drop_name(static_cast<wire::Drop>(i))) + " " + std::to_string(counters_.wire[i]) + ", ";
        std::fprintf(stderr,
                     "sluice[rank %u] udp: sent %llu (retransmitted %llu, acks alone %llu, refused by the kernel %llu), "
                     "received %llu; dropped: %saddress %llu (checked by %s), duplicate %llu, beyond window %llu\n",
                     setup().rank, static_cast<unsigned long long>(counters_.sent),
                     static_cast<unsigned long long>(counters_.retransmitted),
                     static_cast<unsigned long long>(counters_.acks_sent),
                     static_cast<unsigned long long>(counters_.send_errors),
                     static_cast<unsigned long long>(counters_.received), drops.c_str(),
                     static_cast<unsigned long long>(counters_.address),
                     aside_.fd >= 0 ? "a connected socket and Sluice" : in_.filter ? "the kernel's filter" : "Sluice",
                     static_cast<unsigned long long>(counters_.duplicate),
                     static_cast<unsigned long long>(counters_.window));
        for (Rank r = 0; r < peers_.size(); ++r)
            if (peers_[r].reachable && peers_[r].srtt_ns)
                std::fprintf(stderr, "sluice[rank %u] udp: to rank %u: round trip %.1f us (+- %.1f), retransmission timeout %.1f us\n",
                             setup().rank, r, peers_[r].srtt_ns / 1e3, peers_[r].rttvar_ns / 1e3, peers_[r].rto_ns / 1e3);
    }

    struct Staged {
        std::uint8_t *bytes;
        std::size_t length;
        sockaddr_in *to;
        int fd;  // the peer's connected socket, or -1
    };

    Lock lock_;
    int fd_ = -1;                 // the receiving socket (and sendto for peers without their own)
    int anchor_ = -1;             // at init: the first connected socket, before it is connected
    sockaddr_in send_address_{};  // where the connected sockets are bound (port 0: none)
    unsigned connected_limit_ = 0, connected_ = 0;
    wire::Expect expect_;
    std::size_t datagram_max_ = 0;
    std::size_t queue_limit_ = 0;
    unsigned window_ = 64, recv_window_ = 64;
    std::uint64_t ack_delay_ns_ = 0, rto_min_ns_ = 0, peer_timeout_ns_ = 0;
    double peer_timeout_s_ = 0;
    bool silent_reported_ = false;
    std::vector<Peer> peers_;
    std::vector<Rank> active_;  // peers with data in flight or an ack owed
    std::uint64_t timer_due_ns_ = no_deadline;  // timers() has nothing to do before
    Buffers buffers_;
    std::array<std::uint8_t *, batch> rx_{};
    RxSocket in_;     // read on every poll: the receiving socket, or the peer socket
    RxSocket aside_;  // with a peer socket: the receiving socket (fd_), read on every aside_every-th poll
    unsigned aside_polls_ = 0;
    Rank peer_socket_rank_ = no_rank;     // the one peer whose datagrams come in on a socket of their own
    std::uint16_t peer_socket_port_ = 0;  // network order: the port that socket is connected to
    std::array<Staged, batch> tx_{};
    unsigned tx_count_ = 0;
    Fifo<Received> ready_;
    // A datagram that skips the ready queue (progress), and where to say so
    // during a receive.  Only the holder of the delivery flag uses it.
    Received direct_;
    bool *direct_wanted_ = nullptr;
    // The ack that direct_'s datagram carried, not yet taken in (peer
    // no_rank: none).  Until it is, the datagrams it acknowledges stay in
    // flight: a send may find the window a datagram fuller, no more.
    struct AckDeferred {
        Rank peer = no_rank;
        std::uint32_t ack = 0, sack = 0;
        std::uint64_t now = 0;
    };
    AckDeferred ack_deferred_;
    std::atomic<std::size_t> ready_count_{0};
    std::atomic<bool> deliver_flag_{false};
    static thread_local bool delivering_;
    // The clock of this thread's last progress (0: not read), for sends
    // from the handlers it delivers next.
    static thread_local std::uint64_t poll_now_;
    // Polls skipped since the last receive, and how many to skip while
    // nothing arrives (1 after traffic, doubling to max_stride_).
    std::atomic<unsigned> skipped_{0}, stride_{1};
    unsigned max_stride_ = 8;
    Counters counters_;
    void *own_segment_ = nullptr;
    std::size_t own_segment_bytes_ = 0;
    std::uint64_t segment_base_ = 0, segment_bytes_ = 0;
};

thread_local bool UdpTransport::delivering_ = false;
thread_local std::uint64_t UdpTransport::poll_now_ = 0;

} // namespace

std::unique_ptr<Transport> make_udp_transport() { return std::make_unique<UdpTransport>(); }

} // namespace sluice::conduit::udp
