// tests/sim/simulation.cpp - the event loop and the nodes (simulation.hpp).
#include "tests/sim/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace sluice::sim {

using credit::CreditByte;
using credit::Engine;
using credit::Peer;
using credit::PeerCredits;
using credit::SysKind;
using credit::SysMessage;

namespace {
std::mutex print_mutex;
std::string num(long long v) { return std::to_string(v); }
} // namespace

// ---- timeline -----------------------------------------------------------------

void Timeline::add(std::int64_t t, std::uint64_t moved, std::uint64_t received) {
    std::size_t i = static_cast<std::size_t>(t / width_);
    while (i >= buckets) {
        for (std::size_t j = 0; j < buckets / 2; ++j) {
            moved_[j] = moved_[2 * j] + moved_[2 * j + 1];
            received_[j] = received_[2 * j] + received_[2 * j + 1];
        }
        std::fill(moved_.begin() + buckets / 2, moved_.end(), 0);
        std::fill(received_.begin() + buckets / 2, received_.end(), 0);
        width_ *= 2;
        i = static_cast<std::size_t>(t / width_);
    }
    moved_[i] += moved;
    received_[i] += received;
}

std::int64_t Timeline::last_move_before(std::int64_t to) const {
    for (std::size_t i = buckets; i-- > 0;) {
        const std::int64_t start = static_cast<std::int64_t>(i) * width_;
        if (start < to && moved_[i]) return std::min(start + width_, to);
    }
    return -1;
}

void Timeline::sum(std::int64_t from, std::int64_t to, std::uint64_t &moved, std::uint64_t &received) const {
    moved = received = 0;
    for (std::size_t i = 0; i < buckets; ++i) {
        const std::int64_t start = static_cast<std::int64_t>(i) * width_;
        if (start < from || start + width_ > to) continue;
        moved += moved_[i];
        received += received_[i];
    }
}

// ---- set-up ---------------------------------------------------------------------

Simulation::Simulation(const RunParams &p)
    : params_(p), workload_(p), clock_(p.latency_ns, std::max({p.handler_ns, p.reply_ns, p.sys_ns})) {
    result_.params = p;
    result_.workload = workload_.describe();
    const Peer n = p.nodes;
    engines_.reserve(n);
    for (Peer me = 0; me < n; ++me) {
        const credit::Config c = p.overrides.apply(credit::Config::defaults(n, me), p.policy, me == 0 ? &result_.notes : nullptr);
        engines_.push_back(std::make_unique<Engine>(c));
    }
    const credit::Config &c0 = engines_[0]->config();
    result_.policy = credit::policy_name(c0.policy);
    result_.config = c0;
    total_credits_ = c0.total_credits();
    epoch_length_ = c0.epoch_length;
    fixed_ = c0.policy == credit::Policy::fixed;
    for (Peer me = 1; me < n; ++me) {
        if (engines_[me]->config().total_credits() != total_credits_ || engines_[me]->config().policy != c0.policy) {
            fail("set-up", "node " + num(me) + " got another policy or credit total than node 0; the ledger assumes one");
            break;
        }
    }
    if (c0.policy != credit::Policy::off) ledger_.emplace(n, engines_[0]->peer(1), total_credits_);
    if (p.credits_max > c0.min_credits && c0.policy == credit::Policy::dynamic) {
        result_.notes += std::string(result_.notes.empty() ? "" : "; ") +
                         "requests larger than min_credits: the dynamic policy may strand them";
    }

    nodes_.resize(n);
    for (Peer me = 0; me < n; ++me) {
        nodes_[me].rng.state = p.seed * 0x2545f4914f6cdd1dull + me;
        nodes_[me].rng.next();
        nodes_[me].remaining = workload_.messages_for(me);
    }
    const std::int64_t per_node = p.handler_ns + p.reply_ns + p.sys_ns + 1;
    stall_bound_ = p.stall_bound_ns ? p.stall_bound_ns
                                    : std::max<std::int64_t>(20'000'000, 50 * static_cast<std::int64_t>(n) * per_node);
}

