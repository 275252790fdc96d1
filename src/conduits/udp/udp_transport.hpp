// src/conduits/udp/udp_transport.hpp - the udp conduit's transport class,
// its per-peer state and its lock, shared by udp.cpp (the protocol's
// datagrams: send, receive, acks, timers, delivery) and udp_setup.cpp
// (sockets, addresses, init, finalize, counters).  The protocol's state and
// rules are the kit's reliable::Sender and reliable::Receiver, one of each
// per peer; udp keeps the datagrams they number.  README.md has the design.
//
// Locking: `lock_` covers the sockets, every peer's state and the buffers.
// Handlers run outside it, on one thread at a time (`deliver_flag_`), in
// each peer's order.  A handler whose send waits for room polls
// (Transport::send_retry); that nested poll receives and processes acks but
// delivers nothing: room comes back with acks alone.
#pragma once

#include "base/flag.hpp"
#include "conduits/common/private_segment.hpp"
#include "conduits/common/buffer_pool.hpp"
#include "conduits/common/fifo.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/common/reassembly.hpp"
#include "conduits/common/reliable.hpp"
#include "conduits/transport.hpp"
#include "conduits/udp/mac.hpp"
#include "conduits/udp/wire.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit::udp::detail {

constexpr unsigned batch = 32;                   // datagrams per recvmmsg / sendmmsg
constexpr std::size_t max_medium_bytes = 65536;
constexpr std::size_t max_long_bytes = 1u << 20;
constexpr std::uint64_t rto_max_ns = 200'000'000;
// The protocol is the kit's (reliable.hpp): sequence numbers start 1024
// short of their wrap, as Linux starts its jiffies 5 minutes short of
// theirs, so every job that sends a peer more than 1024 datagrams crosses
// it.  A datagram send_impl sends before reading the clock goes unstamped.
using common::reliable::no_deadline;
using common::reliable::unstamped;
constexpr unsigned ip_udp_header_bytes = 28;
// The length receive() gives a datagram the source filter emptied.
constexpr std::size_t from_stranger = ~std::size_t{0};
// With a peer socket, the receiving socket (strangers, and the peer's
// datagrams before the peer socket was connected) is read on every
// aside_every-th poll.
constexpr unsigned aside_every = 64;
constexpr Rank no_rank = ~Rank{0};

// This thread's identity for Lock (the address of a thread-local).
extern thread_local char thread_marker;

// The conduit's spin lock (base::SpinLock), which knows its holder: a
// termination signal must not wait in its handler on the thread that holds
// it, since the exit, on Sluice's signal thread, sends and receives under
// it (Transport::signal_exit_safe).
class Lock {
public:
    void lock() {
        lock_.lock();
        owner_.store(&thread_marker, std::memory_order_relaxed);
    }
    void unlock() {
        owner_.store(nullptr, std::memory_order_relaxed);
        lock_.unlock();
    }
    bool held_here() const { return owner_.load(std::memory_order_relaxed) == &thread_marker; }

private:
    base::SpinLock lock_;
    std::atomic<const char *> owner_{nullptr};
};

class Guard {
public:
    explicit Guard(Lock &l) : lock_(l) { lock_.lock(); }
    ~Guard() { lock_.unlock(); }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;

private:
    Lock &lock_;
};

// A datagram I sent (or will send when the window has room) to a peer:
// its number, times and tries are the peer's Sender's.  `bytes` is a
// buffer of the pool; a message whose payload is stable memory
// (AmMessage::payload_stable: a reference Get's reply, read from the
// segment) keeps there only its header and AM section, and its payload
// bytes, `tail`, are sent (and resent) from where they lie, as a second
// iovec: no copy into the buffer (README, "Zero-copy Get replies").
struct Outbound {
    std::uint8_t *bytes = nullptr;
    std::uint32_t length = 0;
    const std::uint8_t *tail = nullptr;
    std::uint32_t tail_length = 0;
    std::size_t size() const { return std::size_t{length} + tail_length; }
};

// A datagram received in order (or early), waiting for its handler.
struct Received {
    std::uint8_t *buffer = nullptr;
    wire::Datagram datagram;
};

using common::Fifo;

// What the start-up exchange says of every peer, kept for all of them
// (8 bytes each): where it receives, and the port its connected sockets
// send from (network order; 0: none).  port 0: not reached over udp.
struct PeerAddress {
    std::uint32_t ip = 0;
    std::uint16_t port = 0, send_port = 0;
    bool reachable() const { return port != 0; }
};

