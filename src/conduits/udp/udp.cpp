// src/conduits/udp/udp.cpp - the udp conduit's protocol: reliable active
// messages over UDP datagrams (README.md has the design, the knobs and the
// wire format).
//
// One non-blocking UDP socket per rank receives everything (a socket filter
// of the peers' addresses lets the kernel check sources, source_filter.hpp,
// so receives need not ask for them); sends go through a
// socket connected to the peer (up to SLUICE_UDP_CONNECTED_PEERS of them, all
// on one shared send port) or through the receiving socket. Each ordered pair
// of ranks runs the kit's reliability protocol (common/reliable.hpp): the
// peer's reliable::Sender numbers every datagram and says when to resend it
// and when the peer is silent, its reliable::Receiver which datagrams to
// deliver, hold or drop and when an ack must go alone.  udp keeps the
// datagrams (in flight, waiting for the window, held early) and sends what
// they say, so every handler runs exactly once and the fragments of a
// message arrive one after the other.  Sends and floods of receives are
// batched with sendmmsg and recvmmsg.
// A round trip's lone datagrams take a shorter path both ways: send_alone
// on the way out, and on the way in a poll that runs the handler straight
// from its receive buffer (progress's `direct`, deliver_held).
//
// Sockets, addresses, init and finalize are in udp_setup.cpp; the class
// and its state in udp_transport.hpp.
#include "conduits/udp/udp_transport.hpp"

#include "base/flag.hpp"
#include "base/knobs.hpp"
#include "conduits/udp/wire.hpp"

#include <sys/socket.h>

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

namespace sluice::conduit::udp::detail {

thread_local char thread_marker;
thread_local bool UdpTransport::delivering_ = false;
thread_local std::uint64_t UdpTransport::poll_now_ = 0;

Status UdpTransport::send_impl(Rank peer, const AmMessage &m) {
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
    return send_am(peer, am, static_cast<const std::uint8_t *>(m.payload), total, m.payload_stable && total);
}

Status UdpTransport::send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit, const std::uint32_t *args, unsigned nargs) {
    wire::Am am;
    am.handler = handler;
    am.nargs = static_cast<std::uint8_t>(nargs);
    am.flags = flags;
    am.credit = credit;
    std::copy(args, args + nargs, am.args);
    return send_am(peer, am, nullptr, 0, false);
}

