// src/conduits/ofi/ofi.cpp - the ofi conduit's traffic: AMs by fi_inject
// (small) or fi_send from a send buffer (up to the eager limit, packed
// Longs included), received into multi-receive buffers; Put and Get as
// fi_write and fi_read straight between the registered segment and the
// caller's buffer, cut at the provider's largest message; NIC atomics for
// atomic domains; completions reaped from one completion queue on every
// poll.  README.md has the
// design.
#include "conduits/ofi/ofi_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <poll.h>
#include <cstring>

namespace sluice::conduit::ofi::detail {

Status OfiTransport::fatal(const char *op, Rank peer, int error, const char *what) {
    return base::report(Status::transport, op, "check that the peer is alive and reachable over this provider",
                        "ofi (%s): %s, rank %u: %s", provider_.c_str(), what, peer, fab().strerror(error < 0 ? -error : error));
}

// ---- sends ----

Status OfiTransport::send_impl(Rank peer, const AmMessage &m) {
    return send_packed<SendBuffer>(
        m, inject_limit_,
        [&] {
            if (send_free_.empty()) reap();
            return send_free_.take();
        },
        [&](std::byte *bytes, std::size_t length, SendBuffer *b) {
            stamp(peer, bytes);
            const ssize_t r =
                b ? fi_send(ep_, bytes, length, send_mr_ ? fi_mr_desc(send_mr_) : nullptr, addr_[peer], &b->fi)
                  : fi_inject(ep_, bytes, length, addr_[peer]);
            if (__builtin_expect(r == 0, 1)) {
                ++(b ? counters_.sent : counters_.small);
                if (b) b->peer = peer;
                if (++posts_since_reap_ >= reap_every_) reap();
                return Status::ok;
            }
            this->peer(peer).order.unsend();
            if (b) send_free_.give(b);
            if (r != -FI_EAGAIN)
                return fatal("send (ofi)", peer, static_cast<int>(r), b ? "fi_send failed" : "fi_inject failed");
            ++counters_.full;
            reap();
            return Status::not_ready;
        });
}

// The message's sequence number, taken under the lock in posting order.
std::uint16_t OfiTransport::stamp(Rank peer, std::byte *message) {
    sent_to(peer);
    const std::uint16_t seq = this->peer(peer).order.next_send();
    std::memcpy(message + offsetof(WireHead, seq), &seq, sizeof seq);
    return seq;
}

// ---- completions ----

// Queues an arrival for delivery in its sender's order (PeerOrder).
// False for a control message, handled here.
bool OfiTransport::arrived(const Arrival &a) {
    WireHead w;
    if (a.length < sizeof w) {
        ready_.push_back(a);  // deliver_packed reports it
        return true;
    }
    std::memcpy(&w, a.bytes, sizeof w);
    if (w.source >= peers_.size()) {
        ready_.push_back(a);
        return true;
    }
    if (w.category == common::category_ping || w.category == common::category_pong) {
        control_arrived(w.source, w.category);
        return false;
    }
    heard(w.source);
    Peer &p = peer(w.source);
    if (w.category == category_greet || w.category == category_greet_answer) {
        if (w.category == category_greet) {
            p.greeted = true;
            control_send(w.source, category_greet_answer);
        } else {
            p.greet_answered = true;
        }
        return false;
    }
    if (!p.order.arrived(a, w.seq, 0, ready_)) ++counters_.held;
    return true;
}

// A control message: a bare header, injected (a provider without inject
// room leaves it owed until the next liveness check, or the greeting loop).
void OfiTransport::control_send(Rank peer, std::uint8_t category) {
    WireHead w{};
    w.category = category;
    w.source = setup().rank;
    const ssize_t r = inject_limit_ >= sizeof w ? fi_inject(ep_, &w, sizeof w, addr_[peer]) : -FI_EAGAIN;
    if (category == common::category_pong) life(peer).pong_owed = r != 0;
    if (category == category_greet) this->peer(peer).greet_owed = r != 0;
    if (category == category_greet_answer) this->peer(peer).answer_owed = r != 0;
}

std::string OfiTransport::path(Rank) const { return provider_ + ", domain " + domain_name_; }

void OfiTransport::repost(RecvBuffer *b) {
    iovec iov{b->bytes, b->size};
    void *desc = b->mr ? fi_mr_desc(b->mr) : nullptr;
    fi_msg msg{};
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.addr = FI_ADDR_UNSPEC;
    msg.context = &b->fi;
    const ssize_t r = fi_recvmsg(ep_, &msg, multi_recv_ ? FI_MULTI_RECV : 0);
    if (r == 0) {
        b->posted = true;
        posted_.push_back(b);
        return;
    }
    // Not posted: reap() tries again while any buffer waits.
    ++unposted_;
    if (r != -FI_EAGAIN) (void)fatal("poll (ofi)", setup().rank, static_cast<int>(r), "posting a receive buffer failed");
}

// The provider is done with `b`: it is posted again once every message in
// it was delivered.
void OfiTransport::release(RecvBuffer *b) {
    if (!b->posted) return;
    b->posted = false;
    for (auto it = posted_.begin(); it != posted_.end(); ++it)
        if (*it == b) {
            posted_.erase(it);
            break;
        }
    if (b->pending == 0) repost(b);
}

void OfiTransport::reap() {
    posts_since_reap_ = 0;
    if (__builtin_expect(unposted_ != 0, 0)) {
        unposted_ = 0;
        for (auto &b : recv_)
            if (!b->posted && b->pending == 0) repost(b.get());
    }
    fi_cq_data_entry e[cq_batch];
    for (;;) {
        const ssize_t n = fi_cq_read(cq_, e, cq_batch);
        if (n == -FI_EAGAIN) break;
        if (n == -FI_EAVAIL) {
            reap_error();
            continue;
        }
        if (n < 0) {
            (void)fatal("poll (ofi)", setup().rank, static_cast<int>(n), "reading the completion queue failed");
            break;
        }
        counters_.completions += static_cast<std::uint64_t>(n);
        for (ssize_t i = 0; i < n; ++i) {
            if (e[i].flags & FI_RECV) {
                auto *b = static_cast<RecvBuffer *>(static_cast<Context *>(e[i].op_context));
                // In order: a message in a later buffer means the provider
                // is done with the ones posted before it.
                while (in_order_receives_ && b->posted && posted_.front() != b) release(posted_.front());
                if (e[i].len && arrived(Arrival{static_cast<const std::byte *>(e[i].buf), e[i].len, b})) {
                    ++b->pending;
                    ++counters_.received;
                }
                // Released: the flag, or (in order) less than the minimum
                // left after this message.
                if (!multi_recv_ || (e[i].flags & FI_MULTI_RECV) ||
                    (in_order_receives_ && e[i].len &&
                     b->size - (static_cast<const std::byte *>(e[i].buf) - b->bytes) - e[i].len < min_free_))
                    release(b);
                continue;
            }
            auto *c = static_cast<Context *>(e[i].op_context);
            if (c->tag == Tag::send) {
                send_free_.give(static_cast<SendBuffer *>(c));
            } else if (c->tag == Tag::rma) {
                rma_done(static_cast<RmaPost *>(c));
            } else if (c->tag == Tag::atomic) {
                --rma_outstanding_;
                atomic_.done(static_cast<AtomicSlot *>(c), true);
            }
        }
        if (n < static_cast<ssize_t>(cq_batch)) break;
    }
}

void OfiTransport::rma_done(RmaPost *p) {
    --rma_outstanding_;
    rma_complete(p->op);
}

void OfiTransport::reap_error() {
    fi_cq_err_entry err{};
    if (fi_cq_readerr(cq_, &err, 0) <= 0) return;
    char text[256];
    const char *detail = fi_cq_strerror(cq_, err.prov_errno, err.err_data, text, sizeof text);
    auto *c = static_cast<Context *>(err.op_context);
    if (err.flags & FI_RECV) {
        auto *b = static_cast<RecvBuffer *>(c);
        base::report(Status::transport, "poll (ofi)", "this is a Sluice bug or a provider fault",
                     "ofi (%s): a receive failed: %s (%s)", provider_.c_str(), fab().strerror(err.err), detail ? detail : "");
        if (err.flags & FI_MULTI_RECV) release(b);
        return;
    }
    if (!c) return;
    if (c->tag == Tag::send) {
        auto *b = static_cast<SendBuffer *>(c);
        base::report(Status::transport, "send (ofi)", "check that the peer is alive and reachable over this provider",
                     "ofi (%s): an AM to rank %u was not delivered: %s (%s)", provider_.c_str(), b->peer,
                     fab().strerror(err.err), detail ? detail : "");
        send_free_.give(b);
    } else if (c->tag == Tag::rma) {
        auto *p = static_cast<RmaPost *>(c);
        // Reported, then completed: the caller must not wait for ever.
        base::report(Status::transport, p->write ? "put (ofi)" : "get (ofi)",
                     "check that the peer is alive and that the address lies in its segment",
                     "ofi (%s): %s of %zu bytes with rank %u failed: %s (%s)", provider_.c_str(),
                     p->write ? "fi_write" : "fi_read", p->n, p->peer, fab().strerror(err.err), detail ? detail : "");
        rma_done(p);
    } else if (c->tag == Tag::atomic) {
        base::report(Status::transport, "atomic (ofi)", "check that the peer is alive and the word lies in its segment",
                     "ofi (%s): an atomic failed: %s (%s)", provider_.c_str(), fab().strerror(err.err),
                     detail ? detail : "");
        --rma_outstanding_;
        atomic_.done(static_cast<AtomicSlot *>(c), false);
    }
}

// ---- delivery ----

void OfiTransport::deliver_one(const Arrival &a) { deliver_packed("poll (ofi)", a.bytes, a.length); }

void OfiTransport::delivered(const Arrival &a) {
    if (--a.buffer->pending == 0 && !a.buffer->posted) repost(a.buffer);
}

// Everything posted leaves before finalize goes on: with manual progress a
// message still queued in the provider moves only while someone polls.
bool OfiTransport::idle() {
    return send_free_.size() == send_.size() && rma_outstanding_ == 0;
}

// ---- the receive thread ----

// What the receive thread sleeps on: the completion queue's wait
// descriptor once fi_trywait says nothing is pending (at most 100 ms, to
// notice a stop), or, without one, the layer's timer (common::receive_nap).
void OfiTransport::receive_wait() {
    if (wait_fd_ < 0) return RdmaConduit::receive_wait();
    fid *f = &cq_->fid;
    int r;
    {
        Guard g(*this);
        r = ep_ ? fi_trywait(fabric_, &f, 1) : -FI_EAGAIN;
    }
    if (r == FI_SUCCESS) {
        pollfd p{wait_fd_, POLLIN, 0};
        (void)::poll(&p, 1, 100);
    }
}

// Block mode: the same descriptor, armed by fi_trywait.
bool OfiTransport::wake_arm(WakeSet &w) {
    if (wait_fd_ < 0) return RdmaConduit::wake_arm(w);
    fid *f = &cq_->fid;
    {
        Guard g(*this);
        if (!ep_) return RdmaConduit::wake_arm(w);
        if (fi_trywait(fabric_, &f, 1) != FI_SUCCESS) return false;
    }
    w.add(wait_fd_);
    return true;
}

// ---- RDMA ----

// One fi_writemsg or fi_readmsg of at most rma_chunk_ bytes (the wrapper
// cuts larger transfers: Capabilities::rma_piece).
Status OfiTransport::rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                          bool &later) {
    later = false;
    if (n == 0) return Status::ok;
    const char *what = write ? "put (ofi)" : "get (ofi)";
    void *desc = nullptr;
    if (mr_.local) {
        const std::uint64_t handle = local_handle(op);
        if (!handle)
            return base::report(Status::argument, what, "use a buffer in the segment, or a build with firehose registration",
                                "ofi (%s): the local buffer %p (%zu bytes) is not registered, and the provider needs it "
                                "(FI_MR_LOCAL)",
                                provider_.c_str(), local, n);
        desc = fi_mr_desc(reinterpret_cast<fid_mr *>(handle));
    }
    std::uint64_t key;
    if (!remote_key(op, key)) key = peer_key_[peer];
    auto *p = new (rma_context(op)) RmaPost;
    p->tag = Tag::rma;
    p->op = op;
    p->peer = peer;
    p->write = write;
    p->n = n;
    iovec iov{local, n};
    fi_rma_iov rma{remote, n, key};
    fi_msg_rma msg{};
    msg.msg_iov = &iov;
    msg.desc = &desc;
    msg.iov_count = 1;
    msg.rma_iov = &rma;
    msg.rma_iov_count = 1;
    msg.context = &p->fi;
    Guard guard(*this);
    if (!ep_) return Status::transport;
    if (rma_outstanding_ >= tx_depth_ || posts_since_reap_ >= reap_every_) reap();
    if (rma_outstanding_ >= tx_depth_) return Status::not_ready;
    msg.addr = addr_[peer];
    const ssize_t r = write ? fi_writemsg(ep_, &msg, FI_COMPLETION | (delivery_complete_ ? FI_DELIVERY_COMPLETE : 0))
                            : fi_readmsg(ep_, &msg, FI_COMPLETION);
    if (r == -FI_EAGAIN) {
        ++counters_.full;
        return Status::not_ready;
    }
    if (r != 0) return fatal(what, peer, static_cast<int>(r), write ? "fi_write failed" : "fi_read failed");
    ++rma_outstanding_;
    ++posts_since_reap_;
    ++(write ? counters_.writes : counters_.reads);
    later = true;
    return Status::ok;
}

