// src/conduits/ibv/atomics.cpp - NIC atomics (conduits/nic_atomics.hpp) for
// atomic domains of 64-bit integers: the verbs' two atomics,
// IBV_WR_ATOMIC_FETCH_AND_ADD (add, sub as the negated operand, inc, dec,
// and get as an add of 0) and IBV_WR_ATOMIC_CMP_AND_SWP (cas), on rail 0;
// every other operation is a compare-and-swap loop driven from the
// completions: read the word by an add of 0, then swap in the new value
// until the compare holds.  Every atomic on a rank's words goes through its
// rail-0 HCA (a peer's rail 0 leads there, and a queue pair of its own
// connected to another carries the rank's own), so IBV_ATOMIC_HCA is enough.
#include "conduits/ibv/ibv_transport.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "base/status.hpp"

#include <cstring>
#include <string>

namespace sluice::conduit::ibv::detail {

namespace {

enum class Verb { add, cas, loop };

Verb verb_of(sluice_aop_t op) {
    switch (op) {
    case SLUICE_OP_GET: case SLUICE_OP_ADD: case SLUICE_OP_FADD: case SLUICE_OP_SUB: case SLUICE_OP_FSUB:
    case SLUICE_OP_INC: case SLUICE_OP_FINC: case SLUICE_OP_DEC: case SLUICE_OP_FDEC: return Verb::add;
    case SLUICE_OP_CAS: case SLUICE_OP_FCAS: return Verb::cas;
    default: return Verb::loop;
    }
}

const char *atomic_fix(ibv_wc_status st) {
    if (st == IBV_WC_REM_ACCESS_ERR)
        return "check that the word lies in the peer's segment (registered by ibv, not on demand)";
    if (st == IBV_WC_REM_INV_REQ_ERR) return "check that the word is 8-byte aligned";
    return "check that the peer is alive and reachable from this port";
}

} // namespace

// SLUICE_IBV_ATOMICS (auto or 0) and every HCA's atomic_cap decide, once.
Status IbvTransport::atomics_setup() {
    if (base::knob_string(knob(Knob::IBV_ATOMICS)) == "0") {
        atomics_off_ = "SLUICE_IBV_ATOMICS=0";
        return Status::ok;
    }
    for (const Hca &h : hcas_)
        if (h.attr.atomic_cap == IBV_ATOMIC_NONE) {
            atomics_off_ = "HCA " + h.name + " has no atomics (atomic_cap IBV_ATOMIC_NONE)";
            return Status::ok;
        }
    return Status::ok;
}

std::string IbvTransport::nic_atomics_support(sluice_dt_t type, std::uint64_t) {
    if (!atomics_off_.empty()) return atomics_off_;
    if (type == SLUICE_DT_I32 || type == SLUICE_DT_U32)
        return "verbs atomics act on 8 bytes: a 32-bit word's would rewrite its neighbour";
    if (type != SLUICE_DT_I64 && type != SLUICE_DT_U64)
        return "verbs atomics add integers: a floating-point add would be a compare-and-swap loop of two round "
               "trips or more, the AM path takes one";
    return "";  // every operation: an add, a compare-and-swap, or a loop of them
}

// The slots, registered with rail 0's HCA, and the queue pairs that carry
// this rank's atomics on its own words (connected to each other).
Status IbvTransport::atomics_create() {
    const Rank me = setup().rank;
    atomic_.create([](AtomicSlot &) {});
    Status s = register_raw(hca_of(0).pd, atomic_.base(), atomic_.bytes(), IBV_ACCESS_LOCAL_WRITE, atomic_mr_,
                            "atomic operands");
    for (unsigned i = 0; i < 2 && s == Status::ok; ++i) s = qp_new(me, 0, 0, loop_qp_[i]);
    const RailAddress here = rail_address(0);
    for (unsigned i = 0; i < 2 && s == Status::ok; ++i) s = qp_ready(loop_qp_[i], me, 0, here, loop_qp_[1 - i]->qp_num);
    if (s != Status::ok) {  // reported; the next atomic tries again
        for (ibv_qp *&qp : loop_qp_) {
            if (qp) ibv_destroy_qp(qp);
            qp = nullptr;
        }
        mr_release(atomic_mr_);
        atomic_.clear();
    }
    return s;
}

Status IbvTransport::atomic_post(AtomicSlot *s, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type,
                                 std::uint64_t op1, std::uint64_t op2) {
    const std::uint64_t key = peer_rkey_[s->peer] >> (32 * rails_[0].hca);
    if (static_cast<std::uint32_t>(key) == 0)
        return base::report(Status::segment, "atomic (ibv)", "attach the segment on every rank before atomics",
                            "ibv: rank %u published no key for its segment", s->peer);
    s->remote = remote;
    s->rkey = static_cast<std::uint32_t>(key);
    s->op = op;
    s->type = type;
    s->operand = op1;
    s->swapping = false;
    const Verb verb = verb_of(op);
    s->loop = verb == Verb::loop;
    const std::uint64_t add = s->loop ? 0 : nic_sum_operand(op, type, op1);
    return verb == Verb::cas ? atomic_verb(s, IBV_WR_ATOMIC_CMP_AND_SWP, op1, op2)
                             : atomic_verb(s, IBV_WR_ATOMIC_FETCH_AND_ADD, add, 0);
}

Status IbvTransport::atomic_verb(AtomicSlot *s, ibv_wr_opcode opcode, std::uint64_t compare_add,
                                 std::uint64_t swap) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(&s->fetched), sizeof s->fetched, atomic_mr_->lkey};
    ibv_send_wr wr = signaled_wr(wr_id(s, Wr::atomic), &sge, opcode);
    wr.wr.atomic.remote_addr = s->remote;
    wr.wr.atomic.rkey = s->rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap = swap;
    ibv_qp *qp = s->peer == setup().rank ? loop_qp_[0] : peer(s->peer).qp[0];
    ibv_send_wr *bad = nullptr;
    if (const int r = ibv_post_send(qp, &wr, &bad); r != 0)
        return fatal("atomic (ibv)", s->peer,
                     opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? "posting a compare-and-swap failed"
                                                         : "posting a fetch-and-add failed",
                     r);
    depth_posted(atomic_posted(s->peer));
    ++rma_outstanding_;
    ++counters_.atomics;
    if (s->peer != setup().rank) peer(s->peer).used = true;
    return Status::ok;
}

