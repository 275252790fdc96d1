// tests/softnic/lapi/context.cpp - the dispatcher, the notification,
// completion and watchdog threads, and waiting (context.hpp).
#include "context.hpp"

#include "wire.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace softnic_lapi {
namespace {

thread_local bool inside_header_handler = false;
thread_local bool inside_report = false;

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

constexpr std::int64_t check_every_ns = 100'000'000;  // liveness of peers while waiting
constexpr long wait_us = 1000;                          // one doorbell wait while waiting
constexpr std::int64_t flush_ns = 10'000'000'000;       // LAPI_Term's bound on pushing what is owed

bool header_valid(const PacketHead &h, std::uint32_t bytes, std::uint32_t tasks) {
    return h.kind >= kind_am && h.kind <= kind_collective && h.source < tasks && h.length <= packet_data &&
           std::uint64_t{sizeof h} + h.uhdr_len + h.length == bytes && h.offset + h.length <= h.total &&
           (h.kind != kind_get || h.length == 0);
}

} // namespace

bool in_header_handler() { return inside_header_handler; }

Context::Context(lapi_handle_t h, const Job &j, const Knobs &k, LAPI_err_hndlr *err_hndlr)
    : handle(h), job(j), knobs(k), err_hndlr_(err_hndlr), peers_(new Peer[j.tasks]), out_(j.tasks) {}

Context::~Context() { stop(); }

