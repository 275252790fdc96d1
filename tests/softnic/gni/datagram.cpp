// tests/softnic/gni/datagram.cpp - uGNI datagrams (datagram.hpp).
//
// Everything that decides a match runs under the fabric lock of the host
// whose entries it changes; what has to cross to another host is queued
// (an Outbox) and sent after the lock is let go, one round trip at a
// time, each answer applied under the lock again.  Only the API's callers
// send; a serving thread answers from its own host's fabric and sends
// nothing, so two hosts never wait on each other.
#include "datagram.hpp"

#include "wire.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

namespace softnic_gni {
namespace {

// Wire messages (DatagramWire::op).
enum Op : std::uint32_t {
    op_forward = 1,  // a directed post for a domain of the served host: match it, or keep it as a visitor
    op_notice,       // a directed post waits on the requester's host: take a wildcard of its target, or note it
    op_claim,        // a wildcard (poster, in) takes the noticed post `key`
    op_withdraw,     // a cancelled post's visitor `other_key` goes
    op_done,         // the visitor of post `key` matched (poster, in)
};
enum Verdict : std::uint32_t {
    verdict_matched = 1,  // poster and in are the match's
    verdict_stored,       // kept: a visitor (forward), a notice (notice)
    verdict_gone,         // matched, cancelled or never there
    verdict_busy,         // held by another round trip: ask again
    verdict_withdrawn,
    verdict_full,         // no room in a table: the post is sent again later
    verdict_ack,
};

// Cdm::datagram_work bits: what a domain's process has to do at its next
// datagram call.
constexpr std::uint32_t work_settle = 1;  // matches and claims
constexpr std::uint32_t work_unsent = 2;  // posts to send again, at most every resend_every_ns
constexpr std::int64_t resend_every_ns = 20'000'000;

constexpr int none = -1;
constexpr int deferred = -2;

Datagram &at(std::uint32_t i) { return fabric().datagram[i]; }

// Where a scan of the datagrams (the notices) may stop.
std::uint32_t datagram_end() {
    Fabric &f = fabric();
    while (f.datagram_top && !f.datagram[f.datagram_top - 1].used) --f.datagram_top;
    return f.datagram_top;
}
std::uint32_t notice_end() {
    Fabric &f = fabric();
    while (f.notice_top && !f.notice[f.notice_top - 1].used) --f.notice_top;
    return f.notice_top;
}

std::uint64_t key_of(std::uint32_t i) { return std::uint64_t{at(i).generation} << 32 | i; }

// The entry `key` names; null once it was freed.
Datagram *entry(std::uint64_t key) {
    const auto i = static_cast<std::uint32_t>(key);
    if (i >= max_datagram) return nullptr;
    Datagram &d = at(i);
    return d.used && d.generation == static_cast<std::uint32_t>(key >> 32) ? &d : nullptr;
}

Datagram *entry(const DatagramRef &ref) {
    if (ref.index < 0) return nullptr;
    return entry(std::uint64_t{ref.generation} << 32 | static_cast<std::uint32_t>(ref.index));
}

bool same(const Target &a, const Target &b) {
    return a.address == b.address && a.inst_id == b.inst_id && a.ptag == b.ptag && a.cookie == b.cookie;
}

Target identity(std::uint32_t cdm) {
    const Cdm &c = fabric().cdm[cdm];
    return Target{c.address, c.inst_id, c.ptag, c.cookie};
}

// A pair of domains on two hosts is matched on the higher one.
bool on_higher_host(const Target &t) {
    const int host = host_of(t.address);
    return host >= 0 && host > host_index();
}
bool on_lower_host(const Target &t) {
    const int host = host_of(t.address);
    return host >= 0 && host < host_index();
}

bool directed(const Datagram &d) { return d.kind == datagram_directed || d.kind == datagram_visitor; }

// The domain of a post while it is still its poster's.
Cdm *owner(const Datagram &d) {
    if (d.kind == datagram_visitor) return nullptr;
    Cdm &c = fabric().cdm[d.cdm];
    return c.used && c.pid == d.pid ? &c : nullptr;
}

void work(Cdm *c, std::uint32_t bits) {
    if (c) __atomic_or_fetch(&c->datagram_work, bits, __ATOMIC_RELEASE);
}

// A post becomes COMPLETED or TERMINATED: its domain's probe finds it.
void finish(Datagram &d, DatagramState state) {
    d.state = state;
    if (Cdm *c = owner(d)) __atomic_add_fetch(&c->datagrams_done, 1, __ATOMIC_RELEASE);
}

void release(Datagram &d) {
    if (d.state == datagram_completed || d.state == datagram_terminated)
        if (Cdm *c = owner(d)) __atomic_sub_fetch(&c->datagrams_done, 1, __ATOMIC_RELEASE);
    d.used = 0;
}

void complete(Datagram &d, const std::uint8_t *bytes, std::uint16_t length, const Target &peer) {
    length = std::min<std::uint16_t>(length, GNI_DATAGRAM_MAXSIZE);
    if (length) std::memcpy(d.got, bytes, length);
    d.got_len = length;
    d.peer = peer;
    finish(d, datagram_completed);
}

// One exchange: each side gets the other's bytes.
void pair(Datagram &a, Datagram &b) {
    complete(a, b.in, b.in_len, b.poster);
    complete(b, a.in, a.in_len, a.poster);
}

// A post of a process that died is freed where it is met (a visitor's
// poster is on another host: it stays).
bool live(Datagram &d) {
    if (!d.pid || alive(d.pid)) return true;
    d.used = 0;
    return false;
}

// Whether this host may match `d` now: pending, held by no round trip,
// and not a post for a higher host, which matches it there.
bool open(const Datagram &d) {
    return d.used && d.state == datagram_pending && !d.busy &&
           !(d.kind == datagram_directed && on_higher_host(d.target));
}

// The pair's other half here: the directed datagram from `target` back to
// `poster`; none; or deferred when a round trip holds it, whose end
// decides (settle then matches the pair).
int reverse_of(int self, const Target &poster, const Target &target) {
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i) {
        Datagram &r = at(i);
        if (!r.used || static_cast<int>(i) == self || !directed(r) || r.state != datagram_pending ||
            !same(r.poster, target) || !same(r.target, poster))
            continue;
        if (r.kind == datagram_directed && on_higher_host(r.target)) continue;
        if (r.busy) return deferred;
        if (live(r)) return static_cast<int>(i);
    }
    return none;
}

int oldest_wildcard(const Target &t) {
    int best = none;
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i) {
        Datagram &w = at(i);
        if (!w.used || w.kind != datagram_wildcard || w.state != datagram_pending || w.busy || !same(w.poster, t))
            continue;
        if (live(w) && (best == none || w.seq < at(best).seq)) best = static_cast<int>(i);
    }
    return best;
}

