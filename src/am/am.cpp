// src/am/am.cpp - Request/Reply rules, dispatch, credits and hidden replies.
#include "am/am.hpp"

#include "base/knobs.hpp"
#include "base/tsan.hpp"
#include "credit/knobs.hpp"
#include "sluice_config.h"

#include <cstdio>

#include <algorithm>

namespace sluice::am {
namespace {

#ifdef SLUICE_DEBUG
constexpr std::uint64_t handler_warn_ns = 100'000'000;  // 100 ms
#endif


const char *category_name(AmCategory c) {
    switch (c) {
    case AmCategory::short_: return "Short";
    case AmCategory::medium: return "Medium";
    case AmCategory::long_: return "Long";
    }
    return "?";
}

// The engine whose credit system messages arrive (one per process).
AmEngine *credit_owner = nullptr;
// The engine whose flush messages arrive.
AmEngine *flush_owner = nullptr;

} // namespace

conduit::AmMessage to_message(Rank source, const Send &m, std::uint8_t flags, std::uint8_t credit_byte) {
    conduit::AmMessage out;
    out.header.credit = credit_byte;
    out.header.handler = m.handler;
    out.header.category = m.category;
    out.header.nargs = static_cast<std::uint8_t>(m.nargs);
    out.header.flags = flags;
    out.header.source = source;
    out.header.payload_length = m.category == AmCategory::short_ ? 0 : m.length;
    out.header.dest_addr = reinterpret_cast<std::uint64_t>(m.dest_addr);
    out.args = m.args;
    out.payload = m.payload;
    out.payload_stable = m.payload_stable;
    return out;
}

constinit thread_local Token *AmEngine::current_token = nullptr;

void AmEngine::configure(Rank rank, Rank size, std::vector<Transport *> route,
                         const SegmentTable *segments, std::vector<std::string> &notes) {
    rank_ = rank;
    size_ = size;
    route_ = std::move(route);
    segments_ = segments;
    transports_.clear();
    max_medium_ = SIZE_MAX;
    max_long_ = SIZE_MAX;
    bool transport_needs_credits = false;
    for (Transport *t : route_) {
        if (std::find(transports_.begin(), transports_.end(), t) != transports_.end()) continue;
        transports_.push_back(t);
        max_medium_ = std::min(max_medium_, t->capabilities().max_medium);
        max_long_ = std::min(max_long_, t->capabilities().max_long);
        transport_needs_credits |= t->capabilities().needs_credits;
    }
    system_[sys_noop_reply] = [](sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) {};
    system_[sys_credit] = credit_system_message;
    system_[sys_flush] = flush_request;
    system_[sys_flush_reply] = flush_reply;
    system_[sys_long_header] = long_header_arrived;
    system_[sys_long_data] = long_data_arrived;
    long_owner_ = this;
    flush_owner = this;
    sent_to_ = std::make_unique<std::atomic<std::uint8_t>[]>(size);
    for (Rank r = 0; r < size; ++r) sent_to_[r].store(0, std::memory_order_relaxed);
    sent_any_.store(false);
    credit_.reset();
    const credit::Preferences *prefs = nullptr;  // the first transport's that has any
    for (Transport *t : transports_)
        if (!prefs && t->capabilities().credit_prefs.set) prefs = &t->capabilities().credit_prefs;
    const credit::Flow flow = credit::flow_from_knobs(prefs);
    if (flow == credit::Flow::forced || (flow == credit::Flow::automatic && transport_needs_credits)) {
        // One credit is a min_credits-th of the largest request (header,
        // 16 arguments and the largest Medium payload).
        largest_request_ = 16 + 4 * SLUICE_AM_MAX_ARGS + max_medium_;
        credit::Config c = credit::config_from_knobs(size, rank, largest_request_, notes, prefs);
        // A conduit whose buffers hold one message each bounds the requests
        // in flight to this rank (Capabilities::request_slots): lend no
        // more credits than that, since every request takes at least one.
        for (Transport *t : transports_) {
            const conduit::Capabilities &cap = t->capabilities();
            const std::uint64_t peers = size > 1 ? size - 1 : 1;
            // One peer never holds more than the whole, nor more than its
            // own buffers: a cap on lending to busy peers, said nowhere
            // (the per-peer shares below are what a warning is for).
            if (cap.request_slots && c.max_per_peer > cap.request_slots)
                c.max_per_peer = static_cast<unsigned>(cap.request_slots);
            if (cap.request_slots_per_peer && c.max_per_peer > cap.request_slots_per_peer)
                c.max_per_peer = static_cast<unsigned>(cap.request_slots_per_peer);
            c.per_peer = std::min(c.per_peer, c.max_per_peer);
            if (cap.request_slots && c.total_credits() > cap.request_slots) {
                const std::uint64_t was = c.total_credits();
                c.per_peer = static_cast<unsigned>(std::min<std::uint64_t>(c.per_peer, cap.request_slots / peers));
                const std::uint64_t shares = std::uint64_t{c.per_peer} * peers;
                c.banked = static_cast<unsigned>(cap.request_slots > shares ? cap.request_slots - shares : 0);
                notes.push_back(std::string(t->name()) + ": " + std::to_string(cap.request_slots) +
                                " receive buffers for requests: credits lent lowered from " + std::to_string(was) +
                                " to " + std::to_string(c.total_credits()));
            }
        }
        for (std::string &line : c.normalize()) notes.push_back("credit configuration: " + line);
        credit_ = std::make_unique<credit::Engine>(c);
        credit_owner = this;
    } else if (flow == credit::Flow::disabled && transport_needs_credits) {
        notes.push_back("SLUICE_CREDIT_FLOW=0 with a conduit whose receive buffers are fixed: a flood of requests "
                        "can overrun a receiver");
    }
}

Status AmEngine::handler_register(std::uint8_t index, sluice_handler_fn fn, AmCategory category,
                                  unsigned nargs) {
    const char *op = "handler_register";
    if (!fn) return base::report(Status::argument, op, "pass a handler function", "handler %u: null function", index);
    if (static_cast<int>(category) > 2)
        return base::report(Status::argument, op, "use SLUICE_AM_SHORT, SLUICE_AM_MEDIUM or SLUICE_AM_LONG",
                            "handler %u: unknown category %d", index, static_cast<int>(category));
    if (nargs > SLUICE_AM_MAX_ARGS)
        return base::report(Status::argument, op, "pass at most 16 arguments", "handler %u: %u arguments", index, nargs);
    user_[index].fn_.store(fn, std::memory_order_relaxed);
    user_[index].signature_.store(signature(category, nargs), std::memory_order_release);
    return Status::ok;
}

void AmEngine::system_register(std::uint8_t index, sluice_handler_fn fn) { system_[index] = fn; }

void AmEngine::hook_register(ProgressHook fn, void *context) {
    const int n = hook_count_.load();
    if (n == max_hooks) base::fatal("init", "this is a Sluice bug", "more than %d progress hooks", max_hooks);
    hooks_[n] = {fn, context};
    hook_count_.store(n + 1, std::memory_order_release);
}

// Not from inside a handler: a hook sends, and sending may poll.
int AmEngine::hooks_run() {
    if (current_token) return 0;
    int n = 0;
    const int count = hook_count_.load(std::memory_order_acquire);
    for (int i = 0; i < count; ++i) n += hooks_[i].fn(hooks_[i].context);
    return n;
}

// The common case inline: a Short to a registered handler with its
// registered argument count.  Everything else, errors included, goes the
// long way.
Status AmEngine::check_send(Rank dest, const Send &m, const char *op) const {
    if (dest < size_ && m.category == AmCategory::short_ && short_ok(m.handler, m.args, m.nargs))
        return Status::ok;
    return check_send_slow(dest, m, op);
}

Status AmEngine::check_send_slow(Rank dest, const Send &m, const char *op) const {
    if (dest >= size_)
        return base::report(Status::rank, op, "use a rank below sluice_size()", "destination rank %u, but the job has %u ranks",
                            dest, size_);
    if (m.nargs > SLUICE_AM_MAX_ARGS)
        return base::report(Status::argument, op, "pass at most 16 arguments", "%u arguments", m.nargs);
    if (m.nargs && !m.args)
        return base::report(Status::argument, op, "pass the argument array", "%u arguments but a null array", m.nargs);
    const Entry &e = user_[m.handler];
    if (!e.fn())
        return base::report(Status::handler, op, "register the handler on every rank (sluice_handler_register) before sending",
                            "handler %u is not registered", m.handler);
    if (e.signature() != signature(m.category, m.nargs))
        return base::report(Status::handler, op, "send with the category and argument count the handler was registered with",
                            "handler %u is registered as %s with %u arguments, sent as %s with %u", m.handler,
                            category_name(static_cast<AmCategory>(e.signature() >> 8)), e.signature() & 0xffu,
                            category_name(m.category), m.nargs);
    if (m.category == AmCategory::short_) return Status::ok;
    if (m.length && !m.payload)
        return base::report(Status::argument, op, "pass the payload buffer", "%zu-byte payload from a null pointer", m.length);
    if (m.category == AmCategory::medium) {
        if (m.length > max_medium_)
            return base::report(Status::too_large, op, "split the payload or use a Long (sluice_am_max_medium() tells the limit)",
                                "Medium payload of %zu bytes, the largest is %zu", m.length, max_medium_);
        return Status::ok;
    }
    if (m.length > max_long_)
        return base::report(Status::too_large, op, "split the payload (sluice_am_max_long() tells the limit)",
                            "Long payload of %zu bytes, the largest is %zu", m.length, max_long_);
    if (!segments_->attached || !segments_->contains(dest, reinterpret_cast<std::uint64_t>(m.dest_addr), m.length))
        return base::report(Status::segment, op, "target an address inside the destination's segment (sluice_segment_info)",
                            "Long of %zu bytes to %p is outside the segment of rank %u", m.length, m.dest_addr, dest);
    return Status::ok;
}

// Credits a request takes: a Short or a Long header 1 (a Long's payload
// lands in the segment, not in a request buffer), a Medium its share of the
// largest request, rounded up, so a full-size Medium takes min_credits.
unsigned AmEngine::credit_count(const Send &m) const {
    if (m.category != AmCategory::medium) return 1;
    const std::size_t bytes = 16 + 4 * m.nargs + m.length;
    return static_cast<unsigned>((bytes + credit_->config().credit_bytes - 1) / credit_->config().credit_bytes);
}

std::uint8_t AmEngine::credit_acquire(Rank dest, const Send &m) {
    const unsigned n = credit_count(m);
    std::uint8_t byte = 0;
    // Every transport is polled while waiting, not only the one to `dest`:
    // the credits may be held up by a peer that waits on us over another.
    while (!credit_take(dest, n, byte)) poll(PollMode::all);
    return byte;
}

Status AmEngine::transmit(Rank dest, const Send &m, std::uint8_t flags, std::uint8_t credit_byte) {
    if (__builtin_expect(long_two_part(dest, m), 0)) return long_transmit(dest, m, flags, credit_byte);
    return route_[dest]->send(dest, to_message(rank_, m, flags, credit_byte));
}

void AmEngine::credit_flush() {
    if (current_token || prepared_) return;  // from a handler or while prepared: the next poll sends them
    credit::SysMessage batch[16];
    while (std::size_t n = credit_->sys_take(batch, 16)) {
        for (std::size_t i = 0; i < n; ++i) {
            const credit::SysMessage &m = batch[i];
            const std::uint32_t args[2] = {static_cast<std::uint32_t>(m.kind) | (m.epoch ? 0x100u : 0u) |
                                               (m.urgent ? 0x200u : 0u),
                                           static_cast<std::uint32_t>(m.count) | static_cast<std::uint32_t>(m.returned) << 16};
            Send s;
            s.handler = sys_credit;
            s.args = args;
            s.nargs = 2;
            (void)system_request(m.peer, s);
        }
    }
}

void AmEngine::credit_system_message(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    AmEngine *self = credit_owner;
    if (!self || !self->credit_) return;
    credit::SysMessage m;
    m.peer = token->source;
    m.kind = static_cast<credit::SysKind>(args[0] & 0xff);
    m.epoch = (args[0] & 0x100u) != 0;
    m.urgent = (args[0] & 0x200u) != 0;
    m.count = static_cast<std::uint16_t>(args[1] & 0xffffu);
    m.returned = static_cast<std::uint16_t>(args[1] >> 16);
    self->credit_->sys_arrived(m);
}

void AmEngine::credit_stats_write() const {
    const std::string &path = base::knob_string(base::Knob::CREDIT_STATS);
    if (!credit_ || path.empty()) return;
    std::string name;
    for (std::size_t i = 0; i < path.size(); ++i) {
        if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'r') {
            name += std::to_string(rank_);
            ++i;
        } else {
            name += path[i];
        }
    }
    std::FILE *f = std::fopen(name.c_str(), "w");
    if (!f) {
        base::report(Status::resource, "finalize", "point SLUICE_CREDIT_STATS at a writable file",
                     "cannot write credit statistics to %s", name.c_str());
        return;
    }
    credit_->stats_write(f);
    std::fclose(f);
}

