// src/conduits/ibv/ibv.cpp - the ibv conduit's traffic: AMs as RC sends,
// inline up to SLUICE_INLINESEND_LIMIT, else from a registered send
// buffer, received into an SRQ or per-peer receive buffers; Put and Get as
// RDMA write and read straight between the caller's registered buffer and
// the peer's segment, cut at the port's largest message; the two-part
// Long as a write followed on the same queue pair by its header, which the
// peer receives only once the write's bytes are in place; a payload of the
// segment gathered in place (SLUICE_AM_GATHER_MIN); the work requests in
// flight bounded over every queue pair (SLUICE_NETWORKDEPTH_TOTAL); send
// completions.  receive.cpp has the arrivals.  README.md has the design.
#include "conduits/ibv/ibv_transport.hpp"

#include "base/status.hpp"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

namespace sluice::conduit::ibv::detail {

Status IbvTransport::fatal(const char *op, Rank peer, const char *what, int error) {
    return base::report(Status::transport, op,
                        error == ENOMEM ? "the HCA ran out of queue pairs (one per peer and rail: its max_qp; "
                                          "fewer ranks per HCA, or a connect file and SLUICE_CONNECT_DYNAMIC=1), "
                                          "of send queue entries (lower SLUICE_IBV_SEND_DEPTH) or of memory"
                                        : "check that the peer is alive and that its port is reachable",
                        "ibv (%s): %s, rank %u: %s", rails_.empty() ? "closed" : rail_name(0).c_str(), what, peer,
                        std::strerror(error));
}

// ---- sends ----

Buffer *IbvTransport::send_buffer_take() {
    if (send_free_.empty()) reap();
    return send_free_.take();
}

// Posts one send of `length` bytes (`b` null: inline, from `bytes`), and
// `gather` after them.  Status::not_ready when the peer's send queue, or
// SLUICE_NETWORKDEPTH_TOTAL, is full.
Status IbvTransport::post_send(Rank peer, const void *bytes, std::size_t length, Buffer *b, const ibv_sge *gather) {
    Peer &p = this->peer(peer);
    const unsigned rail = am_rail(peer);
    if (p.send_posted[rail] >= send_depth_ || !depth_room(1)) {
        ibv_counters_.depth_full += !depth_room(1);
        reap();
        if (p.send_posted[rail] >= send_depth_ || !depth_room(1)) {
            ++counters_.full;
            return Status::not_ready;
        }
    }
    ibv_sge sge[2] = {{reinterpret_cast<std::uint64_t>(bytes), static_cast<std::uint32_t>(length),
                       hca_of(rail).pool_mr->lkey},
                      gather ? *gather : ibv_sge{}};
    ibv_send_wr wr{};
    wr.wr_id = b ? wr_id(b, Wr::send) : (std::uint64_t{peer} << 3 | static_cast<std::uint64_t>(Wr::inline_send));
    wr.sg_list = sge;
    wr.num_sge = gather ? 2 : 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | (b ? 0 : IBV_SEND_INLINE);
    ibv_send_wr *bad = nullptr;
    if (const int r = ibv_post_send(p.qp[rail], &wr, &bad); r != 0) {
        // ENOMEM: the HCA's send queue holds fewer than it reported (work
        // requests with inline data can take several of its slots): the
        // wrapper polls and sends again once completions free some.
        if (r == ENOMEM) return send_queue_full(p.send_posted[rail]);
        return fatal("send (ibv)", peer, "ibv_post_send failed", r);
    }
    depth_posted(p.send_posted[rail]);
    sent_to(peer);
    p.used = true;
    if (b) {
        b->peer = peer;
        ++counters_.sent;
    } else {
        ++counters_.small;
    }
    return Status::ok;
}

Status IbvTransport::send_impl(Rank peer, const AmMessage &m) {
    if (peer == setup().rank) return self_send(m);
    if (Status s = connection(peer); s != Status::ok) return s;
    // GASNet-EX's multi-segment gather: a payload of at least
    // SLUICE_AM_GATHER_MIN bytes in the segment goes from where it lies.
    const auto at = reinterpret_cast<std::uint64_t>(m.payload);
    const std::uint64_t n = m.header.category == AmCategory::short_ ? 0 : m.header.payload_length;
    if (gather_min_ >= 0 && n && n >= static_cast<std::uint64_t>(gather_min_))
        if (const MrSet *segment = segment_mr_.load(std::memory_order_acquire);
            segment && at >= segment_base_ && n <= segment_bytes_ && at - segment_base_ <= segment_bytes_ - n)
            return send_gathered(peer, m, segment->mr);
    return send_packed<Buffer>(
        m, inline_limit_, [&] { return send_buffer_take(); },
        [&](const std::byte *bytes, std::size_t length, Buffer *b) {
            const Status s = post_send(peer, bytes, length, b);
            if (s != Status::ok && b) send_free_.give(b);
            return s;
        });
}

// The header and arguments from a send buffer, the payload (in memory
// `mr` registered) as the send's second scatter-gather entry; the call
// returns once the send completed, for the payload is the caller's again
// then (GASNet-EX's ibv conduit waits so too).  The receiver sees the
// packed message (packed_am.hpp), only not padded to 8 bytes.
Status IbvTransport::send_gathered(Rank peer, const AmMessage &m, const ibv_mr *const *mr) {
    Buffer *b;
    {
        Guard g(*this);
        if (!up_) return Status::transport;
        if (!(b = send_buffer_take())) return Status::not_ready;
    }
    AmHeader head = m.header;
    head.payload_length = 0;
    const std::size_t length = common::packed_encode(head, m.args, nullptr, b->bytes);
    const auto n = static_cast<std::uint32_t>(m.header.payload_length);
    std::memcpy(b->bytes + offsetof(common::PackedHead, length), &n, sizeof n);
    const ibv_sge payload{reinterpret_cast<std::uint64_t>(m.payload), n, mr[rails_[am_rail(peer)].hca]->lkey};
    bool done = false;
    {
        Guard g(*this);
        b->gathered = &done;
        if (const Status s = post_send(peer, b->bytes, length, b, &payload); s != Status::ok) {
            b->gathered = nullptr;
            send_free_.give(b);
            return s;
        }
        ++ibv_counters_.gathered;
        counters_.packed_longs += m.header.category == AmCategory::long_;
    }
    for (;;) {
        {
            Guard g(*this);
            if (done) return Status::ok;
            if (!up_) return Status::transport;
            reap();
            if (done) return Status::ok;
        }
        base::cpu_relax();
    }
}

// Under lock_: the send of the buffer `b` completed (or failed): its
// gathering sender may return, and the buffer is free.
void IbvTransport::send_done(Buffer *b) {
    if (b->gathered) *b->gathered = true;
    b->gathered = nullptr;
    send_free_.give(b);
}

// ---- completions ----

// Under lock_: the HCA refused a post with ENOMEM while `posted` work
// requests were outstanding on the queue pair: that is as deep as its
// send queues really are, so no later operation of several work requests
// is refused halfway.  Status::not_ready: the wrapper polls and posts again.
Status IbvTransport::send_queue_full(unsigned posted) {
    ++counters_.full;
    ++ibv_counters_.hca_full;
    const unsigned depth = std::max(1u, posted);
    if (depth < send_depth_) {
        std::fprintf(stderr,
                     "sluice[rank %u] warning: ibv (%s): the HCA's send queue took only %u work requests "
                     "(SLUICE_IBV_SEND_DEPTH %u): using %u\n",
                     setup().rank, rail_name(0).c_str(), posted, send_depth_, depth);
        send_depth_ = depth;
    }
    return Status::not_ready;
}

// The HCAs' asynchronous events (async_fd is non-blocking, ibv_setup.cpp).
// One that leaves completions lost or queue pairs in error ends the job
// naming it: waiting for what will never complete would hang it.  A port
// that went down is reported; the rest are noted in SLUICE_VERBOSE.
void IbvTransport::async_events() {
    for (Hca &h : hcas_) {
        ibv_async_event e{};
        while (h.ctx && ibv_get_async_event(h.ctx, &e) == 0) {
            const ibv_event_type type = e.event_type;
            ibv_ack_async_event(&e);
            const char *name = ibv_event_type_str(type);
            switch (type) {
            case IBV_EVENT_CQ_ERR:
                base::fatal("poll (ibv)",
                            "this is a Sluice bug, or the HCA's completion queue holds fewer entries than it reported",
                            "ibv (%s): %s: the completion queue overran; completions were lost and its queue pairs "
                            "are in error",
                            h.name.c_str(), name);
            case IBV_EVENT_QP_FATAL:
            case IBV_EVENT_QP_REQ_ERR:
            case IBV_EVENT_QP_ACCESS_ERR:
            case IBV_EVENT_SRQ_ERR:
            case IBV_EVENT_PATH_MIG_ERR:
            case IBV_EVENT_DEVICE_FATAL:
                base::fatal("poll (ibv)", "check the HCA and the fabric (ibv_devinfo, the kernel log)",
                            "ibv (%s): %s: work in flight will not complete", h.name.c_str(), name);
            case IBV_EVENT_PORT_ERR:
                base::report(Status::transport, "poll (ibv)", "check the port's cable and switch (ibstat)",
                             "ibv (%s): %s", h.name.c_str(), name);
                break;
            default:
                base::say("ibv (%s): asynchronous event: %s", h.name.c_str(), name);
                break;
            }
        }
    }
}

void IbvTransport::completion(const ibv_wc &c) {
    if ((c.wr_id & tag_mask) == static_cast<std::uint64_t>(Wr::atomic)) {
        atomic_completion(c);  // its errors too
        return;
    }
    if (c.status != IBV_WC_SUCCESS) {
        completion_error(c);
        return;
    }
    switch (static_cast<Wr>(c.wr_id & tag_mask)) {
    case Wr::recv:
        if (!control(wr_pointer<Buffer>(c.wr_id), c.byte_len)) arrived(wr_pointer<Buffer>(c.wr_id), c.byte_len);
        break;
    case Wr::send: {
        Buffer *b = wr_pointer<Buffer>(c.wr_id);
        depth_completed(peer(b->peer).send_posted[am_rail(b->peer)]);
        send_done(b);
        break;
    }
    case Wr::inline_send: {
        const auto peer = static_cast<Rank>(c.wr_id >> 3);
        depth_completed(this->peer(peer).send_posted[am_rail(peer)]);
        break;
    }
    case Wr::atomic: break;  // above
    case Wr::rma:
    case Wr::long_data: {
        RmaPost *g = wr_pointer<RmaPost>(c.wr_id);
        depth_completed(peer(g->peer).send_posted[rail_of(c)]);
        if ((c.wr_id & tag_mask) == static_cast<std::uint64_t>(Wr::long_data)) {
            send_free_.give(g->notify);
            g->notify = nullptr;
        }
        rma_done(g);
        break;
    }
    }
}

// Notes that the sender of the message in `b` is alive; a control message
// is handled here and its buffer posted again at once (true).
bool IbvTransport::control(Buffer *b, std::size_t length) {
    common::PackedHead w;
    if (length < sizeof w) return false;  // deliver_packed reports it
    std::memcpy(&w, b->bytes, sizeof w);
    if (w.source < peers_.size()) {
        heard(w.source);
        Peer &p = peer(w.source);
        p.used = true;
        if (__builtin_expect(p.conn == Conn::accepted, 0)) connect_ready(w.source);
    }
    if (w.category == category_rtu) {
        repost(b);
        return true;
    }
    if (w.category != common::category_ping && w.category != common::category_pong) return false;
    control_arrived(w.source, w.category);
    repost(b);
    return true;
}

// A control message (ping, pong, rtu): a bare head, inline (or from a send
// buffer); without room a pong stays owed until the next liveness check,
// an rtu until the next connect_serve.
void IbvTransport::control_send(Rank peer, std::uint8_t category) {
    common::PackedHead w{};
    w.category = category;
    w.source = setup().rank;
    Status s = Status::not_ready;
    if (sizeof w <= inline_limit_) {
        s = post_send(peer, &w, sizeof w, nullptr);
    } else if (Buffer *b = send_buffer_take()) {
        std::memcpy(b->bytes, &w, sizeof w);
        s = post_send(peer, b->bytes, sizeof w, b);
        if (s != Status::ok) {
            send_free_.give(b);
        }
    }
    if (category == common::category_pong) life(peer).pong_owed = s != Status::ok;
    if (category == category_rtu) {
        // The acceptor waits for it (or the first message after it) before
        // it sends: one that finds no room goes again from connect_serve.
        Peer &p = this->peer(peer);
        if (s != Status::ok && !p.rtu_owed) conn_rtu_owed_.push_back(peer);
        p.rtu_owed = s != Status::ok;
    }
}

// How `peer` is reached, for the layer's messages: over its AM rail (the
// liveness check names it when the peer falls silent: a stopped or hung
// process's HCA goes on acknowledging, and once its receive buffers are
// full its peers' sends wait on RNR for ever, so the HCA alone would never
// notice); this rank, in finalize's, by rail 0.
std::string IbvTransport::path(Rank peer) const { return rail_name(peer == setup().rank ? 0 : am_rail(peer)); }

void IbvTransport::completion_error(const ibv_wc &c) {
    const auto tag = static_cast<Wr>(c.wr_id & tag_mask);
    const char *status = ibv_wc_status_str(c.status);
    if (tag == Wr::recv) {
        // A queue pair in error flushes its receives: the failure that put
        // it there was reported by the sender's side of it.
        if (c.status != IBV_WC_WR_FLUSH_ERR)
            base::report(Status::transport, "poll (ibv)", "this is a Sluice bug or an HCA fault",
                         "ibv (%s): a receive failed: %s", rail_name(0).c_str(), status);
        return;
    }
    if (tag == Wr::send || tag == Wr::inline_send) {
        Rank peer;
        if (tag == Wr::send) {
            Buffer *b = wr_pointer<Buffer>(c.wr_id);
            peer = b->peer;
            send_done(b);
        } else {
            peer = static_cast<Rank>(c.wr_id >> 3);
        }
        depth_completed(this->peer(peer).send_posted[am_rail(peer)]);
        base::report(Status::transport, "send (ibv)", "check that the peer is alive and reachable from this port",
                     "ibv (%s): an AM to rank %u was not delivered: %s", rail_name(am_rail(peer)).c_str(), peer, status);
        return;
    }
    RmaPost *g = wr_pointer<RmaPost>(c.wr_id);
    const unsigned rail = rail_of(c);
    depth_completed(peer(g->peer).send_posted[rail]);
    if (tag == Wr::long_data) {
        send_free_.give(g->notify);
        g->notify = nullptr;
    }
    // Reported, then completed: the caller must not wait for ever.
    base::report(Status::transport, g->write ? "put (ibv)" : "get (ibv)",
                 c.status == IBV_WC_REM_ACCESS_ERR ? "check that the address lies in the peer's segment"
                                                   : "check that the peer is alive and reachable from this port",
                 "ibv (%s): RDMA %s of %zu bytes with rank %u failed: %s", rail_name(rail).c_str(),
                 g->write ? "write" : "read", g->n, g->peer, status);
    rma_done(g);
}

// Everything posted completes before finalize goes on (the layer's
// quiesce_impl waits for it).
bool IbvTransport::idle() {
    bool idle = send_free_.size() == send_count_ && rma_outstanding_ == 0;
    peers_.each([&](Rank, const Peer &p) {
        for (unsigned k : p.send_posted) idle &= k == 0;
    });
    return idle;
}

// ---- RDMA ----

// RDMA of a rank with itself is a copy: no queue pair leads there.
Status IbvTransport::rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                          bool &later) {
    later = false;
    auto *mine = reinterpret_cast<void *>(remote);
    if (peer == setup().rank) return write ? self_rma(mine, local, n, op, later) : self_rma(local, mine, n, op, later);
    return rma_post(peer, write, remote, local, n, op, nullptr, 0, later);
}