// Whether `x` has a directed datagram to `y` not yet decided: the pair's
// two are matched on the higher host, not by a wildcard of x here.
bool undecided(const Target &x, const Target &y) {
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i) {
        Datagram &d = at(i);
        if (d.used && d.kind == datagram_directed &&
            (d.state == datagram_pending || d.state == datagram_away) && same(d.poster, x) && same(d.target, y) &&
            live(d))
            return true;
    }
    return false;
}

// Every match this host can make by itself, oldest directed datagram
// first: with the pair's other half, else with its target's oldest
// wildcard.
void settle() {
    thread_local std::vector<std::uint32_t> order;
    order.clear();
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i)
        if (open(at(i)) && directed(at(i))) order.push_back(i);
    std::sort(order.begin(), order.end(), [](std::uint32_t a, std::uint32_t b) { return at(a).seq < at(b).seq; });
    for (const std::uint32_t i : order) {
        Datagram &d = at(i);
        if (!open(d) || !live(d)) continue;
        const int r = reverse_of(static_cast<int>(i), d.poster, d.target);
        if (r >= 0) {
            pair(d, at(r));
            continue;
        }
        if (r == deferred || host_of(d.target.address) != this_host) continue;
        if (const int w = oldest_wildcard(d.target); w >= 0) pair(d, at(w));
    }
}

