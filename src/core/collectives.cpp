// src/core/collectives.cpp - barrier and allgather over the conduits.
#include "core/runtime.hpp"
#include "base/tsan.hpp"

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
    static void allgather(sluice_token_t, void *payload, std::size_t n, const std::uint32_t *args, unsigned) {
        Runtime &rt = runtime();
        std::lock_guard<std::mutex> lock(rt.allgather_mutex_);
        auto &g = rt.gatherings_[args[0]];
        if (g.parts.empty()) g.parts.resize(rt.size_);
        g.parts[args[1]].assign(static_cast<const char *>(payload), n);
        ++g.count;
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
    am.system_register(am::sys_allgather, SystemHandlers::allgather);
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
    const std::uint32_t seq = ++allgather_seq_;
    for (Rank r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        std::uint32_t args[2] = {seq, rank_};
        am::Send m;
        m.category = am::AmCategory::medium;
        m.handler = am::sys_allgather;
        m.payload = in;
        m.length = length;
        m.args = args;
        m.nargs = 2;
        if (Status s = am.system_request(r, m); s != Status::ok)
            return base::report(s, op, nullptr, "could not send to rank %u", r);
    }
    for (;;) {
        {
            std::lock_guard<std::mutex> lock(allgather_mutex_);
            auto it = gatherings_.find(seq);
            if (size_ == 1 || (it != gatherings_.end() && it->second.count == size_ - 1)) {
                char *dst = static_cast<char *>(out);
                for (Rank r = 0; r < size_; ++r) {
                    if (r == rank_) {
                        if (length) std::memcpy(dst + r * length, in, length);
                    } else if (length) {
                        const std::string &part = it->second.parts[r];
                        if (part.size() != length)
                            return base::report(Status::argument, op, "pass the same length on every rank",
                                                "rank %u gave %zu bytes, this rank %zu", r, part.size(), length);
                        std::memcpy(dst + r * length, part.data(), length);
                    }
                }
                if (it != gatherings_.end()) gatherings_.erase(it);
                return Status::ok;
            }
        }
        poll();
    }
}

} // namespace sluice::core