// GASNet-EX's two-part Long (and every Put with remote completion): the
// write, then the notification as a send on the same queue pair.  An RC
// queue pair executes its work requests in order, so the peer receives
// the notification only after the write's bytes are in its memory; the
// operation completes when the send does.
Status IbvTransport::put_rc_impl(Rank peer, void *remote, const void *local, std::size_t n, const AmMessage &notify,
                                 RmaOp *op, bool &later) {
    later = false;
    if (peer == setup().rank) {
        std::memmove(remote, local, n);
        return self_send(notify);
    }
    Buffer *b, *bounce = nullptr;
    {
        Guard g(*this);
        if (!up_) return Status::transport;
        b = send_buffer_take();
        if (!b) return Status::not_ready;
        if (n && n <= bounce_limit_) bounce = bounce_free_.take();
    }
    const std::size_t length = common::packed_encode(notify.header, notify.args, notify.payload, b->bytes);
    b->peer = peer;
    // GASNet-EX's non-bulk bounce limit: a payload this small is copied, and
    // the caller may reuse its buffer at once, not after the write lands.
    if (bounce) std::memcpy(bounce->bytes, local, n);
    const Status s = rma_post(peer, true, reinterpret_cast<std::uint64_t>(remote),
                               bounce ? bounce->bytes : const_cast<void *>(local), n, op, b, length, later, bounce);
    if (!later) {
        Guard g(*this);
        send_free_.give(b);
        if (bounce) {
            bounce_free_.give(bounce);
        }
    } else {
        ++ibv_counters_.long_two_part;
        ibv_counters_.long_bounced += bounce != nullptr;
    }
    return s;
}

