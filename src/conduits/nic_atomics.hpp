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

} // namespace sluice::conduit
