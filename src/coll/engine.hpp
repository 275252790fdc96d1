// src/coll/engine.hpp - what runs a collective: the messages of one team
// (kept by sequence number until the collective that wants them asks), the
// operations in flight as C++20 coroutines, and the progress hook that
// resumes them.  The algorithms (algorithms.cpp) are written as straight
// code that co_awaits its messages.
#pragma once

#include "coll/team.hpp"

#include <sluice.h>

#include <atomic>
#include <coroutine>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sluice::coll {

// One message of one collective as it arrived (reassembled from its Medium
// pieces).
struct Message {
    std::unique_ptr<char[]> heap;  // above sizeof small
    char small[48];  // a Short message's bytes, or a small piece
    std::size_t size = 0;
    std::size_t got = 0;
    bool complete = false;
    Rank source = 0;  // job rank of the sender

    char *bytes() { return heap ? heap.get() : small; }
    const char *bytes() const { return heap ? heap.get() : small; }
    void allocate(std::size_t n) {
        if (n > sizeof small) heap.reset(new char[n]);
    }
};

// A message is named by the collective's sequence number on its team and a
// tag the algorithm chooses: its phase, and the sender's index or the
// round within the phase.
inline std::uint32_t tag(unsigned phase, std::uint32_t sub) { return phase << 24 | (sub & 0xffffff); }
using MessageKey = std::pair<std::uint32_t, std::uint32_t>;  // (sequence, tag)
using Inbox = std::map<MessageKey, Message>;

} // namespace sluice::coll

namespace sluice::coll {
// Where a team's members are: the members on each host, the host leaders
// (the first member of each host, in team order), in team ranks.
struct HostLayout {
    std::vector<Rank> host;          // my host's members
    std::vector<Rank> leaders;       // one per host
    std::vector<std::uint32_t> host_index;  // each member's host, as an index into leaders
    Rank me_in_host = 0;
    void make(const Team &t, const std::vector<std::uint32_t> &host_of);
};
} // namespace sluice::coll

// A team and what the collectives keep of it.
struct sluice_team {
    static constexpr std::uint64_t live = 0x7365616d6c697665ull;
    std::uint64_t magic = live;
    sluice::coll::Team team;
    bool builtin = false;
    std::uint32_t next_seq = 0;   // the calling thread's (one at a time per team)
    sluice::coll::Inbox inbox;    // under the engine lock
    sluice::coll::HostLayout layout;

    sluice_team(std::uint64_t id, std::vector<sluice::coll::Rank> members, sluice::coll::Rank me,
                const std::vector<std::uint32_t> &host_of)
        : team(id, std::move(members), me, host_of) {
        team.handle_ = this;
        layout.make(team, host_of);
    }
};

namespace sluice::coll {

struct Op;

// A coroutine of an algorithm; awaiting one runs it to its end.
class Task {
public:
    struct promise_type {
        std::coroutine_handle<> continuation;
        Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
        std::suspend_always initial_suspend() noexcept { return {}; }
        struct Final {
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
                std::coroutine_handle<> c = h.promise().continuation;
                return c ? c : std::noop_coroutine();
            }
            void await_resume() noexcept {}
        };
        Final final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() { std::terminate(); }
    };
    Task() = default;
    explicit Task(std::coroutine_handle<promise_type> h) : h_(h) {}
    Task(Task &&o) noexcept : h_(std::exchange(o.h_, {})) {}
    Task &operator=(Task &&o) noexcept {
        if (h_) h_.destroy();
        h_ = std::exchange(o.h_, {});
        return *this;
    }
    ~Task() {
        if (h_) h_.destroy();
    }
    bool done() const { return !h_ || h_.done(); }
    std::coroutine_handle<promise_type> handle() const { return h_; }

    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
        h_.promise().continuation = awaiter;
        return h_;
    }
    void await_resume() noexcept {}

private:
    std::coroutine_handle<promise_type> h_;
};