// ---- what goes to other hosts ----

struct Item {
    enum What { done, forward, notice, claim } what;
    std::uint32_t host;
    std::uint64_t key;     // the entry here it is about
    std::int32_t claimed;  // a claim's notice
    DatagramWire message;
};
using Outbox = std::deque<Item>;

DatagramWire message_of(Op op, const Datagram &d, std::uint64_t key) {
    DatagramWire m{};
    m.op = op;
    m.poster = d.poster;
    m.target = d.target;
    m.host = static_cast<std::uint32_t>(host_index());
    m.key = key;
    m.in_len = d.in_len;
    std::memcpy(m.in, d.in, d.in_len);
    return m;
}

// A directed post for another host: forwarded to a higher one (it is away
// until the answer), noticed to a lower one.
void send_post(std::uint32_t i, Outbox &out) {
    Datagram &d = at(i);
    const auto host = static_cast<std::uint32_t>(host_of(d.target.address));
    d.busy = 1;
    if (on_higher_host(d.target)) {
        d.state = datagram_away;
        d.remote_host = host;
        out.push_back(Item{Item::forward, host, key_of(i), -1, message_of(op_forward, d, key_of(i))});
    } else {
        out.push_back(Item{Item::notice, host, key_of(i), -1, message_of(op_notice, d, key_of(i))});
    }
}

// Visitors matched here: their posters' hosts are told.
void pushes(Outbox &out) {
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i) {
        Datagram &v = at(i);
        if (!v.used || v.kind != datagram_visitor || v.state != datagram_completed || v.busy) continue;
        v.busy = 1;
        DatagramWire m{};
        m.op = op_done;
        m.poster = v.peer;
        m.host = static_cast<std::uint32_t>(host_index());
        m.key = v.remote_key;
        m.in_len = v.got_len;
        std::memcpy(m.in, v.got, v.got_len);
        out.push_back(Item{Item::done, v.remote_host, key_of(i), -1, m});
    }
}

// Domain `cdm`'s oldest free wildcard claims the oldest notice for it
// that it may take; one claim on the wire at a time.
void claim_next(std::uint32_t cdm, Outbox &out) {
    for (const Item &it : out)
        if (it.what == Item::claim) return;
    if (!fabric().cdm[cdm].used) return;
    const Target self = identity(cdm);
    const int w = oldest_wildcard(self);
    if (w < 0) return;
    Fabric &f = fabric();
    int best = none;
    for (std::uint32_t i = 0, end = notice_end(); i < end; ++i) {
        const Notice &n = f.notice[i];
        if (n.used && !n.claiming && same(n.target, self) && (best == none || n.seq < f.notice[best].seq) &&
            !undecided(self, n.poster))
            best = static_cast<int>(i);
    }
    if (best == none) return;
    Notice &n = f.notice[best];
    at(w).busy = 1;
    n.claiming = 1;
    out.push_back(Item{Item::claim, n.host, key_of(w), best, message_of(op_claim, at(w), n.key)});
}

void forget_notice(std::uint32_t host, std::uint64_t key) {
    Fabric &f = fabric();
    for (std::uint32_t i = 0, end = notice_end(); i < end; ++i)
        if (f.notice[i].used && f.notice[i].host == host && f.notice[i].key == key) f.notice[i].used = 0;
}

// Posts of `cdm` whose forward or notice found no process of the peer's
// host (or no room there).
void resend(std::uint32_t cdm, Outbox &out) {
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i) {
        Datagram &d = at(i);
        if (!d.used || d.kind != datagram_directed || d.state != datagram_pending || !d.unsent || d.busy ||
            d.pid != ::getpid() || d.cdm != cdm)
            continue;
        d.unsent = 0;
        send_post(i, out);
    }
}

void unsent(Datagram &d) {
    d.unsent = 1;
    work(owner(d), work_unsent);
}

