// src/atomic/atomic.hpp - atomic domains: one agent per domain for every
// update of a word (the coherence rule: CPU atomics and NIC atomics on one
// word do not mix).  See src/atomic/README.md for the paths and why.
#pragma once

#include "coll/env.hpp"
#include "coll/team.hpp"
#include "conduits/nic_atomics.hpp"

#include <sluice.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::atomic {

using am::Rank;
using base::Status;

// Called by src/core: at init, after src/coll's init; at finalize.
Status init(const coll::ClientEnv &env);
void fini();

// How a domain reaches its targets, the same on every member.
enum class Path : std::uint8_t {
    cpu,     // every target mapped here: CPU atomics on the mapping
    cpu_am,  // mapped targets by CPU atomics, the others by AM to the target
    am,      // an AM to the target, whose handler applies CPU atomics
    nic,     // the network's atomics, for every target (self included)
};
const char *path_name(Path p);

// The paths a domain gets when every member is reached over one conduit
// (sluice-info): `load_store` peers map each other's segments; `nic`: the
// conduit implements conduit::NicAtomics.
void conduit_path(bool load_store, bool nic, const char *&path, const char *&why);

// How an operation completes.
enum class Mode : std::uint8_t { blocking, nb, nbi };

// Operations that write the old value to `result`.
inline constexpr std::uint64_t fetching_ops =
    SLUICE_AOP_BIT(SLUICE_OP_GET) | SLUICE_AOP_BIT(SLUICE_OP_SWAP) | SLUICE_AOP_BIT(SLUICE_OP_FCAS) |
    SLUICE_AOP_BIT(SLUICE_OP_FADD) | SLUICE_AOP_BIT(SLUICE_OP_FSUB) | SLUICE_AOP_BIT(SLUICE_OP_FINC) |
    SLUICE_AOP_BIT(SLUICE_OP_FDEC) | SLUICE_AOP_BIT(SLUICE_OP_FMULT) | SLUICE_AOP_BIT(SLUICE_OP_FMIN) |
    SLUICE_AOP_BIT(SLUICE_OP_FMAX) | SLUICE_AOP_BIT(SLUICE_OP_FAND) | SLUICE_AOP_BIT(SLUICE_OP_FOR) |
    SLUICE_AOP_BIT(SLUICE_OP_FXOR);
inline constexpr std::uint64_t bitwise_ops =
    SLUICE_AOP_BIT(SLUICE_OP_AND) | SLUICE_AOP_BIT(SLUICE_OP_FAND) | SLUICE_AOP_BIT(SLUICE_OP_OR) |
    SLUICE_AOP_BIT(SLUICE_OP_FOR) | SLUICE_AOP_BIT(SLUICE_OP_XOR) | SLUICE_AOP_BIT(SLUICE_OP_FXOR);
inline constexpr std::uint64_t all_ops = SLUICE_AOP_BIT(SLUICE_OP_COUNT_) - 1;

} // namespace sluice::atomic

// The object behind sluice_ad_t.  A destroyed domain keeps its memory (with
// `live` false) until finalize, so a late use is reported, not undefined.
struct sluice_ad {
    // First: the handle is read as this by <sluice.h>'s inline atomics.
    sluice_ad_inline_ pub{};
    bool live = true;
    sluice_dt_t type = SLUICE_DT_U64;
    std::uint64_t ops = 0;
    sluice::coll::Team *team = nullptr;
    sluice::atomic::Path path = sluice::atomic::Path::am;
    std::string why;
    sluice::conduit::NicAtomics *nic = nullptr;  // Path::nic
    // Per team rank: its job rank, and whether its words are reached by CPU
    // atomics on the mapping (else by AM).
    std::vector<sluice::atomic::Rank> job;
    std::vector<std::uint8_t> direct;
};

namespace sluice::atomic {

Status domain_create(sluice_team_t team, sluice_dt_t type, std::uint64_t ops, unsigned flags, sluice_ad **out);
Status domain_destroy(sluice_ad *ad);
Status domain_path(sluice_ad *ad, const char **path, const char **why);

// One operation (the sluice_ad_op* calls), for T one of the six types.
template <class T>
Status operate(sluice_ad *ad, T *result, Rank rank, void *addr, sluice_aop_t op, T op1, T op2, unsigned flags,
               Mode mode, sluice_event **ev, const char *name);

} // namespace sluice::atomic