// One transfer of at most rma_chunk_ bytes (Capabilities::rma_piece),
// posted whole or, without room in a queue pair it needs, not at all.
Status IbvTransport::rma_post(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                              Buffer *notify, std::size_t notify_length, bool &later, Buffer *bounce) {
    later = false;
    if (n == 0 && !notify) return Status::ok;
    const char *what = write ? "put (ibv)" : "get (ibv)";
    const std::uint64_t handle = n && !bounce ? local_handle(op) : 0;
    if (n && !handle && !bounce)
        return base::report(Status::argument, what, "use a buffer in the segment, or a build with firehose registration",
                            "ibv: the local buffer %p (%zu bytes) is not registered", local, n);
    if (Status s = connection(peer); s != Status::ok) return s;
    std::uint64_t key = 0;
    if (!remote_key(op, key)) key = peer_rkey_[peer];
    if (n && key == 0)
        return base::report(Status::segment, what, "attach the segment on every rank before RMA",
                            "ibv: rank %u published no key for its segment", peer);
    // GASNet-EX's multi-rail: large RDMA in one piece per rail, round the
    // rails from the peer's AM rail; the rest, and every Put with a
    // notification (its header must follow its bytes on one queue pair),
    // on the AM rail.  Fenced Puts (GASNet-EX's bug 3447): a read behind a
    // rail's writes on another HCA than the AM rail's returns only once
    // they are in the target's memory, so the Put completes after its
    // bytes are placed.
    const auto rails = static_cast<unsigned>(rails_.size());
    const unsigned am = am_rail(peer);
    std::size_t piece = n;
    if (rails > 1 && !notify && n >= stripe_min_) piece = std::min(n, ((n + rails - 1) / rails + 4095) & ~std::size_t{4095});
    const std::size_t pieces = n ? (n + piece - 1) / piece : 0;
    unsigned need[max_rails]{}, fences = 0;
    for (std::size_t i = 0; i < pieces; ++i) {
        const unsigned k = (am + static_cast<unsigned>(i)) % rails;
        ++need[k];
        if (write && fenced_puts_ && rails_[k].hca != rails_[am].hca && !(fences & 1u << k)) {
            fences |= 1u << k;
            ++need[k];
        }
    }
    need[am] += notify != nullptr;
    Guard guard(*this);
    if (!up_) return Status::transport;
    Peer &p = this->peer(peer);
    unsigned total = 0;
    for (unsigned k = 0; k < rails; ++k) {
        total += need[k];
        if (p.send_posted[k] + need[k] > send_depth_) {
            ++counters_.full;
            return Status::not_ready;  // the wrapper retries it from poll
        }
    }
    if (!depth_room(total)) {
        ++counters_.full;
        ++ibv_counters_.depth_full;
        return Status::not_ready;
    }
    auto *g = new RmaPost;
    g->op = op;
    g->write = write;
    g->peer = peer;
    g->n = n;
    int refused = 0;  // the error of the post that failed
    auto post = [&](unsigned k, ibv_send_wr &wr, const char *failed) {
        ibv_send_wr *bad = nullptr;
        if (const int r = ibv_post_send(p.qp[k], &wr, &bad); r != 0) {
            refused = r;
            if (r != ENOMEM || g->outstanding) (void)fatal(what, peer, failed, r);
            return false;
        }
        ++g->outstanding;
        depth_posted(p.send_posted[k]);
        ++rma_outstanding_;
        return true;
    };
    bool ok = true;
    for (std::size_t i = 0, at = 0; ok && i < pieces; ++i, at += piece) {
        const unsigned k = (am + static_cast<unsigned>(i)) % rails, h = rails_[k].hca;
        const std::size_t len = std::min(piece, n - at);
        const ibv_mr *mr = bounce ? hcas_[h].bounce_mr : reinterpret_cast<const MrSet *>(handle)->mr[h];
        ibv_sge sge{reinterpret_cast<std::uint64_t>(local) + at, static_cast<std::uint32_t>(len), mr->lkey};
        ibv_send_wr wr = signaled_wr(wr_id(g, Wr::rma), &sge, write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ);
        wr.wr.rdma.remote_addr = remote + at;
        wr.wr.rdma.rkey = static_cast<std::uint32_t>(key >> (32 * h));
        ok = post(k, wr, write ? "posting an RDMA write failed" : "posting an RDMA read failed");
        if (!ok) break;
        ++(write ? counters_.writes : counters_.reads);
        ibv_counters_.rail_bytes[k] += len;
    }
    for (unsigned f = fences; ok && f; f &= f - 1) {
        const auto k = static_cast<unsigned>(__builtin_ctz(f));
        ibv_send_wr wr{};
        wr.wr_id = wr_id(g, Wr::rma);
        wr.num_sge = 0;
        wr.opcode = IBV_WR_RDMA_READ;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = remote;
        wr.wr.rdma.rkey = static_cast<std::uint32_t>(key >> (32 * rails_[k].hca));
        ok = post(k, wr, "posting a fenced read failed");
        ibv_counters_.fences += ok;
    }
    if (ok && notify) {
        ibv_sge sge{reinterpret_cast<std::uint64_t>(notify->bytes), static_cast<std::uint32_t>(notify_length),
                    hca_of(am).pool_mr->lkey};
        ibv_send_wr wr = signaled_wr(wr_id(g, Wr::long_data), &sge, IBV_WR_SEND);
        if ((ok = post(am, wr, "posting a two-part Long's header failed"))) {
            g->notify = notify;
            sent_to(peer);
        }
    }
    p.used = true;
    if (g->outstanding == 0) {
        delete g;
        // Nothing posted because the send queue was full (ENOMEM, see
        // post_send): the wrapper polls and posts it again.
        if (refused == ENOMEM) return send_queue_full(p.send_posted[am]);
        return Status::transport;  // reported
    }
    if (bounce) {
        // Complete to the caller now (by the next reap, as a copy is): the
        // transfer goes on from the bounce buffer, which it frees at the end.
        g->bounce = bounce;
        g->op = nullptr;
        complete_at_poll(op);
    }
    if (notify && !g->notify) {  // not posted: back to the free list
        send_free_.give(notify);
    }
    later = true;  // what did post completes it (a failure was reported)
    return Status::ok;
}

void IbvTransport::rma_done(RmaPost *g) {
    --rma_outstanding_;
    if (--g->outstanding) return;
    if (g->op) rma_complete(g->op);
    if (g->bounce) {
        bounce_free_.give(g->bounce);
    }
    delete g;
}

} // namespace sluice::conduit::ibv::detail