// What an answer (or none: no process of that host answered) decides,
// under the lock.
void apply(const Item &it, bool answered, const DatagramWire &a, bool &pause) {
    Datagram *d = entry(it.key);
    const std::uint32_t verdict = answered ? a.verdict : 0;
    switch (it.what) {
    case Item::done:
        if (d) d->used = 0;  // the visitor has served (or its poster's host is gone)
        return;
    case Item::forward:
        if (!d) return;
        d->busy = 0;
        if (d->state != datagram_away) return;  // a done message came first
        if (verdict == verdict_matched) {
            complete(*d, a.in, a.in_len, a.poster);
            forget_notice(it.host, a.other_key);  // it matched the pair's other half, noticed here
        } else if (verdict == verdict_stored) {
            d->remote_key = a.other_key;
        } else {
            d->state = datagram_pending;
            unsent(*d);
        }
        return;
    case Item::notice:
        if (!d) return;
        d->busy = 0;
        if (d->state != datagram_pending) return;
        if (verdict == verdict_matched) complete(*d, a.in, a.in_len, a.poster);
        else if (verdict != verdict_stored) unsent(*d);
        return;
    case Item::claim: {
        Notice &n = fabric().notice[it.claimed];
        const bool ours = n.used && n.host == it.host && n.key == it.message.key;
        if (d) d->busy = 0;
        if (verdict == verdict_busy) {
            if (ours) n.claiming = 0;
            pause = true;
            return;
        }
        if (ours) n.used = 0;
        if (d && d->state == datagram_pending && verdict == verdict_matched) complete(*d, a.in, a.in_len, a.poster);
        return;
    }
    }
}

