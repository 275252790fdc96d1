// src/core/c_api_coll.cpp - the C API of teams and collectives: state and
// handle checks, then src/coll.
#include "coll/coll.hpp"
#include "core/c_api_common.hpp"

#include <sluice.h>

using sluice::base::Status;
using sluice::core::code;
using sluice::core::runtime;
namespace coll = sluice::coll;

namespace {

// The team behind `handle`, or return the error it reported.
#define SLUICE_TEAM(var, handle, op)             \
    coll::Team *var = coll::team_of(handle, op); \
    if (!var) return SLUICE_ERR_ARGUMENT

int event_missing(const char *op) {
    return code(sluice::base::report(Status::argument, op, "pass where to store the event", "null event pointer"));
}
#define SLUICE_REQUIRE_EVENT(event, op) \
    if (!(event)) return event_missing(op)

} // namespace

extern "C" {

sluice_team_t sluice_team_job(void) { return runtime().running() ? coll::team_handle(&coll::team_job()) : nullptr; }
sluice_team_t sluice_team_host(void) { return runtime().running() ? coll::team_handle(&coll::team_host()) : nullptr; }
sluice_team_t sluice_team_across_hosts(void) {
    return runtime().running() ? coll::team_handle(&coll::team_across_hosts()) : nullptr;
}

sluice_rank_t sluice_team_rank(sluice_team_t team) {
    if (!runtime().running()) return (void)sluice::core::not_running("team_rank"), SLUICE_RANK_INVALID;
    coll::Team *t = coll::team_of(team, "team_rank");
    return t ? t->rank() : SLUICE_RANK_INVALID;
}
sluice_rank_t sluice_team_size(sluice_team_t team) {
    if (!runtime().running()) return (void)sluice::core::not_running("team_size"), SLUICE_RANK_INVALID;
    coll::Team *t = coll::team_of(team, "team_size");
    return t ? t->size() : SLUICE_RANK_INVALID;
}

sluice_status_t sluice_team_to_job(sluice_team_t team, sluice_rank_t team_rank, sluice_rank_t *job_rank) {
    SLUICE_REQUIRE_RUNNING("team_to_job");
    SLUICE_TEAM(t, team, "team_to_job");
    if (!job_rank)
        return code(sluice::base::report(Status::argument, "team_to_job", "pass an output pointer", "null output"));
    if (team_rank >= t->size())
        return code(sluice::base::report(Status::rank, "team_to_job", "pass a team rank below the team's size",
                                         "team rank %u, the team has %u members", team_rank, t->size()));
    *job_rank = t->to_job(team_rank);
    return SLUICE_OK;
}

sluice_status_t sluice_team_from_job(sluice_team_t team, sluice_rank_t job_rank, sluice_rank_t *team_rank) {
    SLUICE_REQUIRE_RUNNING("team_from_job");
    SLUICE_TEAM(t, team, "team_from_job");
    if (!team_rank)
        return code(sluice::base::report(Status::argument, "team_from_job", "pass an output pointer", "null output"));
    sluice_rank_t r;
    if (!t->from_job(job_rank, r))
        return code(sluice::base::report(Status::rank, "team_from_job", "pass the job rank of a member",
                                         "job rank %u is not a member of the team", job_rank));
    *team_rank = r;
    return SLUICE_OK;
}

sluice_status_t sluice_team_split(sluice_team_t parent, int color, int key, sluice_team_t *team) {
    SLUICE_REQUIRE_RUNNING("team_split");
    SLUICE_TEAM(p, parent, "team_split");
    if (!team) return code(sluice::base::report(Status::argument, "team_split", "pass an output pointer", "null output"));
    coll::Team *t = nullptr;
    if (Status s = coll::team_split(*p, color, key, t, "team_split"); s != Status::ok) return code(s);
    *team = coll::team_handle(t);
    return SLUICE_OK;
}

sluice_status_t sluice_team_create(sluice_team_t parent, const sluice_rank_t *job_ranks, size_t count,
                                   sluice_team_t *team) {
    SLUICE_REQUIRE_RUNNING("team_create");
    SLUICE_TEAM(p, parent, "team_create");
    if (!team) return code(sluice::base::report(Status::argument, "team_create", "pass an output pointer", "null output"));
    coll::Team *t = nullptr;
    if (Status s = coll::team_create(*p, job_ranks, count, t, "team_create"); s != Status::ok) return code(s);
    *team = coll::team_handle(t);
    return SLUICE_OK;
}

sluice_status_t sluice_team_destroy(sluice_team_t team) {
    SLUICE_REQUIRE_RUNNING("team_destroy");
    SLUICE_TEAM(t, team, "team_destroy");
    return code(coll::team_destroy(*t, "team_destroy"));
}

sluice_status_t sluice_coll_barrier(sluice_team_t team) {
    SLUICE_REQUIRE_RUNNING("coll_barrier");
    SLUICE_TEAM(t, team, "coll_barrier");
    return code(coll::barrier(*t, nullptr, "coll_barrier"));
}
sluice_status_t sluice_coll_barrier_nb(sluice_team_t team, sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("coll_barrier_nb");
    SLUICE_TEAM(t, team, "coll_barrier_nb");
    SLUICE_REQUIRE_EVENT(event, "coll_barrier_nb");
    return code(coll::barrier(*t, event, "coll_barrier_nb"));
}

sluice_status_t sluice_coll_broadcast(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                      size_t nbytes) {
    SLUICE_REQUIRE_RUNNING("coll_broadcast");
    SLUICE_TEAM(t, team, "coll_broadcast");
    return code(coll::broadcast(*t, root, dst, src, nbytes, nullptr, "coll_broadcast"));
}
sluice_status_t sluice_coll_broadcast_nb(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                         size_t nbytes, sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("coll_broadcast_nb");
    SLUICE_TEAM(t, team, "coll_broadcast_nb");
    SLUICE_REQUIRE_EVENT(event, "coll_broadcast_nb");
    return code(coll::broadcast(*t, root, dst, src, nbytes, event, "coll_broadcast_nb"));
}

namespace {
sluice_status_t reduce_common(sluice_team_t team, sluice_rank_t root, void *dst, const void *src, sluice_dt_t type,
                              size_t elem_size, size_t count, sluice_reduce_op_t op, sluice_reduce_fn fn,
                              void *context, sluice_event_t *event, bool nb, const char *name) {
    SLUICE_REQUIRE_RUNNING(name);
    SLUICE_TEAM(t, team, name);
    if (nb) SLUICE_REQUIRE_EVENT(event, name);
    coll::Reduction r;
    if (Status s = coll::reduction_make(type, elem_size, op, fn, context, r, name); s != Status::ok) return code(s);
    return code(coll::reduce(*t, root, dst, src, r, count, nb ? event : nullptr, name));
}
} // namespace

sluice_status_t sluice_coll_reduce(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                   sluice_dt_t type, size_t elem_size, size_t count, sluice_reduce_op_t op,
                                   sluice_reduce_fn fn, void *context) {
    if (root == SLUICE_RANK_INVALID && runtime().running())
        return code(sluice::base::report(Status::rank, "coll_reduce", "pass a root below the team's size",
                                         "root SLUICE_RANK_INVALID"));
    return reduce_common(team, root, dst, src, type, elem_size, count, op, fn, context, nullptr, false, "coll_reduce");
}
sluice_status_t sluice_coll_reduce_nb(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                      sluice_dt_t type, size_t elem_size, size_t count, sluice_reduce_op_t op,
                                      sluice_reduce_fn fn, void *context, sluice_event_t *event) {
    if (root == SLUICE_RANK_INVALID && runtime().running())
        return code(sluice::base::report(Status::rank, "coll_reduce_nb", "pass a root below the team's size",
                                         "root SLUICE_RANK_INVALID"));
    return reduce_common(team, root, dst, src, type, elem_size, count, op, fn, context, event, true, "coll_reduce_nb");
}
sluice_status_t sluice_coll_reduce_all(sluice_team_t team, void *dst, const void *src, sluice_dt_t type,
                                       size_t elem_size, size_t count, sluice_reduce_op_t op, sluice_reduce_fn fn,
                                       void *context) {
    return reduce_common(team, SLUICE_RANK_INVALID, dst, src, type, elem_size, count, op, fn, context, nullptr, false,
                         "coll_reduce_all");
}
sluice_status_t sluice_coll_reduce_all_nb(sluice_team_t team, void *dst, const void *src, sluice_dt_t type,
                                          size_t elem_size, size_t count, sluice_reduce_op_t op, sluice_reduce_fn fn,
                                          void *context, sluice_event_t *event) {
    return reduce_common(team, SLUICE_RANK_INVALID, dst, src, type, elem_size, count, op, fn, context, event, true,
                         "coll_reduce_all_nb");
}

sluice_status_t sluice_coll_allgather(sluice_team_t team, void *dst, const void *src, size_t nbytes) {
    SLUICE_REQUIRE_RUNNING("coll_allgather");
    SLUICE_TEAM(t, team, "coll_allgather");
    return code(coll::allgather(*t, dst, src, nbytes, nullptr, "coll_allgather"));
}
sluice_status_t sluice_coll_allgather_nb(sluice_team_t team, void *dst, const void *src, size_t nbytes,
                                         sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("coll_allgather_nb");
    SLUICE_TEAM(t, team, "coll_allgather_nb");
    SLUICE_REQUIRE_EVENT(event, "coll_allgather_nb");
    return code(coll::allgather(*t, dst, src, nbytes, event, "coll_allgather_nb"));
}
sluice_status_t sluice_coll_alltoall(sluice_team_t team, void *dst, const void *src, size_t nbytes) {
    SLUICE_REQUIRE_RUNNING("coll_alltoall");
    SLUICE_TEAM(t, team, "coll_alltoall");
    return code(coll::alltoall(*t, dst, src, nbytes, nullptr, "coll_alltoall"));
}
sluice_status_t sluice_coll_alltoall_nb(sluice_team_t team, void *dst, const void *src, size_t nbytes,
                                        sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("coll_alltoall_nb");
    SLUICE_TEAM(t, team, "coll_alltoall_nb");
    SLUICE_REQUIRE_EVENT(event, "coll_alltoall_nb");
    return code(coll::alltoall(*t, dst, src, nbytes, event, "coll_alltoall_nb"));
}

} // extern "C"
