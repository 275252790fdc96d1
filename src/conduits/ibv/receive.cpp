// src/conduits/ibv/receive.cpp - the ibv conduit's arrivals: the receive
// and send completion queues polled (SLUICE_RCV_THREAD_POLL_MODE), each
// arrival held in its receive buffer while a spare takes its place or
// copied out (SLUICE_RBUF_SPARES), delivery, and the receive thread's
// sleep on the receive CQs' channel.  README.md has the design.
#include "conduits/ibv/ibv_transport.hpp"

#include <poll.h>

#include <cstring>

namespace sluice::conduit::ibv::detail {
namespace {

// The receive thread (receive_wait runs on it and on no other thread).
thread_local bool on_receive_thread = false;

} // namespace

void IbvTransport::repost(Buffer *b) {
    const unsigned rail = use_srq_ ? 0 : am_rail(b->peer);
    const Hca &h = use_srq_ ? hcas_[b->hca] : hca_of(rail);
    ibv_sge sge{reinterpret_cast<std::uint64_t>(b->bytes), static_cast<std::uint32_t>(buffer_size_ + head_room),
                h.pool_mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id(b, Wr::recv);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    const int r = use_srq_ ? ibv_post_srq_recv(h.srq, &wr, &bad) : ibv_post_recv(peer(b->peer).qp[rail], &wr, &bad);
    if (r != 0) (void)fatal("poll (ibv)", b->peer, "posting a receive buffer failed", r);
}

void IbvTransport::reap_cq(ibv_cq *cq) {
    ibv_wc wc[cq_batch];
    for (;;) {
        const int n = ibv_poll_cq(cq, cq_batch, wc);
        if (n < 0) {
            (void)fatal("poll (ibv)", setup().rank, "ibv_poll_cq failed", -n);
            return;
        }
        counters_.completions += static_cast<std::uint64_t>(n);
        for (int i = 0; i < n; ++i) completion(wc[i]);
        if (n < cq_batch) return;
    }
}

// GASNet-EX's receive-thread poll modes, on the lock every poll takes (its
// serialization): serialized, every polling thread takes arrivals;
// exclusive, while the receive thread runs, only it does, and the others
// take their sends' completions alone.
void IbvTransport::reap() {
    const bool arrivals = on_receive_thread || !exclusive_ || !rcv_polling_.load(std::memory_order_relaxed);
    for (Hca &h : hcas_) {
        reap_cq(h.send_cq);
        if (arrivals) reap_cq(h.recv_cq);
    }
}

// GASNet-EX's spare receive buffers (GASNET_RBUF_SPARES; its README's
// flow-control section): a spare is posted in place of the buffer `b`, which
// keeps the message until its handler ran; with none free the message is
// copied out and `b` posted again at once.  Either way the receive queue
// stays full.
void IbvTransport::arrived(Buffer *b, std::size_t length) {
    ++counters_.received;
    if (on_receive_thread) ++ibv_counters_.reaped_thread;
    else if (rcv_polling_.load(std::memory_order_relaxed)) ++ibv_counters_.reaped_other;
    if (Buffer *spare = spare_free_.take()) {
        spare->peer = b->peer;
        spare->hca = b->hca;
        repost(spare);
        ++ibv_counters_.in_place;
        ibv_counters_.spares_peak = std::max<std::uint64_t>(ibv_counters_.spares_peak, spare_count_ - spare_free_.size());
        ready_.push_back(Arrival{b, length, nullptr});
        return;
    }
    if (copy_free_.empty()) {
        copies_.push_back(std::make_unique<std::byte[]>(buffer_size_ + head_room));
        copy_free_.push_back(copies_.back().get());
    }
    std::byte *copy = copy_free_.back();
    copy_free_.pop_back();
    std::memcpy(copy, b->bytes, length);
    repost(b);
    ++ibv_counters_.copied;
    ready_.push_back(Arrival{nullptr, length, copy});
}

void IbvTransport::deliver_one(const Arrival &a) {
    deliver_packed("poll (ibv)", a.copy ? a.copy : a.buffer->bytes, a.length);
}

// The message's buffer becomes a spare, or its copy is free again.
void IbvTransport::delivered(const Arrival &a) {
    if (a.copy) copy_free_.push_back(a.copy);
    else spare_free_.give(a.buffer);
}

// At close, under lock_, when nothing is delivered any more.
void IbvTransport::copies_free() {
    ready_.clear();
    copy_free_.clear();
    copies_.clear();
}

// ---- block mode ----

// Arms both CQs of every HCA and reaps once more: a completion that came
// before the arming raises no event, so one reaped here means work (the
// caller polls instead of sleeping); after it, any completion wakes the
// channel.  While a dynamic connection waits to be retried, or its RTU
// to be sent again, nap.
bool IbvTransport::wake_arm(WakeSet &w) {
    if (!wake_channels_) return RdmaConduit::wake_arm(w);
    {
        Guard g(*this);
        if (!up_) return true;
        if (!conn_pending_.empty() || !conn_rtu_owed_.empty()) return RdmaConduit::wake_arm(w);
        for (Hca &h : hcas_) {
            (void)ibv_req_notify_cq(h.send_cq, 0);
            (void)ibv_req_notify_cq(h.recv_cq, 0);
        }
        const std::uint64_t before = counters_.completions;
        reap();
        if (counters_.completions != before || !ready_.empty()) return false;
    }
    for (const Hca &h : hcas_) w.add(h.channel->fd);
    return true;
}

// Takes (and acknowledges) the events that woke the sleeper, so the
// channels are quiet until the next arming.
void IbvTransport::wake_finish_impl() {
    if (!wake_channels_) return;
    Guard g(*this);
    if (!up_) return;
    for (Hca &h : hcas_) {
        ibv_cq *cq = nullptr;
        void *context = nullptr;
        while (ibv_get_cq_event(h.channel, &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
    }
}

// ---- the receive thread ----

void channel_wait(ibv_comp_channel *const *channels, std::size_t n) {
    pollfd p[max_hcas];
    for (std::size_t i = 0; i < n; ++i) p[i] = pollfd{channels[i]->fd, POLLIN, 0};
    if (::poll(p, static_cast<nfds_t>(n), 100) <= 0) return;
    for (std::size_t i = 0; i < n; ++i) {
        ibv_cq *cq = nullptr;
        void *context = nullptr;
        if ((p[i].revents & POLLIN) && ibv_get_cq_event(channels[i], &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
    }
}

// Sleeps until a receive CQ's channel has an event (at most 100 ms, to
// notice a stop), takes it and arms the CQs again before the poll that
// follows: a completion after the arming raises the next event, one before
// it is reaped by that poll.  From its first sleep the thread is the one
// that polls arrivals under SLUICE_RCV_THREAD_POLL_MODE=exclusive.
void IbvTransport::receive_wait() {
    if (!on_receive_thread) {
        on_receive_thread = true;
        Guard g(*this);  // a poll's reap sees one mode from start to end
        rcv_polling_.store(true, std::memory_order_relaxed);
    }
    ibv_comp_channel *channels[max_hcas];
    for (std::size_t h = 0; h < hcas_.size(); ++h) channels[h] = hcas_[h].channel;
    channel_wait(channels, hcas_.size());
    Guard g(*this);
    if (up_)
        for (Hca &h : hcas_) (void)ibv_req_notify_cq(h.recv_cq, 0);
}

} // namespace sluice::conduit::ibv::detail
