// src/conduits/gni/gni.cpp - the gni conduit's traffic: AMs as packed
// messages by SMSG into the peer's mailbox for this rank, copied out and
// released on every poll; Put and Get by FMA up to the cutover, by the BTE
// above it, between the registered segment (or a buffer registered for
// the transfer) and the peer's registered segment; completions reaped
// from the local CQ.  README.md has the design.
#include "conduits/gni/gni_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <cstring>

namespace sluice::conduit::gni::detail {

// ---- sends ----

// One packed message by SMSG.  A mailbox that is full (GNI_RC_NOT_DONE:
// every credit in use until the peer polls) answers not_ready: the wrapper
// polls and sends again, so nothing is lost.  So does a peer not yet
// connected: the first send asks for the connection.
Status GniTransport::send_impl(Rank peer, const AmMessage &m) {
    if (peer == setup().rank) return self_send(m);
    const std::size_t length = common::packed_length(m.header);
    if (length > msg_max_)
        return base::report(Status::argument, "send (gni)", "raise SLUICE_GNI_MAX_MEDIUM",
                            "gni: an AM of %zu bytes to rank %u exceeds the %zu-byte SMSG message", length, peer, msg_max_);
    // Encoded under the lock into the transport's one send buffer (a
    // thread_local one would be gone when an exit handler sends).
    Guard g(*this);
    if (!up()) return Status::transport;
    GniPeer *to = peers_.find(peer);
    if (!to || !to->send) [[unlikely]] {
        if (Status s = connect_start(peer); s != Status::ok) return s;
        datagrams();
        to = peers_.find(peer);
        if (!to->send) {
            ++gni_counters_.connect_waits;
            return Status::not_ready;
        }
    }
    std::byte *bytes = send_buffer_ptr();
    common::packed_encode(m.header, m.args, m.payload, bytes);
    const gni_return_t rc =
        ugni().SmsgSendWTag(to->send, bytes, static_cast<std::uint32_t>(length), nullptr, 0, 0, 0);
    if (__builtin_expect(rc == GNI_RC_SUCCESS, 1)) {
        sent_to(peer);
        // A credit came back to a mailbox that was full: the peer polled.
        if (__builtin_expect(to->mailbox_full, 0)) {
            to->mailbox_full = false;
            heard(peer);
        }
        ++counters_.sent;
        counters_.packed_longs += m.header.category == AmCategory::long_;
        if (++sends_since_reap_ >= reap_every) reap();
        return Status::ok;
    }
    if (rc == GNI_RC_NOT_DONE) {
        to->mailbox_full = true;
        ++counters_.full;
        reap();
        return Status::not_ready;
    }
    return base::report(Status::transport, "send (gni)", "check that the peer is alive",
                        "gni: GNI_SmsgSendWTag of %zu bytes to rank %u: %s", length, peer, rc_name(rc));
}

// A bare ping or pong; one the mailbox has no room for leaves a pong owed.
void GniTransport::control_send(Rank peer, std::uint8_t category) {
    const GniPeer *to = peer < peers_.size() ? peers_.find(peer) : nullptr;
    if (!to || !to->send) return;  // not connected yet: its request is in flight
    WireHead w{};
    w.category = category;
    w.source = setup().rank;
    const gni_return_t rc = ugni().SmsgSendWTag(to->send, &w, sizeof w, nullptr, 0, 0, 0);
    if (category == common::category_pong) life(peer).pong_owed = rc != GNI_RC_SUCCESS;
    if (rc == GNI_RC_SUCCESS) ++sends_since_reap_;
}

std::string GniTransport::path(Rank) const {
    return "uGNI device " + std::to_string(dev_id_) + ", NIC address " + std::to_string(nic_address_);
}

// ---- completions and arrivals ----

void GniTransport::reap() {
    sends_since_reap_ = 0;
    reap_local();
    datagrams();
    reap_arrivals();
}

// The local CQ: SMSG send events (nothing to do) and posts' completions,
// each handing back its descriptor (GNI_GetCompleted).
void GniTransport::reap_local() {
    for (;;) {
        gni_cq_entry_t e = 0;
        gni_return_t rc = ugni().CqGetEvent(cq_, &e);
        if (rc == GNI_RC_NOT_DONE) return;
        if (rc == GNI_RC_ERROR_RESOURCE && GNI_CQ_OVERRUN(e)) {
            // Lost events would be lost completions: the sizes in
            // gni_transport.hpp are meant to make this impossible.
            if (!overrun_reported_)
                base::report(Status::transport, "poll (gni)", "this is a Sluice bug",
                             "gni: the local CQ overran: completions were lost");
            overrun_reported_ = true;
            continue;
        }
        if (rc != GNI_RC_SUCCESS && rc != GNI_RC_TRANSACTION_ERROR) {
            base::report(Status::transport, "poll (gni)", nullptr, "gni: GNI_CqGetEvent: %s", rc_name(rc));
            return;
        }
        ++counters_.completions;
        if (GNI_CQ_GET_TYPE(e) != GNI_CQ_EVENT_TYPE_POST) continue;  // an SMSG send
        gni_post_descriptor_t *d = nullptr;
        const gni_return_t done = ugni().GetCompleted(cq_, e, &d);
        if (!d) {
            base::report(Status::transport, "poll (gni)", "this is a Sluice bug",
                         "gni: GNI_GetCompleted gave no descriptor: %s", rc_name(done));
            continue;
        }
        const bool ok = done == GNI_RC_SUCCESS && GNI_CQ_STATUS_OK(e);
        auto *posted = reinterpret_cast<Posted *>(d);
        if (posted->atomic) atomic_done(static_cast<GniAtomicSlot *>(posted), ok);
        else rma_done(static_cast<RmaPost *>(posted), ok);
    }
}

// A post completed: a staged Get's bytes go to the caller, its transient
// registration or bounce buffer goes, its piece completes (reported first
// when it failed: the caller must not wait for ever).
void GniTransport::rma_done(RmaPost *p, bool ok) {
    if (!ok)
        base::report(Status::transport, p->write ? "put (gni)" : "get (gni)",
                     "check that the peer is alive and that the address lies in its segment",
                     "gni: %s %s of %llu bytes with rank %u completed in error", p->bte ? "BTE" : "FMA",
                     p->write ? "put" : "get", static_cast<unsigned long long>(p->d.length), p->peer);
    if (!p->write && ok && (p->local == Local::immediate || p->local == Local::bounce))
        std::memcpy(p->user, reinterpret_cast<const void *>(p->d.local_addr), p->d.length);
    if (p->local == Local::transient) {
        ugni().MemDeregister(nic_, &p->d.local_mem_hndl);
        --transients_;
    }
    if (p->local == Local::bounce) bounce_free_.push_back(p->staging);
    RmaOp *op = p->op;
    p->op = nullptr;
    p->local = Local::registered;
    --rma_outstanding_;
    post_free_.give(p);
    if (op) rma_complete(op);
}

// The rx CQ: each SMSG event names the channel (its remote event data,
// which the sender set to the number this rank gave it) and stands for
// one message, raised once the message is in the mailbox, so one is taken
// per event; an overrun lost events, so then every mailbox is emptied
// (and the events still queued for what that took find their mailboxes
// empty).
void GniTransport::reap_arrivals() {
    bool all = false;
    for (;;) {
        gni_cq_entry_t e = 0;
        const gni_return_t rc = ugni().CqGetEvent(rx_cq_, &e);
        if (rc == GNI_RC_NOT_DONE) break;
        if (rc == GNI_RC_ERROR_RESOURCE) {
            all = true;
            ++gni_counters_.rx_overruns;
            continue;
        }
        if (rc != GNI_RC_SUCCESS) {
            base::report(Status::transport, "poll (gni)", nullptr, "gni: GNI_CqGetEvent (rx): %s", rc_name(rc));
            break;
        }
        if (GNI_CQ_GET_TYPE(e) != GNI_CQ_EVENT_TYPE_SMSG) continue;
        const std::uint32_t channel = static_cast<std::uint32_t>(GNI_CQ_GET_INST_ID(e));
        if (channel < channels_.size()) drain(channel, 1);
        else all = true;
    }
    if (all)
        for (std::uint32_t c = 0; c < channels_.size(); ++c) drain(c, SIZE_MAX);
}

// Up to `most` messages of a channel's mailbox, in order: copied out and
// released at once.  Releasing before the handler runs is what keeps two ranks whose
// handlers reply to each other from waiting on each other's full mailbox
// (README.md, Design).  A channel whose peer sent before this rank saw
// the answer to its request is drained once it is set up (established).
void GniTransport::drain(std::uint32_t channel, std::size_t most) {
    const Channel &c = channels_[channel];
    if (!c.ready) return;
    const Rank peer = c.peer;
    for (; most > 0; --most) {
        void *header = nullptr;
        std::uint8_t tag = GNI_SMSG_ANY_TAG;
        const gni_return_t rc = ugni().SmsgGetNextWTag(c.ep, &header, &tag);
        if (rc == GNI_RC_NOT_DONE) return;
        if (rc != GNI_RC_SUCCESS) {
            base::report(Status::transport, "poll (gni)", nullptr, "gni: GNI_SmsgGetNextWTag from rank %u: %s", peer,
                         rc_name(rc));
            return;
        }
        WireHead w;
        std::memcpy(&w, header, sizeof w);
        ++counters_.received;
        if (w.category == common::category_ping || w.category == common::category_pong) {
            ugni().SmsgRelease(c.ep);
            control_arrived(peer, w.category);
            continue;
        }
        heard(peer);
        // The length follows from the head; deliver_packed checks the rest.
        std::size_t length = msg_max_;
        if (w.category <= static_cast<std::uint8_t>(AmCategory::long_) && w.nargs <= common::packed_max_args) {
            const auto k = static_cast<AmCategory>(w.category);
            length = common::packed_align(common::packed_payload_offset(k, w.nargs) +
                                          (k == AmCategory::short_ ? 0 : std::size_t{w.length}));
            if (length > msg_max_) length = msg_max_;  // malformed: deliver_packed refuses it
        }
        std::byte *copy = buffer_take();
        std::memcpy(copy, header, length);
        ugni().SmsgRelease(c.ep);
        ready_.push_back(Arrival{copy, length});
    }
}

// ---- connections ----

// Peers are connected at their first touch (an AM, a post, the barrier):
// this rank takes a mailbox for the peer, binds an endpoint to it and
// sends a datagram with its Hello (connect_start); the peer's wildcard
// (or its own request to this rank, when both asked at once) answers with
// its Hello, and SMSG is set up on both sides (established).  Until then
// sends answer not_ready and wait polling, and FMA and BTE posts go on the
// request's endpoint, which is bound already.  A peer that never answers
// is found by the liveness check (the request counts as a send to it),
// which ends the job naming it after SLUICE_GNI_PEER_TIMEOUT.

Hello GniTransport::hello(std::uint32_t channel) const {
    const Mailbox &b = channels_[channel].box;
    Hello h{};
    h.mbox_base = reinterpret_cast<std::uint64_t>(b.chunk);
    h.mbox_handle = b.handle;
    h.mbox_offset = b.offset;
    h.mbox_bytes = mbox_bytes_;
    h.channel = channel;
    h.rank = setup().rank;
    h.flags_base = reinterpret_cast<std::uint64_t>(flags_);
    h.scratch_handle = scratch_handle_;
    return h;
}

Status GniTransport::connect_start(Rank peer) {
    GniPeer &p = peers_.at(peer);
    if (p.send || p.dial) return Status::ok;
    // The peer may have asked first: then its channel serves both ways.
    datagrams(true);
    if (p.send) return Status::ok;
    const char *op = "gni connection";
    Channel c;
    c.peer = peer;
    if (Status s = mailbox_take(c.box); s != Status::ok) return s;
    gni_return_t rc = ugni().EpCreate(nic_, cq_, &c.ep);
    if (rc != GNI_RC_SUCCESS) return failed(op, "GNI_EpCreate", rc);
    const auto channel = static_cast<std::uint32_t>(channels_.size());
    channels_.push_back(c);
    if ((rc = ugni().EpBind(c.ep, nic_of(peer), peer)) != GNI_RC_SUCCESS) return failed(op, "GNI_EpBind", rc);
    p.out = hello(channel);
    if ((rc = ugni().EpPostDataWId(c.ep, &p.out, sizeof p.out, &p.in, sizeof p.in, peer)) != GNI_RC_SUCCESS)
        return failed(op, "GNI_EpPostDataWId", rc);
    p.dial = c.ep;
    p.dial_channel = channel;
    ++dials_;
    ++gni_counters_.dials;
    sent_to(peer);  // the liveness check waits for its answer
    return Status::ok;
}

Status GniTransport::bound(Rank peer, gni_ep_handle_t &ep) {
    const GniPeer *p = peers_.find(peer);
    if (!p || (!p->send && !p->dial)) {
        if (Status s = connect_start(peer); s != Status::ok) return s;
        p = peers_.find(peer);
    }
    ep = p->send ? p->send : p->dial;
    return Status::ok;
}

// The datagrams that completed: the wildcard's (a peer asked) and this
// rank's requests.  Probed at every poll while a request is in flight,
// every datagram_probe_every polls otherwise, and before a request.
void GniTransport::datagrams(bool now) {
    if (!now && dials_ == 0 && ++datagram_polls_ % datagram_probe_every != 0) return;
    for (std::size_t i = 0; i < 64; ++i) {
        std::uint64_t id = 0;
        if (ugni().PostDataProbeById(nic_, &id) != GNI_RC_SUCCESS) return;
        // A datagram not tested stays the probe's answer: stop there.
        const bool tested = id == wildcard_id         ? accepted()
                            : id < setup().size       ? dialed(static_cast<Rank>(id))
                                                      : false;
        if (!tested) {
            if (!datagram_stuck_)
                base::report(Status::transport, "gni connection", "this is a Sluice bug",
                             "gni: datagram %llu completed and cannot be taken: no peer can connect any more",
                             static_cast<unsigned long long>(id));
            datagram_stuck_ = true;
            return;
        }
    }
}

// The wildcard matched a peer's request: its endpoint is bound to the
// peer and becomes the channel, and a new wildcard is posted.
bool GniTransport::accepted() {
    gni_post_state_t state = GNI_POST_PENDING;
    std::uint32_t address = 0, inst = 0;
    const gni_return_t rc = ugni().EpPostDataTestById(wild_ep_, wildcard_id, &state, &address, &inst);
    if (rc != GNI_RC_SUCCESS || state == GNI_POST_PENDING) return false;
    const char *op = "gni connection";
    const Rank peer = inst;
    if (state != GNI_POST_COMPLETED || peer >= setup().size || peer == setup().rank || wild_in_.rank != peer) {
        base::report(Status::transport, op, "run every rank of the job on the same Sluice build",
                     "gni: a connection request from NIC address %u instance %u (rank %u by its own account) is "
                     "not from another rank of this job (state %d): ignored",
                     address, inst, wild_in_.rank, static_cast<int>(state));
        if (ugni().EpPostDataWId(wild_ep_, &wild_out_, sizeof wild_out_, &wild_in_, sizeof wild_in_, wildcard_id) !=
            GNI_RC_SUCCESS)
            base::report(Status::transport, op, nullptr, "gni: GNI_EpPostDataWId (wildcard) failed: no peer can connect");
        return true;
    }
    ++gni_counters_.accepts;
    gni_ep_handle_t ep = wild_ep_;
    const std::uint32_t channel = wild_channel_;
    channels_[channel].peer = peer;
    wild_ep_ = nullptr;
    if (const gni_return_t b = ugni().EpBind(ep, address, inst); b != GNI_RC_SUCCESS)
        failed(op, "GNI_EpBind (accepted)", b);
    else
        established(peer, ep, channel, wild_in_);
    if (wildcard_post() != Status::ok)
        base::report(Status::transport, op, nullptr, "gni: no new wildcard datagram: no further peer can connect");
    return true;
}

// This rank's request to `peer` was answered.
bool GniTransport::dialed(Rank peer) {
    GniPeer *p = peers_.find(peer);
    if (!p || !p->dial) return false;
    gni_post_state_t state = GNI_POST_PENDING;
    std::uint32_t address = 0, inst = 0;
    const gni_return_t rc = ugni().EpPostDataTestById(p->dial, peer, &state, &address, &inst);
    if (rc != GNI_RC_SUCCESS || state == GNI_POST_PENDING) return false;
    gni_ep_handle_t ep = p->dial;
    p->dial = nullptr;
    --dials_;
    if (state != GNI_POST_COMPLETED) {
        base::report(Status::transport, "gni connection", "check that the peer is alive",
                     "gni: the connection request to rank %u ended in state %d", peer, static_cast<int>(state));
        return true;
    }
    established(peer, ep, p->dial_channel, p->in);
    return true;
}

// SMSG between this rank's mailbox of `channel` and the peer's of its
// Hello; the peer's messages on it carry the channel's number.  The first
// channel with a peer is the one this rank sends on.
bool GniTransport::established(Rank peer, gni_ep_handle_t ep, std::uint32_t channel, const Hello &theirs) {
    const char *op = "gni connection";
    Channel &c = channels_[channel];
    c.ep = ep;
    if (theirs.rank != peer || theirs.mbox_bytes != mbox_bytes_) {
        base::report(Status::state, op, "run every rank of the job on the same Sluice build",
                     "gni: rank %u answered as rank %u with mailboxes of %u bytes (this rank's: %u)", peer, theirs.rank,
                     theirs.mbox_bytes, mbox_bytes_);
        return false;
    }
    gni_smsg_attr_t local{}, remote{};
    local.msg_type = remote.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    local.mbox_maxcredit = remote.mbox_maxcredit = credits_;
    local.msg_maxsize = remote.msg_maxsize = static_cast<std::uint32_t>(msg_max_);
    local.buff_size = remote.buff_size = mbox_bytes_;
    local.msg_buffer = c.box.chunk;
    local.mem_hndl = c.box.handle;
    local.mbox_offset = c.box.offset;
    remote.msg_buffer = reinterpret_cast<void *>(theirs.mbox_base);
    remote.mem_hndl = theirs.mbox_handle;
    remote.mbox_offset = theirs.mbox_offset;
    gni_return_t rc = ugni().SmsgInit(ep, &local, &remote);
    if (rc == GNI_RC_SUCCESS) rc = ugni().EpSetEventData(ep, channel, theirs.channel);
    if (rc != GNI_RC_SUCCESS) {
        failed(op, "GNI_SmsgInit", rc);
        return false;
    }
    c.ready = true;
    GniPeer &p = peers_.at(peer);
    if (!p.send) p.send = ep;
    p.flags_base = theirs.flags_base;
    p.scratch = theirs.scratch_handle;
    heard(peer);
    drain(channel, SIZE_MAX);
    return true;
}

std::byte *GniTransport::buffer_take() {
    if (!spare_.empty()) {
        std::byte *b = spare_.back();
        spare_.pop_back();
        return b;
    }
    owned_.push_back(std::make_unique<std::byte[]>(msg_max_));
    return owned_.back().get();
}

// ---- delivery ----

void GniTransport::deliver_one(const Arrival &a) { deliver_packed("poll (gni)", a.bytes, a.length); }

void GniTransport::delivered(const Arrival &a) { spare_.push_back(a.bytes); }

// ---- RDMA ----

const Registration *GniTransport::covering(const void *p, std::size_t n) const {
    const auto a = reinterpret_cast<std::uint64_t>(p);
    for (const Registration &r : regs_)
        if (r.live && a >= r.base && n <= r.size && a - r.base <= r.size - n) return &r;
    return nullptr;
}

// Where a local buffer outside every registration goes: a Put's bytes
// copied, a Get landing, in the post's immediate buffer up to
// immediate_bytes, in a bounce buffer up to the *_BOUNCE_REGISTER_CUTOVER
// while one is free; else the buffer is registered for this post, while
// fewer than SLUICE_GNI_MEMREG are.  False: none of these now.
bool GniTransport::stage(RmaPost *p, bool write, void *local, std::size_t n) {
    gni_post_descriptor_t &d = p->d;
    std::byte *to = nullptr;
    if (n <= immediate_bytes) {
        to = p->immediate;
        p->local = Local::immediate;
        ++gni_counters_.immediate;
    } else if (n <= (write ? put_bounce_ : get_bounce_) && !bounce_free_.empty()) {
        to = p->staging = bounce_free_.back();
        bounce_free_.pop_back();
        p->local = Local::bounce;
        ++gni_counters_.bounced;
    }
    if (to) {
        if (write) std::memcpy(to, local, n);
        p->user = local;
        d.local_addr = reinterpret_cast<std::uint64_t>(to);
        d.local_mem_hndl = scratch_handle_;
        return true;
    }
    if (transients_ >= memreg_) return false;
    const gni_return_t rc = ugni().MemRegister(nic_, reinterpret_cast<std::uint64_t>(local), n, nullptr,
                                               GNI_MEM_READWRITE, static_cast<std::uint32_t>(-1), &d.local_mem_hndl);
    if (rc != GNI_RC_SUCCESS) {
        ++gni_counters_.transient_refused;
        return false;
    }
    d.local_addr = reinterpret_cast<std::uint64_t>(local);
    p->local = Local::transient;
    ++transients_;
    ++gni_counters_.transient;
    return true;
}

// One Put or Get piece: FMA up to its cutover, the BTE above (a Get the
// BTE cannot take, not 4-byte aligned, by FMA).  A local buffer outside
// every registration is staged (stage()); one that cannot be now answers
// not_ready and the wrapper retries once completions freed room.  When
// nothing of this rank's is in flight to free any, a refused registration
// is an error (the NIC's memory domain descriptors are all taken).
Status GniTransport::rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                          bool &later) {
    later = false;
    if (n == 0) return Status::ok;
    if (peer == setup().rank) {
        void *mine = reinterpret_cast<void *>(remote);
        return write ? self_rma(mine, local, n, op, later) : self_rma(local, mine, n, op, later);
    }
    const char *what = write ? "put (gni)" : "get (gni)";
    Guard g(*this);
    if (!up()) return Status::transport;
    if (post_free_.empty()) reap();
    if (post_free_.empty()) {
        ++counters_.full;
        return Status::not_ready;
    }
    RmaPost *p = post_free_.take();
    p->op = op;
    p->peer = peer;
    p->write = write;
    p->local = Local::registered;
    gni_post_descriptor_t &d = p->d;
    d = gni_post_descriptor_t{};
    if (const Registration *r = covering(local, n)) {
        d.local_mem_hndl = r->handle;
        d.local_addr = reinterpret_cast<std::uint64_t>(local);
    } else if (!stage(p, write, local, n)) {
        post_free_.give(p);
        ++counters_.full;
        if (rma_outstanding_ == 0 && transients_ == 0)
            return base::report(Status::resource, what, "use a buffer in the segment, or raise the NIC's limit",
                                "gni: the NIC registers no more memory (GNI_RC_ERROR_RESOURCE) for the %zu bytes at %p "
                                "of a transfer with rank %u, and nothing of this rank's is in flight to free one",
                                n, local, peer);
        return Status::not_ready;
    }
    d.remote_addr = remote;
    d.remote_mem_hndl = peer_segment_[peer];
    d.length = n;
    const bool aligned = ((d.local_addr | remote | n) & 3) == 0;
    p->bte = write ? n > put_cutover_ : (n > get_cutover_ && aligned);
    d.type = write ? (p->bte ? GNI_POST_RDMA_PUT : GNI_POST_FMA_PUT) : (p->bte ? GNI_POST_RDMA_GET : GNI_POST_FMA_GET);
    const Status s = post(p, peer, what);
    if (s == Status::ok) {
        ++(write ? counters_.writes : counters_.reads);
        later = true;
    }
    return s;
}

