// src/conduits/portals/portals.cpp - the portals conduit's traffic: AMs as
// one PtlPut each from a chunk of the send buffers, the AM in the match
// bits and header data, arguments and payload in the chunk; requests into
// the locally managed request buffers (ReqRB), replies into the chunk the
// request came from; Put and Get straight between registered memory and
// the peer's segment; events from the SYS, SAFE and AM queues, in that
// order, each up to its per-poll limit.  README.md has the design.
#include "conduits/portals/portals_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace sluice::conduit::portals::detail {

// On every message's path: constant-initialized, in the static TLS block.
// The request whose handler runs on this thread: its source, and the
// ReqSB chunk its reply goes to (plus 1; 0 when the request holds no
// credits, so its reply goes to the SYS buffers).  Cleared by the reply.
[[gnu::tls_model("initial-exec")]] constinit thread_local Rank reply_source = 0;
[[gnu::tls_model("initial-exec")]] constinit thread_local std::uint32_t reply_chunk = 0;

namespace {

constexpr std::size_t align8(std::size_t n) { return (n + 7) & ~std::size_t{7}; }
// Where the arguments and the payload start in a message body.
constexpr std::size_t args_offset(AmCategory c) { return c == AmCategory::long_ ? 8 : 0; }
constexpr std::size_t payload_offset(AmCategory c, unsigned nargs) { return align8(args_offset(c) + 4u * nargs); }

} // namespace

const char *fail_name(int f) {
    switch (f) {
    case PTL_NI_OK: return "ok";
    case PTL_NI_UNDELIVERABLE: return "undeliverable";
    case PTL_NI_DROPPED: return "dropped";
    case PTL_NI_PT_DISABLED: return "portal table entry disabled";
    case PTL_NI_PERM_VIOLATION: return "permission violation";
    case PTL_NI_OP_VIOLATION: return "operation violation";
    case PTL_NI_NO_MATCH: return "no matching entry";
    case PTL_NI_SEGV: return "address outside the entry";
    default: return "failure";
    }
}

namespace {
const char *rc_name(int rc) {
    switch (rc) {
    case PTL_ARG_INVALID: return "PTL_ARG_INVALID";
    case PTL_FAIL: return "PTL_FAIL";
    case PTL_IN_USE: return "PTL_IN_USE";
    case PTL_NO_INIT: return "PTL_NO_INIT";
    case PTL_NO_SPACE: return "PTL_NO_SPACE";
    case PTL_PT_FULL: return "PTL_PT_FULL";
    default: return "an error";
    }
}
} // namespace

// A call into Portals that failed: fatal for the job.  PTL_FAIL and
// PTL_NO_SPACE from a Put or Get are the library out of its own resources
// (the reference implementation over UDP wears out its object table after
// about 262,000 acknowledged transfers: README, Limits).
Status PortalsTransport::fatal(const char *op, Rank peer, int rc, const char *what) {
    const bool worn = rc == PTL_FAIL || rc == PTL_NO_SPACE;
    return base::report(Status::transport, op,
                        worn ? "the Portals library is out of its own resources; on the reference implementation "
                               "over UDP, a process makes at most about 262,000 acknowledged transfers "
                               "(src/conduits/portals/README.md, Limits)"
                             : "check that the peer is alive and reachable over Portals",
                        "portals: %s, rank %u: return code %d (%s)", what, peer, rc, rc_name(rc));
}

// ---- sends ----

// A message to this rank itself never goes through Portals (the reference
// implementation serializes sends to itself with one-second sleeps and
// aborts on large ones): the layer copies it (self_send).
Status PortalsTransport::send_impl(Rank peer, const AmMessage &m) {
    if (peer == setup().rank) return self_send(m);
    const AmHeader &h = m.header;
    return message(peer, Bits::make(h.handler, h.credit, h.flags, h.category, h.nargs), m.args, h.nargs, h.category,
                   h.dest_addr, m.payload, h.category == AmCategory::short_ ? 0 : h.payload_length);
}

Status PortalsTransport::send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                                         const std::uint32_t *args, unsigned nargs) {
    if (peer == setup().rank) {
        AmMessage m;
        m.header.handler = handler;
        m.header.flags = flags;
        m.header.credit = credit;
        m.header.nargs = static_cast<std::uint8_t>(nargs);
        m.header.source = peer;
        m.args = args;
        return self_send(m);
    }
    return message(peer, Bits::make(handler, credit, flags, AmCategory::short_, nargs), args, nargs, AmCategory::short_,
                   0, nullptr, 0);
}