// What every request is checked for: not from a handler, a valid send.
Status AmEngine::request_check(Rank dest, const Send &m, const char *op) const {
    if (prepared_) return prepared_refuse(op);
    if (current_token)
        return base::report(Status::context, op,
                            "a handler may only reply; send the request after the handler returns",
                            "request sent from inside a handler");
    return check_send(dest, m, op);
}

Status AmEngine::request(Rank dest, const Send &m, const char *op) {
    if (Status s = request_check(dest, m, op); s != Status::ok) return s;
    sent_mark(dest);
    if (credit_) return transmit(dest, m, conduit::am_flag_credit, credit_acquire(dest, m));
    return transmit(dest, m, 0);
}

Status AmEngine::request_nbi(Rank dest, const Send &m, std::atomic<std::uint64_t> *nbi, const char *op) {
    if (Status s = request_check(dest, m, op); s != Status::ok) return s;
    std::uint8_t flags = 0, byte = 0;
    if (credit_) {
        byte = credit_acquire(dest, m);
        flags = conduit::am_flag_credit;
    }
    sent_mark(dest);
    if (long_two_part(dest, m)) return long_transmit(dest, m, flags, byte, nbi);
    return transmit(dest, m, flags, byte);
}

Status AmEngine::request_immediate(Rank dest, const Send &m, const char *op) {
    if (Status s = request_check(dest, m, op); s != Status::ok) return s;
    std::uint8_t flags = 0, byte = 0;
    if (credit_) {
        if (!credit_take(dest, credit_count(m), byte)) return Status::not_ready;
        flags = conduit::am_flag_credit;
    }
    sent_mark(dest);
    // A two-part Long cannot be taken back once its payload is under way.
    if (__builtin_expect(long_two_part(dest, m), 0)) return long_transmit(dest, m, flags, byte);
    const Status s = route_[dest]->send_immediate(dest, to_message(rank_, m, flags, byte));
    if (s == Status::not_ready && credit_) credit_->request_cancel(dest, byte);
    return s;
}