// Posts `p` (its type, addresses, handles and length set) to `peer`:
// Status::not_ready when the BTE queue or FMA window is full, the post
// freed either way it fails.
Status GniTransport::post(RmaPost *p, Rank peer, const char *what) {
    gni_post_descriptor_t &d = p->d;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.dlvr_mode = dlvr_mode_;
    d.src_cq_hndl = cq_;
    d.post_id = reinterpret_cast<std::uint64_t>(p);
    gni_ep_handle_t ep = nullptr;
    gni_return_t rc = GNI_RC_INVALID_STATE;
    if (bound(peer, ep) == Status::ok) rc = p->bte ? ugni().PostRdma(ep, &d) : ugni().PostFma(ep, &d);
    if (rc == GNI_RC_SUCCESS) {
        ++rma_outstanding_;
        ++(p->bte ? gni_counters_.bte : gni_counters_.fma);
        return Status::ok;
    }
    if (p->local == Local::transient) {
        ugni().MemDeregister(nic_, &d.local_mem_hndl);
        --transients_;
    }
    if (p->local == Local::bounce) bounce_free_.push_back(p->staging);
    p->op = nullptr;
    p->local = Local::registered;
    post_free_.give(p);
    if (rc == GNI_RC_ERROR_RESOURCE) {
        ++counters_.full;
        return Status::not_ready;
    }
    return base::report(Status::transport, what, "check that the address lies in the peer's segment",
                        "gni: %s of %llu bytes with rank %u: %s", p->bte ? "GNI_PostRdma" : "GNI_PostFma",
                        static_cast<unsigned long long>(d.length), peer, rc_name(rc));
}

