// src/conduits/transport.cpp - the out-of-line part of the conduit interface:
// what a send does when the peer's queue is full, the memory-domain
// bookkeeping, and non-blocking RDMA (completions, the backlog, Put with
// remote completion emulated as a write followed by an AM).
#include "conduits/transport.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace sluice::conduit {

// The registrars' leases of a span of an operation: given back when the
// last piece that holds them is over (a Get's bounce buffer is copied out
// then, unless a piece failed).
struct RmaSpan {
    void *near = nullptr;  // LocalRegistrar's
    void *far = nullptr;   // RemoteRegistrar's
    std::atomic<unsigned> refs{1};
    std::atomic<bool> failed{false};
};

// One RDMA operation from start to completion.  Allocated per operation:
// RDMA conduits move large transfers, and load/store peers never get here
// (src/rma copies through the mapping).
struct RmaOp {
    alignas(std::max_align_t) unsigned char context[rma_context_size];  // the conduit's (rma_context)
    enum class Kind : std::uint8_t { put, get, put_rc };
    Kind kind = Kind::put;
    Rank peer = 0;
    void *remote = nullptr;
    void *local = nullptr;
    std::size_t n = 0;
    std::atomic<std::uint64_t> *counter = nullptr;
    // The registration covering what the conduit was handed for
    // [local, local + n) (MemRegion::handle), 0 when none does
    // (Transport::local_handle).
    std::uint64_t local_handle = 0;
    // The registrars' leases covering the front of the operation (its
    // span: `span_left` bytes from `local`), shared by the pieces cut
    // from it, or null when the segment's registration (or none) covers
    // it.  `span_local` is what the conduit is handed for `local`: the
    // caller's buffer, or a registered bounce buffer the registrar filled
    // for a Put and copies out of for a Get.  With a lease on a region of
    // the peer's segment (RemoteRegistrar, SLUICE_SEGMENT=large), the
    // region's key and start: Transport::remote_key.
    RmaSpan *span = nullptr;
    std::size_t span_left = 0;
    void *span_local = nullptr;
    std::uint64_t remote_key = 0;
    std::uint64_t remote_base = 0;
    // The wrapper hands the conduit a piece at a time: at most
    // Capabilities::rma_piece bytes, within one span.  A piece cut off the
    // front (`whole` names the operation it came from) is an operation of
    // its own; the whole completes, and signals its counter, when it and
    // every piece have: `outstanding` counts them.  A cut Put with remote
    // completion sends its notification by AM after the last piece.
    RmaOp *whole = nullptr;
    std::atomic<unsigned> outstanding{1};
    bool cut = false;
    bool failed = false;  // a later piece failed: no notification
    // SLUICE_FLAG_IMMEDIATE, nothing issued yet: "retry" refuses
    // (Transport::rma_later) instead of backlogging.
    bool immediate = false;
    // put_rc: the notification, with its arguments and payload copied.
    AmMessage notify;
    std::array<std::uint32_t, 16> notify_args{};
    std::string notify_payload;
};

// The conduit writes `op` and carries its notification itself (else the
// wrapper writes, then sends the notification by AM).
bool Transport::rc_carried(const RmaOp &op) const {
    if (!caps_.remote_completion || op.cut) return false;
    const AmHeader &h = op.notify.header;
    return caps_.rc_notify_max_args >= 16 || (h.category == AmCategory::short_ && h.nargs <= caps_.rc_notify_max_args);
}

Transport::~Transport() {
    for (RmaOp *op : backlog_) delete op;
    for (RmaOp *op : done_) delete op;
}

Status Transport::send_retry(Rank peer, const AmMessage &m) {
    const PollMode mode = (m.header.flags & am_flag_reply) ? PollMode::replies_only : PollMode::all;
    base::IdleNap nap;  // room may come back without a wake-up
    for (;;) {
        stats_.send_full.fetch_add(1, std::memory_order_relaxed);
        if (setup_.progress) (void)setup_.progress(setup_.progress_context, mode);  // idles when idle
        else if (poll(mode) == 0) base::idle();
        std::uint64_t deadline = send_deadline_.load(std::memory_order_relaxed);
        if (deadline && base::now_ns() > deadline) return Status::transport;
        Status s = send_impl(peer, m);
        if (s != Status::not_ready) return s;
    }
}