Simulation::~Simulation() = default;

std::uint32_t Simulation::record_new() {
    if (free_ != none) {
        const std::uint32_t r = free_;
        free_ = rec(r).next;
        rec(r) = Record{};
        return r;
    }
    if ((records_ & (chunk_size - 1)) == 0) chunks_.push_back(std::make_unique<Record[]>(chunk_size));
    return records_++;
}

void Simulation::fifo_push(Fifo &f, std::uint32_t r) {
    rec(r).next = none;
    if (f.tail == none) f.head = r;
    else rec(f.tail).next = r;
    f.tail = r;
}

std::uint32_t Simulation::fifo_pop(Fifo &f) {
    const std::uint32_t r = f.head;
    if (r == none) return none;
    f.head = rec(r).next;
    if (f.head == none) f.tail = none;
    return r;
}

void Simulation::fail(const std::string &where, const std::string &why) {
    if (failed_) return;
    failed_ = true;
    result_.ok = false;
    result_.failure = "t=" + num(now_) + " ns, " + where + ": " + why;
    std::lock_guard<std::mutex> g(print_mutex);
    std::fprintf(stderr, "creditsim: INVARIANT VIOLATION in %s (%u nodes, seed %llu)\n  %s\n",
                 params_.label().c_str(), params_.nodes, static_cast<unsigned long long>(params_.seed),
                 result_.failure.c_str());
}

// Both engines' view of the pair, for a failure report.
std::string Simulation::pair_dump(Peer x, Peer y) const {
    auto side = [&](Peer a, Peer b) {
        const PeerCredits c = engines_[a]->peer(b);
        return "node " + num(a) + " about " + num(b) + ": send_credits " + num(c.send_credits) + " send_inuse " +
               num(c.send_inuse) + " loan_credits " + num(c.loan_credits) + " loan_busy " + num(c.loan_busy) +
               " owed " + num(c.owed) + "; bank " + num(engines_[a]->bank()) + ", waiting askers " +
               num(static_cast<long long>(engines_[a]->waiting_askers()));
    };
    return side(x, y) + "\n  " + side(y, x);
}

// The engine's own statistics of the node a sender waits for (small jobs).
void Simulation::lender_dump(Peer p) const {
    if (params_.nodes > 256 || p >= params_.nodes) return;
    std::lock_guard<std::mutex> g(print_mutex);
    std::fprintf(stderr, "creditsim: the engine of node %u at t=%lld ns:\n", p, static_cast<long long>(now_));
    engines_[p]->stats_write(stderr);
}

// ---- the credit ledger around engine calls --------------------------------------

void Simulation::move_note(std::uint64_t credits) {
    if (!credits) return;
    result_.moved += credits;
    timeline_.add(now_, credits, 0);
}

void Simulation::pair_refresh(Peer self, Peer other, std::uint32_t pair) {
    const PeerCredits c = engines_[self]->peer(other);
    if (params_.series && self == params_.watch) {
        const std::uint16_t lent = ledger_->lent_by(pair, self).loan, held = ledger_->lent_by(pair, other).send;
        if ((lent != c.loan_credits || held != c.send_credits)) {
            if (result_.series.size() < params_.series_max)
                result_.series.push_back(SeriesRow{now_, other, c.send_credits, c.loan_credits});
            else
                result_.series_truncated = true;
        }
    }
    ledger_->refresh(pair, self, c);
}