// Takes a send ticket and a chunk (a reply uses what the delivering thread
// reserved for it), writes the body into the chunk outside the lock, and
// puts it where it belongs: a request with credits (or any user request)
// into the peer's ReqRB, keeping the chunk for the reply; a reply into the
// chunk its request came from, or, for a request without credits, the
// peer's SYS buffers; a system request without credits into the SYS
// buffers.
Status PortalsTransport::message(Rank peer, std::uint64_t bits, const std::uint32_t *args, unsigned nargs,
                                 AmCategory category, std::uint64_t dest_addr, const void *payload,
                                 std::size_t length) {
    const std::uint8_t flags = Bits::flags(bits);
    const bool reply = flags & am_flag_reply;
    Chunk *c;
    {
        Guard g(*this);
        if (!ni_open_) return Status::transport;
        if (reply && delivering() && reserved_chunk_) {
            c = reserved_chunk_;
            reserved_chunk_ = nullptr;
            reserved_ticket_ = false;
        } else {
            common::FreeList<Chunk> &free = reply ? rpl_free_ : req_free_;
            if (!tickets_ || free.empty()) reap();
            if (!tickets_ || free.empty()) {
                ++(tickets_ ? own_counters_.no_chunk : counters_.full);
                return Status::not_ready;
            }
            c = free.take();
            --tickets_;
        }
    }
    // The body: a Long's address, the arguments, the payload.
    std::byte *body = (reply ? rplsb_bytes_.get() : reqsb_bytes_.get()) + std::size_t{c->index} * chunk_bytes;
    if (category == AmCategory::long_) std::memcpy(body, &dest_addr, 8);
    if (nargs) std::memcpy(body + args_offset(category), args, 4u * nargs);
    const std::size_t at = payload_offset(category, nargs);
    if (length) std::memcpy(body + at, payload, length);

    Guard g(*this);
    if (!ni_open_) return Status::transport;
    ptl_pt_index_t pt;
    std::uint64_t offset = 0;
    if (reply) {
        pt = pt_sys;
        if (delivering() && reply_chunk && reply_source == peer) {
            pt = pt_rpl;
            offset = std::uint64_t{reply_chunk - 1} * chunk_bytes;
            bits |= std::uint64_t{reply_chunk} << 32;
            reply_chunk = 0;
        }
    } else {
        const bool credited = flags & am_flag_credit;
        pt = (flags & am_flag_system) && !credited ? pt_sys : pt_am;
        if (credited) {
            bits |= std::uint64_t{c->index + 1} << 32;
            c->awaiting_reply = true;
        }
    }
    return post(c, reply, peer, pt, bits, at + length, offset);
}

// Under lock_: the Put of the body in `c`, stamped with the next sequence
// number of its kind for `peer`.
Status PortalsTransport::post(Chunk *c, bool, Rank peer, ptl_pt_index_t pt, std::uint64_t bits, std::size_t length,
                              std::uint64_t remote_offset) {
    const unsigned kind = (Bits::flags(bits) & am_flag_reply) ? stream_reply : stream_request;
    PeerOrder &o = order_.at(peer);
    const std::uint16_t seq = o.next_send(kind);
    sent_to(peer);
    c->peer = peer;
    c->sending = true;
    c->pt = pt;
    c->bits = bits;
    c->hdr = hdr_make(setup().rank, seq, length);
    c->remote_offset = remote_offset;
    c->length = std::max(length, slot_);
    if (const int rc = chunk_put(c); __builtin_expect(rc != PTL_OK, 0)) {
        o.unsend(kind);
        c->sending = false;
        c->awaiting_reply = false;
        chunk_free(c);
        ++tickets_;
        return fatal("send (portals)", peer, rc, "PtlPut of an AM failed");
    }
    ++counters_.sent;
    counters_.packed_longs += Bits::category(bits) == AmCategory::long_;
    if (pt == pt_sys) ++own_counters_.sys;
    else if (pt == pt_rpl) ++own_counters_.replies;
    return Status::ok;
}

// Under lock_: puts the message in `c` (again), acknowledged.  The ticket
// is the caller's.
int PortalsTransport::chunk_put(Chunk *c) {
    const bool rpl = c->tag == Tag::rpl_chunk;
    return ptl().Put(rpl ? rplsb_md_ : reqsb_md_, std::uint64_t{c->index} * chunk_bytes, c->length, PTL_ACK_REQ,
                  id_[c->peer], c->pt, c->bits, c->remote_offset, c, c->hdr);
}

