// src/conduits/nic_atomics.hpp - what a transport whose network applies
// atomic operations itself offers atomic domains (src/atomic).  A Transport
// may also implement this interface; src/atomic finds it with dynamic_cast
// when a domain is created, so conduits without NIC atomics carry nothing.
//
// Coherence: a NIC's update of a word is not atomic with respect to CPU
// atomics on the same word, so a domain that uses a NIC sends every update
// through it, the ones a rank makes on its own segment included.
#pragma once

#include "base/status.hpp"

#include <sluice.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <string>

namespace sluice::conduit {

class NicAtomics {
public:
    // "" when the network applies every operation of `ops` (a mask of
    // SLUICE_AOP_BIT) on `type`, else why not, in a few words.
    virtual std::string nic_atomics_support(sluice_dt_t type, std::uint64_t ops) = 0;
    // Starts `op` on the word at `remote` (an address in rank `peer`'s
    // segment, `peer` possibly this rank) with operands `op1`, `op2` (the
    // type's bits, zero-extended).  Started, it raises `counter` by one;
    // once applied at the target the conduit writes the old value to
    // `result` (if not null; the type's size), then drops `counter` with
    // release ordering, from its poll.  Status::not_ready: nothing started,
    // no room now (poll, retry).
    virtual base::Status nic_atomic(std::uint32_t peer, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type,
                                    std::uint64_t op1, std::uint64_t op2, void *result,
                                    std::atomic<std::uint64_t> &counter) = 0;
    // The path's name in sluice_ad_path ("ofi").
    virtual const char *nic_atomics_name() const = 0;

protected:
    ~NicAtomics() = default;
};

// The operand of the sum a network applies for add, sub, inc, dec and get,
// in the type's bits: op1, its negation, +-1, or for get zero (-0.0 in
// floating point: x + -0.0 is x, -0.0 included).
inline std::uint64_t nic_sum_operand(unsigned op, sluice_dt_t t, std::uint64_t op1) {
    if (op == SLUICE_OP_GET) {
        if (t == SLUICE_DT_FLT) return std::bit_cast<std::uint32_t>(-0.0f);
        return t == SLUICE_DT_DBL ? std::bit_cast<std::uint64_t>(-0.0) : 0;
    }
    const bool negate = op == SLUICE_OP_SUB || op == SLUICE_OP_FSUB || op == SLUICE_OP_DEC || op == SLUICE_OP_FDEC;
    if (op == SLUICE_OP_INC || op == SLUICE_OP_FINC || op == SLUICE_OP_DEC || op == SLUICE_OP_FDEC) {
        if (t == SLUICE_DT_FLT) op1 = std::bit_cast<std::uint32_t>(1.0f);
        else if (t == SLUICE_DT_DBL) op1 = std::bit_cast<std::uint64_t>(1.0);
        else op1 = 1;
    }
    if (!negate) return op1;
    if (t == SLUICE_DT_FLT) return std::bit_cast<std::uint32_t>(-std::bit_cast<float>(static_cast<std::uint32_t>(op1)));
    if (t == SLUICE_DT_DBL) return std::bit_cast<std::uint64_t>(-std::bit_cast<double>(op1));
    const bool narrow = t == SLUICE_DT_I32 || t == SLUICE_DT_U32;
    return narrow ? static_cast<std::uint32_t>(0u - static_cast<std::uint32_t>(op1)) : 0 - op1;
}

// The word an operation a network lacks makes of `old`, for a conduit
// that applies it as a compare-and-swap loop: set and swap give the
// operand; min and max compare as the CPU engine does (signed for
// SLUICE_DT_I64).  64-bit integers.
inline std::uint64_t nic_loop_value(unsigned op, sluice_dt_t type, std::uint64_t old, std::uint64_t operand) {
    const auto less = [type](std::uint64_t a, std::uint64_t b) {
        return type == SLUICE_DT_I64 ? static_cast<std::int64_t>(a) < static_cast<std::int64_t>(b) : a < b;
    };
    switch (op) {
    case SLUICE_OP_MULT: case SLUICE_OP_FMULT: return old * operand;
    case SLUICE_OP_MIN: case SLUICE_OP_FMIN: return less(operand, old) ? operand : old;
    case SLUICE_OP_MAX: case SLUICE_OP_FMAX: return less(old, operand) ? operand : old;
    case SLUICE_OP_AND: case SLUICE_OP_FAND: return old & operand;
    case SLUICE_OP_OR: case SLUICE_OP_FOR: return old | operand;
    case SLUICE_OP_XOR: case SLUICE_OP_FXOR: return old ^ operand;
    default: return operand;  // set, swap
    }
}

} // namespace sluice::conduit