// Sends what `out` holds, one round trip at a time, and what each answer
// leads to; claims for domain `cdm`.
void run(std::uint32_t cdm, Outbox &out) {
    while (!out.empty()) {
        const Item it = out.front();
        out.pop_front();
        DatagramWire a{};
        const bool answered = wire_datagram(it.host, it.message, a) && a.op == it.message.op;
        bool pause = false;
        {
            Locked l;
            apply(it, answered, a, pause);
            settle();
            pushes(out);
            claim_next(cdm, out);
        }
        // The noticed post was on the wire: its round trip ends soon.
        if (pause) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// The work the domain's process was left (Cdm::datagram_work).
void progress(std::uint32_t cdm) {
    static std::int64_t last_resend = 0;  // this process's
    Cdm &c = fabric().cdm[cdm];
    const std::uint32_t w = __atomic_load_n(&c.datagram_work, __ATOMIC_ACQUIRE);
    if (!w) return;
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
    const bool resending =
        (w & work_unsent) && now - __atomic_load_n(&last_resend, __ATOMIC_RELAXED) >= resend_every_ns;
    if (!(w & work_settle) && !resending) return;
    __atomic_and_fetch(&c.datagram_work, ~(work_settle | (resending ? work_unsent : 0u)), __ATOMIC_ACQ_REL);
    if (resending) __atomic_store_n(&last_resend, now, __ATOMIC_RELAXED);
    Outbox out;
    {
        Locked l;
        settle();
        pushes(out);
        if (resending) resend(cdm, out);
        claim_next(cdm, out);
    }
    run(cdm, out);
}

int free_entry() {
    Fabric &f = fabric();
    for (int pass = 0; pass < 2; ++pass) {
        if (pass) collect_dead();
        for (std::uint32_t i = 0; i < max_datagram; ++i)
            if (!at(i).used) {
                f.datagram_top = std::max(f.datagram_top, i + 1);
                return static_cast<int>(i);
            }
    }
    return none;
}

// The entry of `ref` once no round trip holds it (or it is done), with
// the lock held; null when it is gone.
Datagram *unheld(const DatagramRef &ref) {
    for (;;) {
        Datagram *d = entry(ref);
        if (!d || !d->busy || d->state == datagram_completed || d->state == datagram_terminated) return d;
        unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        lock();
    }
}

// ---- serving other hosts ----

void answer_with(DatagramWire &a, const Datagram &d) {
    a.verdict = verdict_matched;
    a.poster = d.poster;
    a.in_len = d.in_len;
    std::memcpy(a.in, d.in, d.in_len);
}

// Entry `i` matches the requester's post: done once the answer is sent.
void stage(std::uint32_t i, const DatagramWire &in, DatagramStaged &later) {
    Datagram &d = at(i);
    d.busy = 1;
    d.got_len = std::min<std::uint16_t>(in.in_len, GNI_DATAGRAM_MAXSIZE);
    std::memcpy(d.got, in.in, d.got_len);
    d.peer = in.poster;
    later = DatagramStaged{static_cast<std::int32_t>(i), d.generation};
}

void serve_forward(const DatagramWire &in, DatagramWire &a, DatagramStaged &later) {
    Fabric &f = fabric();
    // The same forward again (its answer was lost): the same visitor.
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i) {
        const Datagram &v = at(i);
        if (!v.used || v.kind != datagram_visitor || v.remote_host != in.host || v.remote_key != in.key) continue;
        if (v.state == datagram_completed) {
            a.verdict = verdict_matched;
            a.poster = v.peer;
            a.in_len = v.got_len;
            std::memcpy(a.in, v.got, v.got_len);
        } else {
            a.verdict = verdict_stored;
            a.other_key = key_of(i);
        }
        return;
    }
    int partner = reverse_of(none, in.poster, in.target);
    if (partner == none && host_of(in.target.address) == this_host) partner = oldest_wildcard(in.target);
    if (partner >= 0) {
        const auto i = static_cast<std::uint32_t>(partner);
        stage(i, in, later);
        answer_with(a, at(i));
        a.other_key = key_of(i);
        return;
    }
    const int slot = free_entry();
    if (slot < 0) {
        a.verdict = verdict_full;
        return;
    }
    Datagram &v = at(static_cast<std::uint32_t>(slot));
    v = Datagram{};
    v.used = 1;
    v.generation = next_generation();
    v.kind = datagram_visitor;
    v.state = datagram_pending;
    v.seq = ++f.datagram_seq;
    v.poster = in.poster;
    v.target = in.target;
    v.remote_host = in.host;
    v.remote_key = in.key;
    v.in_len = std::min<std::uint16_t>(in.in_len, GNI_DATAGRAM_MAXSIZE);
    std::memcpy(v.in, in.in, v.in_len);
    a.verdict = verdict_stored;
    a.other_key = key_of(static_cast<std::uint32_t>(slot));
}

void serve_notice(const DatagramWire &in, DatagramWire &a, DatagramStaged &later) {
    Fabric &f = fabric();
    const std::uint32_t end = notice_end();
    int slot = end < max_notice ? static_cast<int>(end) : none;
    for (std::uint32_t i = 0; i < end; ++i) {
        const Notice &n = f.notice[i];
        if (n.used && n.host == in.host && n.key == in.key) {
            a.verdict = verdict_stored;  // the same notice again
            return;
        }
        if (!n.used && (slot == none || static_cast<std::uint32_t>(slot) > i)) slot = static_cast<int>(i);
    }
    if (!undecided(in.target, in.poster)) {
        if (const int w = oldest_wildcard(in.target); w >= 0) {
            stage(static_cast<std::uint32_t>(w), in, later);
            answer_with(a, at(static_cast<std::uint32_t>(w)));
            return;
        }
    }
    if (slot == none) {
        a.verdict = verdict_full;
        return;
    }
    f.notice[slot] = Notice{1, in.host, in.key, ++f.datagram_seq, in.poster, in.target, 0, 0};
    f.notice_top = std::max(f.notice_top, static_cast<std::uint32_t>(slot) + 1);
    a.verdict = verdict_stored;
}

void serve_claim(const DatagramWire &in, DatagramWire &a, DatagramStaged &later) {
    Datagram *d = entry(in.key);
    a.verdict = verdict_gone;
    if (!d || d->kind != datagram_directed || d->state != datagram_pending || !same(d->target, in.poster)) return;
    if (d->busy) {
        a.verdict = verdict_busy;
        return;
    }
    if (!live(*d)) return;
    const auto i = static_cast<std::uint32_t>(in.key);
    stage(i, in, later);
    answer_with(a, *d);
}

void serve_withdraw(const DatagramWire &in, DatagramWire &a) {
    Datagram *v = entry(in.other_key);
    a.verdict = verdict_gone;
    if (!v || v->kind != datagram_visitor || v->remote_host != in.host || v->remote_key != in.key) return;
    if (v->state == datagram_completed) {
        a.verdict = verdict_matched;  // too late: its done message is on its way
        a.poster = v->peer;
        a.in_len = v->got_len;
        std::memcpy(a.in, v->got, v->got_len);
        return;
    }
    v->used = 0;
    a.verdict = verdict_withdrawn;
}

void serve_done(const DatagramWire &in, DatagramWire &a) {
    Datagram *d = entry(in.key);
    if (d && d->kind == datagram_directed && d->state == datagram_away) {
        complete(*d, in.in, in.in_len, in.poster);
        // Its wildcards may now take the notices its post held back.
        work(owner(*d), work_settle);
    }
    a.verdict = verdict_ack;
}

} // namespace