// Under lock_: the ack of an AM.  Nothing matched: a catch-basin took it
// (no receive buffer had room, which credits rule out), so it is put again
// once a ticket is free; the peer delivers it in its turn, since its
// sequence number stays.
void PortalsTransport::chunk_acked(Chunk *c, const ptl_event_t &e) {
    if (e.ni_fail_type != PTL_NI_OK) {
        base::report(Status::transport, "send (portals)", "check that the peer is alive and reachable over Portals",
                     "portals: an AM to rank %u failed: %s", c->peer, fail_name(e.ni_fail_type));
        c->awaiting_reply = false;
    } else if (e.mlength < c->length) {
        ++own_counters_.resent;
        if (!overflow_said_) {
            overflow_said_ = true;
            // Reported once, not fatal (in GASNet's Portals conduit it was): nothing is lost.
            base::report(Status::resource, "send (portals)",
                         c->pt == pt_sys ? "give more space to messages without credits (SLUICE_PORTALS_SYS_SPACE)"
                                         : "keep flow control on (SLUICE_PORTALS_FLOW_CONTROL=1), or give more request "
                                           "buffer space (SLUICE_PORTALS_REQRB_SIZE, SLUICE_PORTALS_REQRB_MIN)",
                         "portals: rank %u's %s receive buffers were full (its catch-basin took a message): messages "
                         "are put again until they fit",
                         c->peer, c->pt == pt_sys ? "SYS" : "request");
        }
        resend_.push_back(c);
        return;
    }
    c->sending = false;
    if (!c->awaiting_reply) chunk_free(c);
}

// Under lock_: the layer's ping or pong (common::category_ping,
// category_pong) as a zero-byte Put on the peer's SYS entry, of kind
// control_ping or control_pong.  No ticket free: the pong is owed until
// the next liveness check, the ping waits for it.
void PortalsTransport::control_send(Rank peer, std::uint8_t category) {
    const bool pong = category == common::category_pong;
    if (!tickets_) {
        if (pong) life(peer).pong_owed = true;
        return;
    }
    const std::uint64_t bits = Bits::control | std::uint64_t{pong ? control_pong : control_ping} << 56;
    const int rc = ptl().Put(control_md_, 0, 0, PTL_NO_ACK_REQ, id_[peer], pt_sys, bits, 0, &control_ctx_,
                          hdr_make(setup().rank, 0));
    if (rc == PTL_OK) --tickets_;
    if (pong) life(peer).pong_owed = rc != PTL_OK;
}

void PortalsTransport::chunk_free(Chunk *c) {
    (c->tag == Tag::rpl_chunk ? rpl_free_ : req_free_).give(c);
}

// The peer's physical id: a stopped or hung process keeps its Portals
// interface, so Portals alone never tells (the layer's liveness check
// names the silent peer this way).
std::string PortalsTransport::path(Rank peer) const {
    if (peer >= physical_.size()) return "Portals";
    char s[64];
    std::snprintf(s, sizeof s, "Portals, nid %u pid %u", physical_[peer].phys.nid, physical_[peer].phys.pid);
    return s;
}

// ---- events ----

// Under lock_: the SYS queue first (all of it by default), then SAFE, then
// AM, each up to its limit (0: all), GASNet's order.
void PortalsTransport::reap() {
    ptl_event_t e;
    auto drain = [&](ptl_handle_eq_t eq, unsigned limit, const char *which) {
        for (unsigned i = 0; limit == 0 || i < limit; ++i) {
            const int rc = ptl().EQGet(eq, &e);
            if (rc == PTL_EQ_EMPTY) return;
            if (rc == PTL_EQ_DROPPED)
                base::fatal("poll (portals)", "this is a Sluice bug: the queue is sized for every event in flight",
                            "portals: the %s event queue overflowed and Portals dropped events", which);
            if (rc != PTL_OK) {
                (void)fatal("poll (portals)", setup().rank, rc, "PtlEQGet failed");
                return;
            }
            ++counters_.completions;
            event(e);
        }
    };
    drain(sys_eq_, sys_limit_, "SYS");
    drain(safe_eq_, safe_limit_, "SAFE");
    drain(am_eq_, am_limit_, "AM");
    // Messages a catch-basin took, put again.
    while (!resend_.empty() && tickets_) {
        Chunk *c = resend_.front();
        resend_.pop_front();
        if (const int rc = chunk_put(c); rc != PTL_OK) {
            (void)fatal("send (portals)", c->peer, rc, "PtlPut of an AM failed");
            c->sending = c->awaiting_reply = false;
            chunk_free(c);
            continue;
        }
        --tickets_;
    }
}