void Simulation::after_call(Peer self, Peer peer, std::uint32_t pair, const char *call) {
    Engine &e = *engines_[self];
    SysMessage out[64];
    touched_.clear();
    while (std::size_t got = e.sys_take(out, 64)) {
        for (std::size_t i = 0; i < got; ++i) {
            const SysMessage &m = out[i];
            const std::uint32_t pq = ledger_ ? ledger_->pair(self, m.peer) : none;
            if (ledger_) {
                if (m.kind == SysKind::grant) ledger_->lent_by(pq, self).grants += m.count;
                else if (m.kind == SysKind::give) ledger_->lent_by(pq, m.peer).gives += m.count;
                else if (m.kind == SysKind::ask) ledger_->lent_by(pq, m.peer).gives += m.returned;
                else if (m.kind == SysKind::revoke) ledger_->lent_by(pq, self).returning += m.returned;
                touched_.push_back(pq);
            }
            const std::uint32_t r = record_new();
            Record &x = rec(r);
            x.kind = Kind::sys;
            x.src = self;
            x.dst = m.peer;
            x.pair = pq;
            x.sys = m;
            wire(r);
        }
    }
    if (!ledger_) return;
    std::string why;
    auto where = [&]() { return "node " + num(self) + " " + call + "(peer " + num(peer) + ")"; };
    pair_refresh(self, peer, pair);
    if (!ledger_->pair_check(pair, why)) return fail(where(), why + "\n  " + pair_dump(self, peer));
    for (const std::uint32_t pq : touched_) {
        const PairState &s = ledger_->state(pq);
        const Peer other = s.low == self ? s.high : s.low;
        pair_refresh(self, other, pq);
        if (!ledger_->pair_check(pq, why)) return fail(where(), why + "\n  " + pair_dump(self, other));
    }
    const std::uint32_t bank = e.bank();
    if (!ledger_->node_check(self, bank, why)) return fail(where(), why);
    if (params_.series && self == params_.watch && bank != watch_bank_) {
        watch_bank_ = bank;
        if (result_.series.size() < params_.series_max) result_.series.push_back(SeriesRow{now_, none, 0, bank});
    }
}

// ---- sending ----------------------------------------------------------------------------

void Simulation::sends_try(Peer n) {
    Node &y = nodes_[n];
    Engine &e = *engines_[n];
    while (!failed_ && y.remaining > 0 && y.inflight < params_.window) {
        if (y.pending == none) {
            y.pending = workload_.draw(n, workload_.messages_for(n) - y.remaining, y.rng);
            y.pending_credits = static_cast<std::uint8_t>(
                params_.credits_min + (params_.credits_max > params_.credits_min
                                           ? y.rng.below(params_.credits_max - params_.credits_min + 1)
                                           : 0));
            y.pending_flags = params_.no_reply > 0 && y.rng.unit() < params_.no_reply ? 0 : expects_reply;
            y.pending_pair = ledger_ ? ledger_->pair(n, y.pending) : none;
        }
        const Peer to = y.pending;
        std::uint8_t byte = 0;
        const bool ok = e.request_begin(to, y.pending_credits, byte);
        if (ok && ledger_) {
            ledger_->lent_by(y.pending_pair, to).requested += y.pending_credits;
            // The XXX of my request returns credits I held back for `to`
            // (7 under dynamic and demand is a want).
            ledger_->lent_by(y.pending_pair, n).returning += returned(byte);
        }
        after_call(n, to, y.pending_pair, "request_begin");
        if (!ok) {
            if (!y.stalled) {
                y.stalled = true;
                y.stall_since = now_;
                stalls_.emplace_back(now_, n);
            }
            return;
        }
        y.stalled = false;
        const std::uint32_t r = record_new();
        Record &m = rec(r);
        m.kind = Kind::request;
        m.src = n;
        m.dst = to;
        m.pair = y.pending_pair;
        m.credits = y.pending_credits;
        m.byte = byte;
        m.flags = y.pending_flags;
        wire(r);
        ++result_.requests;
        if (y.pending_flags & expects_reply) {
            ++y.inflight;
            ++expected_;
        }
        y.pending = none;
        if (--y.remaining == 0 && (steady_end_ < 0 || now_ < steady_end_)) steady_end_ = now_;
    }
}

// ---- arrival and the CPU ------------------------------------------------------------

