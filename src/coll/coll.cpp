// src/coll/coll.cpp - the collectives' entry points: argument checks, then
// the algorithm's coroutine started as an Op (engine.cpp).
#include "coll/coll.hpp"
#include "base/knobs.hpp"
#include "coll/engine.hpp"

namespace sluice::coll {

Status init(const ClientEnv &e) {
    engine_init(e);
    algorithms_configure(base::knob_string(base::Knob::COLL_ALGORITHM), base::knob_size(base::Knob::COLL_SINGLE_COPY));
    const std::string &a = base::knob_string(base::Knob::COLL_ALGORITHM);
    if (a != "auto" && a != "flat" && a != "hier")
        return base::report(Status::argument, "init", "set SLUICE_COLL_ALGORITHM to auto, flat or hier",
                            "SLUICE_COLL_ALGORITHM=%s", a.c_str());
    teams_builtin_make(e);
    return Status::ok;
}

void fini() { engine_fini(); }

namespace {

Status enter(sluice_event **, const char *op) {
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "call collectives outside handlers", "called from a handler");
    return Status::ok;
}

Status buffers(const void *dst, const void *src, std::size_t n, const char *op) {
    if (n && (!dst || !src))
        return base::report(Status::argument, op, "pass both buffers", "%s buffer is null (%zu bytes)",
                            dst ? "the source" : "the destination", n);
    return Status::ok;
}

Status root_check(const Team &t, Rank root, const char *op) {
    if (root >= t.size())
        return base::report(Status::rank, op, "pass a root below the team's size", "root %u, the team has %u members",
                            root, t.size());
    return Status::ok;
}

// Starts `op`; blocking (event null): waits for it and returns its status.
Status start(std::unique_ptr<Op> op, sluice_event **event) {
    if (event) {
        auto *ev = new sluice_event;
        op_start(std::move(op), &ev->pending);
        if (ev->pending.load(std::memory_order_acquire) == 0) {
            delete ev;
            ev = SLUICE_EVENT_DONE;
        }
        *event = ev;
        return Status::ok;
    }
    std::atomic<std::uint64_t> done{1};
    Status status = Status::ok;
    op->result = &status;
    op_start(std::move(op), &done);
    wait(done);
    return status;
}

} // namespace

Status barrier(Team &team, sluice_event **event, const char *op) {
    if (Status s = enter(event, op); s != Status::ok) return s;
    auto o = op_new(team.handle(), op);
    o->task = task_barrier(*o);
    return start(std::move(o), event);
}

Status broadcast(Team &team, Rank root, void *dst, const void *src, std::size_t nbytes, sluice_event **event,
                 const char *op) {
    if (Status s = enter(event, op); s != Status::ok) return s;
    if (Status s = root_check(team, root, op); s != Status::ok) return s;
    if (nbytes && !dst)
        return base::report(Status::argument, op, "pass the destination buffer", "null destination (%zu bytes)", nbytes);
    if (nbytes && team.rank() == root && !src)
        return base::report(Status::argument, op, "pass the source buffer on the root", "null source (%zu bytes)", nbytes);
    auto o = op_new(team.handle(), op);
    o->task = task_broadcast(*o, root, dst, src, nbytes);
    return start(std::move(o), event);
}

Status reduce(Team &team, Rank root, void *dst, const void *src, const Reduction &r, std::size_t count,
              sluice_event **event, const char *op) {
    if (Status s = enter(event, op); s != Status::ok) return s;
    const bool all = root == SLUICE_RANK_INVALID;
    if (!all)
        if (Status s = root_check(team, root, op); s != Status::ok) return s;
    if (count && !src)
        return base::report(Status::argument, op, "pass the source buffer", "null source (%zu elements)", count);
    if (count && !dst && (all || team.rank() == root))
        return base::report(Status::argument, op, "pass the destination buffer", "null destination (%zu elements)",
                            count);
    if (count > SIZE_MAX / r.elem)
        return base::report(Status::too_large, op, "reduce fewer elements", "%zu elements of %zu bytes", count, r.elem);
    if (all && !event && fast_reduce_all_fits(team, count * r.elem)) return fast_reduce_all(team, dst, src, r, count, op);
    auto o = op_new(team.handle(), op);
    o->task = task_reduce(*o, root, dst, src, r, count);
    return start(std::move(o), event);
}

Status allgather(Team &team, void *dst, const void *src, std::size_t nbytes, sluice_event **event, const char *op) {
    if (Status s = enter(event, op); s != Status::ok) return s;
    if (Status s = buffers(dst, src, nbytes, op); s != Status::ok) return s;
    auto o = op_new(team.handle(), op);
    o->task = task_allgather(*o, dst, src, nbytes);
    return start(std::move(o), event);
}

Status alltoall(Team &team, void *dst, const void *src, std::size_t nbytes, sluice_event **event, const char *op) {
    if (Status s = enter(event, op); s != Status::ok) return s;
    if (Status s = buffers(dst, src, nbytes, op); s != Status::ok) return s;
    auto o = op_new(team.handle(), op);
    o->task = task_alltoall(*o, dst, src, nbytes);
    return start(std::move(o), event);
}

} // namespace sluice::coll