void PortalsTransport::event(const ptl_event_t &e) {
    switch (e.type) {
    case PTL_EVENT_SEND:  // a control message has left
        ++tickets_;
        return;
    case PTL_EVENT_ACK:
    case PTL_EVENT_REPLY: {
        ++tickets_;
        auto *ctx = static_cast<Context *>(e.user_ptr);
        if (!ctx) return;
        if (ctx->tag == Tag::rma) rma_done(static_cast<RmaPost *>(ctx), e);
        else if (ctx->tag == Tag::atomic) atomic_done(static_cast<AtomicSlot *>(ctx), e);
        else if (ctx->tag != Tag::control) chunk_acked(static_cast<Chunk *>(ctx), e);
        return;
    }
    case PTL_EVENT_PUT: {
        ++counters_.received;
        Arrival a;
        a.bytes = static_cast<const std::byte *>(e.start);
        a.length = e.mlength;
        a.bits = e.match_bits;
        a.source = hdr_source(e.hdr_data);
        a.seq = hdr_seq(e.hdr_data);
        if (e.pt_index != pt_long) a.length = std::min<std::size_t>(hdr_length(e.hdr_data), e.mlength);
        if (e.pt_index == pt_long) {
            a.notification = true;
            arrived(a);
            return;
        }
        if (e.pt_index == pt_rpl) {
            const std::size_t at = static_cast<std::size_t>(a.bytes - reqsb_bytes_.get());
            a.chunk = &reqsb_[at / chunk_bytes];
            arrived(a);
            return;
        }
        if (e.ptl_list == PTL_OVERFLOW_LIST) return;  // the catch-basin reports nothing (the sender's ack does)
        auto *b = static_cast<RecvBuffer *>(e.user_ptr);
        if (a.bits & Bits::control) {
            control_arrived(a.source,
                            Bits::kind(a.bits) == control_ping ? common::category_ping : common::category_pong);
            return;
        }
        a.buffer = b;
        ++b->pending;
        arrived(a);
        return;
    }
    case PTL_EVENT_AUTO_UNLINK: {
        auto *b = static_cast<RecvBuffer *>(e.user_ptr);
        if (!b) return;
        b->linked = false;
        if (b->pending == 0) relink(b);
        return;
    }
    default:
        return;  // LINK, AUTO_FREE: nothing to do
    }
}

// Appends a processed, unlinked buffer again, empty, at the end of its
// entry's list (the catch-basin is on the overflow list, so it stays last).
void PortalsTransport::relink(RecvBuffer *b) {
    ptl_me_t me{};
    me.start = b->bytes;
    me.length = b->size;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_MANAGE_LOCAL | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_NO_TRUNCATE;
    me.match_id.rank = PTL_RANK_ANY;
    me.match_bits = 0;
    me.ignore_bits = ~ptl_match_bits_t{0};
    me.min_free = max_message_;
    const int rc = ptl().MEAppend(ni_, b->pt, &me, PTL_PRIORITY_LIST, b, &b->me);
    if (rc != PTL_OK) {
        base::report(Status::transport, "poll (portals)", "this is a Portals fault",
                     "portals: appending a receive buffer failed (return code %d)", rc);
        return;
    }
    b->linked = true;
    ++own_counters_.relinked;
}

// Under lock_: queues an arrival in its sender's order (per kind); one
// ahead of its turn is held (PeerOrder) until those before it came.
void PortalsTransport::arrived(Arrival a) {
    if (a.source >= order_.size()) {
        base::report(Status::transport, "poll (portals)", "run the same Sluice build on every rank",
                     "portals: a message from unknown rank %u dropped", a.source);
        processed(a);
        return;
    }
    heard(a.source);
    const unsigned kind = (Bits::flags(a.bits) & am_flag_reply) ? stream_reply : stream_request;
    PeerOrder &o = order_.at(a.source);
    if (!o.in_turn(a.seq, kind)) {
        // Out of its buffer, which may then be appended again: the ones
        // before it may need the room (a message put again).
        if (a.buffer) {
            a.heap = new std::byte[std::max<std::size_t>(a.length, 1)];
            std::memcpy(a.heap, a.bytes, a.length);
            a.bytes = a.heap;
            RecvBuffer *b = a.buffer;
            a.buffer = nullptr;
            if (--b->pending == 0 && !b->linked) relink(b);
        }
        ++counters_.held;
    }
    o.arrived(a, a.seq, kind, ready_);
}

