// src/conduits/mpi/mpi.cpp - the mpi conduit's traffic: AMs as packed
// messages by MPI_Isend from a send buffer into the peer's posted
// receives, a Short delivered from its receive, other AMs from a copy,
// the receive posted again at the next poll; Put and Get by MPI_Rput and MPI_Rget on the
// window over the segments, a Put complete once MPI_Win_flush says it is
// at its target, or by messages (a header, then the payload as one MPI
// message between the two buffers), or Gets on the window and Puts by
// messages; the barrier by MPI_Ibarrier.
// README.md has the design.
#include "conduits/mpi/mpi_transport.hpp"

#include "base/status.hpp"

#include <algorithm>
#include <cstring>

namespace sluice::conduit::mpi::detail {

// ---- sends ----

// Under lock_: `length` bytes of `b` to `peer`.
Status MpiTransport::isend(SendBuffer *b, Rank peer, std::size_t length) {
    const auto index = static_cast<std::size_t>(b - sends_.data());
    const int rc = MPI_Isend(b->bytes, static_cast<int>(length), MPI_BYTE, mpi_rank_[peer], am_tag, comm_,
                             &send_requests_[index]);
    if (rc != MPI_SUCCESS) {
        send_free_.give(b);
        return base::report(Status::transport, "send (mpi)", "check that the peer is alive",
                            "mpi: MPI_Isend of %zu bytes to rank %u (MPI rank %d) failed (MPI error %d)", length, peer,
                            mpi_rank_[peer], rc);
    }
    ++sends_out_;
    sent_to(peer);
    return Status::ok;
}

// One packed message from a send buffer; none free answers not_ready
// (the wrapper polls and sends again).  A small one is encoded straight
// into its buffer under the lock (one lock, no copy); a larger one
// outside it, so that another thread may poll meanwhile.
Status MpiTransport::send_impl(Rank peer, const AmMessage &m) {
    if (peer == setup().rank) return self_send(m);
    const std::size_t length = common::packed_length(m.header);
    if (length > msg_max_)
        return base::report(Status::argument, "send (mpi)", "raise SLUICE_MPI_MAX_MEDIUM",
                            "mpi: an AM of %zu bytes to rank %u exceeds the %zu-byte message", length, peer, msg_max_);
    if (length <= small_send) {
        Guard g(*this);
        if (!up()) return Status::transport;
        const Status st = send_small(peer, length, [&](std::byte *out) {
            common::packed_encode(m.header, m.args, m.payload, out);
        });
        counters_.small += st == Status::ok;
        return st;
    }
    return send_packed<SendBuffer>(
        m, 0, [&] { return send_buffer(); },
        [&](std::byte *, std::size_t n, SendBuffer *b) {
            const Status st = isend(b, peer, n);
            counters_.sent += st == Status::ok;
            return st;
        });
}

// A Short, encoded straight into its send buffer.
Status MpiTransport::send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                                     const std::uint32_t *args, unsigned nargs) {
    if (peer == setup().rank) return self_send(short_message(handler, flags, credit, args, nargs));
    Guard g(*this);
    if (!up()) return Status::transport;
    const Status st = send_small(peer, common::packed_short_length(nargs), [&](std::byte *out) {
        common::packed_encode_short(setup().rank, handler, flags, credit, args, nargs, out);
    });
    counters_.small += st == Status::ok;
    return st;
}

// A bare ping or pong; one without a free send buffer leaves a pong owed.
void MpiTransport::control_send(Rank peer, std::uint8_t category) {
    if (peer >= mpi_rank_.size() || peer == setup().rank) return;
    if (send_free_.empty()) reap_sends();
    SendBuffer *b = send_free_.take();
    if (category == common::category_pong) life(peer).pong_owed = b == nullptr;
    if (!b) return;
    common::PackedHead w{};
    w.category = category;
    w.source = setup().rank;
    std::memcpy(b->bytes, &w, sizeof w);
    (void)isend(b, peer, sizeof w);
}

// ---- completions and arrivals ----

// How many of `requests` MPI_Testsome finds done (their indices in
// `index`): 0 when none is, or the call failed.
int MpiTransport::finished(std::vector<MPI_Request> &requests, std::vector<int> &index) {
    int n = 0;
    if (MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &n, index.data(), MPI_STATUSES_IGNORE) !=
            MPI_SUCCESS ||
        n == MPI_UNDEFINED)
        return 0;
    return n;
}