void Simulation::arrive(std::uint32_t r) {
    Record &m = rec(r);
    Node &y = nodes_[m.dst];
    switch (m.kind) {
    case Kind::request:
        y.buffered += m.credits;
        if (params_.pattern == Pattern::hotspot && m.dst == 0 && hot_first_ < 0) hot_first_ = now_;
        if (ledger_) {
            std::string why;
            if (!ledger_->buffer_check(m.dst, y.buffered, why))
                return fail("request from " + num(m.src) + " arrives at " + num(m.dst), why);
        }
        break;
    case Kind::sys:
        if (y.sys_used >= params_.sys_slots) {
            // The system queue is full: the sender hears of it a latency later.
            ++transport_refusals_;
            m.kind = Kind::refused;
            std::swap(m.src, m.dst);
            wire(r);
            return;
        }
        ++y.sys_used;
        break;
    case Kind::reply:
    case Kind::refused:
        break;
    }
    const Peer n = m.dst;
    const bool system =
        (m.kind == Kind::sys || m.kind == Kind::refused) && params_.sys_order != RunParams::SysOrder::fifo;
    fifo_push(system ? y.system : y.data, r);
    if (y.current == none) cpu_next(n);
}

void Simulation::cpu_next(Peer n) {
    Node &y = nodes_[n];
    std::uint32_t r = none;
    if (params_.sys_order == RunParams::SysOrder::alternate && y.system_last) {
        r = fifo_pop(y.data);
        y.system_last = r == none;
        if (r == none) r = fifo_pop(y.system);
    } else {
        r = fifo_pop(y.system);
        y.system_last = r != none;
        if (r == none) r = fifo_pop(y.data);
    }
    y.current = r;
    if (r == none) {
        y.cpu_done = WindowClock::never;
        return;
    }
    switch (rec(r).kind) {
    case Kind::request:
        y.cpu_done = now_ + params_.handler_ns;
        request_start(n, r);
        break;
    case Kind::reply: y.cpu_done = now_ + params_.reply_ns; break;
    case Kind::sys:
    case Kind::refused: y.cpu_done = now_ + params_.sys_ns; break;
    }
}

void Simulation::request_start(Peer n, std::uint32_t r) {
    const Record m = rec(r);
    if (ledger_) {
        ledger_->lent_by(m.pair, n).arrived += m.credits;
        ledger_->lent_by(m.pair, m.src).returning -= returned(m.byte);
    }
    engines_[n]->request_arrived(m.src, m.byte);
    after_call(n, m.src, m.pair, "request_arrived");
    timeline_.add(now_, 0, 1);
    // The request may have returned credits this node waits for.
    if (nodes_[n].stalled && nodes_[n].pending == m.src) sends_try(n);
}

void Simulation::finish(std::uint32_t r) {
    const Peer n = rec(r).dst;
    switch (rec(r).kind) {
    case Kind::request: request_done(r); break;
    case Kind::reply: reply_done(r); break;
    case Kind::sys: sys_done(r); break;
    case Kind::refused: refused_done(r); break;
    }
    if (failed_) return;
    nodes_[n].current = none;
    cpu_next(n);
}

void Simulation::request_done(std::uint32_t r) {
    Record &m = rec(r);
    const Peer y = m.dst, x = m.src;
    Engine &e = *engines_[y];
    const CreditByte in = CreditByte::decode(m.byte);
    nodes_[y].buffered -= m.credits;
    ++handled_;
    if (params_.pattern == Pattern::hotspot && y == 0) {
        ++hot_handled_;
        hot_last_ = now_;
    }
    bool reply = true;
    std::uint8_t out_byte = 0;
    const char *call = "reply_byte";
    if (m.flags & expects_reply) {
        out_byte = e.reply_byte(x, m.byte);
    } else if (e.reply_needed(x, m.byte)) {
        out_byte = e.reply_byte(x, m.byte);
        ++result_.hidden_replies;
        call = "reply_needed+reply_byte";
    } else {
        reply = false;
        ++result_.banked_answers;
        call = "reply_needed";
    }
    const std::uint32_t pair = m.pair;
    if (ledger_) {
        Direction &d = ledger_->lent_by(pair, y);
        d.requested -= in.count;
        d.arrived -= in.count;
        if (reply) {
            const CreditByte out = CreditByte::decode(out_byte);
            d.returning += out.count;
            if (out.extra == CreditByte::reclaim) d.reclaims += out.count;
            else d.grants += out.extra;
        }
    }
    if (reply) {
        m.kind = Kind::reply;
        m.src = y;
        m.dst = x;
        m.byte = out_byte;
        wire(r);
    } else {
        record_free(r);
    }
    after_call(y, x, pair, call);
}

