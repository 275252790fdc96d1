// src/coll/fast.cpp - the fast lane of the small reduce-to-all: recursive
// doubling whose data rides in the arguments of one Short per round, landing
// in a fixed slot of the team's (by sequence parity and round), with no
// coroutine, inbox or allocation on the way.  Taken by a blocking
// reduce_all of at most fast_bytes on a team whose size is a power of two,
// under SLUICE_COLL_ALGORITHM=auto: every member decides alike from the
// arguments they share.
//
// Two slots per round suffice: a partner can only send round k of
// collective s+2 after it has everything of s+1 from this rank, which this
// rank sends after it has read every slot of s.
#include "coll/coll.hpp"
#include "coll/engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace sluice::coll {
namespace {

constexpr std::size_t fast_bytes = 32;
constexpr unsigned max_rounds = 32;
constexpr std::uint32_t mismatch_bit = 0x80000000u;

struct Slot {
    std::atomic<std::uint32_t> seq{0};  // the collective whose data is here (0: none yet)
    std::uint32_t bytes = 0;
    std::uint32_t data[fast_bytes / 4] = {};
};
struct Slots {
    Slot slot[2][max_rounds];
    std::uint32_t next_seq = 0;  // the calling thread's
};

const ClientEnv *fast_env = nullptr;
// Slots by team id, made by whichever comes first: the team's first fast
// collective here, or a partner's message for it.
std::mutex slots_lock;
std::unordered_map<std::uint64_t, std::unique_ptr<Slots>> slots_by_team;

Slots &slots_of(std::uint64_t id) {
    std::lock_guard<std::mutex> guard(slots_lock);
    auto &s = slots_by_team[id];
    if (!s) s = std::make_unique<Slots>();
    return *s;
}

std::uint64_t join64(std::uint32_t lo, std::uint32_t hi) { return static_cast<std::uint64_t>(hi) << 32 | lo; }

// args: team id (2), sequence, round, bytes, data.
void on_fast(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
    Slot &s = slots_of(join64(args[0], args[1])).slot[args[2] & 1][args[3] % max_rounds];
    s.bytes = args[4];
    std::memcpy(s.data, args + 5, std::min<std::size_t>(args[4] & ~mismatch_bit, fast_bytes));
    s.seq.store(args[2], std::memory_order_release);
}

} // namespace

void fast_init(const ClientEnv &e) {
    fast_env = &env();
    e.am->system_register(am::sys_coll_fast, on_fast);
}

void fast_forget(std::uint64_t team_id) {
    std::lock_guard<std::mutex> guard(slots_lock);
    slots_by_team.erase(team_id);
}

bool fast_reduce_all_fits(const Team &team, std::size_t bytes) {
    const Rank n = team.size();
    return algorithm_automatic() && bytes <= fast_bytes && n > 1 && (n & (n - 1)) == 0;
}

Status fast_reduce_all(Team &team, void *dst, const void *src, const Reduction &r, std::size_t count,
                       const char *op) {
    const std::size_t bytes = count * r.elem;
    Slots &slots = slots_of(team.id());
    const std::uint32_t seq = ++slots.next_seq;
    alignas(8) std::uint32_t mine[fast_bytes / 4];
    alignas(8) std::uint32_t theirs[fast_bytes / 4];
    std::memcpy(mine, src, bytes);
    Status status = Status::ok;
    const Rank me = team.rank();
    for (unsigned k = 0; (Rank{1} << k) < team.size(); ++k) {
        const Rank partner = me ^ (Rank{1} << k);
        std::uint32_t args[5 + fast_bytes / 4];
        args[0] = static_cast<std::uint32_t>(team.id());
        args[1] = static_cast<std::uint32_t>(team.id() >> 32);
        args[2] = seq;
        args[3] = k;
        // The top bit: this rank has seen a member with another size, so
        // every member learns of it by the last round.
        args[4] = static_cast<std::uint32_t>(bytes) | (status != Status::ok ? mismatch_bit : 0);
        std::memcpy(args + 5, mine, bytes);
        am::Send m;
        m.handler = am::sys_coll_fast;
        m.args = args;
        m.nargs = static_cast<unsigned>(5 + (bytes + 3) / 4);
        if (Status s = fast_env->am->system_request(team.to_job(partner), m); s != Status::ok)
            return base::report(s, op, nullptr, "could not send to team rank %u", partner);
        Slot &in = slots.slot[seq & 1][k];
        while (in.seq.load(std::memory_order_acquire) != seq) fast_env->poll();
        if (in.bytes != bytes) {
            if (status == Status::ok) {
                if (in.bytes & mismatch_bit)
                    status = base::report(Status::argument, op, "pass the same count and type on every member",
                                          "members of the team reduce different sizes (team rank %u saw it)", partner);
                else
                    status = base::report(Status::argument, op, "pass the same count and type on every member",
                                          "team rank %u reduces %u bytes, this rank %zu", partner, in.bytes, bytes);
            }
            continue;
        }
        std::memcpy(theirs, in.data, bytes);
        // The lower half's value on the left: every member combines in the
        // same order, so floating-point results agree bit for bit.
        if (partner < me) {
            r.apply(theirs, mine, count);
            std::memcpy(mine, theirs, bytes);
        } else {
            r.apply(mine, theirs, count);
        }
    }
    if (status == Status::ok) std::memcpy(dst, mine, bytes);
    return status;
}

} // namespace sluice::coll
