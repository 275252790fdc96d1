// src/credit/credit.cpp - the credit engine (credit.hpp; the scheme in
// README.md).  Depends on the standard library and the header-only
// base/flag.hpp only, so the simulator (tests/sim) runs this very file.
#include "credit/credit.hpp"

#include "base/flag.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sluice::credit {

namespace {

enum StateFlag : std::uint8_t {
    flag_revoke_inflight = 0x01,  // my revoke to the peer awaits its give (GASNet: SYS_MSG_INFLIGHT)
    flag_ask_inflight = 0x02,     // my ask to the peer awaits its grant
    flag_zero_reply = 0x04,       // it gave nothing back this epoch (GASNet: REVOKE_ZERO_REPLY)
    flag_reached_epoch = 0x08,    // I ended an epoch it has not heard of (GASNet: REACHED_EPOCH)
    flag_ask_waiting = 0x10,      // its ask waits in my askers' queue
    flag_stalling = 0x20,         // I am stalled sending to it (counts one stall per episode)
    flag_fresh_grant = 0x40,      // I granted its ask and no request of it has arrived since
    flag_grant_unused = 0x80,     // its grant to me arrived and my waiting request has not gone yet
};

constexpr std::size_t ask_budget = 0, revoke_budget = 1;
inline std::size_t budget_of(SysKind k) { return k == SysKind::ask ? ask_budget : revoke_budget; }

constexpr unsigned peers_per_page = 16;
constexpr unsigned pages_per_mid = 16;
constexpr unsigned peers_per_mid = peers_per_page * pages_per_mid;
constexpr unsigned max_loan = 65535 - 2 * max_request_credits;

// As in GASNet's Portals scheme, usage statistics decay by a factor of four per epoch.
inline std::uint16_t decay(std::uint16_t v, std::uint64_t epochs) {
    return epochs >= 8 ? 0 : static_cast<std::uint16_t>(v >> (2 * epochs));
}

inline std::uint16_t sat_add(std::uint16_t a, unsigned b) {
    return static_cast<std::uint16_t>(std::min<unsigned>(65535u, a + b));
}
inline std::uint16_t sat_sub(std::uint16_t a, unsigned b) {
    return static_cast<std::uint16_t>(a > b ? a - b : 0);
}

// Defaults by job size (credits per peer and banked credits), chosen with
// tests/sim/creditsim (tests/sim/README.md): generous static shares while
// they are cheap, then a minimum share, then nothing per peer at all.
struct TablePoint {
    double nodes;
    Policy policy;
    double per_peer;
    double banked;
};
constexpr TablePoint table[] = {
    {2, Policy::dynamic, 32, 256},
    {64, Policy::dynamic, 16, 512},
    {1024, Policy::dynamic, 4, 2048},
    {1025, Policy::demand, 0, 4096},
    {100000, Policy::demand, 0, 8192},
};

} // namespace

const char *policy_name(Policy p) {
    switch (p) {
    case Policy::off: return "off";
    case Policy::fixed: return "fixed";
    case Policy::dynamic: return "dynamic";
    case Policy::demand: return "demand";
    }
    return "?";
}

bool policy_parse(const std::string &text, Policy &out) {
    if (text == "off") out = Policy::off;
    else if (text == "fixed" || text == "static") out = Policy::fixed;
    else if (text == "dynamic") out = Policy::dynamic;
    else if (text == "demand") out = Policy::demand;
    else return false;
    return true;
}

const char *sys_kind_name(SysKind k) {
    switch (k) {
    case SysKind::ask: return "ask";
    case SysKind::grant: return "grant";
    case SysKind::revoke: return "revoke";
    case SysKind::give: return "give";
    }
    return "?";
}

// ---- configuration ---------------------------------------------------------

Config Config::defaults(Peer nodes, Peer me) {
    Config c;
    c.nodes = std::max<Peer>(nodes, 1);
    c.me = me;
    // Interpolate in log(nodes) between the two table points around us;
    // the policy is the lower point's.
    const double n = std::max(2.0, static_cast<double>(c.nodes));
    const TablePoint *lo = &table[0], *hi = &table[0];
    for (const TablePoint &t : table) {
        if (t.nodes <= n) lo = &t;
        if (t.nodes >= n) { hi = &t; break; }
        hi = &t;
    }
    double f = 0;
    if (hi->nodes > lo->nodes) f = (std::log(n) - std::log(lo->nodes)) / (std::log(hi->nodes) - std::log(lo->nodes));
    f = std::clamp(f, 0.0, 1.0);
    c.policy = lo->policy;
    // The total (peers x per_peer + banked) is interpolated, not its parts
    // rounded one by one, so memory never shrinks as the job grows within
    // a policy: per_peer is rounded down and the bank takes the remainder.
    const double per_peer = lo->per_peer + f * (hi->per_peer - lo->per_peer);
    const double banked = lo->banked + f * (hi->banked - lo->banked);
    const double peers = static_cast<double>(c.nodes - 1);
    c.per_peer = c.policy == Policy::demand ? 0 : static_cast<unsigned>(std::floor(per_peer));
    c.banked = static_cast<unsigned>(std::llround(peers * per_peer + banked - peers * c.per_peer));
    if (c.policy == Policy::demand) c.banked = static_cast<unsigned>(std::llround(banked));
    c.normalize();
    return c;
}