Status AmEngine::reply(Token *token, const Send &m, const char *op) {
    if (prepared_) return prepared_refuse(op);
    if (!token || token != current_token)
        return base::report(Status::context, op, "reply only from a request handler, with the token it was given",
                            "reply outside the handler that owns the token");
    if (!token->request())
        return base::report(Status::context, op, "a reply handler may send nothing; act in the request handler",
                            "reply from a reply handler (to rank %u)", token->source);
    if (token->replied())
        return base::report(Status::context, op, "send at most one reply per request",
                            "second reply to the request from rank %u", token->source);
    if (Status s = check_send(token->source, m, op); s != Status::ok) return s;
    token->state |= Token::token_replied;
    return reply_transmit(token, m, conduit::am_flag_reply);
}

Status AmEngine::system_request(Rank dest, const Send &m, bool immediate) {
    // The queue to `dest` may be this thread's until its commit.
    if (__builtin_expect(prepared_ != nullptr, 0) && prepared_blocks(dest)) return prepared_refuse("internal request");
    if (immediate && !long_two_part(dest, m))
        return route_[dest]->send_immediate(dest, to_message(rank_, m, conduit::am_flag_system, 0));
    return transmit(dest, m, conduit::am_flag_system);
}

Status AmEngine::system_reply(Token *token, const Send &m) {
    token->state |= Token::token_replied;
    return reply_transmit(token, m, conduit::am_flag_system | conduit::am_flag_reply);
}

