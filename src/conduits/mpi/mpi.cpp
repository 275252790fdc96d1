// src/conduits/mpi/mpi.cpp - the mpi conduit's traffic: AMs as packed
// messages by MPI_Isend from a send buffer into the peer's posted
// receives, delivered from the receive buffer, which is posted again once
// the handler returned; Put and Get by MPI_Rput and MPI_Rget on the
// window over the segments, a Put complete once MPI_Win_flush says it is
// at its target; the barrier by MPI_Ibarrier.  README.md has the design.
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
// (the wrapper polls and sends again).
Status MpiTransport::send_impl(Rank peer, const AmMessage &m) {
    if (peer == setup().rank) return self_send(m);
    const std::size_t length = common::packed_length(m.header);
    if (length > msg_max_)
        return base::report(Status::argument, "send (mpi)", "raise SLUICE_MPI_MAX_MEDIUM",
                            "mpi: an AM of %zu bytes to rank %u exceeds the %zu-byte message", length, peer, msg_max_);
    const Status s = send_packed<SendBuffer>(
        m, small_send,
        [&]() -> SendBuffer * {
            if (send_free_.empty()) reap_sends();
            if (send_free_.empty()) {
                ++counters_.full;
                return nullptr;
            }
            return send_free_.take();
        },
        [&](std::byte *bytes, std::size_t n, SendBuffer *b) {
            if (b) {
                const Status st = isend(b, peer, n);
                counters_.sent += st == Status::ok;
                return st;
            }
            // Small: MPI_Send from the stack, which an eager protocol
            // completes at once (no buffer, no request to reap).
            const int rc = MPI_Send(bytes, static_cast<int>(n), MPI_BYTE, mpi_rank_[peer], am_tag, comm_);
            if (rc != MPI_SUCCESS)
                return base::report(Status::transport, "send (mpi)", "check that the peer is alive",
                                    "mpi: MPI_Send of %zu bytes to rank %u (MPI rank %d) failed (MPI error %d)", n, peer,
                                    mpi_rank_[peer], rc);
            sent_to(peer);
            ++counters_.small;
            return Status::ok;
        });
    return s;
}

// A bare ping or pong; one without a free send buffer leaves a pong owed.
void MpiTransport::control_send(Rank peer, std::uint8_t category) {
    if (peer >= mpi_rank_.size() || peer == setup().rank) return;
    if (send_free_.empty()) reap_sends();
    SendBuffer *b = send_free_.take();
    if (category == common::category_pong) life_[peer].pong_owed = b == nullptr;
    if (!b) return;
    common::PackedHead w{};
    w.category = category;
    w.source = setup().rank;
    std::memcpy(b->bytes, &w, sizeof w);
    (void)isend(b, peer, sizeof w);
}

// ---- completions and arrivals ----

// Sends are reaped when a quarter of the buffers is out, and every 64th
// poll (so that quiesce sees them done): an MPI_Testsome costs an MPI
// progress call, which a round trip pays on every poll otherwise.
void MpiTransport::reap() {
    if (sends_out_ * 4 >= sends_.size() || (++polls_ & 63) == 0) reap_sends();
    reap_arrivals();
    if (rma_out_) reap_rma();
}