// ---- NIC atomics ----

namespace {

fi_datatype fi_type(sluice_dt_t t) {
    switch (t) {
    case SLUICE_DT_I32: return FI_INT32;
    case SLUICE_DT_U32: return FI_UINT32;
    case SLUICE_DT_I64: return FI_INT64;
    case SLUICE_DT_U64: return FI_UINT64;
    case SLUICE_DT_FLT: return FI_FLOAT;
    default: return FI_DOUBLE;
    }
}

// The libfabric operation behind each of ours: every one goes as a fetching
// atomic (its completion means it was applied at the target), CAS as a
// compare atomic; sub, inc and dec are sums of the negated operand or +-1.
fi_op fi_operation(unsigned op) {
    switch (op) {
    case SLUICE_OP_SET: case SLUICE_OP_SWAP: return FI_ATOMIC_WRITE;
    case SLUICE_OP_GET: return FI_ATOMIC_READ;
    case SLUICE_OP_CAS: case SLUICE_OP_FCAS: return FI_CSWAP;
    case SLUICE_OP_MULT: case SLUICE_OP_FMULT: return FI_PROD;
    case SLUICE_OP_MIN: case SLUICE_OP_FMIN: return FI_MIN;
    case SLUICE_OP_MAX: case SLUICE_OP_FMAX: return FI_MAX;
    case SLUICE_OP_AND: case SLUICE_OP_FAND: return FI_BAND;
    case SLUICE_OP_OR: case SLUICE_OP_FOR: return FI_BOR;
    case SLUICE_OP_XOR: case SLUICE_OP_FXOR: return FI_BXOR;
    default: return FI_SUM;  // add, sub, inc, dec
    }
}

} // namespace

