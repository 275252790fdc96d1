// src/coll/engine.cpp - collective messages (sys_coll), the team registry
// the handler files them by, and the runner that resumes the collectives.
#include "coll/engine.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace sluice::coll {
namespace {

struct Engine {
    ClientEnv env;
    // Guards the registry and every team's inbox: handlers of any thread
    // file messages, the runner takes them.
    std::mutex lock;
    std::unordered_map<std::uint64_t, sluice_team *> live;  // by team id
    std::unordered_map<std::uint64_t, Inbox> early;          // for teams not made here yet
    std::vector<std::unique_ptr<sluice_team>> handles;       // every team ever made, until fini
    std::vector<std::unique_ptr<Op>> starting;               // under lock: ops the runner adopts
    std::vector<std::unique_ptr<Op>> running;                // the runner's own
    std::atomic<bool> runner_busy{false};
    std::uint64_t next_id = 16;
};
Engine *engine = nullptr;

std::uint64_t join64(std::uint32_t lo, std::uint32_t hi) { return static_cast<std::uint64_t>(hi) << 32 | lo; }

// args: team id (2), sequence, tag, offset (2), total (2).
void on_message(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args, unsigned) {
    const std::uint64_t id = join64(args[0], args[1]);
    const MessageKey key{args[2], args[3]};
    const std::uint64_t offset = join64(args[4], args[5]);
    const std::uint64_t total = join64(args[6], args[7]);
    std::lock_guard<std::mutex> guard(engine->lock);
    auto it = engine->live.find(id);
    Inbox &inbox = it != engine->live.end() ? it->second->inbox : engine->early[id];
    Message &m = inbox[key];
    if (m.got == 0) m.allocate(total);
    m.size = total;
    m.source = token->source;
    if (n && offset + n <= total) std::memcpy(m.bytes() + offset, payload, n);
    m.got += n;
    if (m.got >= total) m.complete = true;
}

// The same for a message of at most short_max bytes, carried in a Short's
// arguments after (team id, sequence, tag, size): no payload buffer on
// either side.  Filed under sys_coll_reply, the handler id this layer has
// beside sys_coll (it sends no replies).
constexpr std::size_t short_max = 4 * (SLUICE_AM_MAX_ARGS - 5);
void on_short(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    const std::uint64_t id = join64(args[0], args[1]);
    const MessageKey key{args[2], args[3]};
    const std::size_t n = args[4];
    std::lock_guard<std::mutex> guard(engine->lock);
    auto it = engine->live.find(id);
    Inbox &inbox = it != engine->live.end() ? it->second->inbox : engine->early[id];
    Message &m = inbox[key];
    m.size = m.got = n;
    m.source = token->source;
    std::memcpy(m.small, args + 5, n);
    m.complete = true;
}

// Takes the complete message `key` of `team`, if it is there.
bool take(sluice_team *team, const MessageKey &key, Message &out) {
    std::lock_guard<std::mutex> guard(engine->lock);
    auto it = team->inbox.find(key);
    if (it == team->inbox.end() || !it->second.complete) return false;
    out = std::move(it->second);
    team->inbox.erase(it);
    return true;
}

// The progress hook: resumes every collective whose message has come.  One
// thread at a time; a send that polls for room comes back here and finds
// the runner busy.
int run(void *) {
    Engine &e = *engine;
    if (e.runner_busy.exchange(true, std::memory_order_acquire)) return 0;
    {
        std::lock_guard<std::mutex> guard(e.lock);
        for (auto &op : e.starting) e.running.push_back(std::move(op));
        e.starting.clear();
    }
    int progress = 0;
    for (std::size_t i = 0; i < e.running.size();) {
        Op &op = *e.running[i];
        if (op.waiting && !take(op.team, {op.seq, op.wait_tag}, op.arrived)) {
            ++i;
            continue;
        }
        std::coroutine_handle<> h = std::exchange(op.resume_at, {});
        h.resume();
        ++progress;
        if (op.task.done()) {
            std::atomic<std::uint64_t> *done = op.done;
            op.done = nullptr;
            if (op.result) *op.result = op.status;
            e.running.erase(e.running.begin() + static_cast<std::ptrdiff_t>(i));  // the op is gone
            engine->env.am->hook_work_add(-1);
            done->store(0, std::memory_order_release);
        } else {
            ++i;
        }
    }
    e.runner_busy.store(false, std::memory_order_release);
    return progress;
}

} // namespace