Status Transport::prepare(Rank peer, std::uint8_t flags, unsigned nargs, std::size_t least, std::size_t most,
                          bool immediate, PreparedSend &p) {
    p.buffer = nullptr;
    p.size = 0;
    p.peer = peer;
    p.flags = flags;
    p.nargs = nargs;
    const PollMode mode = (flags & am_flag_reply) ? PollMode::replies_only : PollMode::all;
    base::IdleNap nap;  // room may come back without a wake-up
    for (;;) {
        Status s = prepare_impl(p, least, most);
        if (s != Status::not_ready || immediate) return s;
        stats_.send_full.fetch_add(1, std::memory_order_relaxed);
        if (setup_.progress) (void)setup_.progress(setup_.progress_context, mode);
        else if (poll(mode) == 0) base::idle();
        std::uint64_t deadline = send_deadline_.load(std::memory_order_relaxed);
        if (deadline && base::now_ns() > deadline) return Status::transport;
    }
}

Status Transport::send_refuse(Rank peer, const AmHeader &h) const {
    const char *op = "send";
    if (peer >= setup_.size)
        return base::report(Status::rank, op, nullptr, "%s: rank %u, but the job has %u ranks", name_, peer, setup_.size);
    if (h.nargs > 16) return base::report(Status::argument, op, nullptr, "%s: %u arguments, at most 16", name_, h.nargs);
    const auto n = static_cast<unsigned long long>(h.payload_length);
    if (h.category == AmCategory::medium)
        return base::report(Status::too_large, op, nullptr, "%s: Medium of %llu bytes, at most %zu", name_, n, caps_.max_medium);
    if (h.payload_length > caps_.max_long || h.payload_length > caps_.max_packed_long)
        return base::report(Status::too_large, op, nullptr, "%s: packed Long of %llu bytes, at most %zu", name_, n,
                            std::min(caps_.max_long, caps_.max_packed_long));
    return base::report(Status::segment, op, nullptr, "%s: Long of %llu bytes at 0x%llx is outside the segment of rank %u",
                        name_, n, static_cast<unsigned long long>(h.dest_addr), peer);
}

// ---- memory domains ----

Status Transport::mem_register(void *base, std::size_t size, MemRegion &region) {
    if (region.registered)
        return base::report(Status::state, "register memory", "deregister the region first",
                            "%s: the region at %p is registered already", name_, region.base);
    if (size && !base)
        return base::report(Status::argument, "register memory", nullptr, "%s: %zu bytes at a null address", name_, size);
    const std::uint64_t requested = caps_.provider_keys ? 0 : (std::uint64_t{setup_.rank} << 32 | next_key_++);
    if (Status s = mem_register_impl(base, size, requested, region.handle, region.rkey); s != Status::ok) return s;
    region.base = base;
    region.size = size;
    region.registered = true;
    return Status::ok;
}

void Transport::mem_deregister(MemRegion &region) {
    if (!region.registered) return;
    mem_deregister_impl(region.handle);
    region = MemRegion{};
}

Status Transport::segment_register(void *base, std::size_t size, std::string &rkey) {
    rkey.clear();
    if (!base || !size) return Status::ok;  // an empty segment: nothing to reach
    if (Status s = mem_register(base, size, segment_region_); s != Status::ok) return s;
    rkey = segment_region_.rkey;
    return Status::ok;
}

Status Transport::segment_connect(const std::vector<SegmentRecord> &all) {
    // Every rank's range (a NIC atomic domain reaches this rank's own
    // segment through the NIC too); the keys of the peers reached.
    peer_base_.assign(all.size(), 0);
    peer_size_.assign(all.size(), 0);
    for (std::size_t r = 0; r < all.size(); ++r) {
        peer_base_[r] = all[r].base;
        peer_size_[r] = all[r].size;
    }
    peer_unregistered_.clear();
    static const std::string none;
    for (Rank peer : setup_.peers) {
        if (peer >= all.size())
            return base::report(Status::state, "segment_attach", "this is a Sluice bug", "%s: no record for rank %u",
                                name_, peer);
        const SegmentRecord &rec = all[peer];
        const std::string *key = &none;
        for (const auto &[transport, packed] : rec.rkeys)
            if (transport == name_) key = &packed;
        if (caps_.remote_keys && rec.size && key->empty()) {
            // Its segment is registered on demand (SLUICE_SEGMENT=large).
            peer_unregistered_.resize(all.size(), false);
            peer_unregistered_[peer] = true;
            continue;
        }
        if (Status s = key_unpack_impl(peer, rec.base, rec.size, *key); s != Status::ok) return s;
    }
    return segment_connect_impl(all);
}