std::string OfiTransport::nic_atomics_support(sluice_dt_t type, std::uint64_t ops) {
    if (!atomics_off_.empty()) return atomics_off_;
    if (!atomics_) return "provider " + provider_ + " took no FI_ATOMIC on domain " + domain_name_;
    Guard g(*this);
    if (!domain_) return "the conduit is closed";
    for (unsigned op = 0; op < SLUICE_OP_COUNT_; ++op) {
        if (!(ops & SLUICE_AOP_BIT(op))) continue;
        const fi_op fop = fi_operation(op);
        fi_atomic_attr attr{};
        const std::uint64_t flags = fop == FI_CSWAP ? FI_COMPARE_ATOMIC : FI_FETCH_ATOMIC;
        const fi_datatype dt = fi_type(type);
        if (fi_query_atomic(domain_, dt, fop, &attr, flags) != 0 || attr.count < 1) {
            std::string why = "provider " + provider_ + " has no ";
            why += fab().tostr(&fop, FI_TYPE_ATOMIC_OP);  // a static buffer: one at a time
            why += " on ";
            why += fab().tostr(&dt, FI_TYPE_ATOMIC_TYPE);
            return why;
        }
    }
    return "";
}

Status OfiTransport::atomics_create() {
    atomic_.create([](AtomicSlot &s) { s.tag = Tag::atomic; });
    if (!mr_.local) return Status::ok;
    const Status s = register_raw(atomic_.base(), atomic_.bytes(), FI_READ | FI_WRITE, next_key_++, atomic_mr_,
                                  "atomic operands");
    if (s != Status::ok) atomic_.clear();  // reported; the next atomic tries again
    return s;
}