void Simulation::reply_done(std::uint32_t r) {
    const Record m = rec(r);
    record_free(r);
    const Peer a = m.dst, p = m.src;
    if (ledger_) {
        const CreditByte b = CreditByte::decode(m.byte);
        Direction &d = ledger_->lent_by(m.pair, p);
        d.returning -= b.count;
        if (b.extra == CreditByte::reclaim) d.reclaims -= b.count;
        else d.grants -= b.extra;
        // Credits move when the borrower applies them (a message refused
        // and sent again counts once).
        if (!fixed_) move_note(b.extra == CreditByte::reclaim ? b.count : b.extra);
    }
    std::uint8_t byte = m.byte;
    if (++replies_seen_ == params_.inject_fault) {
        CreditByte b = CreditByte::decode(byte);
        b.extra = static_cast<std::uint8_t>(b.extra < 6 ? b.extra + 1 : b.extra - 1);
        byte = b.encode();
    }
    engines_[a]->reply_arrived(p, byte);
    after_call(a, p, m.pair, "reply_arrived");
    Node &y = nodes_[a];
    if (m.flags & expects_reply) {
        --y.inflight;
        ++result_.replies;
    }
    if (!y.stalled || y.pending == p) sends_try(a);
}

void Simulation::sys_done(std::uint32_t r) {
    const Record m = rec(r);
    record_free(r);
    const Peer a = m.dst, p = m.src;
    --nodes_[a].sys_used;
    SysMessage s = m.sys;
    s.peer = p;
    if (ledger_) {
        if (s.kind == SysKind::grant) ledger_->lent_by(m.pair, p).grants -= s.count;
        else if (s.kind == SysKind::give) ledger_->lent_by(m.pair, a).gives -= s.count;
        else if (s.kind == SysKind::ask) ledger_->lent_by(m.pair, a).gives -= s.returned;
        else if (s.kind == SysKind::revoke) ledger_->lent_by(m.pair, p).returning -= s.returned;
        if (s.kind == SysKind::grant || s.kind == SysKind::give) move_note(s.count);
        if (s.kind == SysKind::ask) move_note(s.returned);
    }
    engines_[a]->sys_arrived(s);
    static const char *const calls[] = {"sys_arrived(ask)", "sys_arrived(grant)", "sys_arrived(revoke)",
                                        "sys_arrived(give)"};
    after_call(a, p, m.pair, calls[static_cast<unsigned>(s.kind) & 3]);
    if (nodes_[a].stalled && nodes_[a].pending == p) sends_try(a);
}

void Simulation::refused_done(std::uint32_t r) {
    const Record m = rec(r);
    record_free(r);
    const Peer a = m.dst, p = m.src;  // a sent m.sys to p, whose queue was full
    if (ledger_) {
        if (m.sys.kind == SysKind::grant) ledger_->lent_by(m.pair, a).grants -= m.sys.count;
        else if (m.sys.kind == SysKind::give) ledger_->lent_by(m.pair, p).gives -= m.sys.count;
        else if (m.sys.kind == SysKind::ask) ledger_->lent_by(m.pair, p).gives -= m.sys.returned;
        else if (m.sys.kind == SysKind::revoke) ledger_->lent_by(m.pair, a).returning -= m.sys.returned;
    }
    engines_[a]->sys_refused(m.sys);
    after_call(a, p, m.pair, "sys_refused");
}

// ---- the run ------------------------------------------------------------------------------