// ---- non-blocking RDMA ----

Status Transport::put_nb(Rank peer, void *remote, const void *local, std::size_t n,
                         std::atomic<std::uint64_t> &counter, bool immediate) {
    auto *op = new RmaOp;
    op->immediate = immediate;
    op->peer = peer;
    op->remote = remote;
    op->local = const_cast<void *>(local);
    op->n = n;
    op->counter = &counter;
    return rma_enqueue(op);
}

Status Transport::get_nb(void *local, Rank peer, const void *remote, std::size_t n,
                         std::atomic<std::uint64_t> &counter, bool immediate) {
    auto *op = new RmaOp;
    op->immediate = immediate;
    op->kind = RmaOp::Kind::get;
    op->peer = peer;
    op->remote = const_cast<void *>(remote);
    op->local = local;
    op->n = n;
    op->counter = &counter;
    return rma_enqueue(op);
}

Status Transport::put_rc(Rank peer, void *remote, const void *local, std::size_t n, const AmMessage &notify,
                         std::atomic<std::uint64_t> &counter) {
    if (notify.header.nargs > 16 || notify.header.category == AmCategory::long_)
        return base::report(Status::argument, "put with remote completion", "this is a Sluice bug",
                            "%s: the notification must be a Short or Medium of at most 16 arguments", name_);
    auto *op = new RmaOp;
    op->kind = RmaOp::Kind::put_rc;
    op->peer = peer;
    op->remote = remote;
    op->local = const_cast<void *>(local);
    op->n = n;
    op->counter = &counter;
    op->notify = notify;
    if (notify.header.nargs) std::memcpy(op->notify_args.data(), notify.args, 4u * notify.header.nargs);
    op->notify.args = op->notify_args.data();
    if (notify.header.category == AmCategory::medium && notify.header.payload_length) {
        op->notify_payload.assign(static_cast<const char *>(notify.payload), notify.header.payload_length);
        op->notify.payload = op->notify_payload.data();
    }
    return rma_enqueue(op);
}

Status Transport::put(Rank peer, void *remote, const void *local, std::size_t n) {
    std::atomic<std::uint64_t> counter{0};
    if (Status s = put_nb(peer, remote, local, n, counter); s != Status::ok) return s;
    rma_wait(counter);
    return Status::ok;
}

Status Transport::get(void *local, Rank peer, const void *remote, std::size_t n) {
    std::atomic<std::uint64_t> counter{0};
    if (Status s = get_nb(local, peer, remote, n, counter); s != Status::ok) return s;
    rma_wait(counter);
    return Status::ok;
}

void Transport::rma_wait(const std::atomic<std::uint64_t> &counter) {
    wait_for_zero(counter, [this] {
        return setup_.progress ? setup_.progress(setup_.progress_context, PollMode::all) : poll();
    });
}

Status Transport::rma_enqueue(RmaOp *op) {
    op->counter->fetch_add(1, std::memory_order_release);
    {
        // Behind operations already waiting: the backlog keeps issue order.
        std::lock_guard<std::mutex> lock(rma_lock_);
        if (!backlog_.empty()) {
            if (op->immediate) {
                op->counter->fetch_sub(1, std::memory_order_release);
                delete op;
                return Status::not_ready;
            }
            backlog_.push_back(op);
            rma_work_.fetch_add(1, std::memory_order_relaxed);
            stats_.rma_backlogged.fetch_add(1, std::memory_order_relaxed);
            return Status::ok;
        }
    }
    return rma_hand_over(op, false);
}

// Hands `op` to the conduit, piece by piece when it is longer than
// Capabilities::rma_piece or a registrar covers only part of it.  On
// "retry" it goes to the backlog (its front when it came from there, so
// the order holds); on a final error the caller's counter is given back.
Status Transport::rma_hand_over(RmaOp *op, bool from_backlog) {
    for (;;) {
        bool rest = false;
        if (Status s = rma_hand_over_one(op, from_backlog, rest); s != Status::ok || !rest) return s;
    }
}

