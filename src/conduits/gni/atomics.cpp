// src/conduits/gni/atomics.cpp - NIC atomics (conduits/nic_atomics.hpp)
// for atomic domains of 64-bit integers, by FMA AMOs: add (sub, inc and
// dec as the negated or unit operand, get as an add of 0), and, or, xor,
// set and swap (AX: the word becomes (word & 0) ^ value), compare-and-swap,
// and on signed words min and max; each fetching form by its F command.
// Multiply, and min and max of unsigned words, have no AMO: a domain that
// asks for them takes the AM path.  A rank's atomics on its own words go
// through its NIC too (an endpoint bound to itself), so they are atomic
// with respect to its peers'.
#include "conduits/gni/gni_transport.hpp"

#include "base/status.hpp"

#include <cstring>
#include <string>

namespace sluice::conduit::gni::detail {

namespace {

// The AMO of `op` (fetching or not), or 0 when there is none for `type`.
gni_fma_cmd_type_t amo_of(sluice_aop_t op, sluice_dt_t type) {
    const bool is_signed = type == SLUICE_DT_I64;
    switch (op) {
    case SLUICE_OP_ADD: case SLUICE_OP_SUB: case SLUICE_OP_INC: case SLUICE_OP_DEC: return GNI_FMA_ATOMIC_ADD;
    case SLUICE_OP_GET: case SLUICE_OP_FADD: case SLUICE_OP_FSUB: case SLUICE_OP_FINC: case SLUICE_OP_FDEC:
        return GNI_FMA_ATOMIC_FADD;
    case SLUICE_OP_SET: return GNI_FMA_ATOMIC_AX;
    case SLUICE_OP_SWAP: return GNI_FMA_ATOMIC_FAX;
    case SLUICE_OP_CAS: case SLUICE_OP_FCAS: return GNI_FMA_ATOMIC_CSWAP;
    case SLUICE_OP_AND: return GNI_FMA_ATOMIC_AND;
    case SLUICE_OP_FAND: return GNI_FMA_ATOMIC_FAND;
    case SLUICE_OP_OR: return GNI_FMA_ATOMIC_OR;
    case SLUICE_OP_FOR: return GNI_FMA_ATOMIC_FOR;
    case SLUICE_OP_XOR: return GNI_FMA_ATOMIC_XOR;
    case SLUICE_OP_FXOR: return GNI_FMA_ATOMIC_FXOR;
    case SLUICE_OP_MIN: return is_signed ? GNI_FMA_ATOMIC_IMIN : gni_fma_cmd_type_t{};
    case SLUICE_OP_FMIN: return is_signed ? GNI_FMA_ATOMIC_FIMIN : gni_fma_cmd_type_t{};
    case SLUICE_OP_MAX: return is_signed ? GNI_FMA_ATOMIC_IMAX : gni_fma_cmd_type_t{};
    case SLUICE_OP_FMAX: return is_signed ? GNI_FMA_ATOMIC_FIMAX : gni_fma_cmd_type_t{};
    default: return gni_fma_cmd_type_t{};
    }
}

} // namespace

std::string GniTransport::nic_atomics_support(sluice_dt_t type, std::uint64_t ops) {
    if (type != SLUICE_DT_I64 && type != SLUICE_DT_U64)
        return "gni AMOs act on 64-bit integers (Aries' 32-bit and floating-point AMOs are not used)";
    for (unsigned op = 0; op < SLUICE_OP_COUNT_; ++op) {
        if (!(ops & SLUICE_AOP_BIT(op)) || amo_of(static_cast<sluice_aop_t>(op), type)) continue;
        if (op == SLUICE_OP_MULT || op == SLUICE_OP_FMULT) return "uGNI has no multiplying AMO";
        return "uGNI's min and max AMOs compare signed words: unsigned min and max take the AM path";
    }
    return "";
}

// The slots, their landing words in the scratch registration, and an
// endpoint to this rank itself.
Status GniTransport::atomics_create() {
    std::size_t i = 0;
    atomic_.create([&](GniAtomicSlot &s) {
        s.atomic = true;
        s.landing = landings_ + i++;
    });
    gni_ep_handle_t ep = nullptr;
    gni_return_t rc = ugni().EpCreate(nic_, cq_, &ep);
    if (rc == GNI_RC_SUCCESS && (rc = ugni().EpBind(ep, nic_address_, setup().rank)) != GNI_RC_SUCCESS)
        ugni().EpDestroy(ep);
    if (rc != GNI_RC_SUCCESS) {
        atomic_.clear();
        return failed("atomic (gni)", "GNI_EpCreate or GNI_EpBind (this rank's own endpoint)", rc);
    }
    ep_self_ = ep;
    return Status::ok;
}

Status GniTransport::atomic_post(GniAtomicSlot *s, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type,
                                 std::uint64_t op1, std::uint64_t op2) {
    const Rank me = setup().rank;
    gni_post_descriptor_t &d = s->d;
    d = gni_post_descriptor_t{};
    d.type = GNI_POST_AMO;
    d.amo_cmd = amo_of(op, type);
    switch (d.amo_cmd) {
    case GNI_FMA_ATOMIC_ADD: case GNI_FMA_ATOMIC_FADD: d.first_operand = nic_sum_operand(op, type, op1); break;
    case GNI_FMA_ATOMIC_AX: case GNI_FMA_ATOMIC_FAX: d.first_operand = 0, d.second_operand = op1; break;
    case GNI_FMA_ATOMIC_CSWAP: d.first_operand = op1, d.second_operand = op2; break;
    default: d.first_operand = op1; break;
    }
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;
    d.dlvr_mode = dlvr_mode_;
    d.local_addr = reinterpret_cast<std::uint64_t>(s->landing);
    d.local_mem_hndl = scratch_handle_;
    d.remote_addr = remote;
    if (s->peer != me) {
        d.remote_mem_hndl = peer_segment_[s->peer];
    } else if (const Registration *r = covering(reinterpret_cast<const void *>(remote), 8)) {
        d.remote_mem_hndl = r->handle;  // this rank's own segment
    }
    d.length = 8;
    d.src_cq_hndl = cq_;
    d.post_id = reinterpret_cast<std::uint64_t>(static_cast<Posted *>(s));
    gni_ep_handle_t ep = ep_self_;
    if (s->peer != me)
        if (Status st = bound(s->peer, ep); st != Status::ok) return st;
    const gni_return_t rc = ugni().PostFma(ep, &d);
    if (rc == GNI_RC_ERROR_RESOURCE) {
        ++counters_.full;
        return Status::not_ready;
    }
    if (rc != GNI_RC_SUCCESS)
        return base::report(Status::transport, "atomic (gni)", "check that the word lies in the peer's segment, 8-byte aligned",
                            "gni: GNI_PostFma of an AMO on rank %u's word at 0x%llx: %s", s->peer,
                            static_cast<unsigned long long>(remote), rc_name(rc));
    ++rma_outstanding_;
    ++counters_.atomics;
    ++gni_counters_.amo;
    return Status::ok;
}

// An AMO completed: its old value, from the landing word, to the slot.
void GniTransport::atomic_done(GniAtomicSlot *s, bool ok) {
    if (!ok)
        base::report(Status::transport, "atomic (gni)", "check that the peer is alive and the word lies in its segment",
                     "gni: an AMO on rank %u's word at 0x%llx completed in error", s->peer,
                     static_cast<unsigned long long>(s->d.remote_addr));
    std::memcpy(&s->fetched, s->landing, sizeof s->fetched);
    --rma_outstanding_;
    atomic_.done(s, ok);
}

} // namespace sluice::conduit::gni::detail
