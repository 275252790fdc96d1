// src/conduits/portals/atomics.cpp - the portals conduit's NIC atomics
// (conduits/nic_atomics.hpp): each operation of an atomic domain is one
// PtlAtomic (acknowledged), PtlFetchAtomic or PtlSwap on the peer's segment
// entry (pt_rma), its operands and fetched value in a slot of one
// descriptor, completed from the SAFE queue like a Put.  README.md, "NIC
// atomics", has the table.
#include "conduits/portals/portals_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <bit>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace sluice::conduit::portals::detail {

namespace {

ptl_datatype_t ptl_type(sluice_dt_t t) {
    switch (t) {
    case SLUICE_DT_I32: return PTL_INT32_T;
    case SLUICE_DT_U32: return PTL_UINT32_T;
    case SLUICE_DT_I64: return PTL_INT64_T;
    case SLUICE_DT_U64: return PTL_UINT64_T;
    case SLUICE_DT_FLT: return PTL_FLOAT;
    default: return PTL_DOUBLE;
    }
}
bool floating(sluice_dt_t t) { return t == SLUICE_DT_FLT || t == SLUICE_DT_DBL; }

// The call and the Portals operation behind each of ours.  Non-fetching
// updates are PtlAtomic with an ack (sent once applied); set and CAS are
// PtlSwap (PtlAtomic takes no swap) whose fetched value is dropped; get is
// a fetching sum of zero, so every access goes through the NIC.
enum class Call : std::uint8_t { atomic, fetch, swap };
struct Mapping {
    Call call;
    ptl_op_t op;
};
Mapping mapping(unsigned op) {
    switch (op) {
    case SLUICE_OP_SET: case SLUICE_OP_SWAP: return {Call::swap, PTL_SWAP};
    case SLUICE_OP_CAS: case SLUICE_OP_FCAS: return {Call::swap, PTL_CSWAP};
    case SLUICE_OP_GET: return {Call::fetch, PTL_SUM};
    case SLUICE_OP_ADD: case SLUICE_OP_SUB: case SLUICE_OP_INC: case SLUICE_OP_DEC: return {Call::atomic, PTL_SUM};
    case SLUICE_OP_FADD: case SLUICE_OP_FSUB: case SLUICE_OP_FINC: case SLUICE_OP_FDEC: return {Call::fetch, PTL_SUM};
    case SLUICE_OP_MULT: return {Call::atomic, PTL_PROD};
    case SLUICE_OP_FMULT: return {Call::fetch, PTL_PROD};
    case SLUICE_OP_MIN: return {Call::atomic, PTL_MIN};
    case SLUICE_OP_FMIN: return {Call::fetch, PTL_MIN};
    case SLUICE_OP_MAX: return {Call::atomic, PTL_MAX};
    case SLUICE_OP_FMAX: return {Call::fetch, PTL_MAX};
    case SLUICE_OP_AND: return {Call::atomic, PTL_BAND};
    case SLUICE_OP_FAND: return {Call::fetch, PTL_BAND};
    case SLUICE_OP_OR: return {Call::atomic, PTL_BOR};
    case SLUICE_OP_FOR: return {Call::fetch, PTL_BOR};
    case SLUICE_OP_XOR: return {Call::atomic, PTL_BXOR};
    default: return {Call::fetch, PTL_BXOR};  // SLUICE_OP_FXOR
    }
}
bool bitwise(ptl_op_t op) { return op == PTL_BAND || op == PTL_BOR || op == PTL_BXOR; }

const char *call_name(Call c) {
    return c == Call::atomic ? "PtlAtomic" : c == Call::fetch ? "PtlFetchAtomic" : "PtlSwap";
}

} // namespace

// The slots and one descriptor over them all (events on the SAFE queue, a
// PtlAtomic's ack and a fetch's reply only), made at init.
Status PortalsTransport::atomics_create() {
    if (!atomics_off_.empty()) return Status::transport;  // nic_atomics_support said so
    atomic_.create([](AtomicSlot &s) { s.tag = Tag::atomic; });
    if (int rc = md_bind(atomic_.base(), atomic_.bytes(), PTL_MD_EVENT_SEND_DISABLE, atomic_iov_, atomic_md_);
        rc != PTL_OK) {
        atomic_.clear();
        return base::report(Status::resource, "portals conduit init", "set SLUICE_PORTALS_ATOMICS=0",
                            "portals: binding the atomic operands (%zu bytes, return code %d)", atomic_.bytes(), rc);
    }
    atomic_md_bound_ = true;
    return Status::ok;
}