Status AmEngine::flush_begin(std::uint64_t &target) {
    target = flush_sent_.load(std::memory_order_relaxed);
    if (!sent_any_.load(std::memory_order_acquire)) return Status::ok;
    sent_any_.store(false, std::memory_order_relaxed);
    Send m;
    m.handler = sys_flush;
    for (Rank r = 0; r < size_; ++r) {
        if (!sent_to_[r].load(std::memory_order_relaxed)) continue;
        sent_to_[r].store(0, std::memory_order_relaxed);
        if (Status s = system_request(r, m); s != Status::ok) {
            sent_to_[r].store(1, std::memory_order_relaxed);  // the next flush tries again
            sent_any_.store(true, std::memory_order_relaxed);
            return base::report(s, "flush", nullptr, "could not send a flush to rank %u", r);
        }
        target = flush_sent_.fetch_add(1, std::memory_order_relaxed) + 1;
    }
    return Status::ok;
}

void AmEngine::flush_request(sluice_token_t token, void *, std::size_t, const std::uint32_t *, unsigned) {
    Send m;
    m.handler = sys_flush_reply;
    (void)flush_owner->system_reply(token, m);
}

void AmEngine::flush_reply(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) {
    flush_owner->flush_answered_.fetch_add(1, std::memory_order_release);
}