// Sends are reaped when a quarter of the buffers is out, and every 64th
// poll (so that quiesce sees them done): an MPI_Testsome costs an MPI
// progress call, which a round trip pays on every poll otherwise.
void MpiTransport::reap() {
    if (sends_out_ * 4 >= sends_.size() || (++polls_ & 63) == 0) reap_sends();
    reap_arrivals();
    if (rma_out_) reap_rma();
    if (serves_out_ || !acks_owed_.empty()) reap_serves();
}

void MpiTransport::reap_sends() {
    if (sends_out_ == 0) return;
    const int n = finished(send_requests_, done_index_);
    for (int i = 0; i < n; ++i) {
        send_free_.give(&sends_[static_cast<std::size_t>(done_index_[i])]);
        --sends_out_;
        ++counters_.completions;
    }
}

// The receives are alike (any source, one tag, one communicator) and were
// posted in the ring's order, each restarted after the one before it: MPI
// matches a message with the earliest posted receive, so they fill in that
// order and only the oldest needs testing, one MPI_Test a poll rather than
// an MPI_Testsome over all (a large message still arriving there holds the
// ones behind it, which MPI_Test's progress moves meanwhile).  Control
// messages are answered here, Shorts queued in their receives (recv_held_), other AMs
// copied out into the ready queue.  The receives taken are posted again,
// in the ring's order, at the start of the next poll: not between a
// message's arrival and its handler's reply, where the restart's matching
// would lengthen every round trip.  A rank inside a handler that waits
// polls, and so restarts them, copying out the Shorts still queued
// (spill); only a Short being unpacked right then holds its receive, and
// the ones behind it, until the next poll.
void MpiTransport::reap_arrivals() {
    if (recv_taken_ > 0) restart_taken();
    // After a quiet poll one message is taken and delivered at once: testing
    // the next receive would make MPI progress (its whole poll) before the
    // handler runs.  While messages keep coming, a poll takes all that
    // have arrived.
    const std::size_t ring = recv_requests_.size();
    const std::size_t most = quiet_ ? 1 : ring;
    quiet_ = true;
    for (std::size_t taken = 0; taken < most && recv_taken_ < ring; ++taken) {
        const std::size_t index = recv_head_;
        if (!recv_active_[index]) return;  // its restart failed, reported: the ring stops there
        int done = 0;
        if (const int rc = MPI_Test(&recv_requests_[index], &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) [[unlikely]] {
            base::report(Status::transport, "poll (mpi)", nullptr,
                         "mpi: MPI_Test of a posted receive failed (MPI error %d)", rc);
            return;
        }
        if (!done) return;
        arrived(index);
    }
}

// The receives taken, posted again in the ring's order.
void MpiTransport::restart_taken() {
    const std::size_t ring = recv_requests_.size();
    for (bool spilled = false; recv_taken_ > 0; --recv_taken_) {
        const std::size_t index = recv_head_ >= recv_taken_ ? recv_head_ - recv_taken_ : recv_head_ + ring - recv_taken_;
        if (recv_held_[index].load(std::memory_order_acquire)) {
            // Its Short waits in ready_ (copied out now, with every other
            // there) or is being unpacked (posted again at the next poll).
            if (!spilled) spill();
            spilled = true;
            if (recv_held_[index].load(std::memory_order_acquire)) break;
        }
        const int restart = MPI_Start(&recv_requests_[index]);
        recv_active_[index] = restart == MPI_SUCCESS;
        if (restart != MPI_SUCCESS)
            base::report(Status::transport, "poll (mpi)", "lower SLUICE_MPI_RECVS or SLUICE_MPI_MAX_MEDIUM",
                         "mpi: MPI_Start of a posted receive failed (MPI error %d): no message will arrive here",
                         restart);
    }
}

// The message in receive `index` (the oldest).  Its head says who sent
// it and how long it is (MPI_Get_count would cost the latency path as
// much as the rest of this): the communicator is Sluice's own, every
// message on it a Sluice rank's, and an AM's head is checked again when
// it is unpacked.
void MpiTransport::arrived(std::size_t index) {
    const std::size_t ring = recv_requests_.size();
    recv_active_[index] = false;
    quiet_ = false;
    ++recv_taken_;
    recv_head_ = recv_head_ + 1 == ring ? 0 : recv_head_ + 1;
    ++counters_.received;
    const auto *bytes = reinterpret_cast<const std::byte *>(recv_words_.get() + index * (msg_max_ / 8));
    common::PackedHead w;
    std::memcpy(&w, bytes, sizeof w);
    const Rank source = w.source;
    if (source >= setup().size) {
        base::report(Status::transport, "poll (mpi)", "run the same Sluice build on every rank",
                     "mpi: a message naming rank %u (of %u), category %u, dropped", source, setup().size, w.category);
        return;
    }
    if (w.category == common::category_ping || w.category == common::category_pong) {
        control_arrived(source, w.category);
        return;
    }
    heard(source);
    if (w.category >= category_put && w.category <= category_put_done) {
        serve_arrived(source, bytes);
    } else {
        // An AM (or a malformed message, which deliver_packed reports).
        const auto length = static_cast<std::uint32_t>(std::min(common::packed_wire_length(w), msg_max_));
        if (w.category == static_cast<std::uint8_t>(AmCategory::short_)) {
            recv_held_[index].store(1, std::memory_order_relaxed);
            ready_.push_back(Arrival{const_cast<std::byte *>(bytes), length, static_cast<std::uint32_t>(index)});
        } else {
            ready_.push_back(Arrival{copy_out(bytes, length), length});
        }
    }
}

// `n` bytes of a receive in a buffer of copies_ (given back by delivered).
std::byte *MpiTransport::copy_out(const std::byte *bytes, std::size_t n) {
    auto *copy = reinterpret_cast<std::byte *>(copies_.get());
    std::memcpy(copy, bytes, n);
    return copy;
}

// The Shorts waiting in ready_ in their receives, copied out so that the
// receives may be posted again.
void MpiTransport::spill() {
    for (std::size_t i = 0; i < ready_.size(); ++i) {
        Arrival &a = ready_[i];
        if (a.ring == Arrival::copied) continue;
        recv_held_[a.ring].store(0, std::memory_order_relaxed);
        a.bytes = copy_out(a.bytes, a.length);
        a.ring = Arrival::copied;
        ++mpi_counters_.spilled;
    }
}

// Gets are done when their request is.  Puts on the window once, their
// requests done, MPI_Win_flush of their target says they are complete
// there; Puts by messages once their target acknowledged them too.
void MpiTransport::reap_rma() {
    const int n = finished(rma_requests_, done_index_);
    if (rma_ == RmaMode::window) {
        flush_.clear();
        for (int i = 0; i < n; ++i) {
            const RmaPost &p = posts_[static_cast<std::size_t>(done_index_[i])];
            if (p.write && std::find(flush_.begin(), flush_.end(), p.peer) == flush_.end()) flush_.push_back(p.peer);
        }
        for (Rank peer : flush_) {
            ++mpi_counters_.flushes;
            if (MPI_Win_flush(mpi_rank_[peer], win_) != MPI_SUCCESS)
                base::report(Status::transport, "put (mpi)", "check that the peer is alive",
                             "mpi: MPI_Win_flush to rank %u failed: its Puts may not have landed", peer);
        }
    }
    for (int i = 0; i < n; ++i) {
        RmaPost *p = &posts_[static_cast<std::size_t>(done_index_[i])];
        p->sent = true;
        if (!p->write || !by_messages(true) || p->acked) rma_finish(p);
    }
}

void MpiTransport::rma_finish(RmaPost *p) {
    RmaOp *op = p->op;
    *p = RmaPost{};
    --rma_out_;
    ++counters_.completions;
    post_free_.give(p);
    if (op) rma_complete(op);
}

// By messages: a peer's header, answered at once by the
// receive or send on this rank's segment that its payload meets; or a
// peer's acknowledgement of a Put of this rank's.
void MpiTransport::serve_arrived(Rank origin, const std::byte *bytes) {
    RmaHeader h;
    std::memcpy(&h, bytes, sizeof h);
    if (h.head.category == category_put_done) {
        if (h.post >= posts_.size() || !posts_[h.post].write || posts_[h.post].peer != origin) {
            base::report(Status::transport, "put (mpi)", nullptr,
                         "mpi: rank %u acknowledged a Put (%u) this rank did not make it", origin, h.post);
            return;
        }
        RmaPost *p = &posts_[h.post];
        p->acked = true;
        if (p->sent) rma_finish(p);
        return;
    }
    const bool put = h.head.category == category_put;
    // The origin checked the range against this rank's segment; a header
    // outside it still meets its payload (none lands: MPI truncates into
    // nothing, or sends nothing), so that neither side waits forever.
    std::uint64_t remote = h.remote, n = h.length;
    if (remote < segment_base_ || n > segment_bytes_ || remote - segment_base_ > segment_bytes_ - n ||
        n > rma_piece_max) {
        base::report(Status::argument, put ? "put (mpi)" : "get (mpi)", nullptr,
                     "mpi: rank %u asked for %llu bytes at %p, outside this rank's segment: nothing done", origin,
                     static_cast<unsigned long long>(n), reinterpret_cast<void *>(remote));
        remote = segment_base_;
        n = 0;
    }
    if (serve_free_.empty()) {
        serve_free_.push_back(static_cast<std::uint32_t>(serves_.size()));
        serves_.emplace_back();
        serve_requests_.push_back(MPI_REQUEST_NULL);
        serve_done_.push_back(0);
    }
    const std::uint32_t index = serve_free_.back();
    void *at = reinterpret_cast<void *>(remote);
    const int count = static_cast<int>(n);
    MPI_Request &r = serve_requests_[index];
    const int rc = put ? MPI_Irecv(at, count, MPI_BYTE, mpi_rank_[origin], put_tag, comm_, &r)
                       : MPI_Isend(at, count, MPI_BYTE, mpi_rank_[origin], get_tag, comm_, &r);
    if (rc != MPI_SUCCESS) {
        base::report(Status::transport, put ? "put (mpi)" : "get (mpi)", "check that the peer is alive",
                     "mpi: %s of %d bytes for rank %u failed (MPI error %d)", put ? "MPI_Irecv" : "MPI_Isend", count,
                     origin, rc);
        return;
    }
    serve_free_.pop_back();
    serves_[index] = Serve{origin, h.post, put};
    ++serves_out_;
    ++mpi_counters_.served;
}

// The Puts and Gets served here that are done; each Put acknowledged (an
// acknowledgement without a free send buffer waits in acks_owed_ for the
// next reap).
void MpiTransport::reap_serves() {
    while (!acks_owed_.empty() && ack_send(acks_owed_.back().first, acks_owed_.back().second)) acks_owed_.pop_back();
    if (serves_out_ == 0) return;
    const int n = finished(serve_requests_, serve_done_);
    for (int i = 0; i < n; ++i) {
        const auto index = static_cast<std::uint32_t>(serve_done_[i]);
        const Serve &sv = serves_[index];
        if (sv.put && !ack_send(sv.origin, sv.post)) acks_owed_.emplace_back(sv.origin, sv.post);
        serve_free_.push_back(index);
        --serves_out_;
    }
}

// Under lock_: the acknowledgement of Put `post` to `origin`; false: no
// send buffer free now.
bool MpiTransport::ack_send(Rank origin, std::uint32_t post) {
    RmaHeader h{};
    h.head.category = category_put_done;
    h.head.source = setup().rank;
    h.post = post;
    const Status st = send_copy(origin, &h, sizeof h);
    if (st == Status::not_ready) return false;
    if (st != Status::ok)
        base::report(Status::transport, "put (mpi)", "check that the peer is alive",
                     "mpi: the acknowledgement of a Put to rank %u failed", origin);
    return true;
}

// Under lock_: a free send buffer (sends reaped first if none is), or
// null, counted as the network full.
SendBuffer *MpiTransport::send_buffer() {
    if (send_free_.empty()) reap_sends();
    if (send_free_.empty()) {
        ++counters_.full;
        return nullptr;
    }
    return send_free_.take();
}

// `n` bytes (a Put or Get header, a Put's acknowledgement) copied into a
// send buffer and sent (send_small).
Status MpiTransport::send_copy(Rank peer, const void *bytes, std::size_t n) {
    return send_small(peer, n, [&](std::byte *out) { std::memcpy(out, bytes, n); });
}

void MpiTransport::deliver_one(const Arrival &a) {
    deliver_packed("poll (mpi)", a.bytes, a.length, [&] {
        if (a.ring != Arrival::copied) recv_held_[a.ring].store(0, std::memory_order_release);
    });
}

void MpiTransport::delivered(const Arrival &a) {
    if (a.ring == Arrival::copied) copies_.put(reinterpret_cast<std::uint8_t *>(a.bytes));
}

// ---- RMA ----

// One Put or Get piece with `peer`'s segment: MPI_Rput / MPI_Rget,
// addressed by its displacement in the window, or by messages.
Status MpiTransport::rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                          bool &later) {
    later = false;
    if (n == 0) return Status::ok;
    const char *what = write ? "put (mpi)" : "get (mpi)";
    if (peer == setup().rank) {
        void *mine = reinterpret_cast<void *>(remote);
        return write ? self_rma(mine, local, n, op, later) : self_rma(local, mine, n, op, later);
    }
    if (!in_peer_segment(peer, remote, n))
        return base::report(Status::argument, what, "address the peer's segment (sluice_segment_query)",
                            "mpi: %zu bytes at %p are not in rank %u's segment", n, reinterpret_cast<void *>(remote), peer);
    Guard g(*this);
    if (!up()) return Status::transport;
    if (post_free_.empty()) reap();
    if (post_free_.empty()) {
        ++counters_.full;
        return Status::not_ready;
    }
    RmaPost *p = post_free_.take();
    *p = RmaPost{op, peer, write};
    const auto index = static_cast<std::size_t>(p - posts_.data());
    MPI_Request &r = rma_requests_[index];
    const int count = static_cast<int>(n);
    if (by_messages(write)) {
        if (const Status st = rma_messages_post(p, remote, local, count, r); st != Status::ok) {
            *p = RmaPost{};
            post_free_.give(p);
            return st;
        }
    } else {
        const auto disp = static_cast<MPI_Aint>(remote - peer_segment_base(peer));
        const int rc = write ? MPI_Rput(local, count, MPI_BYTE, mpi_rank_[peer], disp, count, MPI_BYTE, win_, &r)
                             : MPI_Rget(local, count, MPI_BYTE, mpi_rank_[peer], disp, count, MPI_BYTE, win_, &r);
        if (rc != MPI_SUCCESS) {
            *p = RmaPost{};
            post_free_.give(p);
            return base::report(Status::transport, what, "check that the peer is alive, or set SLUICE_MPI_RMA=am",
                                "mpi: %s of %zu bytes with rank %u failed (MPI error %d)", write ? "MPI_Rput" : "MPI_Rget",
                                n, peer, rc);
        }
    }
    ++rma_out_;
    ++(write ? counters_.writes : counters_.reads);
    later = true;
    return Status::ok;
}