// ---- the barrier ----

// A dissemination barrier of FMA writes (capabilities().native_barrier,
// SLUICE_BARRIER=auto): in round k this rank writes the barrier's epoch,
// one byte, into line k of the flags of rank + 2^k, and waits for rank -
// 2^k's in its own.  A partner is at most one barrier ahead, so the byte
// compared modulo 256 cannot be mistaken; one byte is written whole.
Status GniTransport::barrier_impl(bool (*poll_fn)(void *), void *context) {
    const Rank n = setup().size, me = setup().rank;
    const std::uint64_t epoch = ++barrier_epoch_;
    const auto mark = static_cast<std::uint8_t>(epoch);
    // One poll whatever happens: it starts the receive thread when wanted,
    // as an AM barrier's polls would.
    if (!poll_fn(context)) return Status::transport;
    for (unsigned k = 0; (Rank{1} << k) < n; ++k) {
        const Rank partner = static_cast<Rank>((me + (std::uint64_t{1} << k)) % n);
        for (;;) {
            {
                Guard g(*this);
                if (!up()) return Status::transport;
                if (post_free_.empty()) reap();
                // The partner's flags come with its Hello.
                const GniPeer *to = peers_.find(partner);
                if (!to || !to->send) {
                    if (Status s = connect_start(partner); s != Status::ok) return s;
                    datagrams();
                    to = peers_.find(partner);
                }
                if (to->send && !post_free_.empty()) {
                    RmaPost *p = post_free_.take();
                    p->op = nullptr;
                    p->peer = partner;
                    p->write = true;
                    p->bte = false;
                    p->local = Local::immediate;
                    p->d = gni_post_descriptor_t{};
                    *p->immediate = static_cast<std::byte>(mark);
                    p->d.type = GNI_POST_FMA_PUT;
                    p->d.local_addr = reinterpret_cast<std::uint64_t>(p->immediate);
                    p->d.local_mem_hndl = scratch_handle_;
                    p->d.remote_addr = to->flags_base + 64 * k;
                    p->d.remote_mem_hndl = to->scratch;
                    p->d.length = 1;
                    const Status s = post(p, partner, "barrier (gni)");
                    if (s == Status::ok) break;
                    if (s != Status::not_ready) return s;
                }
            }
            if (!poll_fn(context)) return Status::transport;
        }
        const auto *flag = reinterpret_cast<const std::uint8_t *>(flags_) + 64 * k;
        while (static_cast<std::int8_t>(__atomic_load_n(flag, __ATOMIC_ACQUIRE) - mark) < 0)
            if (!poll_fn(context)) return Status::transport;
    }
    return Status::ok;
}

} // namespace sluice::conduit::gni::detail
