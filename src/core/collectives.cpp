// src/core/collectives.cpp - barrier over the conduits; allgather, the job
// team's (src/coll).
#include "core/runtime.hpp"
#include "base/tsan.hpp"
#include "coll/team.hpp"

#include <cstring>

namespace sluice::core {

// Handlers of the runtime's own messages; they reach the runtime through
// runtime(), as a handler has no other context.
struct SystemHandlers {
    static void barrier(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
        Runtime &rt = runtime();
        const std::uint64_t epoch = (static_cast<std::uint64_t>(args[1]) << 32) | args[0];
        auto &heard = rt.barrier_heard_[args[2] & 63];
        std::uint64_t seen = heard.load(std::memory_order_relaxed);
        while (seen < epoch && !heard.compare_exchange_weak(seen, epoch, std::memory_order_release)) {
        }
    }
};

namespace {
bool poll_for_barrier(void *context) {
    static_cast<Runtime *>(context)->poll();
    return true;
}
} // namespace

void Runtime::system_handlers_register() {
    am.system_register(am::sys_barrier, SystemHandlers::barrier);
    void exit_handlers_register(am::AmEngine &);
    exit_handlers_register(am);
}

// Dissemination barrier: in round k, signal rank+2^k and wait for rank-2^k.
// Epochs only grow and each (round, receiver) has one sender, so a rank
// already in the next barrier can never erase a signal.
//
// Before it signals, a rank flushes the requests it sent (am::AmEngine::
// flush_begin): every request sent before any rank entered has then run its
// handler before any rank leaves.
Status Runtime::barrier() {
    const char *op = "barrier";
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "call barriers outside handlers", "called from a handler");
    std::uint64_t flushed;
    if (Status s = am.flush_begin(flushed); s != Status::ok) return s;
    while (!am.flush_done(flushed)) poll();
    if (native_barrier_) {
        const Status s = native_barrier_->barrier(poll_for_barrier, this);
        base::tsan_acquire(&am::AmEngine::handlers_done);
        return s;
    }
    const std::uint64_t epoch = ++barrier_epoch_;
    for (std::uint32_t k = 0; (Rank{1} << k) < size_; ++k) {
        const Rank partner = static_cast<Rank>((rank_ + (std::uint64_t{1} << k)) % size_);
        std::uint32_t args[3] = {static_cast<std::uint32_t>(epoch), static_cast<std::uint32_t>(epoch >> 32), k};
        am::Send m;
        m.handler = am::sys_barrier;
        m.args = args;
        m.nargs = 3;
        if (Status s = am.system_request(partner, m); s != Status::ok)
            return base::report(s, op, nullptr, "could not signal rank %u", partner);
        while (barrier_heard_[k].load(std::memory_order_acquire) < epoch) poll();
    }
    base::tsan_acquire(&am::AmEngine::handlers_done);
    return Status::ok;
}

Status Runtime::allgather(const void *in, void *out, std::size_t length) {
    const char *op = "allgather";
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "call collectives outside handlers", "called from a handler");
    if (length && (!in || !out))
        return base::report(Status::argument, op, "pass both buffers", "null buffer with length %zu", length);
    if (length > am.max_medium())
        return base::report(Status::too_large, op, "gather at most sluice_am_max_medium() bytes per rank",
                            "%zu bytes per rank, the largest is %zu", length, am.max_medium());
    return coll::team_allgather(coll::team_job(), in, out, length, op);
}

} // namespace sluice::core