bool Recv::await_ready() { return take(op.team, {op.seq, tag_}, msg); }

void send(Op &op, Rank dest, std::uint32_t t, const void *data, std::size_t n) {
    const std::uint64_t id = op.team->team.id();
    const std::size_t piece = std::max<std::size_t>(1, engine->env.am->max_medium());
    const Rank to = op.job(dest);
    if (n <= short_max) {
        std::uint32_t args[SLUICE_AM_MAX_ARGS] = {static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(id >> 32),
                                                  op.seq, t, static_cast<std::uint32_t>(n)};
        if (n) std::memcpy(args + 5, data, n);
        am::Send m;
        m.handler = am::sys_coll_reply;
        m.args = args;
        m.nargs = static_cast<unsigned>(5 + (n + 3) / 4);
        if (Status s = engine->env.am->system_request(to, m); s != Status::ok)
            op.fail(base::report(s, op.name, nullptr, "the transport failed sending to rank %u", to));
        return;
    }
    for (std::size_t off = 0; off < n || off == 0; off += piece) {
        const std::uint32_t args[8] = {static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(id >> 32), op.seq, t,
                                       static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(std::uint64_t{off} >> 32),
                                       static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(std::uint64_t{n} >> 32)};
        am::Send m;
        m.category = am::AmCategory::medium;
        m.handler = am::sys_coll;
        m.payload = static_cast<const char *>(data) + off;
        m.length = std::min(piece, n - off);
        m.args = args;
        m.nargs = 8;
        if (Status s = engine->env.am->system_request(to, m); s != Status::ok) {
            op.fail(base::report(s, op.name, nullptr, "the transport failed sending to rank %u", to));
            return;
        }
        if (n == 0) break;
    }
}

bool size_check(Op &op, const Message &m, std::size_t expected) {
    if (m.size == expected) return true;
    if (op.status == Status::ok)
        op.fail(base::report(Status::argument, op.name, "pass the same sizes on every member of the team",
                             "rank %u passed a size that gives %zu bytes here, this rank's gives %zu", m.source, m.size,
                             expected));
    return false;
}

std::unique_ptr<Op> op_new(sluice_team *team, const char *name) {
    auto op = std::make_unique<Op>();
    op->team = team;
    op->seq = team->next_seq++;
    op->name = name;
    return op;
}

void op_start(std::unique_ptr<Op> op, std::atomic<std::uint64_t> *done) {
    done->store(1, std::memory_order_relaxed);
    op->done = done;
    op->resume_at = op->task.handle();
    engine->env.am->hook_work_add(1);
    {
        std::lock_guard<std::mutex> guard(engine->lock);
        engine->starting.push_back(std::move(op));
    }
    // Start at once: a small collective may finish before the call returns.
    if (!am::AmEngine::in_handler()) run(nullptr);
}

void wait(std::atomic<std::uint64_t> &flag) {
    while (flag.load(std::memory_order_acquire) != 0) engine->env.poll();
}

const ClientEnv &env() { return engine->env; }

sluice_team *team_register(std::uint64_t id, std::vector<Rank> members, bool builtin) {
    auto t = std::make_unique<sluice_team>(id, std::move(members), engine->env.rank, engine->env.host_of);
    t->builtin = builtin;
    sluice_team *p = t.get();
    std::lock_guard<std::mutex> guard(engine->lock);
    if (auto it = engine->early.find(id); it != engine->early.end()) {
        p->inbox = std::move(it->second);
        engine->early.erase(it);
    }
    engine->live[id] = p;
    engine->handles.push_back(std::move(t));
    return p;
}

void team_unregister(sluice_team *t) {
    std::lock_guard<std::mutex> guard(engine->lock);
    engine->live.erase(t->team.id());
    t->magic = 0;
    t->inbox.clear();
}

std::uint64_t &next_team_id() { return engine->next_id; }

void engine_init(const ClientEnv &e) {
    engine = new Engine;
    engine->env = e;
    e.am->system_register(am::sys_coll, on_message);
    e.am->system_register(am::sys_coll_reply, on_short);
    e.am->hook_register(run, nullptr);
    fast_init(e);
}

void engine_fini() {
    // Handles stay valid memory until here so a destroyed one is caught.
    std::lock_guard<std::mutex> guard(engine->lock);
    engine->live.clear();
    engine->early.clear();
    engine->running.clear();
    engine->starting.clear();
}

} // namespace sluice::coll