void Simulation::watchdog() {
    ++result_.watchdog_checks;
    while (!stalls_.empty()) {
        const auto [since, n] = stalls_.front();
        if (!nodes_[n].stalled || nodes_[n].stall_since != since) {
            stalls_.pop_front();
            continue;
        }
        if (now_ - since > stall_bound_) {
            lender_dump(nodes_[n].pending);
            fail("watchdog", "node " + num(n) + " has been stalled on node " + num(nodes_[n].pending) + " since t=" +
                                 num(since) + " ns, longer than the bound " + num(stall_bound_) +
                                 " ns (--stall-bound-ns)\n  " + pair_dump(n, nodes_[n].pending));
        }
        return;
    }
}

void Simulation::node_window(Peer n, std::size_t a, std::size_t end) {
    Node &y = nodes_[n];
    const std::vector<WindowClock::Arrival> &arrivals = clock_.arrivals();
    const std::int64_t window_end = clock_.end();
    std::string why;
    for (;;) {
        const std::int64_t ta = a < end ? clock_.time_of(arrivals[a]) : WindowClock::never;
        const std::int64_t td = y.cpu_done < window_end ? y.cpu_done : WindowClock::never;
        if (ta == WindowClock::never && td == WindowClock::never) break;
        // An arrival goes before a completion at the same time.
        if (ta <= td) {
            now_ = ta;
            if (a + 4 < end) __builtin_prefetch(&rec(arrivals[a + 4].record));
            arrive(arrivals[a++].record);
        } else {
            now_ = td;
            finish(y.current);
        }
        ++result_.events;
        if (failed_) return;
        if (!ledger_) continue;
        if (params_.accounted_every && result_.events % params_.accounted_every == 0) {
            if (!ledger_->accounted_check(accounted_next_, *engines_[accounted_next_], why)) return fail("spot check", why);
            accounted_next_ = (accounted_next_ + 1) % params_.nodes;
        }
        if (params_.full_check_every && result_.events % params_.full_check_every == 0) {
            std::vector<const Engine *> view;
            for (const auto &e : engines_) view.push_back(e.get());
            if (!ledger_->sweep(view, why)) return fail("full sweep", why);
        }
    }
    last_event_ = std::max(last_event_, now_);
    if (y.cpu_done != WindowClock::never && !y.in_ring) {
        y.in_ring = true;
        clock_.done_later(n, y.cpu_done);
    }
}

RunResult Simulation::run() {
    const auto start = std::chrono::steady_clock::now();
    for (Peer n = 0; n < params_.nodes && !failed_; ++n) sends_try(n);
    while (!failed_ && clock_.advance()) {
        const std::vector<WindowClock::Arrival> &arrivals = clock_.arrivals();
        const std::vector<Peer> &done = clock_.done_nodes();
        std::size_t a = 0, d = 0;
        while (!failed_ && (a < arrivals.size() || d < done.size())) {
            const Peer from_arrivals = a < arrivals.size() ? WindowClock::node_of(arrivals[a]) : none;
            const Peer from_done = d < done.size() ? done[d] : none;
            const Peer n = std::min(from_arrivals, from_done);
            std::size_t end = a;
            while (end < arrivals.size() && WindowClock::node_of(arrivals[end]) == n) ++end;
            if (from_done == n) {
                nodes_[n].in_ring = false;
                ++d;
            }
            // The next node's state is fetched while this one runs.
            if (end < arrivals.size()) {
                const Peer next = WindowClock::node_of(arrivals[end]);
                __builtin_prefetch(&nodes_[next]);
                __builtin_prefetch(engines_[next].get());
                __builtin_prefetch(&rec(arrivals[end].record));
            }
            node_window(n, a, end);
            a = end;
        }
        now_ = clock_.end();
        watchdog();
    }
    now_ = last_event_;
    if (!failed_) end_checks();
    metrics_collect();
    result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result_;
}