std::vector<std::string> Config::normalize() {
    std::vector<std::string> changed;
    // One line per changed field: "per_peer lowered to max_per_peer (1000 -> 40)".
    auto set = [&](auto &field, auto value, const char *name, const char *why) {
        if (field == value) return;
        changed.push_back(std::string(name) + (value < field ? " lowered" : " raised") + " to " + why + " (" +
                          std::to_string(field) + " -> " + std::to_string(value) + ")");
        field = value;
    };
    auto clamp = [&](unsigned &field, unsigned lo, unsigned hi, const char *name, const char *lo_why,
                     const char *hi_why) {
        if (field < lo) set(field, lo, name, lo_why);
        else if (field > hi) set(field, hi, name, hi_why);
    };
    set(nodes, std::max<Peer>(nodes, 1), "nodes", "1 (a job has at least one rank)");
    set(credit_bytes, credit_bytes ? credit_bytes : std::size_t{256}, "credit_bytes", "256 (a credit stands for some space)");
    clamp(min_credits, 1, max_request_credits, "min_credits", "1", "15 (the largest request the credit byte counts)");
    clamp(max_per_peer, min_credits, max_loan, "max_per_peer", "min_credits (a full-size request must fit)",
          "65505 (loans are 16-bit with room for two requests in flight)");
    clamp(epoch_length, 1, ~0u, "epoch_length", "1", "");
    clamp(scavenge_targets, 1, ~0u, "scavenge_targets", "1", "");
    clamp(sys_outstanding, 1, ~0u, "sys_outstanding", "1 (asks and revokes could never go)", "");
    clamp(ask_extra, 0, max_per_peer - min_credits, "ask_extra", "", "max_per_peer - min_credits");
    if (send_total != 0)
        clamp(send_total, min_credits, ~0u, "send_total", "min_credits (a full-size request must be able to go)", "");
    clamp(return_batch, 0, max_request_credits, "return_batch", "", "15 (a reply carries at most 15 credits)");
    switch (policy) {
    case Policy::off:
        break;
    case Policy::fixed:
        clamp(per_peer, min_credits, max_per_peer, "per_peer", "min_credits (a full-size request must fit)",
              "max_per_peer");
        // GASNet's ibv conduit: a request handler that does not reply may hold back at
        // most what still leaves the sender a full-size request.
        clamp(slack, 0, per_peer - min_credits, "slack", "",
              "per_peer - min_credits (what is held back must leave a full-size request)");
        // Credits a lender holds back stay in use at the sender until a
        // message of the lender's carries them home, which may never come:
        // the bound must leave a full-size request with every lender's slack
        // held back.
        if (send_total != 0) {
            const std::uint64_t held = std::uint64_t{nodes - 1} * slack + min_credits;
            clamp(send_total, static_cast<unsigned>(std::min<std::uint64_t>(held, ~0u)), ~0u, "send_total",
                  "(nodes - 1) x slack + min_credits (credits held back at every peer must leave a full-size request)",
                  "");
        }
        break;
    case Policy::dynamic:
        clamp(per_peer, min_credits, max_per_peer, "per_peer",
              "min_credits (every peer holds a full-size Medium)", "max_per_peer");
        break;
    case Policy::demand:
        clamp(per_peer, 0, 0, "per_peer", "", "0 (the demand policy lends nothing at start)");
        clamp(banked, max_request_credits, ~0u, "banked", "15 (the largest ask must be grantable)", "");
        break;
    }
    return changed;
}

std::uint64_t Config::total_credits() const {
    if (policy == Policy::off) return 0;
    const std::uint64_t peers = nodes > 0 ? nodes - 1 : 0;
    return peers * per_peer + (policy == Policy::fixed ? 0 : banked);
}

// ---- per-peer state ----------------------------------------------------------

struct Engine::State {
    mutable base::SpinLock lock;
    std::uint8_t flags = 0;
    PeerCredits c;
    std::uint32_t loan_epoch = 0;     // my epochs decayed into loan_* so far
    std::uint32_t scavenge_slot = 0;  // index + 1 in scavenge_, 0: not listed
    Peer peer = 0;                    // whose (set before its page is published)

    State() = default;
    State(const State &o) : flags(o.flags), c(o.c), loan_epoch(o.loan_epoch), scavenge_slot(o.scavenge_slot) {}
};
static_assert(sizeof(PeerCredits) == 24);

struct Engine::Page {
    State states[peers_per_page];
};
struct Engine::Mid {
    std::atomic<Page *> pages[pages_per_mid] = {};
};

// Every peer's state has its own spin lock (base::SpinLock: no locked
// instruction while the process has one thread); the scavenger only tries
// them, since it walks peers while holding the engine lock (the order is
// state, then engine).
using base::SpinGuard;

Engine::Engine(const Config &config) : config_(config), directory_((config.nodes + peers_per_mid - 1) / peers_per_mid) {
    config_.normalize();
    epoch_end_.store(config_.epoch_length, std::memory_order_relaxed);
    bank_ = config_.policy == Policy::fixed || config_.policy == Policy::off ? 0 : config_.banked;
    low_water_ = config_.low_water ? config_.low_water : std::max(config_.banked / 8, config_.min_credits);
}

Engine::~Engine() {
    for (auto &slot : directory_) {
        Mid *m = slot.load(std::memory_order_relaxed);
        if (!m) continue;
        for (auto &p : m->pages) delete p.load(std::memory_order_relaxed);
        delete m;
    }
}

Engine::State Engine::initial_state() const {
    State s;
    const bool lent = config_.policy == Policy::fixed || config_.policy == Policy::dynamic;
    s.c.send_credits = static_cast<std::uint16_t>(lent ? config_.per_peer : 0);
    s.c.loan_credits = s.c.send_credits;
    s.loan_epoch = static_cast<std::uint32_t>(epoch());
    return s;
}

// Every send and receive of a request or reply looks its peer up here: the
// pages already there take two loads, and the allocation stays out of line.
inline Engine::State *Engine::state_lookup(Peer p) const {
    Mid *m = directory_[p / peers_per_mid].load(std::memory_order_acquire);
    if (!m) return nullptr;
    Page *page = m->pages[(p / peers_per_page) % pages_per_mid].load(std::memory_order_acquire);
    return page ? &page->states[p % peers_per_page] : nullptr;
}