bool datagram_held(DatagramRef &ref) {
    if (ref.index < 0) return false;
    Locked l;
    if (!entry(ref)) ref = DatagramRef{};
    return ref.index >= 0;
}

gni_return_t datagram_post(std::uint32_t cdm, const Target *target, const void *in, std::uint16_t length,
                           std::uint64_t id, void *out_buf, std::uint16_t out_len, DatagramRef &ref) {
    Outbox out;
    {
        Locked l;
        Fabric &f = fabric();
        const int slot = free_entry();
        if (slot < 0) return GNI_RC_ERROR_RESOURCE;
        const auto i = static_cast<std::uint32_t>(slot);
        Datagram &d = at(i);
        d = Datagram{};
        d.used = 1;
        d.pid = ::getpid();
        d.generation = next_generation();
        d.cdm = cdm;
        d.kind = target ? datagram_directed : datagram_wildcard;
        d.state = datagram_pending;
        d.seq = ++f.datagram_seq;
        d.id = id;
        d.poster = identity(cdm);
        if (target) d.target = *target;
        d.in_len = length;
        if (length) std::memcpy(d.in, in, length);
        ref = DatagramRef{slot, d.generation, id, out_buf, out_len};
        if (target && on_higher_host(*target)) {
            send_post(i, out);
        } else {
            settle();
            if (target && d.state == datagram_pending && on_lower_host(*target)) send_post(i, out);
        }
        pushes(out);
        claim_next(cdm, out);
    }
    run(cdm, out);
    return GNI_RC_SUCCESS;
}

gni_return_t datagram_test(std::uint32_t cdm, DatagramRef &ref, std::uint64_t id, gni_post_state_t &state,
                           std::uint32_t &address, std::uint32_t &inst) {
    if (ref.index < 0 || ref.id != id) return GNI_RC_NO_MATCH;
    progress(cdm);
    Locked l;
    Datagram *d = entry(ref);
    if (!d) {
        ref = DatagramRef{};
        return GNI_RC_NO_MATCH;
    }
    if (d->state == datagram_completed) {
        if (ref.out_len) std::memcpy(ref.out, d->got, std::min(d->got_len, ref.out_len));
        address = d->peer.address;
        inst = d->peer.inst_id;
        state = GNI_POST_COMPLETED;
    } else if (d->state == datagram_terminated) {
        state = GNI_POST_TERMINATED;
    } else {
        state = GNI_POST_PENDING;
        return GNI_RC_SUCCESS;
    }
    release(*d);
    ref = DatagramRef{};
    return GNI_RC_SUCCESS;
}