void MpiTransport::reap_sends() {
    if (sends_out_ == 0) return;
    int n = 0;
    if (MPI_Testsome(static_cast<int>(send_requests_.size()), send_requests_.data(), &n, done_index_.data(),
                     MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        n == MPI_UNDEFINED)
        return;
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
// ones behind it, which MPI_Test's progress moves meanwhile).  Each names
// its sender (a rank of the conduit's communicator); control messages are
// answered here, AMs copied out into the ready queue; either way the
// receive is posted again at once, becoming the newest.
void MpiTransport::reap_arrivals() {
    for (std::size_t taken = 0; taken < recv_requests_.size(); ++taken) {
        const std::size_t index = recv_head_;
        MPI_Request &r = recv_requests_[index];
        if (!recv_active_[index]) return;  // its restart failed, reported: the ring stops there
        int done = 0;
        MPI_Status st{};
        const int rc = MPI_Test(&r, &done, &st);
        if (rc != MPI_SUCCESS) {
            base::report(Status::transport, "poll (mpi)", nullptr,
                         "mpi: MPI_Test of a posted receive failed (MPI error %d)", rc);
            return;
        }
        if (!done) return;
        recv_active_[index] = false;
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        const int from = st.MPI_SOURCE;
        const Rank source = from >= 0 && static_cast<std::size_t>(from) < sluice_rank_.size() ? sluice_rank_[from]
                                                                                              : setup().size;
        ++counters_.received;
        const auto *bytes = reinterpret_cast<const std::byte *>(recv_words_.get() + index * (msg_max_ / 8));
        common::PackedHead w{};
        if (count >= static_cast<int>(sizeof w)) std::memcpy(&w, bytes, sizeof w);
        if (source < setup().size && (w.category == common::category_ping || w.category == common::category_pong)) {
            control_arrived(source, w.category);
        } else {
            if (source < setup().size) heard(source);
            auto *copy = reinterpret_cast<std::byte *>(copies_.get());
            std::memcpy(copy, bytes, static_cast<std::size_t>(count));
            ready_.push_back(Arrival{copy, static_cast<std::uint32_t>(count), source});
        }
        const int restart = MPI_Start(&r);
        recv_active_[index] = restart == MPI_SUCCESS;
        if (restart != MPI_SUCCESS)
            base::report(Status::transport, "poll (mpi)", "lower SLUICE_MPI_RECVS or SLUICE_MPI_MAX_MEDIUM",
                         "mpi: MPI_Start of a posted receive failed (MPI error %d): no message will arrive here",
                         restart);
        recv_head_ = (recv_head_ + 1) % recv_requests_.size();
    }
}

// Gets are done when their request is; Puts once, their requests done,
// MPI_Win_flush of their target says they are complete there.
void MpiTransport::reap_rma() {
    int n = 0;
    if (MPI_Testsome(static_cast<int>(rma_requests_.size()), rma_requests_.data(), &n, done_index_.data(),
                     MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        n == MPI_UNDEFINED)
        return;
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
    for (int i = 0; i < n; ++i) {
        RmaPost *p = &posts_[static_cast<std::size_t>(done_index_[i])];
        RmaOp *op = p->op;
        p->op = nullptr;
        --rma_out_;
        ++counters_.completions;
        post_free_.give(p);
        if (op) rma_complete(op);
    }
}

void MpiTransport::deliver_one(const Arrival &a) { deliver_packed("poll (mpi)", a.bytes, a.length); }

void MpiTransport::delivered(const Arrival &a) { copies_.put(reinterpret_cast<std::uint8_t *>(a.bytes)); }

// ---- RMA ----

// One Put or Get piece by MPI_Rput / MPI_Rget into `peer`'s segment,
// addressed by its displacement in the window.
Status MpiTransport::rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                          bool &later) {
    later = false;
    if (n == 0) return Status::ok;
    const char *what = write ? "put (mpi)" : "get (mpi)";
    if (peer == setup().rank) {
        void *mine = reinterpret_cast<void *>(remote);
        return write ? self_rma(mine, local, n, op, later) : self_rma(local, mine, n, op, later);
    }
    if (remote < peer_base_[peer] || n > peer_size_[peer] || remote - peer_base_[peer] > peer_size_[peer] - n)
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
    const auto index = static_cast<std::size_t>(p - posts_.data());
    const auto disp = static_cast<MPI_Aint>(remote - peer_base_[peer]);
    const int count = static_cast<int>(n);
    const int rc = write ? MPI_Rput(local, count, MPI_BYTE, mpi_rank_[peer], disp, count, MPI_BYTE, win_, &rma_requests_[index])
                         : MPI_Rget(local, count, MPI_BYTE, mpi_rank_[peer], disp, count, MPI_BYTE, win_, &rma_requests_[index]);
    if (rc != MPI_SUCCESS) {
        post_free_.give(p);
        return base::report(Status::transport, what, "set SLUICE_MPI_RMA=0 (Put and Get over AMs)",
                            "mpi: %s of %zu bytes with rank %u failed (MPI error %d)", write ? "MPI_Rput" : "MPI_Rget", n,
                            peer, rc);
    }
    p->op = op;
    p->peer = peer;
    p->write = write;
    ++rma_out_;
    ++(write ? counters_.writes : counters_.reads);
    later = true;
    return Status::ok;
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