// The state touched last is remembered (one pointer, so threads never see
// a peer paired with another's state): a round trip touches one peer's
// four times.
inline Engine::State &Engine::state(Peer p) {
    State *last = last_state_.load(std::memory_order_acquire);
    if (last && last->peer == p) [[likely]]
        return *last;
    State *s = state_lookup(p);
    if (!s) [[unlikely]]
        s = &state_create(p);
    last_state_.store(s, std::memory_order_release);
    return *s;
}

__attribute__((noinline)) Engine::State &Engine::state_create(Peer p) {
    std::atomic<Mid *> &slot = directory_[p / peers_per_mid];
    Mid *m = slot.load(std::memory_order_acquire);
    if (!m) {
        auto *fresh = new Mid;
        if (slot.compare_exchange_strong(m, fresh, std::memory_order_acq_rel)) {
            m = fresh;
            mids_.fetch_add(1, std::memory_order_relaxed);
        } else {
            delete fresh;
        }
    }
    std::atomic<Page *> &page_slot = m->pages[(p / peers_per_page) % pages_per_mid];
    Page *page = page_slot.load(std::memory_order_acquire);
    if (!page) {
        auto *fresh = new Page;
        const State init = initial_state();
        const Peer first = p / peers_per_page * peers_per_page;
        for (unsigned i = 0; i < peers_per_page; ++i) {
            fresh->states[i].flags = init.flags;
            fresh->states[i].c = init.c;
            fresh->states[i].loan_epoch = init.loan_epoch;
            fresh->states[i].peer = first + i;
            if (first + i == config_.me) fresh->states[i].c = PeerCredits{};
        }
        if (page_slot.compare_exchange_strong(page, fresh, std::memory_order_acq_rel)) {
            page = fresh;
            pages_.fetch_add(1, std::memory_order_relaxed);
            const Peer last = std::min<Peer>(first + peers_per_page, config_.nodes);
            touched_.fetch_add(last - first - (config_.me >= first && config_.me < last ? 1 : 0),
                               std::memory_order_relaxed);
        } else {
            delete fresh;
        }
    }
    return page->states[p % peers_per_page];
}

const Engine::State *Engine::state_find(Peer p) const {
    return p < config_.nodes ? state_lookup(p) : nullptr;
}

void Engine::lock_engine() { lock_.lock(); }
void Engine::unlock_engine() { lock_.unlock(); }

unsigned Engine::floor_credits() const {
    return config_.policy == Policy::dynamic ? config_.min_credits : 0;
}

// GASNet's Portals scheme, peer-to-peer epochs: my epoch ends every epoch_length received
// requests; then the loan statistics of every peer decay and every peer is
// to hear of it.  Applied lazily, per peer, when its state is next touched.
void Engine::catch_up(State &s) {
    const auto e = static_cast<std::uint32_t>(epoch());
    if (s.loan_epoch == e) return;
    const std::uint32_t d = e - s.loan_epoch;
    s.c.loan_requested = decay(s.c.loan_requested, d);
    s.c.loan_given = decay(s.c.loan_given, d);
    s.flags = static_cast<std::uint8_t>((s.flags & ~flag_zero_reply) | flag_reached_epoch);
    s.loan_epoch = e;
}

bool Engine::epoch_flag_take(State &s) {
    catch_up(s);
    if (!(s.flags & flag_reached_epoch)) return false;
    s.flags &= static_cast<std::uint8_t>(~flag_reached_epoch);
    return true;
}

// The peer ended an epoch: my statistics of sending to it decay.
void Engine::send_decay(State &s) {
    s.c.send_stalls = decay(s.c.send_stalls, 1);
    s.c.send_max = decay(s.c.send_max, 1);
    s.c.send_revoked = decay(s.c.send_revoked, 1);
}

// ---- the scavenge list (engine lock held) -----------------------------------

void Engine::scavenge_list_add(Peer p, State &s) {
    if (s.scavenge_slot || s.c.loan_credits <= floor_credits()) return;
    scavenge_.push_back(p);
    s.scavenge_slot = static_cast<std::uint32_t>(scavenge_.size());
}

void Engine::scavenge_list_remove(State &s) {
    if (!s.scavenge_slot) return;
    const std::size_t i = s.scavenge_slot - 1;
    const Peer moved = scavenge_.back();
    scavenge_[i] = moved;
    scavenge_.pop_back();
    s.scavenge_slot = 0;
    if (i < scavenge_.size()) {
        // `moved` may be the state we hold, or another whose lock we do not
        // hold: its slot is only read and written under the engine lock.
        state(moved).scavenge_slot = static_cast<std::uint32_t>(i + 1);
    }
    if (scavenge_cursor_ >= scavenge_.size()) scavenge_cursor_ = 0;
}