Status OfiTransport::atomic_post(AtomicSlot *slot, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type,
                                 std::uint64_t op1, std::uint64_t op2) {
    const Rank peer = slot->peer;
    const fi_op fop = fi_operation(op);
    slot->operand = fop == FI_SUM ? nic_sum_operand(op, type, op1) : fop == FI_CSWAP ? op2 : op1;
    slot->compare = op1;
    void *desc = atomic_mr_ ? fi_mr_desc(atomic_mr_) : nullptr;
    const std::uint64_t address = mr_.virt_addr ? remote : remote - atomic_base_[peer];
    ssize_t r;
    if (fop == FI_CSWAP)
        r = fi_compare_atomic(ep_, &slot->operand, 1, desc, &slot->compare, desc, &slot->fetched, desc, addr_[peer],
                              address, peer_key_[peer], fi_type(type), fop, &slot->fi);
    else
        r = fi_fetch_atomic(ep_, &slot->operand, 1, desc, &slot->fetched, desc, addr_[peer], address, peer_key_[peer],
                            fi_type(type), fop, &slot->fi);
    if (r == -FI_EAGAIN) {
        ++counters_.full;
        return Status::not_ready;
    }
    if (r != 0) return fatal("atomic (ofi)", peer, static_cast<int>(r), "fi_fetch_atomic/fi_compare_atomic failed");
    ++counters_.atomics;
    ++rma_outstanding_;
    ++posts_since_reap_;
    return Status::ok;
}

} // namespace sluice::conduit::ofi::detail
