// src/coll/coll.hpp - collectives on teams: what the C API calls.  Each
// checks its arguments, then starts the collective; `event` null means
// blocking (returns when this rank's part is done), else *event completes
// then.  Algorithms: algorithms.cpp, docs/collectives.md.
#pragma once

#include "coll/env.hpp"
#include "coll/team.hpp"

#include <sluice.h>

namespace sluice::coll {

// Called by src/core: at init, after the AM engine is configured; at
// finalize, before the last barrier.
Status init(const ClientEnv &env);
void fini();

// The element operation of a reduction: inout[i] = inout[i] OP in[i].
struct Reduction {
    std::size_t elem = 0;  // bytes per element
    void (*builtin)(void *inout, const void *in, std::size_t count) = nullptr;
    sluice_reduce_fn user = nullptr;
    void *context = nullptr;
    void apply(void *inout, const void *in, std::size_t count) const {
        if (builtin) builtin(inout, in, count);
        else user(inout, in, count, context);
    }
};
// The reduction for (type, op), or an error report naming `op_name`.
Status reduction_make(sluice_dt_t type, std::size_t elem_size, sluice_reduce_op_t op, sluice_reduce_fn fn,
                      void *context, Reduction &out, const char *op_name);

Status barrier(Team &team, sluice_event **event, const char *op);
Status broadcast(Team &team, Rank root, void *dst, const void *src, std::size_t nbytes, sluice_event **event,
                 const char *op);
// `root` SLUICE_RANK_INVALID: reduce to all.
Status reduce(Team &team, Rank root, void *dst, const void *src, const Reduction &r, std::size_t count,
              sluice_event **event, const char *op);
Status allgather(Team &team, void *dst, const void *src, std::size_t nbytes, sluice_event **event, const char *op);
Status alltoall(Team &team, void *dst, const void *src, std::size_t nbytes, sluice_event **event, const char *op);

// Which algorithm family a collective on `team` runs (SLUICE_COLL_ALGORITHM
// and the team's shape): true for host-first.
bool hierarchical(const Team &team);

} // namespace sluice::coll