// A reply to a request that took credits gives them back (and may grant
// or reclaim: the engine's reply byte).
Status AmEngine::reply_transmit(Token *token, const Send &m, std::uint8_t flags) {
    if (!token->credit()) return transmit(token->source, m, flags);
    return transmit(token->source, m, flags | conduit::am_flag_credit,
                    credit_->reply_byte(token->source, token->credit_byte));
}

namespace {

// Runs a handler with `token` as this thread's current one.
inline void handler_run(sluice_handler_fn fn, Token &token, void *payload, std::size_t length,
                        const std::uint32_t *args, unsigned nargs, [[maybe_unused]] Rank rank,
                        [[maybe_unused]] std::uint8_t handler) {
    Token *outer = AmEngine::current_token;
    AmEngine::current_token = &token;
    // A message the interrupted code prepared is not the handler's.
    Prepared *const outer_prepared = AmEngine::prepared_;
    if (__builtin_expect(outer_prepared != nullptr, 0)) AmEngine::prepared_ = nullptr;
#ifdef SLUICE_DEBUG
    // Debug builds check that handlers do not block: a long handler
    // stalls every rank waiting on this one.
    const std::uint64_t started = base::now_ns();
#endif
    fn(&token, payload, length, args, nargs);
    base::tsan_release(&AmEngine::handlers_done);
    if (__builtin_expect(AmEngine::prepared_ != outer_prepared, 0)) AmEngine::prepared_restore(outer_prepared);
#ifdef SLUICE_DEBUG
    const std::uint64_t took = base::now_ns() - started;
    if (took > handler_warn_ns)
        std::fprintf(stderr,
                     "sluice[rank %u] warning: handler %u (from rank %u) ran for %.1f ms; handlers must not "
                     "block: do long work after the handler returns\n",
                     rank, handler, token.source, took / 1e6);
#endif
    AmEngine::current_token = outer;
}

} // namespace