void Simulation::end_checks() {
    for (Peer n = 0; n < params_.nodes; ++n) {
        const Node &y = nodes_[n];
        if (y.remaining || y.stalled) {
            lender_dump(y.pending);
            return fail("end of run",
                        "deadlock: no event left, node " + num(n) + " still has " + num(static_cast<long long>(y.remaining)) +
                            " requests to send and is stalled on node " + num(y.pending) + " since t=" +
                            num(y.stall_since) + " ns\n  " + pair_dump(n, y.pending));
        }
        if (y.inflight || y.data.head != none || y.system.head != none || y.current != none || y.buffered || y.sys_used) {
            return fail("end of run", "node " + num(n) + " has " + num(y.inflight) + " requests unanswered, " +
                                          num(y.buffered) + " credits buffered, " + num(y.sys_used) +
                                          " system slots taken");
        }
        if (engines_[n]->waiting_askers()) {
            return fail("end of run", "node " + num(n) + " has " +
                                          num(static_cast<long long>(engines_[n]->waiting_askers())) +
                                          " asks never granted");
        }
    }
    if (handled_ != result_.requests || result_.replies != expected_) {
        return fail("end of run", num(static_cast<long long>(result_.requests)) + " requests sent, " +
                                      num(static_cast<long long>(handled_)) + " handled; " +
                                      num(static_cast<long long>(expected_)) + " replies expected, " +
                                      num(static_cast<long long>(result_.replies)) + " received");
    }
    if (!ledger_) return;
    std::string why;
    if (!ledger_->quiet_check(why)) return fail("end of run", why);
    std::vector<const Engine *> view;
    for (const auto &e : engines_) view.push_back(e.get());
    if (!ledger_->sweep(view, why)) return fail("end of run, full sweep", why);
    for (Peer n = 0; n < params_.nodes; ++n) {
        if (!ledger_->accounted_check(n, *engines_[n], why)) return fail("end of run", why);
    }
}

void Simulation::metrics_collect() {
    RunResult &r = result_;
    r.makespan_ns = now_;
    r.steady_end_ns = steady_end_ < 0 ? now_ : steady_end_;
    double sum = 0;
    for (Peer n = 0; n < params_.nodes; ++n) {
        const Engine &e = *engines_[n];
        const credit::Totals t = e.totals();
        r.stalls += t.stalls;
        r.granted += t.granted;
        r.revoked += t.revoked;
        r.reclaimed += t.reclaimed;
        r.sys_sent += t.sys_sent;
        r.sys_refused += t.sys_refused;
        r.epochs += t.epochs;
        const double receive = static_cast<double>(e.config().receive_bytes());
        const double state = static_cast<double>(e.state_bytes());
        const double mem = receive + state + 32.0 * params_.sys_slots;
        sum += mem;
        r.memory_max = std::max(r.memory_max, mem);
        r.receive_max = std::max(r.receive_max, receive);
        r.state_max = std::max(r.state_max, state);
    }
    r.memory_mean = sum / params_.nodes;
    r.last_move_ns = timeline_.last_move_before(r.steady_end_ns);
    std::uint64_t moved = 0, received = 0;
    timeline_.sum(r.steady_end_ns / 2, r.steady_end_ns, moved, received);
    r.settled = moved == 0;
    r.moved_per_epoch_late =
        received ? static_cast<double>(moved) * epoch_length_ / static_cast<double>(received) : (moved ? 1e9 : 0);
    if (params_.pattern == Pattern::hotspot && hot_handled_ && hot_last_ > hot_first_) {
        r.hot_rate = static_cast<double>(hot_handled_) * static_cast<double>(params_.handler_ns) /
                     static_cast<double>(hot_last_ - hot_first_);
    }
    r.checks = ledger_ ? ledger_->counts() : LedgerCounts{};
    r.sim_bytes = nodes_.capacity() * sizeof(Node) + chunks_.size() * chunk_size * sizeof(Record) + clock_.bytes() +
                  (ledger_ ? ledger_->bytes() : 0) + workload_.bytes() + engines_.capacity() * sizeof(void *) +
                  params_.nodes * sizeof(Engine);
}

} // namespace sluice::sim
