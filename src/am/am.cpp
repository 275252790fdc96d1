// src/am/am.cpp - Request/Reply rules, dispatch, credits and hidden replies.
#include "am/am.hpp"

#include "base/knobs.hpp"
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

conduit::AmMessage to_message(Rank source, const Send &m, std::uint8_t flags) {
    conduit::AmMessage out;
    out.header.handler = m.handler;
    out.header.category = m.category;
    out.header.nargs = static_cast<std::uint8_t>(m.nargs);
    out.header.flags = flags;
    out.header.source = source;
    out.header.payload_length = m.category == AmCategory::short_ ? 0 : m.length;
    out.header.dest_addr = reinterpret_cast<std::uint64_t>(m.dest_addr);
    out.args = m.args;
    out.payload = m.payload;
    return out;
}

} // namespace

thread_local Token *AmEngine::current_token = nullptr;

void AmEngine::configure(Rank rank, Rank size, std::vector<Transport *> route,
                         const SegmentTable *segments, int credits) {
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
    if (credits <= 0 && transport_needs_credits) credits = 16;
    credits_per_peer_ = credits > 0 ? credits : 0;
    if (credits_per_peer_) {
        credits_ = std::make_unique<std::atomic<int>[]>(size_);
        for (Rank r = 0; r < size_; ++r) credits_[r].store(credits_per_peer_);
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
    user_[index] = Entry{fn, signature(category, nargs)};
    return Status::ok;
}

void AmEngine::system_register(std::uint8_t index, sluice_handler_fn fn) { system_[index] = fn; }

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
    if (!e.fn)
        return base::report(Status::handler, op, "register the handler on every rank (sluice_handler_register) before sending",
                            "handler %u is not registered", m.handler);
    if (e.signature != signature(m.category, m.nargs))
        return base::report(Status::handler, op, "send with the category and argument count the handler was registered with",
                            "handler %u is registered as %s with %u arguments, sent as %s with %u", m.handler,
                            category_name(static_cast<AmCategory>(e.signature >> 8)), e.signature & 0xffu,
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

void AmEngine::credit_acquire(Rank dest) {
    std::atomic<int> &c = credits_[dest];
    for (;;) {
        int have = c.load(std::memory_order_relaxed);
        if (have > 0 && c.compare_exchange_weak(have, have - 1, std::memory_order_acquire)) return;
        route_[dest]->poll(PollMode::all);
    }
}

Status AmEngine::transmit(Rank dest, const Send &m, std::uint8_t flags) {
    return route_[dest]->send(dest, to_message(rank_, m, flags));
}

Status AmEngine::request(Rank dest, const Send &m, const char *op) {
    if (current_token)
        return base::report(Status::context, op,
                            "a handler may only reply; send the request after the handler returns",
                            "request sent from inside a handler");
    if (Status s = check_send(dest, m, op); s != Status::ok) return s;
    std::uint8_t flags = 0;
    if (credits_per_peer_) {
        credit_acquire(dest);
        flags |= conduit::am_flag_credit;
    }
    return transmit(dest, m, flags);
}

Status AmEngine::reply(Token *token, const Send &m, const char *op) {
    if (!token || token != current_token)
        return base::report(Status::context, op, "reply only from a request handler, with the token it was given",
                            "reply outside the handler that owns the token");
    if (!token->request)
        return base::report(Status::context, op, "a reply handler may send nothing; act in the request handler",
                            "reply from a reply handler (to rank %u)", token->source);
    if (token->replied)
        return base::report(Status::context, op, "send at most one reply per request",
                            "second reply to the request from rank %u", token->source);
    if (Status s = check_send(token->source, m, op); s != Status::ok) return s;
    token->replied = true;
    std::uint8_t flags = conduit::am_flag_reply | (token->credit ? conduit::am_flag_credit : 0);
    return transmit(token->source, m, flags);
}

Status AmEngine::system_request(Rank dest, const Send &m) {
    return transmit(dest, m, conduit::am_flag_system);
}

Status AmEngine::system_reply(Token *token, const Send &m) {
    token->replied = true;
    std::uint8_t flags = conduit::am_flag_system | conduit::am_flag_reply |
                         (token->credit ? conduit::am_flag_credit : 0);
    return transmit(token->source, m, flags);
}

// The one receive path of every conduit: the handler runs with a token on
// this thread; a request that held a credit gets its (possibly hidden) reply.
void AmEngine::deliver(void *context, const conduit::AmHeader &h, const std::uint32_t *args,
                       void *payload) {
    AmEngine &self = *static_cast<AmEngine *>(context);
    Token token{h.source, h.category, !(h.flags & conduit::am_flag_reply),
                (h.flags & conduit::am_flag_credit) != 0, false};
    sluice_handler_fn fn = nullptr;
    if (h.flags & conduit::am_flag_system) {
        fn = h.handler < sys_count ? self.system_[h.handler] : nullptr;
        if (!fn) self.dispatch_refuse(h);
    } else if (self.user_enabled_.load(std::memory_order_relaxed)) {
        const Entry &e = self.user_[h.handler];
        if (e.signature != signature(h.category, h.nargs)) self.dispatch_refuse(h);
        fn = e.fn;
    }
    if (fn) {
        Token *outer = current_token;
        current_token = &token;
#ifdef SLUICE_DEBUG
        // Debug builds check that handlers do not block: a long handler
        // stalls every rank waiting on this one.
        const std::uint64_t started = base::now_ns();
#endif
        fn(&token, payload, static_cast<std::size_t>(h.payload_length), args, h.nargs);
#ifdef SLUICE_DEBUG
        const std::uint64_t took = base::now_ns() - started;
        if (took > handler_warn_ns)
            std::fprintf(stderr,
                         "sluice[rank %u] warning: handler %u (from rank %u) ran for %.1f ms; handlers must not "
                         "block: do long work after the handler returns\n",
                         self.rank_, h.handler, h.source, took / 1e6);
#endif
        current_token = outer;
    }
    if (token.credit) self.credit_settle(h, token);
}

void AmEngine::credit_settle(const conduit::AmHeader &h, Token &token) {
    if (token.request) {
        if (!token.replied) {
            // Hidden reply: the sender's credit must come back even when the
            // handler had nothing to say.
            Send none;
            none.handler = sys_noop_reply;
            (void)system_reply(&token, none);
        }
    } else {
        credits_[h.source].fetch_add(1, std::memory_order_release);
    }
}

void AmEngine::dispatch_refuse(const conduit::AmHeader &h) const {
    if (h.flags & conduit::am_flag_system)
        base::fatal("AM dispatch", "this is a Sluice bug", "unknown internal handler %u from rank %u", h.handler, h.source);
    const Entry &e = user_[h.handler];
    if (!e.fn)
        base::fatal("AM dispatch", "register every handler on every rank before any rank sends to it",
                    "message from rank %u for handler %u, which is not registered here", h.source, h.handler);
    base::fatal("AM dispatch", "register the handler identically on every rank",
                "message from rank %u for handler %u as %s with %u arguments; registered here as %s with %u",
                h.source, h.handler, category_name(h.category), h.nargs,
                category_name(static_cast<AmCategory>(e.signature >> 8)), e.signature & 0xffu);
}

} // namespace sluice::am