inline sockaddr_in address_of(const PeerAddress &a) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_addr.s_addr = a.ip;
    s.sin_port = a.port;
    return s;
}

// The state of a peer this rank has sent to or heard from, made at the
// first touch (UdpTransport::peer).
struct Peer {
    sockaddr_in address{};  // where it receives (PeerAddress)
    int fd = -1;            // my socket connected to it, or -1: sendto on the receiving socket
    bool connect_tried = false;
    bool active = false;    // in UdpTransport::active_
    // sending: out's first tx.in_flight() datagrams are in flight,
    // numbered from tx.oldest(); the rest wait for the window
    common::reliable::Sender tx;
    Fifo<Outbound> out;
    std::size_t waiting_bytes = 0;  // bytes of out beyond those in flight
    std::size_t waiting() const { return out.size() - tx.in_flight(); }
    // receiving: the datagrams rx holds early (early_slot; allocated on first use)
    common::reliable::Receiver rx;
    std::vector<Received> early;
    // Transmission numbers (README.md, Authentication): the last one I gave
    // a datagram to it, and the highest I accepted from it with a bit for
    // each of the 63 before it (bit i: highest - i accepted; 0 counts as
    // accepted, so it is refused).
    std::uint64_t tx_number = 0;
    std::uint64_t rx_number = 0, rx_numbers_seen = 1;
    std::array<std::uint8_t, wire::header_bytes> ack_datagram{};
    common::Reassembly assembly;  // the message whose fragments are arriving; only under the delivery flag
};

// Retransmissions are the Senders' (reliable::Sender::retransmitted).
// in_place: datagrams (sends and resends) whose payload went out from where
// it lies (Outbound::tail).
struct Counters {
    std::uint64_t sent = 0, acks_sent = 0, received = 0, send_errors = 0, in_place = 0;
    std::uint64_t wire[wire::drop_reasons] = {};
    std::uint64_t address = 0, duplicate = 0, window = 0;
    std::uint64_t replay = 0;  // authentic datagrams whose transmission number was accepted before
};




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

std::string address_text(const sockaddr_in &a);

class UdpTransport final : public Transport {
public:
    UdpTransport() : Transport("udp", Capabilities{}) {}
    ~UdpTransport() override { close_socket(); }

protected:
    Status init_impl() override;

    Status send_impl(Rank peer, const AmMessage &m) override;

    // A round trip's message: src/am checked it (at most 16 arguments).
    Status send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit, const std::uint32_t *args, unsigned nargs) override;

    // A message of `total` payload bytes with its AM section, checked;
    // `stable`: the payload is sent from where it lies (Outbound::tail).
    Status send_am(Rank peer, const wire::Am &am, const std::uint8_t *payload, std::size_t total, bool stable);

    // Under lock_: a message of one datagram, with the window open and
    // nothing waiting or staged ahead of it (a round trip's request or
    // reply).  It leaves at once with the freshest ack, through its own
    // system call, and its bookkeeping follows it off the latency path.
    // The clock is the one send_impl would stamp it with.
    Status send_alone(Rank r, Peer &p, wire::Header &w, const wire::Am &am, const std::uint8_t *payload, std::size_t n,
                      bool stable);

    // A poll for replies only (a reply waiting for room on some transport)
    // runs no handler here: room on udp comes back with acks alone, and a
    // request handler must not run nested inside another handler.
    int poll_impl(PollMode mode) override;
    std::size_t receive_buffer_bytes_impl() override;

    Status segment_create_impl(std::size_t size, void **base, std::string &key) override;

    Status segment_connect_impl(const std::vector<SegmentRecord> &all) override;

    // Exit from inside a handler: that handler never returns, so the next
    // poll on this thread must be free to deliver (the exit messages).
    void dispatch_abandon_impl() override;

    bool signal_exit_safe_impl() const override { return !lock_.held_here(); }

    // Ends when everything sent is acknowledged; the timers' peer timeout
    // (peer_silent) ends the job if a peer stops answering.
    void quiesce_impl() override;
    // Block mode: the sockets, and the timers' next deadline (udp.cpp).
    bool wake_prepare_impl(WakeSet &w) override;

    void fini_impl() override;