// The registrations covering the front of `op`: the segment's, or the
// registrars' leases (a span of their own).  Status::not_ready: nothing
// free now, nothing held.
Status Transport::rma_pin(RmaOp *op, std::size_t &carried) {
    const bool get = op->kind == RmaOp::Kind::get;
    std::size_t covered = op->n;
    carried = 0;
    // The peer's region first: waiting for it holds nothing local.
    RemoteRegistrar::Lease far;
    if (op->peer < peer_unregistered_.size() && peer_unregistered_[op->peer]) {
        if (!remote_registrar_)
            return base::report(Status::state, get ? "get" : "put", "this is a Sluice bug",
                                "%s: rank %u registered no segment and no main pool reaches it", name_, op->peer);
        // A plain Put's front may ride in the move request; one that may
        // give up (immediate) must not write anything then, and a Put with
        // remote completion keeps its notification behind the write.
        const bool may_carry = op->kind == RmaOp::Kind::put && !op->immediate;
        if (Status s = remote_registrar_->pin(op->peer, reinterpret_cast<std::uint64_t>(op->remote), op->n,
                                              may_carry ? op->local : nullptr, may_carry ? op : nullptr, far);
            s != Status::ok)
            return s;
        if (far.carried) {
            remote_registrar_->unpin(far.token);
            carried = std::min(far.carried, op->n);
            return Status::ok;
        }
        covered = std::min(covered, far.n);
    }
    op->span_local = op->local;
    op->local_handle = 0;
    LocalRegistrar::Lease near;
    bool in_segment = false;
    if (segment_region_.registered) {
        const auto at = reinterpret_cast<std::uintptr_t>(op->local);
        const auto base = reinterpret_cast<std::uintptr_t>(segment_region_.base);
        in_segment = at >= base && covered <= segment_region_.size && at - base <= segment_region_.size - covered;
    }
    if (in_segment) {
        op->local_handle = segment_region_.handle;
    } else if (registrar_ && caps_.needs_registration) {
        Status s = registrar_->pin(op->local, covered, get, near);
        if (s != Status::ok) {
            if (far.token) remote_registrar_->unpin(far.token);
            return s;
        }
        covered = std::min(covered, near.n);
        op->local_handle = near.handle;
        op->span_local = near.local;
    }
    op->span_left = covered;
    if (!far.token && !near.token) return Status::ok;
    op->span = new RmaSpan;
    op->span->near = near.token;
    op->span->far = far.token;
    op->remote_key = far.key;
    op->remote_base = far.base;
    if (near.token) {
        std::lock_guard<std::mutex> lock(rma_lock_);
        pinned_.insert(op->span);
    }
    return Status::ok;
}

// How much of `rest` bytes (of one span) the next call of the conduit
// takes: at most rma_piece, and no length in the gap: the gap's low end
// instead, or a full piece less the gap's high end, so that what remains
// is past the gap.
std::size_t Transport::rma_cut(std::size_t rest) const {
    const std::size_t low = caps_.rma_piece_gap_low, high = caps_.rma_piece_gap_high;
    if (!caps_.rma_piece || rest <= caps_.rma_piece) return rest > low && rest < high ? low : rest;
    const std::size_t left = rest - caps_.rma_piece;
    return left > low && left < high ? caps_.rma_piece - high : caps_.rma_piece;
}