// One collective in flight on this rank.
struct Op {
    sluice_team *team = nullptr;
    std::uint32_t seq = 0;
    const char *name = "";
    Task task;
    std::coroutine_handle<> resume_at;  // the coroutine to resume next
    bool waiting = false;               // for the message (seq, wait_tag)
    std::uint32_t wait_tag = 0;
    Message arrived;                    // what the runner took for it
    Status status = Status::ok;         // the first error, reported already
    std::atomic<std::uint64_t> *done = nullptr;  // dropped to 0 at the end
    Status *result = nullptr;           // a blocking caller's: gets status at the end
    std::vector<char> scratch;          // buffers the algorithm owns

    Rank me() const { return team->team.rank(); }
    Rank size() const { return team->team.size(); }
    Rank job(Rank team_rank) const { return team->team.to_job(team_rank); }
    void fail(Status s) {
        if (status == Status::ok) status = s;
    }
};

// co_await recv(op, tag): the message, once it has arrived whole.
struct Recv {
    Op &op;
    std::uint32_t tag_;
    Message msg;
    bool await_ready();
    void await_suspend(std::coroutine_handle<> h) {
        op.resume_at = h;
        op.waiting = true;
        op.wait_tag = tag_;
    }
    Message await_resume() {
        if (op.waiting) {
            op.waiting = false;
            return std::move(op.arrived);
        }
        return std::move(msg);
    }
};
inline Recv recv(Op &op, std::uint32_t t) { return Recv{op, t, {}}; }

// Sends `n` bytes to team rank `dest` as the message `t` of op's
// collective (in Medium pieces); errors are reported and recorded in op.
void send(Op &op, Rank dest, std::uint32_t t, const void *data, std::size_t n);

// Checks that a message holds `expected` bytes; reports (once per op) and
// returns false when it does not.
bool size_check(Op &op, const Message &m, std::size_t expected);

// Starts `task` as the collective `op` (which the engine owns from now
// on) and returns it; `done` is dropped to 0 when it ends.
void op_start(std::unique_ptr<Op> op, std::atomic<std::uint64_t> *done);
// A new Op on `team` with its sequence number.
std::unique_ptr<Op> op_new(sluice_team *team, const char *name);
// Polls until `flag` is 0.
void wait(std::atomic<std::uint64_t> &flag);

const ClientEnv &env();
void engine_init(const ClientEnv &e);
void engine_fini();

// The algorithms (algorithms.cpp): SLUICE_COLL_ALGORITHM and
// SLUICE_COLL_SINGLE_COPY, and each collective's coroutine.
void algorithms_configure(const std::string &algorithm, std::size_t single_copy);
// SLUICE_COLL_ALGORITHM=auto: the algorithms may pick fast lanes (fast.cpp).
bool algorithm_automatic();
// The small reduce-to-all's fast lane (fast.cpp): whether a blocking
// reduce_all of `bytes` on `team` takes it (the same answer on every
// member, given the same arguments), and the lane itself.
bool fast_reduce_all_fits(const Team &team, std::size_t bytes);
Status fast_reduce_all(Team &team, void *dst, const void *src, const struct Reduction &r, std::size_t count,
                       const char *op);
void fast_init(const ClientEnv &e);
void fast_forget(std::uint64_t team_id);
Task task_barrier(Op &op);
Task task_broadcast(Op &op, Rank root, void *dst, const void *src, std::size_t n);
Task task_reduce(Op &op, Rank root, void *dst, const void *src, const struct Reduction &r, std::size_t count);
Task task_allgather(Op &op, void *dst, const void *src, std::size_t n);
Task task_alltoall(Op &op, void *dst, const void *src, std::size_t n);
// The built-in teams (team.cpp), made at init.
void teams_builtin_make(const ClientEnv &e);
// The team registry (team.cpp): a new team, registered under its id, with
// the messages that arrived for it before it existed.
sluice_team *team_register(std::uint64_t id, std::vector<Rank> members, bool builtin);
void team_unregister(sluice_team *t);
void teams_release();
// Ids: one above every id this rank has used (team.cpp).
std::uint64_t &next_team_id();

} // namespace sluice::coll