private:
    void close_socket();

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
    void connected_socket_open(in_addr ip, std::uint16_t &port);

    // A socket bound with SO_REUSEPORT to `at` (port 0: a new port, written
    // back), so that others can share the port: the send port's, or the
    // peer socket on the receiving port.  -1 on failure.
    int port_socket_open(sockaddr_in &at);
    // Sets SO_REUSEPORT on `fd`, bound already or about to join a port.
    static bool port_share(int fd);

    // Under lock_ (or at init): gives `p` its connected socket, `fd` or a
    // new one on the send port.  On any failure `p` keeps using sendto.
    void connect_peer(Peer &p, int fd);

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
    void peer_socket_open(Rank r, sockaddr_in mine);

    // Under lock_: the peer socket's rank sends from `port` (its
    // receiving one: it has no connected socket for me), which its
    // datagrams reaching the receiving socket show.  The peer socket
    // follows; if it cannot, everything is received on the receiving
    // socket, its sources checked here.
    void peer_socket_follow(std::uint16_t port);

    // At init: the source filter on the receiving socket, if the knob and
    // the kernel allow; else Sluice checks every address.
    void source_filter_try(in_addr ip);

    void socket_buffers_set(int fd);

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
    [[gnu::always_inline]] inline bool progress(bool quiescing, bool *direct = nullptr);

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
    [[gnu::always_inline]] inline int receive(RxSocket &x, std::uint64_t now);

    // receive() for a batch (a flood), and for the aside socket: out of
    // line, where a frame more costs nothing worth counting.
    [[gnu::noinline]] int receive_outline(RxSocket &x, std::uint64_t now);

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
    [[gnu::always_inline]] inline int received(RxSocket &x, int n, const std::size_t *length, const sockaddr_in *from, std::uint64_t now);

    // Under lock_.  One datagram of `n` bytes (0: truncated, from_stranger:
    // emptied by the source filter); `from` is its sender, or null when the
    // kernel checked it.  True when it was kept (its buffer is taken).
    bool arrived(std::uint8_t *buf, std::size_t n, const sockaddr_in *from, std::uint64_t now);

    // arrived(), once the datagram is decoded into `d`; `mine`: this thread
    // holds the delivery flag and `d` is direct_'s, so an in-order data
    // datagram goes to its handler directly.
    bool arrived_checked(std::uint8_t *buf, std::size_t n, const sockaddr_in *from, std::uint64_t now, wire::Datagram &d, bool mine);

    // Under lock_: writes the datagram's tag when the job signs (expect_.mac).
    void sign(std::uint8_t *bytes, std::size_t length, const std::uint8_t *tail = nullptr, std::size_t tail_length = 0) {
        if (expect_.mac) expect_.mac->sign(bytes, length, tail, tail_length);
    }

    // Under lock_: whether transmission `number` from `p` is new (and it is
    // now accepted): above the highest accepted, or one of the 63 below it
    // not yet seen.  An anti-replay window over the numbers, as IPsec's
    // (RFC 4303, 3.4.3): datagrams reordered by fewer than 64
    // transmissions still pass.
    static bool number_accept(Peer &p, std::uint64_t number) {
        if (number > p.rx_number) {
            const std::uint64_t shift = number - p.rx_number;
            p.rx_numbers_seen = shift >= 64 ? 1 : p.rx_numbers_seen << shift | 1;
            p.rx_number = number;
            return true;
        }
        const std::uint64_t back = p.rx_number - number;
        if (back >= 64 || (p.rx_numbers_seen >> back & 1)) return false;
        p.rx_numbers_seen |= std::uint64_t{1} << back;
        return true;
    }

    static bool is_short(const wire::Datagram &d) {
        return d.has_am && d.am.category == static_cast<std::uint8_t>(AmCategory::short_);
    }

    // Under lock_: the ack of a datagram delivered directly, if one waits,
    // taken in now.
    void ack_deferred_apply();

    // Under lock_: p.rx may owe an ack; its deadline joins the timers'.
    void ack_owe(Rank r, Peer &p);

    // Under lock_: the peer's cumulative and selective ack.
    void acked(Rank r, Peer &p, std::uint32_t ack, std::uint32_t sack, std::uint64_t now);

    // Under lock_: sends what the window allows.
    void window_fill(Rank r, Peer &p, std::uint64_t now);

    // Under lock_: queues datagram `seq` (sent, or sent again: p.tx has
    // counted it) for the next tx_flush, with the freshest ack (which then
    // need not go alone).
    void stage(Rank r, Peer &p, std::uint32_t seq);

    // Where datagram `seq` waits while it is early: a power-of-two array
    // as large as p.rx's, so that consecutive numbers take consecutive
    // slots across the wrap.
    static Received &early_slot(Peer &p, std::uint32_t seq) { return p.early[seq & (p.early.size() - 1)]; }

    // Peer r's state, made at its first touch (r reachable); under lock_.
    Peer &peer(Rank r) {
        if (Peer *p = peers_.find(r)) [[likely]]
            return *p;
        return peer_make(r);
    }
    Peer &peer_make(Rank r);

    void activate(Rank r, Peer &p) {
        if (p.active) return;
        p.active = true;
        active_.push_back(r);
    }

    // Under lock_: retransmissions, acks that are due, peers gone silent.
    // Sets timer_due_ns_ to the earliest deadline left.
    void timers(std::uint64_t now, bool quiescing, Rank &silent);

    void ack_send(Rank r, Peer &p);

    void tx_add(std::uint8_t *bytes, std::size_t n, Peer &p, const std::uint8_t *tail = nullptr, std::size_t tail_length = 0);

    // Under lock_: sends what was staged, one system call for each run of
    // datagrams that leave through the same socket.  A datagram the kernel
    // refuses (a full socket buffer, a firewall, a peer's port closed) is
    // as good as lost: its timer sends it again.
    void tx_flush();

    // Staged datagrams [first, end), all to go through one socket: a
    // peer's connected one (no address given) or the receiving one.  A
    // lone datagram (a round trip's) goes with send or sendto.
    void tx_send(unsigned first, unsigned end);

    // Under lock_: one datagram through `fd` (a peer's connected socket) or,
    // when it is -1, through the receiving socket to `to`: `length` bytes,
    // then `tail_length` more from `tail` (Outbound::tail).
    void transmit(const std::uint8_t *bytes, std::size_t length, int fd, const sockaddr_in *to,
                  const std::uint8_t *tail = nullptr, std::size_t tail_length = 0);
    // transmit()'s one try of a datagram with a tail: a sendmsg of two iovecs.
    ssize_t transmit_gathered(const std::uint8_t *bytes, std::size_t length, int fd, const sockaddr_in *to,
                              const std::uint8_t *tail, std::size_t tail_length);

    // Runs the handlers of datagrams received in order, a batch at most,
    // on one thread at a time and never nested in a handler.
    int deliver_ready();

    // With the delivery flag taken: runs `first` (received in order before
    // anything in the ready queue), then the queue.
    int deliver_held(const Received *first);

    // One in-order datagram: starts or continues its peer's message and runs
    // the handler once the message is whole.  Returns 1 if a handler ran.
    int consume(const Received &r);

    [[noreturn]] void peer_silent(Rank r);

    void stats_report_impl() override;
    void stats_print();

    // At init: the job's secret and MAC key from rank 0 (README.md, Authentication).
    Status job_key_share();

    struct Staged {
        std::uint8_t *bytes;
        std::size_t length;
        sockaddr_in *to;
        int fd;  // the peer's connected socket, or -1
        const std::uint8_t *tail;  // Outbound::tail
        std::size_t tail_length;
    };

    Lock lock_;
    int fd_ = -1;                 // the receiving socket (and sendto for peers without their own)
    int anchor_ = -1;             // at init: the first connected socket, before it is connected
    sockaddr_in send_address_{};  // where the connected sockets are bound (port 0: none)
    unsigned connected_limit_ = 0, connected_ = 0;
    wire::Expect expect_;
    std::unique_ptr<wire::Mac> mac_;  // the job key's (expect_.mac), unless SLUICE_UDP_MAC=0
    std::size_t datagram_max_ = 0;
    std::size_t queue_limit_ = 0;
    common::reliable::Config protocol_;  // every peer's Sender and Receiver, from the knobs
    double peer_timeout_s_ = 0;
    bool silent_reported_ = false;
    std::vector<PeerAddress> addresses_;  // by rank
    common::PeerTable<Peer> peers_;       // by rank, made at first touch
    std::vector<Rank> active_;  // peers with data in flight or an ack owed
    std::uint64_t timer_due_ns_ = no_deadline;  // timers() has nothing to do before
    common::BufferPool buffers_;
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
    common::PrivateSegment own_segment_;
    common::SegmentBounds segment_;  // where Longs land
};

} // namespace sluice::conduit::udp::detail