Status Transport::rma_hand_over_one(RmaOp *op, bool from_backlog, bool &rest) {
    if (op->n && !op->span_left) {
        std::size_t carried = 0;
        if (Status s = rma_pin(op, carried); s == Status::not_ready) return rma_later(op, from_backlog);
        else if (s != Status::ok) return rma_fail(op, s);
        if (carried == op->n) {  // the move wrote all that was left
            stats_.rma_put_in_move.fetch_add(1, std::memory_order_relaxed);
            rma_finish(op);
            return Status::ok;
        }
        if (carried) {  // the rest after what the move wrote
            op->remote = static_cast<char *>(op->remote) + carried;
            op->local = static_cast<char *>(op->local) + carried;
            op->n -= carried;
            rest = true;
            return Status::ok;
        }
    }
    // What this call issues: all, or the start cut off as a piece.
    const std::size_t covered = rma_cut(std::min(op->n, op->span_left));
    RmaOp *piece = op;
    if (covered < op->n) {
        piece = new RmaOp;
        piece->kind = op->kind == RmaOp::Kind::get ? RmaOp::Kind::get : RmaOp::Kind::put;
        piece->peer = op->peer;
        piece->remote = op->remote;
        piece->local = op->local;
        piece->n = covered;
        piece->counter = op->counter;
        piece->whole = op;
        piece->local_handle = op->local_handle;
        piece->span_local = op->span_local;
        piece->remote_key = op->remote_key;
        piece->remote_base = op->remote_base;
        if ((piece->span = op->span)) op->span->refs.fetch_add(1, std::memory_order_relaxed);
        op->outstanding.fetch_add(1, std::memory_order_relaxed);
        op->cut = true;
    }
    const std::size_t n = piece->n;  // a piece completed from another thread is gone
    void *local = n ? piece->span_local : piece->local;
    void *remote = piece->remote;
    if (caps_.remote_offsets)
        remote = reinterpret_cast<void *>(reinterpret_cast<std::uint64_t>(remote) -
                                          (piece->span && piece->span->far ? piece->remote_base : peer_base_[piece->peer]));
    bool later = false;
    Status s = Status::transport;
    switch (piece->kind) {
    case RmaOp::Kind::put: s = put_impl(piece->peer, remote, local, n, piece, later); break;
    case RmaOp::Kind::get: s = get_impl(local, piece->peer, remote, n, piece, later); break;
    case RmaOp::Kind::put_rc:
        s = rc_carried(*piece) ? put_rc_impl(piece->peer, remote, local, n, piece->notify, piece, later)
                               : put_impl(piece->peer, remote, local, n, piece, later);
        break;
    }
    if (s != Status::ok) {
        if (piece != op) {
            rma_release(piece, true);  // the span stays the operation's
            op->outstanding.fetch_sub(1, std::memory_order_relaxed);
            delete piece;
        }
        if (s != Status::not_ready) return rma_fail(op, s);
        return rma_later(op, from_backlog);
    }
    // Handed to the conduit: `op` itself may be complete and gone (another
    // thread's poll); only a cut-off piece leaves the rest, still ours.
    if (piece != op) {  // the rest, after this piece
        op->immediate = false;  // started: what is left waits on the backlog
        op->remote = static_cast<char *>(op->remote) + n;
        op->local = static_cast<char *>(op->local) + n;
        op->span_local = static_cast<char *>(op->span_local) + n;
        op->n -= n;
        op->span_left -= n;
        if (!op->span_left) rma_release(op, true);  // its span is over: the pieces hold it
        rest = true;
    }
    if (later) stats_.rma_deferred.fetch_add(1, std::memory_order_relaxed);  // piece may be gone already
    else rma_finish(piece);
    return Status::ok;
}

void Transport::rma_backlog(RmaOp *op, bool from_backlog) {
    std::lock_guard<std::mutex> lock(rma_lock_);
    if (from_backlog) {
        backlog_.push_front(op);
    } else {
        backlog_.push_back(op);
        stats_.rma_backlogged.fetch_add(1, std::memory_order_relaxed);
    }
    rma_work_.fetch_add(1, std::memory_order_relaxed);
}

Status Transport::rma_later(RmaOp *op, bool from_backlog) {
    if (op->immediate) {
        rma_release(op, false);
        op->counter->fetch_sub(1, std::memory_order_release);
        delete op;
        return Status::not_ready;
    }
    rma_backlog(op, from_backlog);
    return Status::ok;
}