Status UdpTransport::send_am(Rank peer, const wire::Am &am, const std::uint8_t *payload, std::size_t total, bool stable) {
    Guard g(lock_);
    Peer &p = this->peer(peer);
    // Refused (the caller polls and retries) once a window of datagrams
    // waits, not only 2 MiB of them: 4096 Get requests of 112 bytes fit
    // in 2 MiB, and a rank queueing them all without a poll left its
    // peer's replies unacknowledged past the retransmission timeout
    // (and held a datagram-sized buffer for each).  Refused, it polls
    // while it issues: replies and acks flow as the requests go.
    if (p.waiting_bytes > queue_limit_ || p.waiting() >= protocol_.window) return Status::not_ready;
    wire::Header w;
    w.kind = wire::Kind::data;
    w.secret = expect_.secret;
    w.source = setup().rank;
    w.dest = peer;
    w.message_length = static_cast<std::uint32_t>(total);
    const unsigned nargs = am.nargs;
    if (p.waiting() == 0 && p.tx.window_open() && tx_count_ == 0 &&
        total <= datagram_max_ - wire::encoded_size(true, nargs, 0))
        return send_alone(peer, p, w, am, payload, total, stable);
    // Numbered as they will leave: after those waiting for the window.
    std::uint32_t seq = p.tx.next_seq() + static_cast<std::uint32_t>(p.waiting());
    std::size_t offset = 0;
    do {
        const bool first = offset == 0;
        const std::size_t room = datagram_max_ - wire::encoded_size(first, first ? nargs : 0, 0);
        const std::size_t n = std::min(room, total - offset);
        w.seq = seq++;
        w.fragment_offset = static_cast<std::uint32_t>(offset);
        std::uint8_t *buf = buffers_.get();
        const wire::Am *section = first ? &am : nullptr;
        Outbound o{buf, 0};
        if (stable) {
            o.length = static_cast<std::uint32_t>(wire::encode_head(w, section, n, buf, datagram_max_, expect_.max_message));
            o.tail = payload + offset;
            o.tail_length = static_cast<std::uint32_t>(n);
        } else {
            o.length = static_cast<std::uint32_t>(wire::encode(w, section, payload + offset, n, buf, datagram_max_, expect_.max_message));
        }
        p.out.push_back(o);
        p.waiting_bytes += o.size();
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
    window_fill(peer, p, unstamped);
    tx_flush();
    p.tx.stamp(base::now_ns());
    timer_due_ns_ = std::min(timer_due_ns_, p.tx.next_due());
    return Status::ok;
}

Status UdpTransport::send_alone(Rank r, Peer &p, wire::Header &w, const wire::Am &am, const std::uint8_t *payload, std::size_t n,
                                bool stable) {
    w.seq = p.tx.next_seq();
    w.ack = p.rx.ack();
    w.sack = p.rx.sack();
    w.number = ++p.tx_number;
    // Built from a message src/am checked, to fit (send_impl): no checks.
    Outbound o{buffers_.get(), 0};
    if (stable) {
        o.length = static_cast<std::uint32_t>(wire::write_head(w, &am, n, o.bytes));
        o.tail = payload;
        o.tail_length = static_cast<std::uint32_t>(n);
    } else {
        o.length = static_cast<std::uint32_t>(wire::write(w, &am, payload, n, o.bytes));
    }
    sign(o.bytes, o.length, o.tail, o.tail_length);
    p.rx.ack_carried();
    if (!p.connect_tried) connect_peer(p, -1);
    transmit(o.bytes, o.length, p.fd, &p.address, o.tail, o.tail_length);
    counters_.in_place += stable;
    p.tx.sent(delivering_ && poll_now_ ? poll_now_ : base::now_ns());
    p.out.push_back(o);
    timer_due_ns_ = std::min(timer_due_ns_, p.tx.next_due());
    activate(r, p);
    return Status::ok;
}

int UdpTransport::poll_impl(PollMode mode) {
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

void UdpTransport::dispatch_abandon_impl() {
    if (!delivering_) return;
    delivering_ = false;
    deliver_flag_.store(false, std::memory_order_release);
}

// Block mode: the sockets are readable while a datagram waits, so a
// datagram that arrived before this is no lost wake-up; a retransmission or
// an owed ack is due by timer_due_ns_.
bool UdpTransport::wake_prepare_impl(WakeSet &w) {
    Guard g(lock_);
    if (fd_ < 0) return true;
    if (!ready_.empty() || tx_count_) return false;
    if (timer_due_ns_ != no_deadline) {
        const std::uint64_t now = base::now_ns();
        if (timer_due_ns_ <= now) return false;
        w.sleep_ns = std::min(w.sleep_ns, timer_due_ns_ - now);
    }
    w.add(in_.fd);
    if (aside_.fd >= 0 && aside_.fd != in_.fd) w.add(aside_.fd);
    return true;
}

void UdpTransport::quiesce_impl() {
    for (;;) {
        const bool idle = progress(true);
        deliver_ready();
        if (idle) break;
        base::idle();
    }
}

[[gnu::always_inline]] inline bool UdpTransport::progress(bool quiescing, bool *direct) {
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

[[gnu::always_inline]] inline int UdpTransport::receive(RxSocket &x, std::uint64_t now) {
    if (x.batch != 1) return receive_outline(x, now);
    sockaddr_in from;
    socklen_t from_length = sizeof from;
    const bool ask = x.check != SourceCheck::kernel;
    const ssize_t got = ::recvfrom(x.fd, rx_[0], datagram_max_, MSG_DONTWAIT | MSG_TRUNC,
                                   ask ? reinterpret_cast<sockaddr *>(&from) : nullptr, ask ? &from_length : nullptr);
    if (got < 0) return received(x, -1, nullptr, nullptr, now);
    // MSG_TRUNC: a longer datagram reports its whole length.
    const std::size_t length = length_of(x, static_cast<std::size_t>(got), got > static_cast<ssize_t>(datagram_max_), from_length);
    return received(x, 1, &length, ask ? &from : nullptr, now);
}

[[gnu::noinline]] int UdpTransport::receive_outline(RxSocket &x, std::uint64_t now) {
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
    const int n = ::recvmmsg(x.fd, msgs, x.batch, MSG_DONTWAIT, nullptr);
    for (int i = 0; i < n; ++i)
        length[i] = length_of(x, msgs[i].msg_len, (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0, msgs[i].msg_hdr.msg_namelen);
    return received(x, n, length, ask ? from : nullptr, now);
}

[[gnu::always_inline]] inline int UdpTransport::received(RxSocket &x, int n, const std::size_t *length, const sockaddr_in *from, std::uint64_t now) {
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

bool UdpTransport::arrived(std::uint8_t *buf, std::size_t n, const sockaddr_in *from, std::uint64_t now) {
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

bool UdpTransport::arrived_checked(std::uint8_t *buf, std::size_t n, const sockaddr_in *from, std::uint64_t now, wire::Datagram &d, bool mine) {
    if (const wire::Drop why = wire::decode(buf, n, expect_, d); why != wire::Drop::none) {
        ++counters_.wire[static_cast<std::size_t>(why)];
        return false;
    }
    const Rank source = d.header.source;
    const PeerAddress &a = addresses_[source];
    if (!a.reachable() || (from && (from->sin_addr.s_addr != a.ip ||
                                    (from->sin_port != a.port && (from->sin_port != a.send_port || a.send_port == 0))))) {
        ++counters_.address;
        return false;
    }
    Peer &p = peer(source);
    // Authentic, but sent before: a replay, dropped before anything in it
    // is believed (not even that the peer lives).
    if (!number_accept(p, d.header.number)) {
        ++counters_.replay;
        return false;
    }
    if (from && source == peer_socket_rank_ && from->sin_port != peer_socket_port_ && from->sin_port == p.address.sin_port)
        peer_socket_follow(from->sin_port);
    ++counters_.received;
    p.tx.heard(now);
    // The datagram a round trip waits for runs its handler before the
    // ack it carries is taken in: that waits for this thread's next
    // progress (ack_deferred_apply), off the path from this receive to
    // the reply's (or the next request's) send.
    const bool direct = mine && d.header.kind == wire::Kind::data && d.header.seq == p.rx.expected();
    ack_deferred_apply();  // acks are taken in in order
    if (direct) ack_deferred_ = AckDeferred{source, d.header.ack, d.header.sack, now};
    else acked(source, p, d.header.ack, d.header.sack, now);
    switch (d.header.kind) {
    case wire::Kind::ack: return false;
    case wire::Kind::probe:
        p.rx.probed(now);
        ack_owe(source, p);
        return false;
    case wire::Kind::data: break;
    }
    using Arrival = common::reliable::Receiver::Arrival;
    const Arrival arrival = p.rx.data(d.header.seq, now);
    ack_owe(source, p);
    switch (arrival) {
    case Arrival::duplicate: ++counters_.duplicate; return false;
    case Arrival::beyond: ++counters_.window; return false;
    case Arrival::early:  // held until the hole before it is filled
        if (p.early.empty()) p.early.resize(std::bit_ceil(protocol_.recv_window));
        early_slot(p, d.header.seq) = Received{buf, d};
        return true;
    case Arrival::in_order: break;
    }
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
    for (std::uint32_t held; p.rx.next_held(held);) ready_.push_back(early_slot(p, held));
    ready_count_.store(ready_.size(), std::memory_order_release);
    return kept;
}

void UdpTransport::ack_deferred_apply() {
    if (ack_deferred_.peer == no_rank) return;
    const AckDeferred a = ack_deferred_;
    ack_deferred_.peer = no_rank;
    acked(a.peer, peer(a.peer), a.ack, a.sack, a.now);
}

void UdpTransport::ack_owe(Rank r, Peer &p) {
    timer_due_ns_ = std::min(timer_due_ns_, p.rx.ack_deadline());
    activate(r, p);
}

void UdpTransport::acked(Rank r, Peer &p, std::uint32_t ack, std::uint32_t sack, std::uint64_t now) {
    bool freed = false;
    const std::int64_t hole = p.tx.acked(ack, sack, now, [&](std::uint32_t) {
        buffers_.put(p.out.pop_front().bytes);
        freed = true;
    });
    if (hole != common::reliable::Sender::no_resend) stage(r, p, static_cast<std::uint32_t>(hole));
    if (freed) window_fill(r, p, now);
}

void UdpTransport::window_fill(Rank r, Peer &p, std::uint64_t now) {
    while (p.waiting() && p.tx.window_open()) {
        p.waiting_bytes -= p.out[p.tx.in_flight()].size();
        stage(r, p, p.tx.sent(now));
    }
}

void UdpTransport::stage(Rank r, Peer &p, std::uint32_t seq) {
    // Every transmission, a retransmission too, goes under a number of its
    // own: its ack fields change, and a MAC's nonce must never sign two
    // different contents (README.md, Authentication).
    const Outbound &o = p.out[seq - p.tx.oldest()];
    wire::resend_update(o.bytes, p.rx.ack(), p.rx.sack(), ++p.tx_number);
    sign(o.bytes, o.length, o.tail, o.tail_length);
    p.rx.ack_carried();
    timer_due_ns_ = std::min(timer_due_ns_, p.tx.next_due());
    tx_add(o.bytes, o.length, p, o.tail, o.tail_length);
    activate(r, p);
}

void UdpTransport::timers(std::uint64_t now, bool quiescing, Rank &silent) {
    std::uint64_t due = no_deadline;
    for (std::size_t i = 0; i < active_.size();) {
        const Rank r = active_[i];
        Peer &p = *peers_.find(r);
        if (p.tx.timers(now, [&](std::uint32_t seq) { stage(r, p, seq); }) && !silent_reported_) {
            silent = r;
            silent_reported_ = true;
        }
        due = std::min(due, p.tx.next_due());
        if (quiescing ? p.rx.ack_owed() : p.rx.ack_due(now)) ack_send(r, p);
        due = std::min(due, p.rx.ack_deadline());
        if (p.out.empty() && !p.rx.ack_owed()) {
            p.active = false;
            active_[i] = active_.back();
            active_.pop_back();
            continue;
        }
        ++i;
    }
    timer_due_ns_ = due;
}

void UdpTransport::ack_send(Rank r, Peer &p) {
    wire::Header h;
    h.kind = wire::Kind::ack;
    h.secret = expect_.secret;
    h.source = setup().rank;
    h.dest = r;
    h.ack = p.rx.ack();
    h.sack = p.rx.sack();
    h.number = ++p.tx_number;
    const std::size_t n = wire::encode(h, nullptr, nullptr, 0, p.ack_datagram.data(), p.ack_datagram.size(), 0);
    sign(p.ack_datagram.data(), n);
    p.rx.ack_carried();
    ++counters_.acks_sent;
    tx_add(p.ack_datagram.data(), n, p);
}

void UdpTransport::tx_add(std::uint8_t *bytes, std::size_t n, Peer &p, const std::uint8_t *tail, std::size_t tail_length) {
    if (!p.connect_tried) connect_peer(p, -1);
    if (tx_count_ == batch) tx_flush();
    tx_[tx_count_++] = Staged{bytes, n, &p.address, p.fd, tail, tail_length};
    counters_.in_place += tail_length != 0;
}

void UdpTransport::tx_flush() {
    for (unsigned first = 0, end; first < tx_count_; first = end) {
        end = first + 1;
        while (end < tx_count_ && tx_[end].fd == tx_[first].fd) ++end;
        tx_send(first, end);
    }
    tx_count_ = 0;
}

void UdpTransport::tx_send(unsigned first, unsigned end) {
    if (end - first == 1) {
        const Staged &s = tx_[first];
        transmit(s.bytes, s.length, s.fd, s.to, s.tail, s.tail_length);
        return;
    }
    const bool connected = tx_[first].fd >= 0;
    mmsghdr msgs[batch];
    iovec iov[batch][2];
    for (unsigned i = first; i < end; ++i) {
        // sendmsg only reads the iovecs' bytes.
        iov[i][0] = {tx_[i].bytes, tx_[i].length};
        iov[i][1] = {const_cast<std::uint8_t *>(tx_[i].tail), tx_[i].tail_length};
        msgs[i] = {};
        msgs[i].msg_hdr.msg_name = connected ? nullptr : tx_[i].to;
        msgs[i].msg_hdr.msg_namelen = connected ? 0 : sizeof(sockaddr_in);
        msgs[i].msg_hdr.msg_iov = iov[i];
        msgs[i].msg_hdr.msg_iovlen = tx_[i].tail_length ? 2 : 1;
    }
    for (unsigned done = first; done < end;) {
        const int n = ::sendmmsg(connected ? tx_[first].fd : fd_, msgs + done, end - done, 0);
        if (n > 0) {
            done += static_cast<unsigned>(n);
            counters_.sent += static_cast<unsigned>(n);
        } else if (errno != EINTR) {
            ++counters_.send_errors;
            ++done;
        }
    }
}

void UdpTransport::transmit(const std::uint8_t *bytes, std::size_t length, int fd, const sockaddr_in *to,
                            const std::uint8_t *tail, std::size_t tail_length) {
    for (;;) {
        const ssize_t n = tail_length ? transmit_gathered(bytes, length, fd, to, tail, tail_length)
                        : fd >= 0     ? ::send(fd, bytes, length, 0)
                                      : ::sendto(fd_, bytes, length, 0, reinterpret_cast<const sockaddr *>(to), sizeof *to);
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

ssize_t UdpTransport::transmit_gathered(const std::uint8_t *bytes, std::size_t length, int fd, const sockaddr_in *to,
                                        const std::uint8_t *tail, std::size_t tail_length) {
    // sendmsg only reads the iovecs' bytes and the address.
    iovec iov[2] = {{const_cast<std::uint8_t *>(bytes), length}, {const_cast<std::uint8_t *>(tail), tail_length}};
    msghdr m{};
    m.msg_name = fd >= 0 ? nullptr : const_cast<sockaddr_in *>(to);
    m.msg_namelen = fd >= 0 ? 0 : sizeof *to;
    m.msg_iov = iov;
    m.msg_iovlen = 2;
    return ::sendmsg(fd >= 0 ? fd : fd_, &m, 0);
}

int UdpTransport::deliver_ready() {
    if (delivering_ || ready_count_.load(std::memory_order_acquire) == 0) return 0;
    if (!base::flag_try_take(deliver_flag_)) return 0;
    return deliver_held(nullptr);
}

int UdpTransport::deliver_held(const Received *first) {
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

int UdpTransport::consume(const Received &r) {
    const wire::Datagram &d = r.datagram;
    const Rank source = d.header.source;
    common::Reassembly &a = peers_.find(source)->assembly;
    if (is_short(d)) {  // whole in one datagram
        a.reset();
        deliver_short(source, d.am.handler, d.am.flags, d.am.credit, d.am.args, d.am.nargs);
        return 1;
    }
    common::Fragment f;
    f.first = d.has_am;
    if (d.has_am) {
        f.header.handler = d.am.handler;
        f.header.category = static_cast<AmCategory>(d.am.category);
        f.header.nargs = d.am.nargs;
        f.header.flags = d.am.flags;
        f.header.credit = d.am.credit;
        f.header.source = source;
        f.header.dest_addr = d.am.dest_addr;
        f.args = d.am.args;
    }
    f.message_length = d.header.message_length;
    f.offset = d.header.fragment_offset;
    f.bytes = d.payload;
    f.length = d.payload_length;
    const common::Verdict v = a.add(f, segment_);
    if (v == common::Verdict::more) return 0;
    if (v != common::Verdict::whole)
        // The decoder and the in-order delivery leave none of these to
        // a well-behaved sender (a Long's target is checked by src/am).
        base::fatal("AM receive (udp)", "this is a Sluice bug",
                    "%s: fragment of %zu bytes at offset %u of a message of %u bytes from rank %u (Long target %#llx, "
                    "%u bytes received)",
                    common::verdict_name(v), d.payload_length, d.header.fragment_offset, d.header.message_length,
                    source, static_cast<unsigned long long>(d.has_am ? d.am.dest_addr : a.header().dest_addr),
                    a.received());
    deliver(a.header(), a.args(), a.payload());
    return 1;
}

// The kernel receive buffers of the receiving socket and of a peer socket
// (SO_RCVBUF as the kernel reports it: what it charges the socket, twice
// what was asked), and the datagram buffers offered to recvmmsg.
std::size_t UdpTransport::receive_buffer_bytes_impl() {
    auto kernel = [](int fd) -> std::size_t {
        int bytes = 0;
        socklen_t len = sizeof bytes;
        if (fd < 0 || ::getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, &len) != 0) return 0;
        return static_cast<std::size_t>(bytes);
    };
    Guard g(lock_);
    std::size_t n = kernel(fd_) + rx_.size() * buffers_.buffer_bytes();
    if (in_.fd != fd_) n += kernel(in_.fd);
    return n;
}

} // namespace sluice::conduit::udp::detail