gni_return_t datagram_cancel(DatagramRef &ref, std::uint64_t id) {
    if (ref.index < 0 || ref.id != id) return GNI_RC_NO_MATCH;
    lock();
    Datagram *d = unheld(ref);
    if (!d) {
        unlock();
        ref = DatagramRef{};
        return GNI_RC_NO_MATCH;
    }
    if (d->state == datagram_completed || d->state == datagram_terminated) {
        unlock();
        return GNI_RC_INVALID_STATE;
    }
    if (d->state == datagram_pending) {
        // A notice of it on a lower host is left there: a claim finds it gone.
        finish(*d, datagram_terminated);
        unlock();
        return GNI_RC_SUCCESS;
    }
    // Away: its visitor is withdrawn, unless it matched there first.
    d->busy = 1;
    const std::uint64_t key = key_of(static_cast<std::uint32_t>(ref.index));
    DatagramWire m = message_of(op_withdraw, *d, key);
    m.other_key = d->remote_key;
    const std::uint32_t host = d->remote_host;
    unlock();
    DatagramWire a{};
    const bool answered = wire_datagram(host, m, a) && a.op == op_withdraw;
    Locked l;
    d = entry(ref);
    if (!d) return GNI_RC_NO_MATCH;
    d->busy = 0;
    if (d->state != datagram_away) return GNI_RC_INVALID_STATE;  // a done message came first
    if (answered && a.verdict == verdict_matched) {
        complete(*d, a.in, a.in_len, a.poster);
        return GNI_RC_INVALID_STATE;
    }
    finish(*d, datagram_terminated);
    return GNI_RC_SUCCESS;
}

void datagram_drop(DatagramRef &ref) {
    if (ref.index < 0) return;
    (void)datagram_cancel(ref, ref.id);
    Locked l;
    if (Datagram *d = entry(ref)) release(*d);
    ref = DatagramRef{};
}

void datagram_detach(std::uint32_t cdm) {
    std::vector<DatagramRef> posts;
    {
        Locked l;
        for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i) {
            const Datagram &d = at(i);
            if (d.used && d.kind != datagram_visitor && d.pid == ::getpid() && d.cdm == cdm)
                posts.push_back(DatagramRef{static_cast<std::int32_t>(i), d.generation, d.id, nullptr, 0});
        }
    }
    for (DatagramRef &r : posts) datagram_drop(r);
}

bool datagram_probe(std::uint32_t cdm, std::uint64_t &id) {
    progress(cdm);
    const Cdm &c = fabric().cdm[cdm];
    if (__atomic_load_n(&c.datagrams_done, __ATOMIC_ACQUIRE) == 0) return false;
    Locked l;
    const Datagram *oldest = nullptr;
    for (std::uint32_t i = 0, end = datagram_end(); i < end; ++i)
        if (const Datagram &d = at(i); d.used && d.kind != datagram_visitor && d.pid == ::getpid() && d.cdm == cdm &&
            (d.state == datagram_completed || d.state == datagram_terminated) && (!oldest || d.seq < oldest->seq))
            oldest = &d;
    if (!oldest) return false;
    id = oldest->id;
    return true;
}

void datagram_serve(const DatagramWire &in, DatagramWire &a, DatagramStaged &later) {
    a = DatagramWire{};
    a.op = in.op;
    a.host = static_cast<std::uint32_t>(host_index());
    Locked l;
    switch (in.op) {
    case op_forward: serve_forward(in, a, later); break;
    case op_notice: serve_notice(in, a, later); break;
    case op_claim: serve_claim(in, a, later); break;
    case op_withdraw: serve_withdraw(in, a); break;
    case op_done: serve_done(in, a); break;
    default: a.verdict = verdict_gone; break;
    }
}

void datagram_commit(const DatagramStaged &later, bool answered) {
    if (later.index < 0) return;
    Locked l;
    Datagram *d = entry(std::uint64_t{later.generation} << 32 | static_cast<std::uint32_t>(later.index));
    if (!d) return;
    d->busy = 0;
    if (answered) finish(*d, datagram_completed);
    else work(owner(*d), work_settle);  // undone: its domain's process matches it again
}

} // namespace softnic_gni