int Context::start() {
    const int rc = task_join(job.partition, job.task, job.tasks, slot_, incarnation_);
    if (rc != LAPI_SUCCESS) return rc;
    joined_ = true;
    serving_start();
    // As POE's tasks do, every task waits for the whole job before it
    // communicates: a task not yet there would look like one gone.
    const std::int64_t deadline = now_ns() + knobs.init_timeout_s * 1'000'000'000;
    std::vector<bool> found(job.tasks);
    std::uint32_t missing = job.tasks;
    for (;;) {
        for (std::uint32_t t = 0; t < job.tasks; ++t) {
            if (found[t]) continue;
            TaskRef &r = peers_[t].ref;
            if (task_find(job.partition, t, incarnation_, r) || wire_find(job.partition, t, incarnation_, r)) {
                found[t] = true;
                --missing;
            }
        }
        if (missing == 0) break;
        if (now_ns() > deadline) {
            serving_stop();
            task_leave(slot_);
            joined_ = false;
            return LAPI_ERR_TIMEOUT;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    notification_ = std::thread([this] { notification_loop(); });
    completion_ = std::thread([this] { completion_loop(); });
    watchdog_ = std::thread([this] { watchdog_loop(); });
    return LAPI_SUCCESS;
}

void Context::stop() {
    if (!joined_) return;
    // Acknowledgements and get replies still queued are owed to other
    // tasks, whose fences wait for them; completions queued are owed here.
    const std::int64_t deadline = now_ns() + flush_ns;
    for (;;) {
        const std::uint32_t seen = doorbell(slot_);
        dispatch();
        bool idle;
        {
            std::lock_guard<std::mutex> g(completion_mutex_);
            idle = completions_.empty() && !completing_;
        }
        if ((idle && out_queued_.load() == 0) || now_ns() > deadline) break;
        doorbell_wait(slot_, seen, wait_us);
    }
    stopping_ = true;
    doorbell_ring(slot_);
    {
        std::lock_guard<std::mutex> g(completion_mutex_);
        completion_ready_.notify_all();
    }
    for (std::thread *t : {&notification_, &completion_, &watchdog_})
        if (t->joinable()) t->join();
    serving_stop();
    task_leave(slot_);
    joined_ = false;
}

int Context::post(std::uint32_t target, Outgoing o, bool tracked) {
    o.head.source = job.task;
    if (!o.head.message) o.head.message = next_message_++;
    if (tracked) ++peers_[target].outstanding;
    {
        std::lock_guard<std::mutex> g(out_mutex_);
        out_[target].push_back(std::move(o));
        ++out_queued_;
    }
    if (push_outgoing()) doorbell_ring(slot_);
    return LAPI_SUCCESS;
}

bool Context::push_outgoing() {
    std::lock_guard<std::mutex> g(out_mutex_);
    bool moved = false;
    for (std::uint32_t t = 0; t < job.tasks; ++t) {
        std::deque<Outgoing> &q = out_[t];
        while (!q.empty()) {
            Outgoing &o = q.front();
            const std::uint64_t sent = o.sent;
            const bool started = o.started;
            const Push p = outgoing_push(peers_[t].ref, o);
            moved = moved || o.sent != sent || o.started != started;
            if (p == Push::done) {
                counter_add(reinterpret_cast<std::uint64_t>(o.sent_cntr), 1);
                q.pop_front();
                --out_queued_;
                moved = true;
                continue;
            }
            if (p == Push::gone) {
                // Its counters never move: a fence or a wait on them fails
                // (reachable, died_peer).
                out_queued_ -= q.size();
                q.clear();
                moved = true;
            }
            break;
        }
    }
    return moved;
}

bool Context::dispatch(bool notified) {
    std::unique_lock<std::mutex> l(dispatch_mutex_, std::try_to_lock);
    if (!l.owns_lock() || (notified && !interrupt.load())) return false;
    bool moved = false;
    for (int i = 0; i < 256; ++i) {
        const Slot *s = ring_peek(slot_);
        if (!s) break;
        PacketHead h;
        std::memcpy(&h, s->packet, sizeof h);
        if (s->bytes >= sizeof h && header_valid(h, s->bytes, job.tasks)) handle_packet(h, s->packet + sizeof h);
        ring_release(slot_);
        moved = true;
    }
    if (out_queued_.load() && push_outgoing()) moved = true;
    // Counters may have moved: whoever waits on them looks again.
    if (moved) doorbell_ring(slot_);
    return moved;
}

void Context::handle_packet(const PacketHead &h, const unsigned char *data) {
    const auto key = std::make_tuple(h.kind, h.source, h.message);
    // Copies `h`'s data to `base` + its offset (nowhere when `base` is
    // null); true once the message's last bytes are in, its record (none
    // for a message of one packet) then gone.
    auto land = [&](unsigned char *base, Incoming *record) {
        if (h.length && base) std::memcpy(base + h.offset, data, h.length);
        if (h.offset == 0 && h.length == h.total) return true;
        Incoming &r = record ? *record : incoming_[key];
        r.received += h.length;
        if (r.received < h.total) return false;
        incoming_.erase(key);
        return true;
    };
    switch (h.kind) {
    case kind_am: {
        if (h.offset == 0) {
            Incoming in;
            begin_am(h, data, in);
            data += h.uhdr_len;
            if (h.length && in.buffer) std::memcpy(in.buffer, data, h.length);
            if (h.length == h.total) complete(h, in);
            else incoming_[key] = Incoming{in.buffer, h.length, in.completion, in.user_info};
            return;
        }
        const auto it = incoming_.find(key);
        if (it == incoming_.end()) return;
        const Incoming in = it->second;
        if (land(in.buffer, &it->second)) complete(h, in);
        return;
    }
    case kind_put:
        if (land(reinterpret_cast<unsigned char *>(h.target_addr), nullptr)) {
            counter_add(h.target_cntr, 1);
            acknowledge(h);
        }
        return;
    case kind_get: {
        // The reply carries the target's bytes back; its tgt_cntr moves once
        // they are all out, when the target may change them again.
        Outgoing o;
        o.head.kind = kind_reply;
        o.head.message = h.message;
        o.head.total = h.total;
        o.head.origin_addr = h.origin_addr;
        o.head.origin_cntr = h.origin_cntr;
        o.data = reinterpret_cast<const unsigned char *>(h.target_addr);
        o.sent_cntr = reinterpret_cast<lapi_cntr_t *>(h.target_cntr);
        post(h.source, std::move(o), false);
        return;
    }
    case kind_reply:
        if (land(reinterpret_cast<unsigned char *>(h.origin_addr), nullptr)) {
            counter_add(h.origin_cntr, 1);
            --peers_[h.source].outstanding;
        }
        return;
    case kind_ack:
        counter_add(h.completion_cntr, 1);
        --peers_[h.source].outstanding;
        return;
    case kind_collective: {
        Peer &p = peers_[h.source];
        p.value[h.handler % 2].store(h.target_addr);
        p.arrived.store(h.handler);
        return;
    }
    }
}

void Context::begin_am(const PacketHead &h, const unsigned char *data, Incoming &in) {
    hdr_hndlr_t *handler = h.handler < LAPI_ADDR_TBL_SZ ? reinterpret_cast<hdr_hndlr_t *>(address_table[h.handler].load())
                                                        : reinterpret_cast<hdr_hndlr_t *>(h.handler);
    if (!handler) {
        report(LAPI_ERR_HDR_HNDL_NULL, static_cast<int>(h.source),
               "an active message from task " + std::to_string(h.source) + " names header handler index " +
                   std::to_string(h.handler) + ", which LAPI_Addr_set did not set here: its data is dropped");
        return;
    }
    lapi_handle_t hndl = handle;
    uint uhdr_len = h.uhdr_len;
    ulong msg_len = h.total;
    compl_hndlr_t *completion = nullptr;
    void *user_info = nullptr;
    const std::uint64_t serial = ++handler_serial_;
    const std::int64_t since = now_ns();
    handler_since_ = since;
    inside_header_handler = true;
    void *buffer = handler(&hndl, const_cast<unsigned char *>(data), &uhdr_len, &msg_len, &completion, &user_info);
    inside_header_handler = false;
    handler_since_ = 0;
    const std::int64_t took_ms = (now_ns() - since) / 1'000'000;
    std::uint64_t reported = handler_reported_.load();
    if (took_ms > knobs.hh_limit_ms && reported < serial && handler_reported_.compare_exchange_strong(reported, serial))
        report(LAPI_ERR_HDR_HNDLR_SLOW, static_cast<int>(h.source),
               "a header handler ran " + std::to_string(took_ms) + " ms, past SOFTNIC_LAPI_HH_LIMIT_MS=" +
                   std::to_string(knobs.hh_limit_ms) + ": header handlers run in the dispatcher and must not block");
    if (!buffer && h.total)
        std::fprintf(stderr, "softnic-lapi: task %u: a header handler gave no buffer for %llu bytes from task %u: "
                             "they are dropped\n",
                     job.task, static_cast<unsigned long long>(h.total), h.source);
    in.buffer = static_cast<unsigned char *>(buffer);
    in.completion = completion;
    in.user_info = user_info;
}

void Context::complete(const PacketHead &h, const Incoming &in) {
    if (in.completion) {
        std::lock_guard<std::mutex> g(completion_mutex_);
        completions_.push_back(Completion{in.completion, in.user_info, h});
        completion_ready_.notify_one();
        return;
    }
    counter_add(h.target_cntr, 1);
    acknowledge(h);
}

void Context::acknowledge(const PacketHead &h) {
    Outgoing o;
    o.head.kind = kind_ack;
    o.head.message = h.message;
    o.head.completion_cntr = h.completion_cntr;
    post(h.source, std::move(o), false);
}

bool Context::died_peer() {
    for (std::uint32_t t = 0; t < job.tasks; ++t) {
        if (t == job.task) continue;
        const TaskRef &r = peers_[t].ref;
        if ((r.host == this_host ? task_liveness(r) : wire_liveness(r)) == Liveness::died) return true;
    }
    return false;
}

int Context::wait_until(const std::function<bool()> &done, const std::function<int()> &broken) {
    std::int64_t next_check = now_ns() + check_every_ns;
    for (;;) {
        if (done()) return LAPI_SUCCESS;
        if (const int e = take_error()) return e;
        const std::uint32_t seen = doorbell(slot_);
        const bool moved = dispatch();
        if (done()) return LAPI_SUCCESS;
        if (moved) continue;
        if (now_ns() >= next_check) {
            if (const int e = broken ? broken() : idle_with_dead_peer()) return e;
            next_check = now_ns() + check_every_ns;
        }
        doorbell_wait(slot_, seen, wait_us);
    }
}

int Context::idle_with_dead_peer() {
    // A task that died without LAPI_Term leaves its job broken: what it
    // would have sent never comes.  Only once nothing is left here to run.
    if (ring_peek(slot_)) return LAPI_SUCCESS;
    {
        std::lock_guard<std::mutex> g(completion_mutex_);
        if (!completions_.empty() || completing_) return LAPI_SUCCESS;
    }
    return died_peer() ? LAPI_ERR_TGT_PURGED : LAPI_SUCCESS;
}

int Context::fence() {
    auto done = [this] {
        for (std::uint32_t t = 0; t < job.tasks; ++t)
            if (peers_[t].outstanding.load()) return false;
        return true;
    };
    // A target that ended or died never acknowledges.
    auto broken = [this] {
        for (std::uint32_t t = 0; t < job.tasks; ++t)
            if (peers_[t].outstanding.load() && t != job.task && reachable(t) != LAPI_SUCCESS)
                return LAPI_ERR_TGT_PURGED;
        return idle_with_dead_peer();
    };
    return wait_until(done, broken);
}

int Context::reachable(std::uint32_t task) {
    const TaskRef &r = peers_[task].ref;
    return (r.host == this_host ? task_liveness(r) : wire_liveness(r)) == Liveness::live ? LAPI_SUCCESS
                                                                                        : LAPI_ERR_TGT_PURGED;
}

int Context::collective(void *value, void **table) {
    const std::uint64_t seq = ++collective_seq_;
    const auto word = reinterpret_cast<std::uint64_t>(value);
    Peer &me = peers_[job.task];
    me.value[seq % 2].store(word);
    me.arrived.store(seq);
    for (std::uint32_t t = 0; t < job.tasks; ++t) {
        if (t == job.task) continue;
        Outgoing o;
        o.head.kind = kind_collective;
        o.head.handler = seq;
        o.head.target_addr = word;
        post(t, std::move(o), false);
    }
    auto done = [this, seq] {
        for (std::uint32_t t = 0; t < job.tasks; ++t)
            if (peers_[t].arrived.load() < seq) return false;
        return true;
    };
    // A task that has not arrived and never will.
    auto broken = [this, seq] {
        for (std::uint32_t t = 0; t < job.tasks; ++t)
            if (peers_[t].arrived.load() < seq && reachable(t) != LAPI_SUCCESS) return LAPI_ERR_TGT_PURGED;
        return LAPI_SUCCESS;
    };
    const int rc = wait_until(done, broken);
    if (rc != LAPI_SUCCESS) return rc;
    if (table)
        for (std::uint32_t t = 0; t < job.tasks; ++t)
            table[t] = reinterpret_cast<void *>(peers_[t].value[seq % 2].load());
    return LAPI_SUCCESS;
}

void Context::report(int code, int source, const std::string &what) {
    std::fprintf(stderr, "softnic-lapi: task %u: %s\n", job.task, what.c_str());
    int none = 0;
    pending_error_.compare_exchange_strong(none, code);
    // An error handler that breaks a rule itself is not called again.
    if (!err_hndlr_ || inside_report) return;
    inside_report = true;
    lapi_handle_t h = handle;
    int c = code, me = static_cast<int>(job.task), src = source;
    lapi_err_t type = LAPI_ERR_TYPE_RULE;
    err_hndlr_(&h, &c, &type, &me, &src);
    inside_report = false;
}

void Context::set_interrupt(bool on) {
    interrupt = on;
    // A header handler calling this holds the dispatcher already.
    if (!on && !inside_header_handler) {
        std::lock_guard<std::mutex> pass_ended(dispatch_mutex_);
    }
    wake();  // the notification thread looks at the mode again
}

void Context::notification_loop() {
    while (!stopping_) {
        const std::uint32_t seen = doorbell(slot_);
        if (interrupt.load() && dispatch(true)) continue;
        doorbell_wait(slot_, seen, out_queued_.load() ? wait_us : 50'000);
    }
}

void Context::completion_loop() {
    std::unique_lock<std::mutex> g(completion_mutex_);
    for (;;) {
        completion_ready_.wait(g, [this] { return stopping_ || !completions_.empty(); });
        if (completions_.empty()) return;  // stopping, and all done
        const Completion c = completions_.front();
        completions_.pop_front();
        completing_ = true;
        g.unlock();
        if (knobs.completion_delay_us > 0)
            std::this_thread::sleep_for(std::chrono::microseconds(knobs.completion_delay_us));
        lapi_handle_t h = handle;
        c.handler(&h, c.user_info);
        counter_add(c.head.target_cntr, 1);
        acknowledge(c.head);
        doorbell_ring(slot_);
        g.lock();
        completing_ = false;
    }
}

void Context::watchdog_loop() {
    const std::int64_t limit_ns = knobs.hh_limit_ms * 1'000'000;
    const auto tick = std::chrono::milliseconds(std::clamp<long>(knobs.hh_limit_ms / 4, 5, 50));
    while (!stopping_) {
        std::this_thread::sleep_for(tick);
        const std::int64_t since = handler_since_.load();
        if (!since || now_ns() - since <= limit_ns) continue;
        const std::uint64_t serial = handler_serial_.load();
        std::uint64_t reported = handler_reported_.load();
        if (reported >= serial || !handler_reported_.compare_exchange_strong(reported, serial)) continue;
        // Reported while it still runs: one that never returns is seen too.
        report(LAPI_ERR_HDR_HNDLR_SLOW, -1,
               "a header handler has run " + std::to_string((now_ns() - since) / 1'000'000) +
                   " ms, past SOFTNIC_LAPI_HH_LIMIT_MS=" + std::to_string(knobs.hh_limit_ms) +
                   ": header handlers run in the dispatcher and must not block");
    }
}

} // namespace softnic_lapi
