// src/rma/vis_am.cpp - VIS to a peer whose segment is not mapped here:
// small runs packed into Medium AMs, large runs as ordinary RMA.
//
// sys_vis_put payload: the bytes, then the remote runs they fill
// (address u64, length u32, unaligned), then the run count (u32); args:
// the completion counter.  The target scatters and answers with
// sys_vis_put_ack.  sys_vis_get payload: the runs and their count; args:
// the batch (the local runs the bytes go to) and the counter.  The target
// gathers into one Medium reply, sys_vis_get_reply, whose handler
// scatters the bytes and frees the batch.
#include "sluice_config.h"

#include "rma/vis_impl.hpp"

#include <cstring>

namespace sluice::rma::vis {
namespace {

constexpr std::size_t run_bytes = 12;  // one remote run on the wire

void split(const void *p, std::uint32_t &lo, std::uint32_t &hi) {
    auto v = reinterpret_cast<std::uint64_t>(p);
    lo = static_cast<std::uint32_t>(v);
    hi = static_cast<std::uint32_t>(v >> 32);
}
template <class T>
T *join(std::uint32_t lo, std::uint32_t hi) {
    return reinterpret_cast<T *>((static_cast<std::uint64_t>(hi) << 32) | lo);
}

struct Run {
    char *addr;
    std::size_t len;
};
void run_append(std::vector<Run> &runs, char *addr, std::size_t len) {
    if (!runs.empty() && runs.back().addr + runs.back().len == addr) runs.back().len += len;
    else runs.push_back({addr, len});
}
// Writes the runs and their count at `out`; returns the bytes written.
std::size_t runs_write(char *out, const std::vector<Run> &runs) {
    char *p = out;
    for (const Run &r : runs) {
        const auto a = reinterpret_cast<std::uint64_t>(r.addr);
        const auto n = static_cast<std::uint32_t>(r.len);
        std::memcpy(p, &a, 8);
        std::memcpy(p + 8, &n, 4);
        p += run_bytes;
    }
    const auto count = static_cast<std::uint32_t>(runs.size());
    std::memcpy(p, &count, 4);
    return static_cast<std::size_t>(p + 4 - out);
}
// Reads the runs of a payload whose last 4 bytes are their count; calls
// f(address, length) for each.  False if the payload is malformed.
template <class F>
bool runs_read(const char *tail_end, std::size_t room, F &&f) {
    std::uint32_t count;
    if (room < 4) return false;
    std::memcpy(&count, tail_end - 4, 4);
    if (static_cast<std::size_t>(count) * run_bytes > room - 4) return false;
    const char *p = tail_end - 4 - static_cast<std::size_t>(count) * run_bytes;
    for (std::uint32_t i = 0; i < count; ++i, p += run_bytes) {
        std::uint64_t a;
        std::uint32_t n;
        std::memcpy(&a, p, 8);
        std::memcpy(&n, p + 8, 4);
        f(reinterpret_cast<char *>(a), static_cast<std::size_t>(n));
    }
    return true;
}

// The local runs one Get batch's reply fills.
struct GetBatch {
    std::vector<Run> local;
    std::size_t bytes = 0;
};

// One Medium at a time: runs gathered until the next would not fit.
class Batcher {
public:
    Batcher(bool put, Rank r, std::atomic<std::uint64_t> &counter, const char *op)
        : put_(put), rank_(r), counter_(counter), op_(op), max_(state.am->max_medium()) {
        if (put_) bytes_.resize(max_);
    }
    Status add(char *remote, char *local, std::size_t n) {
        while (n) {
            const bool joins = !remote_.empty() && remote_.back().addr + remote_.back().len == remote;
            const std::size_t runs_after = remote_.size() + (joins ? 0 : 1);
            const std::size_t header = runs_after * run_bytes + 4;
            std::size_t room;
            if (put_) room = header < max_ - used_ ? max_ - used_ - header : 0;
            else room = header <= max_ ? max_ - used_ : 0;
            if (room == 0) {
                if (remote_.empty())
                    return base::report(Status::too_large, op_, "raise the conduit's Medium size",
                                        "a Medium of %zu bytes holds no VIS piece", max_);
                if (Status s = flush(); s != Status::ok) return s;
                continue;
            }
            const std::size_t take = std::min(n, room);
            if (put_) std::memcpy(bytes_.data() + used_, local, take);
            else run_append(local_, local, take);
            run_append(remote_, remote, take);
            used_ += take;
            remote += take;
            local += take;
            n -= take;
        }
        return Status::ok;
    }
    Status flush() {
        if (remote_.empty()) return Status::ok;
        am::Send m;
        m.category = am::AmCategory::medium;
        std::uint32_t args[4];
        GetBatch *batch = nullptr;
        if (put_) {
            // bytes_ holds max_ bytes; add() kept used_ + runs within it.
            const std::size_t n = used_ + runs_write(bytes_.data() + used_, remote_);
            m.handler = am::sys_vis_put;
            m.payload = bytes_.data();
            m.length = n;
            split(&counter_, args[0], args[1]);
            m.nargs = 2;
        } else {
            requests_.resize(remote_.size() * run_bytes + 4);
            m.handler = am::sys_vis_get;
            m.payload = requests_.data();
            m.length = runs_write(requests_.data(), remote_);
            batch = new GetBatch{std::move(local_), used_};
            local_.clear();
            split(batch, args[0], args[1]);
            split(&counter_, args[2], args[3]);
            m.nargs = 4;
        }
        m.args = args;
        remote_.clear();
        used_ = 0;
        counter_.fetch_add(1, std::memory_order_release);
        if (Status s = state.am->system_request(rank_, m); s != Status::ok) {
            counter_.fetch_sub(1, std::memory_order_release);
            delete batch;
            return base::report(s, op_, nullptr, "the transport failed sending to rank %u", rank_);
        }
        return Status::ok;
    }

private:
    bool put_;
    Rank rank_;
    std::atomic<std::uint64_t> &counter_;
    const char *op_;
    std::size_t max_;
    std::size_t used_ = 0;        // payload bytes gathered
    std::vector<Run> remote_;     // their remote runs
    std::vector<Run> local_;      // Get: their local runs
    std::vector<char> bytes_;     // Put: the payload being built
    std::vector<char> requests_;  // Get: the request being built
};

void counter_drop(std::atomic<std::uint64_t> *counter, const char *op) {
    // Any thread may run this: acquire the issuer's release first.
    if (counter->load(std::memory_order_acquire) == 0)
        base::fatal(op, "this is a Sluice bug", "completion for a finished VIS operation");
    counter->fetch_sub(1, std::memory_order_release);
}

void on_vis_put(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args, unsigned) {
    const char *bytes = static_cast<const char *>(payload);
    std::size_t at = 0;
    const bool ok = runs_read(bytes + n, n, [&](char *addr, std::size_t len) {
        std::memcpy(addr, bytes + at, len);
        at += len;
    });
    if (!ok) base::fatal("vis_put", "this is a Sluice bug", "malformed VIS Put of %zu bytes", n);
    am::Send ack;
    ack.handler = am::sys_vis_put_ack;
    ack.args = args;
    ack.nargs = 2;
    (void)state.am->system_reply(token, ack);
}
void on_vis_put_ack(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
    counter_drop(join<std::atomic<std::uint64_t>>(args[0], args[1]), "vis_put");
}

void on_vis_get(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args, unsigned) {
    thread_local std::vector<char> gathered;
    gathered.clear();
    const char *p = static_cast<const char *>(payload);
    const bool ok = runs_read(p + n, n, [&](char *addr, std::size_t len) { gathered.insert(gathered.end(), addr, addr + len); });
    if (!ok) base::fatal("vis_get", "this is a Sluice bug", "malformed VIS Get request of %zu bytes", n);
    am::Send data;
    data.category = am::AmCategory::medium;
    data.handler = am::sys_vis_get_reply;
    data.payload = gathered.data();
    data.length = gathered.size();
    data.args = args;
    data.nargs = 4;
    (void)state.am->system_reply(token, data);
}
void on_vis_get_reply(sluice_token_t, void *payload, std::size_t n, const std::uint32_t *args, unsigned) {
    auto *counter = join<std::atomic<std::uint64_t>>(args[2], args[3]);
    if (counter->load(std::memory_order_acquire) == 0)
        base::fatal("vis_get", "this is a Sluice bug", "data for a finished VIS Get");
    GetBatch *batch = join<GetBatch>(args[0], args[1]);
    if (batch->bytes != n)
        base::fatal("vis_get", "this is a Sluice bug", "VIS Get reply of %zu bytes for %zu", n, batch->bytes);
    const char *bytes = static_cast<const char *>(payload);
    for (const Run &r : batch->local) {
        std::memcpy(r.addr, bytes, r.len);
        bytes += r.len;
    }
    delete batch;
    counter->fetch_sub(1, std::memory_order_release);
}

} // namespace

Status send(bool put, Rank r, const VisSide &remote, const VisSide &local, std::atomic<std::uint64_t> &counter,
            const char *op) {
    Batcher batcher(put, r, counter, op);
    Status s = Status::ok;
    walk(remote, local, [&](char *rp, char *lp, std::size_t n) {
        s = n >= state.rma_min ? state.rma->start(put, r, rp, lp, n, counter) : batcher.add(rp, lp, n);
        return s == Status::ok;
    });
    if (s == Status::ok) s = batcher.flush();
    return s;
}

void handlers_register(am::AmEngine &am) {
    am.system_register(am::sys_vis_put, on_vis_put);
    am.system_register(am::sys_vis_put_ack, on_vis_put_ack);
    am.system_register(am::sys_vis_get, on_vis_get);
    am.system_register(am::sys_vis_get_reply, on_vis_get_reply);
}

} // namespace sluice::rma::vis