// GASNet's Portals scheme, scavenge_for_credits: revoke from peers lent more than the floor,
// resuming where the last walk stopped, skipping a peer whose state is
// busy, that has a revoke in flight, that is at the floor, that gave
// nothing this epoch, or that asked for more this epoch.  Urgent (askers
// wait): only the first three skips apply, and a peer whose whole loan is
// in requests here is skipped too (the replies reclaim those).  Always
// skipped: a peer granted an ask whose request has not arrived yet (taking
// the grant back would send it asking again, and two askers could pass
// the same credits back and forth with neither request ever going).
void Engine::scavenge(bool urgent) {
    // Urgent scavenges come at every reply that reclaims or serves askers:
    // one round of revokes at a time (the gives that answer it call for
    // the next), or every borrower would always have one on its way, and
    // none could have its credits held back (reply_needed).
    if (urgent && initiations_[budget_of(SysKind::revoke)] > 0) return;
    std::size_t sent = 0;
    const std::size_t n = scavenge_.size();
    for (std::size_t visited = 0; visited < n && sent < config_.scavenge_targets; ++visited) {
        if (scavenge_cursor_ >= scavenge_.size()) scavenge_cursor_ = 0;
        const Peer p = scavenge_[scavenge_cursor_++];
        if (p == config_.me) continue;
        State &s = state(p);
        if (!s.lock.try_lock()) continue;
        catch_up(s);
        bool skip = (s.flags & (flag_revoke_inflight | flag_fresh_grant)) || s.c.loan_credits <= floor_credits();
        if (!urgent) skip = skip || (s.flags & flag_zero_reply) || s.c.loan_requested > 0;
        else skip = skip || s.c.loan_credits <= s.c.loan_busy + floor_credits();
        if (!skip) {
            s.flags |= flag_revoke_inflight;
            SysMessage m;
            m.peer = p;
            m.kind = SysKind::revoke;
            m.urgent = urgent;
            m.epoch = epoch_flag_take(s);
            // Credits held back here (return_batch) go home with it, so that
            // a peer that has stopped sending can give them back; not with
            // one deferred (sys_outstanding), which would hide them meanwhile.
            if (initiations_[budget_of(SysKind::revoke)] < config_.sys_outstanding) {
                m.returned = s.c.owed;
                s.c.owed = 0;
            }
            initiate(m);
            ++sent;
        }
        s.lock.unlock();
    }
}

// Credits lent to the peer of `s` come back to the bank (a give, an ask's
// returned credits, a reclaiming reply); a loan down to the floor leaves
// the scavenge list.  Its state and the engine lock are held.
void Engine::loan_return(State &s, unsigned n) {
    n = std::min<unsigned>(n, s.c.loan_credits);
    s.c.loan_credits = static_cast<std::uint16_t>(s.c.loan_credits - n);
    bank_ += n;
    if (s.c.loan_credits <= floor_credits()) scavenge_list_remove(s);
}

// ---- the outbox (engine lock held) ---------------------------------------------

void Engine::initiate(const SysMessage &m) {
    const std::size_t b = budget_of(m.kind);
    if (initiations_[b] >= config_.sys_outstanding) {
        deferred_[b].push_back(m);
        return;
    }
    ++initiations_[b];
    outbox_.push_back(m);
    outbox_size_.store(outbox_.size(), std::memory_order_release);
}

void Engine::answer(const SysMessage &m) {
    outbox_.push_back(m);
    outbox_size_.store(outbox_.size(), std::memory_order_release);
}

void Engine::sys_answered(SysKind initiated) {
    const std::size_t b = budget_of(initiated);
    if (initiations_[b]) --initiations_[b];
    if (!deferred_[b].empty()) {
        const SysMessage m = deferred_[b].front();
        deferred_[b].erase(deferred_[b].begin());
        initiate(m);
    }
}

// Demand: grant waiting asks, first come first served, while the bank
// holds them.  Called without any state lock held.
void Engine::askers_serve() {
    for (;;) {
        lock_engine();
        if (askers_head_ == askers_.size() || bank_ < askers_[askers_head_].count) {
            const bool waiting = askers_head_ != askers_.size();
            if (waiting) scavenge(true);
            unlock_engine();
            return;
        }
        const Asker a = askers_[askers_head_++];
        if (askers_head_ == askers_.size()) {
            askers_.clear();
            askers_head_ = 0;
        } else if (askers_head_ > 1024 && askers_head_ * 2 > askers_.size()) {
            askers_.erase(askers_.begin(), askers_.begin() + static_cast<std::ptrdiff_t>(askers_head_));
            askers_head_ = 0;
        }
        askers_waiting_.store(askers_.size() - askers_head_, std::memory_order_relaxed);
        bank_ -= a.count;
        unlock_engine();

        State &s = state(a.peer);
        SpinGuard g(s.lock);
        s.flags &= static_cast<std::uint8_t>(~flag_ask_waiting);
        lock_engine();
        grant_send(a.peer, s, a.count);
        unlock_engine();
    }
}

bool Engine::reclaimable(const State &s) const { return s.c.loan_served >= config_.reclaim_after; }

// Lends `count` (already out of the bank) to `p` with a grant message.
// Its state and the engine lock are held.
void Engine::grant_send(Peer p, State &s, std::uint16_t count) {
    s.c.loan_credits = sat_add(s.c.loan_credits, count);
    s.c.loan_served = 0;
    s.flags |= flag_fresh_grant;
    counters_.granted.fetch_add(count, std::memory_order_relaxed);
    scavenge_list_add(p, s);
    SysMessage m;
    m.peer = p;
    m.kind = SysKind::grant;
    m.count = count;
    m.epoch = epoch_flag_take(s);
    answer(m);
}

// ---- sending a request -----------------------------------------------------------