// A final error for what is left of `op`.  Pieces already issued finish
// it (without its notification); else the counter is given back now.
Status Transport::rma_fail(RmaOp *op, Status s) {
    rma_release(op, false);
    op->failed = true;
    if (op->outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return s;
    op->counter->fetch_sub(1, std::memory_order_release);
    delete op;
    return s;
}

// The operation (or piece) is complete here.  The whole operation is
// complete with its last piece: an emulated Put with remote completion
// (or one cut in pieces) now sends its notification, since the write has
// landed and the AM that follows it on this transport is delivered after
// it.
void Transport::rma_finish(RmaOp *op) {
    rma_release(op, true);
    if (RmaOp *whole = op->whole) {
        delete op;
        op = whole;
    }
    if (op->outstanding.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (op->kind == RmaOp::Kind::put_rc && !op->failed && !rc_carried(*op)) {
        if (Status s = send(op->peer, op->notify); s != Status::ok)
            base::report(s, "put with remote completion", nullptr, "%s: the notification to rank %u was not sent",
                         name_, op->peer);
    }
    op->counter->fetch_sub(1, std::memory_order_release);
    delete op;
}

// `op`'s share of its span, given back; the last share gives the leases
// back (a Get's bounce buffer is copied out when every piece completed).
void Transport::rma_release(RmaOp *op, bool completed) {
    RmaSpan *span = op->span;
    if (!span) return;
    op->span = nullptr;
    op->span_left = 0;
    if (!completed) span->failed.store(true, std::memory_order_relaxed);
    if (span->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    void *near;
    {
        std::lock_guard<std::mutex> lock(rma_lock_);
        near = span->near;  // null once fini took it
        pinned_.erase(span);
    }
    if (near) registrar_->unpin(near, !span->failed.load(std::memory_order_relaxed));
    if (span->far) remote_registrar_->unpin(span->far);
    delete span;
}

std::uint64_t Transport::local_handle(const RmaOp *op) { return op->local_handle; }

void *Transport::rma_context(RmaOp *op) { return op->context; }

bool Transport::remote_key(const RmaOp *op, std::uint64_t &key) {
    if (!op->span || !op->span->far) return false;
    key = op->remote_key;
    return true;
}

Status Transport::region_key_unpack_impl(Rank peer, const std::string &rkey, std::uint64_t &key) {
    if (rkey.size() != sizeof key)
        return base::report(Status::state, "firehose move", "run the same Sluice build on every rank",
                            "%s: rank %u sent a region key of %zu bytes", name_, peer, rkey.size());
    std::memcpy(&key, rkey.data(), sizeof key);
    return Status::ok;
}

void Transport::rma_complete(RmaOp *op) {
    std::lock_guard<std::mutex> lock(rma_lock_);
    done_.push_back(op);
    rma_work_.fetch_add(1, std::memory_order_relaxed);
}

// From poll, after poll_impl: signal what completed, then retry the backlog
// until the conduit says "retry" again.  One thread at a time, and not from
// a poll nested in a notification's send (it skips).
int Transport::rma_progress() {
    if (rma_busy_.exchange(true, std::memory_order_acquire)) return 0;
    int n = 0;
    std::vector<RmaOp *> done;
    {
        std::lock_guard<std::mutex> lock(rma_lock_);
        done.swap(done_);
        rma_work_.fetch_sub(static_cast<std::uint32_t>(done.size()), std::memory_order_relaxed);
    }
    for (RmaOp *op : done) {
        rma_finish(op);
        ++n;
    }
    for (;;) {
        RmaOp *op;
        {
            std::lock_guard<std::mutex> lock(rma_lock_);
            if (backlog_.empty()) break;
            op = backlog_.front();
            backlog_.pop_front();
            rma_work_.fetch_sub(1, std::memory_order_relaxed);
        }
        const std::uint32_t before = rma_work_.load(std::memory_order_relaxed);
        const Rank peer = op->peer;  // rma_hand_over may free op
        if (Status s = rma_hand_over(op, true); s != Status::ok)
            base::report(s, "RDMA", nullptr, "%s: a queued operation to rank %u failed", name_, peer);
        ++n;
        // Back on the backlog: the conduit has no room yet.
        if (rma_work_.load(std::memory_order_relaxed) > before) break;
    }
    rma_busy_.store(false, std::memory_order_release);
    return n;
}

void Transport::fini() {
    std::vector<void *> leases;  // of operations the conduit never completed
    {
        std::lock_guard<std::mutex> lock(rma_lock_);
        for (RmaOp *op : backlog_) delete op;  // never started: nothing to wait for
        backlog_.clear();
        rma_work_.store(static_cast<std::uint32_t>(done_.size()), std::memory_order_relaxed);
        for (RmaSpan *span : pinned_) {
            leases.push_back(span->near);
            span->near = nullptr;
        }
        pinned_.clear();
    }
    if (registrar_) {
        for (void *lease : leases) registrar_->unpin(lease, false);
        registrar_->release_all();
    }
    if (remote_registrar_) remote_registrar_->release_all();
    mem_deregister(segment_region_);
    fini_impl();
}

} // namespace sluice::conduit