// A loop's step: the word was `fetched`; if the compare-and-swap in flight
// found what it expected, it applied the operation; else it swaps again
// from the value it found.  A step that would not change the word is done.
void IbvTransport::atomic_completion(const ibv_wc &c) {
    AtomicSlot *s = wr_pointer<AtomicSlot>(c.wr_id);
    depth_completed(atomic_posted(s->peer));
    --rma_outstanding_;
    if (c.status != IBV_WC_SUCCESS) {
        base::report(Status::transport, "atomic (ibv)", atomic_fix(c.status),
                     "ibv (%s): an atomic on rank %u's word at 0x%llx failed: %s", rail_name(0).c_str(), s->peer,
                     static_cast<unsigned long long>(s->remote), ibv_wc_status_str(c.status));
        atomic_.done(s, false);
        return;
    }
    if (!s->loop || (s->swapping && s->fetched == s->expected)) {
        atomic_.done(s, true);
        return;
    }
    ibv_counters_.atomic_retries += s->swapping;
    s->expected = s->fetched;
    const std::uint64_t next = nic_loop_value(s->op, s->type, s->expected, s->operand);
    if (next == s->expected) {
        atomic_.done(s, true);
        return;
    }
    s->swapping = true;
    if (atomic_verb(s, IBV_WR_ATOMIC_CMP_AND_SWP, s->expected, next) != Status::ok) atomic_.done(s, false);
}

} // namespace sluice::conduit::ibv::detail