bool Engine::request_begin(Peer p, unsigned n, std::uint8_t &byte) {
    n = std::clamp(n, 1u, max_request_credits);
    if (config_.policy == Policy::off || p == config_.me) {
        byte = CreditByte{false, 0, static_cast<std::uint8_t>(n)}.encode();
        base::count_add<std::uint64_t>(counters_.requests_sent, 1);
        return true;
    }
    // GASNet's AM_CREDITS_TOTAL: the credits in use over every lender are
    // reserved first, and given back below if this peer's are short.
    if (config_.send_total != 0) {
        const std::uint32_t before = send_total_inuse_.fetch_add(n, std::memory_order_acq_rel);
        if (before + n > config_.send_total) {
            send_total_inuse_.fetch_sub(n, std::memory_order_acq_rel);
            if (!total_stalling_.exchange(true, std::memory_order_relaxed))
                counters_.total_stalls.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        total_stalling_.store(false, std::memory_order_relaxed);
        base::count_max(send_total_max_, before + n);
    }
    State &s = state(p);
    {
        SpinGuard g(s.lock);
        const unsigned avail = s.c.send_credits > s.c.send_inuse ? s.c.send_credits - s.c.send_inuse : 0;
        if (avail < n) {
            if (!(s.flags & flag_stalling)) {
                s.flags |= flag_stalling;
                s.c.send_stalls = sat_add(s.c.send_stalls, 1);
                counters_.stalls.fetch_add(1, std::memory_order_relaxed);
            }
            // The request after a stall asks for extra credits: as many
            // again as are held
            // (the next send_wanted requests each ask for 7, a reply
            // grants at most 6): a pair whose demand creeps up doubles its
            // loan per stall instead of creeping after it by a few credits
            // at a time, which the simulator saw go on moving credits late
            // in long static runs.  The lender's limits still apply.
            if (config_.policy != Policy::fixed && s.c.send_wanted == 0)
                s.c.send_wanted = static_cast<std::uint16_t>(std::max(1u, (s.c.send_credits + 1u) / 2u));
            // Nothing in flight can bring credits back: ask (demand), for
            // the whole request and a little beyond, so that the grant
            // alone lets it go (asking for the difference could livelock
            // with revokes taking what is held).  The credits held, too
            // few for it, go back with the ask if it leaves now (one that
            // waits for a place keeps them: until it leaves they are not
            // in flight).  The ask is the request for more: the request
            // does not repeat it.
            if (config_.policy == Policy::demand && s.c.send_inuse == 0 && !(s.flags & flag_ask_inflight)) {
                s.flags |= flag_ask_inflight;
                SysMessage m;
                m.peer = p;
                m.kind = SysKind::ask;
                m.count = static_cast<std::uint16_t>(std::max(config_.min_credits, n) + config_.ask_extra);
                m.epoch = epoch_flag_take(s);
                s.c.send_wanted = 0;
                lock_engine();
                if (initiations_[ask_budget] < config_.sys_outstanding) {
                    m.returned = static_cast<std::uint16_t>(avail);
                    s.c.send_credits = static_cast<std::uint16_t>(s.c.send_credits - avail);
                }
                initiate(m);
                unlock_engine();
            }
        } else {
            s.flags &= static_cast<std::uint8_t>(~(flag_stalling | flag_grant_unused));
            s.c.send_inuse = static_cast<std::uint16_t>(s.c.send_inuse + n);
            s.c.send_max = std::max(s.c.send_max, s.c.send_inuse);
            CreditByte b;
            b.count = static_cast<std::uint8_t>(n);
            b.epoch = epoch_flag_take(s);
            if (config_.policy != Policy::fixed && s.c.send_wanted) {
                b.extra = CreditByte::want;
                --s.c.send_wanted;
            } else if (s.c.owed && (config_.policy == Policy::fixed ||
                                    askers_waiting_.load(std::memory_order_relaxed) == 0)) {
                // The peer's credits held back here ride home on this
                // request, as on a reply (while askers wait, a reply or a
                // hidden one reclaims them instead).
                const unsigned most = config_.policy == Policy::fixed ? 7u : CreditByte::want - 1u;
                b.extra = static_cast<std::uint8_t>(std::min<unsigned>(most, s.c.owed));
                s.c.owed = static_cast<std::uint16_t>(s.c.owed - b.extra);
            }
            byte = b.encode();
            base::count_add<std::uint64_t>(counters_.requests_sent, 1);
            return true;
        }
    }
    send_total_release(n);
    return false;
}

void Engine::send_total_release(unsigned n) {
    if (config_.send_total != 0 && n != 0) send_total_inuse_.fetch_sub(n, std::memory_order_acq_rel);
}

// Up to `n` of the peer's credits in my requests are free again (its lock held).
void Engine::inuse_release(State &s, unsigned n) {
    const unsigned before = s.c.send_inuse;
    s.c.send_inuse = sat_sub(s.c.send_inuse, n);
    send_total_release(before - s.c.send_inuse);
}

void Engine::request_cancel(Peer p, std::uint8_t byte) {
    base::count_add<std::uint64_t>(counters_.requests_sent, ~std::uint64_t{0});  // minus one
    if (config_.policy == Policy::off || p == config_.me) return;
    const CreditByte b = CreditByte::decode(byte);
    State &s = state(p);
    SpinGuard g(s.lock);
    inuse_release(s, b.count);
    if (b.epoch) s.flags |= flag_reached_epoch;
    if (returned(b)) s.c.owed = sat_add(s.c.owed, b.extra);
    else ++s.c.send_wanted;
}

// ---- receiving a request ---------------------------------------------------------

void Engine::request_arrived(Peer p, std::uint8_t byte) {
    if (config_.policy == Policy::off || p == config_.me) return;
    const CreditByte b = CreditByte::decode(byte);
    {
        State &s = state(p);
        SpinGuard g(s.lock);
        if (b.epoch) send_decay(s);
        // Credits it had held back for my requests ride on its request.
        if (returned(b)) inuse_release(s, b.extra);
        s.c.loan_busy = sat_add(s.c.loan_busy, b.count);
        s.c.loan_served = sat_add(s.c.loan_served, 1);
        s.flags &= static_cast<std::uint8_t>(~flag_fresh_grant);
    }
    base::count_add<std::uint64_t>(received_, 1);
    if (received_.load(std::memory_order_relaxed) >= epoch_end_.load(std::memory_order_relaxed)) [[unlikely]]
        epoch_advance();
}

// received_ reached the end of an epoch.  Threads delivering at once may
// race here: the epoch only grows (count_max), and an end stored stale
// only brings the next call sooner.
void Engine::epoch_advance() {
    const std::uint64_t e = received_.load(std::memory_order_relaxed) / config_.epoch_length;
    base::count_max(epoch_, e);
    epoch_end_.store((e + 1) * config_.epoch_length, std::memory_order_relaxed);
}

std::uint8_t Engine::reply_byte(Peer p, std::uint8_t request_byte) {
    const CreditByte in = CreditByte::decode(request_byte);
    if (config_.policy == Policy::off || p == config_.me) return CreditByte{false, 0, in.count}.encode();
    CreditByte out;
    out.count = in.count;
    bool reclaimed = false, low = false, serve = false;
    State &s = state(p);
    {
        SpinGuard g(s.lock);
        out.epoch = epoch_flag_take(s);
        s.c.loan_busy = sat_sub(s.c.loan_busy, in.count);
        if (config_.policy == Policy::fixed) {
            const unsigned take = std::min<unsigned>(s.c.owed, max_request_credits - in.count);
            s.c.owed = static_cast<std::uint16_t>(s.c.owed - take);
            out.count = static_cast<std::uint8_t>(in.count + take);
            return out.encode();
        }
        // Credits held back from earlier requests (return_batch) go home too.
        const unsigned take = std::min<unsigned>(s.c.owed, max_request_credits - in.count);
        s.c.owed = static_cast<std::uint16_t>(s.c.owed - take);
        out.count = static_cast<std::uint8_t>(in.count + take);
        const unsigned floor = floor_credits();
        const bool askers = askers_waiting_.load(std::memory_order_relaxed) != 0;
        if (askers && reclaimable(s) && s.c.loan_credits >= floor + out.count && out.count > 0) {
            // Askers wait and the peer had its turn: these credits go to
            // them, not back.
            out.extra = CreditByte::reclaim;
            counters_.reclaimed.fetch_add(out.count, std::memory_order_relaxed);
            lock_engine();
            loan_return(s, out.count);
            unlock_engine();
            reclaimed = true;
        } else if (askers && s.c.loan_busy == 0) {
            // Askers wait and this was the peer's last request here, its
            // turn not over: the rest of its loan may lie idle now, which
            // only a revoke brings back (askers_serve scavenges).
            serve = true;
        } else if (in.extra == CreditByte::want) {
            // GASNet's Portals scheme: a stalled peer asks for extra on its request; lend it
            // from the bank within the per-peer and per-epoch limits.
            s.c.loan_requested = sat_add(s.c.loan_requested, in.extra);
            unsigned grant = std::min<unsigned>(in.extra, CreditByte::reclaim - 1);
            grant = std::min<unsigned>(grant, config_.max_per_peer > s.c.loan_credits ? config_.max_per_peer - s.c.loan_credits : 0);
            grant = std::min<unsigned>(grant, config_.lender_limit > s.c.loan_given ? config_.lender_limit - s.c.loan_given : 0);
            if (grant) {
                lock_engine();
                if (askers_waiting_.load(std::memory_order_relaxed) != 0 || bank_ < grant) grant = 0;
                if (grant) {
                    bank_ -= grant;
                    s.c.loan_credits = static_cast<std::uint16_t>(s.c.loan_credits + grant);
                    s.c.loan_given = sat_add(s.c.loan_given, grant);
                    scavenge_list_add(p, s);
                    counters_.granted.fetch_add(grant, std::memory_order_relaxed);
                }
                low = bank_ < low_water_;
                unlock_engine();
            }
            out.extra = static_cast<std::uint8_t>(grant);
        }
    }
    if (reclaimed || serve) askers_serve();
    if (low) {
        lock_engine();
        scavenge(false);
        unlock_engine();
    }
    return out.encode();
}

bool Engine::reply_needed(Peer p, std::uint8_t request_byte) {
    if (config_.policy == Policy::off || p == config_.me) return false;
    // The request's credits are held back (owed) for a later reply, or a
    // hidden reply carries them and all held before.  fixed (GASNet's ibv
    // conduit): up to the slack.  dynamic and demand (return_batch): up to
    // the batch, unless the peer would be left without a full-size request
    // beyond what is held, a revoke is on its way (the peer may hold fewer
    // than my count says), or, while no asker waits, the sender asked for
    // more (it stalled: the reply may lend it some) or, while askers wait,
    // the peer's turn is over (reclaim_after: the hidden reply reclaims
    // the credits for them).  Askers waiting, a sender's want is not
    // answered (nothing is lent then), and a peer's last request here
    // serves the askers (their scavenge may revoke a loan left idle, and
    // the revoke carries what is held home).  A stalled sender still gets
    // its reply: what is held leaves it a full-size request, which arrives
    // and goes past the batch or the loan.  Not
    // under a send total, against which held credits would count at the
    // sender.  A revoke carries what is held home (scavenge), so a peer
    // that stopped sending still gives them back.
    const bool fixed = config_.policy == Policy::fixed;
    if (fixed || (config_.return_batch != 0 && config_.send_total == 0)) {
        const CreditByte in = CreditByte::decode(request_byte);
        State &s = state(p);
        bool hold = false, serve = false;
        {
            SpinGuard g(s.lock);
            const unsigned held = s.c.owed + in.count;
            const bool askers = askers_waiting_.load(std::memory_order_relaxed) != 0;
            hold = fixed ? held <= config_.slack
                         : held <= config_.return_batch && s.c.loan_credits >= held + config_.min_credits &&
                               !(s.flags & flag_revoke_inflight) &&
                               (askers ? !reclaimable(s) : in.extra != CreditByte::want);
            if (hold) {
                serve = askers && s.c.loan_busy <= in.count;
                s.c.owed = static_cast<std::uint16_t>(held);
                s.c.loan_busy = sat_sub(s.c.loan_busy, in.count);
                if (!fixed) base::count_add<std::uint64_t>(counters_.held_back, 1);
            }
        }
        if (serve) askers_serve();
        if (hold) return false;
    }
    base::count_add<std::uint64_t>(counters_.hidden_replies, 1);
    return true;
}

// ---- receiving a reply -------------------------------------------------------------

void Engine::reply_arrived(Peer p, std::uint8_t byte) {
    if (config_.policy == Policy::off || p == config_.me) return;
    const CreditByte b = CreditByte::decode(byte);
    State &s = state(p);
    SpinGuard g(s.lock);
    if (b.epoch) send_decay(s);
    inuse_release(s, b.count);
    if (config_.policy == Policy::fixed) return;
    if (b.extra == CreditByte::reclaim)
        s.c.send_credits = sat_sub(s.c.send_credits, b.count);
    else
        s.c.send_credits = static_cast<std::uint16_t>(std::min<unsigned>(max_loan, s.c.send_credits + b.extra));
}

// ---- system messages ------------------------------------------------------------------

std::size_t Engine::sys_take(SysMessage *out, std::size_t max) {
    if (!sys_pending()) return 0;
    lock_engine();
    const std::size_t n = std::min(max, outbox_.size());
    std::copy(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(n), out);
    outbox_.erase(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(n));
    outbox_size_.store(outbox_.size(), std::memory_order_release);
    unlock_engine();
    counters_.sys_sent.fetch_add(n, std::memory_order_relaxed);
    return n;
}

void Engine::sys_refused(const SysMessage &m) {
    counters_.sys_refused.fetch_add(1, std::memory_order_relaxed);
    counters_.sys_sent.fetch_sub(1, std::memory_order_relaxed);
    lock_engine();
    answer(m);  // same place in the count of initiations: it is still awaited
    unlock_engine();
}

void Engine::sys_arrived(const SysMessage &m) {
    if (m.peer >= config_.nodes || m.peer == config_.me || config_.policy == Policy::off) return;
    State &s = state(m.peer);
    bool serve = false;
    {
        SpinGuard g(s.lock);
        if (m.epoch) send_decay(s);
        switch (m.kind) {
        case SysKind::ask: {
            // Demand: a request waits at the peer.  What it held comes
            // back first; the ask is granted now if nobody asked before it
            // and the bank holds it, else queued and the scavenger goes
            // looking.
            catch_up(s);
            s.flags &= static_cast<std::uint8_t>(~flag_fresh_grant);
            const unsigned back = std::min<unsigned>(m.returned, s.c.loan_credits);
            s.c.loan_requested = sat_add(s.c.loan_requested, m.count);
            counters_.revoked.fetch_add(back, std::memory_order_relaxed);
            lock_engine();
            loan_return(s, back);
            const unsigned room = config_.max_per_peer - std::min<unsigned>(s.c.loan_credits, config_.max_per_peer);
            const auto count = static_cast<std::uint16_t>(std::clamp<unsigned>(m.count, 1, std::max(1u, room)));
            if (askers_head_ == askers_.size() && bank_ >= count) {
                bank_ -= count;
                grant_send(m.peer, s, count);
            } else if (!(s.flags & flag_ask_waiting)) {
                s.flags |= flag_ask_waiting;
                askers_.push_back(Asker{m.peer, count});
                askers_waiting_.store(askers_.size() - askers_head_, std::memory_order_relaxed);
                scavenge(true);
            }
            unlock_engine();
            break;
        }
        case SysKind::grant: {
            s.c.send_credits = static_cast<std::uint16_t>(std::min<unsigned>(max_loan, s.c.send_credits + m.count));
            s.flags = static_cast<std::uint8_t>((s.flags & ~flag_ask_inflight) | flag_grant_unused);
            lock_engine();
            sys_answered(SysKind::ask);
            unlock_engine();
            break;
        }
        case SysKind::revoke: {
            // GASNet's Portals scheme, SYS_CREDIT_REVOKE: give back what exceeds recent use,
            // within the per-epoch revoke limit, nothing if I stalled on
            // this peer lately.  Urgent: everything not in use, unless
            // they were granted for a request of mine that has not gone
            // yet (the grant crossed this revoke).
            // A full-size request stays free beyond what is in use: some of
            // that may be held back at the lender (return_batch) until this
            // rank sends it a request, which it must be able to.
            inuse_release(s, m.returned);
            const unsigned floor = floor_credits();
            const unsigned least = s.c.send_inuse == 0 ? floor : s.c.send_inuse + config_.min_credits;
            unsigned give = 0;
            if (m.urgent) {
                const unsigned keep = s.flags & flag_grant_unused ? s.c.send_credits : least;
                give = s.c.send_credits > keep ? s.c.send_credits - keep : 0;
            } else if (s.c.send_stalls == 0 && s.c.send_revoked < config_.revoke_limit) {
                const unsigned keep = std::max<unsigned>(least, s.c.send_max);
                give = s.c.send_credits > keep ? s.c.send_credits - keep : 0;
                give = std::min<unsigned>(give, config_.revoke_limit - s.c.send_revoked);
            }
            s.c.send_credits = static_cast<std::uint16_t>(s.c.send_credits - give);
            s.c.send_revoked = sat_add(s.c.send_revoked, give);
            SysMessage r;
            r.peer = m.peer;
            r.kind = SysKind::give;
            r.count = static_cast<std::uint16_t>(give);
            r.epoch = epoch_flag_take(s);
            lock_engine();
            answer(r);
            unlock_engine();
            break;
        }
        case SysKind::give:
            s.flags &= static_cast<std::uint8_t>(~flag_revoke_inflight);
            catch_up(s);
            lock_engine();
            sys_answered(SysKind::revoke);
            if (m.count) {
                counters_.revoked.fetch_add(m.count, std::memory_order_relaxed);
                loan_return(s, m.count);
            } else {
                s.flags |= flag_zero_reply;
            }
            serve = askers_head_ != askers_.size();
            unlock_engine();
            break;
        }
    }
    if (serve) askers_serve();
}

// ---- queries ------------------------------------------------------------------------------

PeerCredits Engine::peer(Peer p) const {
    const State *s = state_find(p);
    if (!s) return p == config_.me || p >= config_.nodes ? PeerCredits{} : initial_state().c;
    SpinGuard g(s->lock);
    return s->c;
}

std::uint32_t Engine::bank() const {
    auto &self = const_cast<Engine &>(*this);
    self.lock_engine();
    const std::uint32_t b = bank_;
    self.unlock_engine();
    return b;
}

std::size_t Engine::waiting_askers() const { return askers_waiting_.load(std::memory_order_relaxed); }

std::size_t Engine::scavenge_list_size() const {
    auto &self = const_cast<Engine &>(*this);
    self.lock_engine();
    const std::size_t n = scavenge_.size();
    self.unlock_engine();
    return n;
}

Totals Engine::totals() const {
    Totals t;
    t.requests_sent = counters_.requests_sent.load(std::memory_order_relaxed);
    t.stalls = counters_.stalls.load(std::memory_order_relaxed);
    t.total_stalls = counters_.total_stalls.load(std::memory_order_relaxed);
    t.granted = counters_.granted.load(std::memory_order_relaxed);
    t.revoked = counters_.revoked.load(std::memory_order_relaxed);
    t.reclaimed = counters_.reclaimed.load(std::memory_order_relaxed);
    t.hidden_replies = counters_.hidden_replies.load(std::memory_order_relaxed);
    t.held_back = counters_.held_back.load(std::memory_order_relaxed);
    t.sys_sent = counters_.sys_sent.load(std::memory_order_relaxed);
    t.sys_refused = counters_.sys_refused.load(std::memory_order_relaxed);
    t.epochs = epoch();
    return t;
}

std::size_t Engine::state_bytes() const {
    auto &self = const_cast<Engine &>(*this);
    self.lock_engine();
    const std::size_t queues = scavenge_.capacity() * sizeof(Peer) + askers_.capacity() * sizeof(Asker) +
                               (outbox_.capacity() + deferred_[0].capacity() + deferred_[1].capacity()) *
                                   sizeof(SysMessage);
    self.unlock_engine();
    return sizeof(*this) + directory_.size() * sizeof(std::atomic<Mid *>) +
           mids_.load(std::memory_order_relaxed) * sizeof(Mid) + pages_.load(std::memory_order_relaxed) * sizeof(Page) +
           queues;
}

std::uint64_t Engine::credits_accounted() const {
    if (config_.policy == Policy::off) return 0;
    std::uint64_t lent = 0;
    Peer seen = 0;
    for (std::size_t d = 0; d < directory_.size(); ++d) {
        Mid *m = directory_[d].load(std::memory_order_acquire);
        if (!m) continue;
        for (unsigned pi = 0; pi < pages_per_mid; ++pi) {
            Page *page = m->pages[pi].load(std::memory_order_acquire);
            if (!page) continue;
            for (unsigned i = 0; i < peers_per_page; ++i) {
                // Slots past the last rank hold the initial loan but lend nothing.
                if (d * peers_per_mid + pi * peers_per_page + i >= config_.nodes) break;
                const State &s = page->states[i];
                SpinGuard g(s.lock);
                lent += s.c.loan_credits;
            }
        }
    }
    seen = touched_.load(std::memory_order_relaxed);
    const std::uint64_t others = config_.nodes - 1;
    lent += (others - std::min<std::uint64_t>(others, seen)) * initial_state().c.loan_credits;
    return lent + bank();
}

void Engine::stats_write(std::FILE *out) const {
    const Totals t = totals();
    std::fprintf(out,
                 "# sluice credit statistics: rank %u of %u, policy %s, %llu credits of %zu bytes, %u banked now\n"
                 "# requests %llu, stalls %llu, at the send total %llu (in use there at most %u of %u), granted %llu, revoked %llu, reclaimed %llu, hidden replies %llu (held back %llu), "
                 "system messages %llu (refused %llu), epochs %llu, state %zu bytes\n"
                 "# peer send_credits send_inuse send_stalls send_max send_revoked loan_credits loan_requested "
                 "loan_given loan_busy owed\n",
                 config_.me, config_.nodes, policy_name(config_.policy),
                 static_cast<unsigned long long>(config_.total_credits()), config_.credit_bytes, bank(),
                 static_cast<unsigned long long>(t.requests_sent), static_cast<unsigned long long>(t.stalls),
                 static_cast<unsigned long long>(t.total_stalls), send_total_max_.load(std::memory_order_relaxed),
                 config_.send_total,
                 static_cast<unsigned long long>(t.granted), static_cast<unsigned long long>(t.revoked),
                 static_cast<unsigned long long>(t.reclaimed), static_cast<unsigned long long>(t.hidden_replies),
                 static_cast<unsigned long long>(t.held_back), static_cast<unsigned long long>(t.sys_sent), static_cast<unsigned long long>(t.sys_refused),
                 static_cast<unsigned long long>(t.epochs), state_bytes());
    const PeerCredits initial = initial_state().c;
    for (Peer p = 0; p < config_.nodes; ++p) {
        if (!state_find(p) || p == config_.me) continue;
        const PeerCredits c = peer(p);
        if (std::memcmp(&c, &initial, sizeof c) == 0) continue;
        std::fprintf(out, "%u %u %u %u %u %u %u %u %u %u %u\n", p, c.send_credits, c.send_inuse, c.send_stalls,
                     c.send_max, c.send_revoked, c.loan_credits, c.loan_requested, c.loan_given, c.loan_busy, c.owed);
    }
}

} // namespace sluice::credit