// Under lock_: `a` was delivered: its buffer may go back on the list, a
// reply's chunk back to the free list once its request has left.
void PortalsTransport::processed(const Arrival &a) {
    if (RecvBuffer *b = a.buffer; b && --b->pending == 0 && !b->linked) relink(b);
    delete[] a.heap;
    if (Chunk *c = a.chunk) {
        c->awaiting_reply = false;
        if (!c->sending) chunk_free(c);
    }
}

// ---- delivery ----

// Under lock_, before a request is delivered: GASNet's rule for taking
// an AM event, a send ticket and a reply chunk reserved, so the handler's
// reply never waits.  Without them the request waits for the next poll.
bool PortalsTransport::take(const Arrival &a) {
    if (Bits::flags(a.bits) & am_flag_reply) return true;
    if (!tickets_ || rpl_free_.empty()) reap();
    if (!tickets_ || rpl_free_.empty()) return false;
    reserved_chunk_ = rpl_free_.take();
    --tickets_;
    reserved_ticket_ = true;
    return true;
}

// Under lock_: `a` was delivered; what take() reserved and the handler did
// not use for a reply goes back.
void PortalsTransport::delivered(const Arrival &a) {
    processed(a);
    if (reserved_chunk_) {
        chunk_free(reserved_chunk_);
        reserved_chunk_ = nullptr;
    }
    if (reserved_ticket_) {
        reserved_ticket_ = false;
        ++tickets_;
    }
}

void PortalsTransport::deliver_one(const Arrival &a) {
    const char *op = "poll (portals)";
    const std::uint64_t bits = a.bits;
    const std::uint8_t flags = Bits::flags(bits);
    const AmCategory category = Bits::category(bits);
    const unsigned nargs = Bits::nargs(bits);
    const bool reply = flags & am_flag_reply;
    reply_source = a.source;
    reply_chunk = !reply && !a.notification && (flags & am_flag_credit) ? Bits::chunk(bits) : 0;
    const std::uint8_t credit = (flags & am_flag_credit) ? Bits::credit(bits) : 0;
    if (a.notification) {
        // A two-part Long's payload has landed: its notification is a Short
        // with at most one argument, carried in the match bits.
        const std::uint32_t arg = static_cast<std::uint32_t>(bits >> 32);
        ++own_counters_.notified;
        deliver_short(a.source, Bits::handler(bits), flags, credit, &arg, nargs > 1 ? 1 : nargs);
        return;
    }
    const std::size_t at = payload_offset(category, nargs);
    if (nargs > 16 || category > AmCategory::long_ || a.length < at ||
        (category == AmCategory::short_ && a.length != at) || a.length - at > max_message_) {
        base::report(Status::transport, op, "run the same Sluice build on every rank",
                     "portals: a malformed message from rank %u (%zu bytes, %u arguments) dropped", a.source, a.length,
                     nargs);
        return;
    }
    std::uint32_t args[16];
    if (nargs) std::memcpy(args, a.bytes + args_offset(category), 4u * nargs);
    if (category == AmCategory::short_) {
        deliver_short(a.source, Bits::handler(bits), flags, credit, args, nargs);
        return;
    }
    AmHeader h;
    h.handler = Bits::handler(bits);
    h.category = category;
    h.nargs = static_cast<std::uint8_t>(nargs);
    h.flags = flags;
    h.credit = credit;
    h.source = a.source;
    h.payload_length = a.length - at;
    void *payload = const_cast<std::byte *>(a.bytes + at);
    if (category == AmCategory::long_) {
        // A packed Long: its payload goes to its place in this segment first.
        std::memcpy(&h.dest_addr, a.bytes, 8);
        if (h.dest_addr < segment_base_ || h.payload_length > segment_bytes_ ||
            h.dest_addr - segment_base_ > segment_bytes_ - h.payload_length) {
            base::report(Status::transport, op, "run the same Sluice build on every rank",
                         "portals: a Long from rank %u for [%#llx, +%llu) outside this segment dropped", a.source,
                         static_cast<unsigned long long>(h.dest_addr), static_cast<unsigned long long>(h.payload_length));
            return;
        }
        payload = reinterpret_cast<void *>(h.dest_addr);
        if (h.payload_length) std::memcpy(payload, a.bytes + at, h.payload_length);
    }
    deliver(h, args, payload);
}