std::string PortalsTransport::nic_atomics_support(sluice_dt_t type, std::uint64_t ops) {
    if (!atomics_off_.empty()) return atomics_off_;
    if (type < SLUICE_DT_I32 || type > SLUICE_DT_DBL) return "Portals has no atomic type for it";
    Guard g(*this);
    if (!ni_open_ || !atomic_.made()) return "the portals conduit is closed";
    if (!segment_mes_) return "this rank's segment has no portals entry yet";
    const std::size_t size = common::atomic_type_size(type);
    for (unsigned op = 0; op < SLUICE_OP_COUNT_; ++op) {
        if (!(ops & SLUICE_AOP_BIT(op))) continue;
        const Mapping m = mapping(op);
        if (floating(type) && bitwise(m.op)) return "Portals has no bitwise operation on floating point";
        // The reference implementation checks max_atomic_size for every call.
        std::size_t limit = limits_.max_atomic_size;
        if (m.call != Call::atomic && limits_.max_fetch_atomic_size < limit) limit = limits_.max_fetch_atomic_size;
        if (size > limit) {
            char why[96];
            std::snprintf(why, sizeof why, "the interface's %s is %zu bytes, below %zu",
                          m.call == Call::atomic ? "max_atomic_size" : "max_fetch_atomic_size", limit, size);
            return why;
        }
    }
    return "";
}

Status PortalsTransport::atomic_post(AtomicSlot *slot, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type,
                                     std::uint64_t op1, std::uint64_t op2) {
    const Rank peer = slot->peer;
    const Mapping m = mapping(op);
    slot->operand = m.op == PTL_SUM ? nic_sum_operand(op, type, op1) : m.op == PTL_CSWAP ? op2 : op1;
    slot->compare = op1;
    // Offsets in the descriptor.
    const auto *base = reinterpret_cast<const std::byte *>(atomic_.base());
    const auto put = static_cast<ptl_size_t>(reinterpret_cast<const std::byte *>(&slot->operand) - base);
    const auto get = static_cast<ptl_size_t>(reinterpret_cast<const std::byte *>(&slot->fetched) - base);
    const std::uint64_t offset = remote - peer_segment_base(peer);
    const ptl_datatype_t dt = ptl_type(type);
    int rc;
    switch (m.call) {
    case Call::atomic:
        rc = ptl().Atomic(atomic_md_, put, slot->size, PTL_ACK_REQ, id_[peer], pt_rma, 0, offset, slot, 0, m.op, dt);
        break;
    case Call::fetch:
        rc = ptl().FetchAtomic(atomic_md_, get, atomic_md_, put, slot->size, id_[peer], pt_rma, 0, offset, slot, 0,
                               m.op, dt);
        break;
    default:
        rc = ptl().Swap(atomic_md_, get, atomic_md_, put, slot->size, id_[peer], pt_rma, 0, offset, slot, 0,
                        &slot->compare, m.op, dt);
        break;
    }
    if (rc != PTL_OK) {
        char what[64];
        std::snprintf(what, sizeof what, "%s failed", call_name(m.call));
        return fatal("atomic (portals)", peer, rc, what);
    }
    --tickets_;
    ++counters_.atomics;
    return Status::ok;
}

// Under lock_: the ack or reply of an atomic.  A failed one is reported,
// then completed (the caller must not wait for ever), its result unwritten.
void PortalsTransport::atomic_done(AtomicSlot *slot, const ptl_event_t &e) {
    if (e.ni_fail_type != PTL_NI_OK)
        base::report(Status::transport, "atomic (portals)",
                     "check that the peer is alive and that the word lies in its segment",
                     "portals: an atomic on rank %u's word failed: %s", slot->peer, fail_name(e.ni_fail_type));
    atomic_.done(slot, e.ni_fail_type == PTL_NI_OK);
}

} // namespace sluice::conduit::portals::detail