// By messages: a Put sends its header, then its payload by
// MPI_Isend; a Get posts the receive of its payload, then sends its
// header.  Either way the header goes first on its tag and the payload's
// tag keeps the order, so the target's answer meets this payload.
Status MpiTransport::rma_messages_post(RmaPost *p, std::uint64_t remote, void *local, int count, MPI_Request &r) {
    RmaHeader h{};
    h.head.category = p->write ? category_put : category_get;
    h.head.source = setup().rank;
    h.remote = remote;
    h.length = static_cast<std::uint64_t>(count);
    h.post = static_cast<std::uint32_t>(p - posts_.data());
    const int peer = mpi_rank_[p->peer];
    const char *what = p->write ? "put (mpi)" : "get (mpi)";
    int rc;
    if (p->write) {
        if (const Status st = send_copy(p->peer, &h, sizeof h); st != Status::ok) return st;
        if ((rc = MPI_Isend(local, count, MPI_BYTE, peer, put_tag, comm_, &r)) == MPI_SUCCESS) return Status::ok;
    } else {
        if (send_free_.empty()) reap_sends();  // the header's buffer, before the receive
        if (send_free_.empty()) {
            ++counters_.full;
            return Status::not_ready;
        }
        if ((rc = MPI_Irecv(local, count, MPI_BYTE, peer, get_tag, comm_, &r)) == MPI_SUCCESS) {
            if (const Status st = send_copy(p->peer, &h, sizeof h); st == Status::ok) return st;
            MPI_Cancel(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            return Status::transport;
        }
    }
    return base::report(Status::transport, what, "check that the peer is alive, or set SLUICE_MPI_RMA=am",
                        "mpi: %s of %d bytes with rank %u failed (MPI error %d)", p->write ? "a Put's MPI_Isend" : "a Get's MPI_Irecv",
                        count, p->peer, rc);
}

// ---- the barrier ----

// MPI_Ibarrier on the conduit's communicator, polled to completion while
// the AM engine runs (capabilities().native_barrier).
Status MpiTransport::barrier_impl(bool (*poll_fn)(void *), void *context) {
    MPI_Request r = MPI_REQUEST_NULL;
    {
        Guard g(*this);
        if (!up()) return Status::transport;
        if (MPI_Ibarrier(comm_, &r) != MPI_SUCCESS)
            return base::report(Status::transport, "barrier (mpi)", nullptr, "mpi: MPI_Ibarrier failed");
    }
    for (;;) {
        int done = 0;
        {
            Guard g(*this);
            if (!up()) return Status::transport;
            if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return base::report(Status::transport, "barrier (mpi)", "check that every rank is alive",
                                    "mpi: MPI_Test of the barrier failed");
        }
        if (done) return Status::ok;
        if (!poll_fn(context)) return Status::transport;
    }
}

} // namespace sluice::conduit::mpi::detail