// The general receive path of every conduit (deliver_short below takes
// the plain Shorts): the handler runs with a token on
// this thread; a request that held a credit gets its (possibly hidden) reply.
void AmEngine::deliver(void *context, const conduit::AmHeader &h, const std::uint32_t *args,
                       void *payload) {
    AmEngine &self = *static_cast<AmEngine *>(context);
    static_assert(conduit::am_flag_reply == Token::token_request && conduit::am_flag_credit == Token::token_credit,
                  "the token state is the header flags, with the request bit inverted");
    Token token{h.source,
                static_cast<std::uint8_t>((h.flags ^ conduit::am_flag_reply) &
                                          (Token::token_request | Token::token_credit)),
                h.credit};
    if (token.credit()) self.credit_arrived(token);
    if (sluice_handler_fn fn = self.dispatch_resolve(h)) handler_run(fn, token, payload, static_cast<std::size_t>(h.payload_length), args, h.nargs, self.rank_, h.handler);
    self.credit_settle(token);
}

// The Short latency path: a registered user handler of this shape, user
// handlers enabled.  Anything else, errors included, is deliver()'s.
void AmEngine::deliver_short(void *context, Rank source, std::uint8_t handler, std::uint8_t flags,
                             std::uint8_t credit, const std::uint32_t *args, unsigned nargs) {
    AmEngine &self = *static_cast<AmEngine *>(context);
    const Entry &e = self.user_[handler];
    if (__builtin_expect(!(flags & conduit::am_flag_system) && e.signature() == signature(AmCategory::short_, nargs) &&
                             self.user_enabled_.load(std::memory_order_relaxed), 1)) {
        Token token{source,
                    static_cast<std::uint8_t>((flags ^ conduit::am_flag_reply) &
                                              (Token::token_request | Token::token_credit)),
                    credit};
        if (token.credit()) self.credit_arrived(token);
        handler_run(e.fn(), token, nullptr, 0, args, nargs, self.rank_, handler);
        self.credit_settle(token);
        return;
    }
    conduit::AmHeader h;
    h.handler = handler;
    h.nargs = static_cast<std::uint8_t>(nargs);
    h.flags = flags;
    h.credit = credit;
    h.source = source;
    deliver(context, h, args, nullptr);
}

sluice_handler_fn AmEngine::dispatch_resolve(const conduit::AmHeader &h) const {
    if (__builtin_expect(!(h.flags & conduit::am_flag_system), 1)) {
        if (__builtin_expect(!user_enabled_.load(std::memory_order_relaxed), 0)) return nullptr;
        const Entry &e = user_[h.handler];
        if (__builtin_expect(e.signature() != signature(h.category, h.nargs), 0)) dispatch_refuse(h);
        return e.fn();
    }
    sluice_handler_fn fn = h.handler < sys_count ? system_[h.handler] : nullptr;
    if (!fn) dispatch_refuse(h);
    return fn;
}

void AmEngine::credit_arrived(const Token &token) {
    if (!credit_) return;
    if (token.request()) credit_->request_arrived(token.source, token.credit_byte);
    else credit_->reply_arrived(token.source, token.credit_byte);
}

// Hidden reply: a request that held credits and got no reply gives them
// back even when the handler had nothing to say, unless the static policy
// banks them (slack, as GASNet's ibv conduit does).
void AmEngine::credit_hidden_reply(Token &token) {
    if (!credit_ || !credit_->reply_needed(token.source, token.credit_byte)) return;
    Send none;
    none.handler = sys_noop_reply;
    (void)system_reply(&token, none);
}

void AmEngine::dispatch_refuse(const conduit::AmHeader &h) const {
    if (h.flags & conduit::am_flag_system)
        base::fatal("AM dispatch", "this is a Sluice bug", "unknown internal handler %u from rank %u", h.handler, h.source);
    const Entry &e = user_[h.handler];
    if (!e.fn())
        base::fatal("AM dispatch", "register every handler on every rank before any rank sends to it",
                    "message from rank %u for handler %u, which is not registered here", h.source, h.handler);
    base::fatal("AM dispatch", "register the handler identically on every rank",
                "message from rank %u for handler %u as %s with %u arguments; registered here as %s with %u",
                h.source, h.handler, category_name(h.category), h.nargs,
                category_name(static_cast<AmCategory>(e.signature() >> 8)), e.signature() & 0xffu);
}

} // namespace sluice::am