// Under lock_, after reap: everything this rank sent has left (every
// ticket back, the one take() holds counted), and its RDMA completed.
bool PortalsTransport::idle() {
    return tickets_ + (reserved_ticket_ ? 1u : 0u) == msg_limit_ && rma_outstanding_ == 0 && resend_.empty();
}

// ---- RDMA ----

Status PortalsTransport::rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                              bool &later) {
    return rma_post(peer, write, remote, local, n, op, nullptr, later);
}

// The payload into the segment entry whose events go to the target's AM
// queue (GASNet's RARAM), the notification in the match bits and header
// data of the Put: delivered there once the bytes are in place.  (A
// larger one the wrapper cuts, and sends its notification by AM.)
Status PortalsTransport::put_rc_impl(Rank peer, void *remote, const void *local, std::size_t n,
                                     const AmMessage &notify, RmaOp *op, bool &later) {
    return rma_post(peer, true, reinterpret_cast<std::uint64_t>(remote), const_cast<void *>(local), n, op, &notify,
                     later);
}

Status PortalsTransport::rma_post(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                                   const AmMessage *notify, bool &later) {
    later = false;
    if (peer == setup().rank) {
        // To this rank itself: a copy within the segment (see send_impl).
        auto *mine = reinterpret_cast<std::byte *>(segment_base_ + remote);
        if (notify) {
            if (n) std::memmove(mine, local, n);
            if (Status s = self_send(*notify); s != Status::ok) return s;
            n = 0;
        }
        return write ? self_rma(mine, local, n, op, later) : self_rma(local, mine, n, op, later);
    }
    if (n == 0 && !notify) return Status::ok;
    const char *what = write ? "put (portals)" : "get (portals)";
    const std::uint64_t handle = local_handle(op);
    if (!handle && n)
        return base::report(Status::argument, what, "use a buffer in the segment, or let firehose register it",
                            "portals: the local buffer %p (%zu bytes) is in no memory descriptor", local, n);
    ptl_handle_md_t md = control_md_;
    std::uint64_t offset = 0;
    if (handle) {
        const auto *r = reinterpret_cast<const Region *>(handle);
        md = r->md;
        offset = reinterpret_cast<std::uint64_t>(local) - r->base;
    }
    auto *p = new (rma_context(op)) RmaPost;
    p->tag = Tag::rma;
    p->op = op;
    p->peer = peer;
    p->write = write;
    Guard guard(*this);
    if (!ni_open_) return Status::transport;
    if (!tickets_) reap();
    if (!tickets_) {
        ++counters_.full;
        return Status::not_ready;
    }
    int rc;
    if (notify) {
        // The notification in the match bits and header data of the Put.
        const AmHeader &h = notify->header;
        const std::uint64_t bits = Bits::make(h.handler, h.credit, h.flags, AmCategory::short_, h.nargs) |
                                   (h.nargs ? std::uint64_t{notify->args[0]} << 32 : 0);
        const unsigned kind = (h.flags & am_flag_reply) ? stream_reply : stream_request;
        const std::uint16_t seq = order_.at(peer).next_send(kind);
        rc = ptl().Put(md, offset, n, PTL_ACK_REQ, id_[peer], pt_long, bits, remote, p, hdr_make(setup().rank, seq));
        if (rc != PTL_OK) order_.at(peer).unsend(kind);
        sent_to(peer);
    } else if (write) {
        rc = ptl().Put(md, offset, n, PTL_ACK_REQ, id_[peer], pt_rma, 0, remote, p, 0);
    } else {
        rc = ptl().Get(md, offset, n, id_[peer], pt_rma, 0, remote, p);
    }
    if (rc != PTL_OK) return fatal(what, peer, rc, write ? "PtlPut failed" : "PtlGet failed");
    --tickets_;
    ++rma_outstanding_;
    ++(write ? counters_.writes : counters_.reads);
    later = true;
    return Status::ok;
}

void PortalsTransport::rma_done(RmaPost *p, const ptl_event_t &e) {
    if (e.ni_fail_type != PTL_NI_OK)
        // Reported, then completed: the caller must not wait for ever.
        base::report(Status::transport, p->write ? "put (portals)" : "get (portals)",
                     "check that the peer is alive and that the address lies in its segment",
                     "portals: a %s of %llu bytes with rank %u failed: %s", p->write ? "Put" : "Get",
                     static_cast<unsigned long long>(e.rlength), p->peer, fail_name(e.ni_fail_type));
    --rma_outstanding_;
    rma_complete(p->op);
}

} // namespace sluice::conduit::portals::detail
