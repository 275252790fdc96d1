// src/am/prepare.cpp - negotiated-payload AMs: prepare a Medium or Long
// with a least and a most payload size, let the caller write the payload
// in place, then commit it with its final length, handler and arguments,
// or cancel it.
//
// Where the route's conduit hands out room in its own send buffer
// (Capabilities::prepare_medium: smp's rings) a Medium's payload is
// written there and commit publishes it, so the copy a fixed-payload
// Medium makes is saved.  Elsewhere (every Long, and Mediums on other
// conduits or with more arguments than the conduit's record takes) the
// payload goes into a buffer of this thread's and commit sends it as the
// plain calls would.  Request credits are taken at prepare, so a commit
// never waits for them, and given back by cancel.
#include "am/am.hpp"

#include <algorithm>

namespace sluice::am {

struct Prepared {
    AmEngine *engine = nullptr;
    AmCategory category = AmCategory::medium;
    bool reply = false;
    bool native = false;       // in the conduit's send buffer (send)
    bool credited = false;     // holds request credits (credit_byte)
    std::uint8_t credit_byte = 0;
    Rank dest = 0;
    Token *token = nullptr;    // a reply's
    unsigned nargs = 0;
    std::size_t size = 0;
    void *buffer = nullptr;
    conduit::PreparedSend send;
    unsigned slot = 0;         // its index in `slots` (and `own_buffers`)
};

namespace {

// One prepared message outside handlers and one inside (a request
// handler's reply); handlers nest only as reply handlers, which send nothing.
// constinit: no TLS wrapper on the way to them.
constinit thread_local Prepared slots[2];

// The library's buffers, grown to the largest size prepared on this
// thread; apart from `slots` so that those need no destructor.
struct OwnBuffer {
    std::unique_ptr<char[]> data;
    std::size_t size = 0;
};
thread_local OwnBuffer own_buffers[2];

const char *category_word(AmCategory c) {
    return c == AmCategory::medium ? "Medium" : c == AmCategory::long_ ? "Long" : "Short";
}

} // namespace

constinit thread_local Prepared *AmEngine::prepared_ = nullptr;

Status AmEngine::prepared_refuse(const char *op) {
    const Prepared &p = *prepared_;
    return base::report(Status::state, op, "call sluice_am_commit or sluice_am_cancel on this thread first",
                        "a %s %s to rank %u is prepared on this thread and not committed", category_word(p.category),
                        p.reply ? "reply" : "request", p.dest);
}

bool AmEngine::prepared_blocks(Rank dest) {
    const Prepared &p = *prepared_;
    return p.native && !p.reply && p.dest == dest;
}

void AmEngine::prepared_restore(Prepared *outer) {
    if (Prepared *p = prepared_) {
        base::report(Status::state, "handler", "commit or cancel a prepared reply before the handler returns",
                     "the handler returned with a %s reply to rank %u prepared; it was cancelled",
                     category_word(p->category), p->dest);
        (void)p->engine->cancel("handler");
    }
    prepared_ = outer;
}

std::size_t AmEngine::max_medium_for(Rank dest, unsigned nargs) const {
    if (dest >= size_ || nargs > SLUICE_AM_MAX_ARGS) return 0;
    return max_medium_;
}

std::size_t AmEngine::max_long_for(Rank dest, unsigned nargs) const {
    if (dest >= size_ || nargs > SLUICE_AM_MAX_ARGS) return 0;
    return max_long_;
}

// Checks shared by both prepares; `most` comes back clamped to the limit.
Status AmEngine::prepare_begin(AmCategory category, Rank dest, std::size_t least, std::size_t &most, unsigned nargs,
                               void **buffer, std::size_t *size, const char *op) const {
    if (prepared_) return prepared_refuse(op);
    if (category != AmCategory::medium && category != AmCategory::long_)
        return base::report(Status::argument, op, "prepare SLUICE_AM_MEDIUM or SLUICE_AM_LONG (a Short has no payload)",
                            "category %u", static_cast<unsigned>(category));
    if (!buffer || !size)
        return base::report(Status::argument, op, "pass where to store the buffer and its size", "null output");
    if (nargs > SLUICE_AM_MAX_ARGS)
        return base::report(Status::argument, op, "pass at most SLUICE_AM_MAX_ARGS arguments", "%u arguments", nargs);
    if (dest >= size_)
        return base::report(Status::rank, op, "pass a rank below sluice_size()", "rank %u, but the job has %u ranks",
                            dest, size_);
    if (least > most)
        return base::report(Status::argument, op, "pass least <= most", "least %zu is above most %zu", least, most);
    const std::size_t max = category == AmCategory::medium ? max_medium_for(dest, nargs) : max_long_for(dest, nargs);
    if (least > max)
        return base::report(Status::too_large, op,
                            "ask for at most sluice_am_max_medium_for()/sluice_am_max_long_for() bytes",
                            "least %zu is above the largest %s to rank %u, %zu bytes", least, category_word(category),
                            dest, max);
    most = std::min(most, max);
    return Status::ok;
}

// The buffer: the conduit's send buffer where it has one for this
// message, else this thread's.  Credits, if taken, are given back on failure.
Status AmEngine::prepare_finish(Prepared &p, bool immediate, std::size_t least, std::size_t most, void **buffer,
                                std::size_t *size) {
    Transport *t = route_[p.dest];
    const conduit::Capabilities &caps = t->capabilities();
    p.native = p.category == AmCategory::medium && caps.prepare_medium && p.nargs <= caps.prepare_max_args;
    if (p.native) {
        const std::uint8_t flags = p.reply ? conduit::am_flag_reply : 0;
        if (Status s = t->prepare(p.dest, flags, p.nargs, least, most, immediate, p.send); s != Status::ok) {
            if (p.credited) credit_->request_cancel(p.dest, p.credit_byte);
            if (s != Status::not_ready)
                base::report(s, p.reply ? "am_prepare_reply" : "am_prepare_request", nullptr,
                             "no send buffer to rank %u", p.dest);
            return s;
        }
        p.buffer = p.send.buffer;
        p.size = p.send.size;
    } else {
        OwnBuffer &own = own_buffers[p.slot];
        if (own.size < most || !own.data) {  // never null, even for 0 bytes
            own.data = std::make_unique<char[]>(std::max<std::size_t>(most, 1));
            own.size = most;
        }
        p.buffer = own.data.get();
        p.size = most;
    }
    p.engine = this;
    prepared_ = &p;
    *buffer = p.buffer;
    *size = p.size;
    return Status::ok;
}

Status AmEngine::prepare_request(AmCategory category, Rank dest, std::size_t least, std::size_t most, unsigned nargs,
                                 bool immediate, void **buffer, std::size_t *size, const char *op) {
    if (Status s = prepare_begin(category, dest, least, most, nargs, buffer, size, op); s != Status::ok) return s;
    if (current_token)
        return base::report(Status::context, op, "a handler may only reply; prepare the request after it returns",
                            "request prepared inside a handler");
    Prepared &p = slots[0];
    p.slot = 0;
    p.category = category;
    p.reply = false;
    p.dest = dest;
    p.token = nullptr;
    p.nargs = nargs;
    p.credited = false;
    if (credit_) {
        // Enough for the most a commit may send.
        Send whole = make_send(category, 0, nullptr, most, nullptr, nullptr, nargs);
        if (immediate) {
            if (!credit_take(dest, credit_count(whole), p.credit_byte)) return Status::not_ready;
        } else {
            p.credit_byte = credit_acquire(dest, whole);
        }
        p.credited = true;
    }
    return prepare_finish(p, immediate, least, most, buffer, size);
}

Status AmEngine::prepare_reply(AmCategory category, Token *token, std::size_t least, std::size_t most, unsigned nargs,
                               bool immediate, void **buffer, std::size_t *size, const char *op) {
    if (prepared_) return prepared_refuse(op);
    if (!token || token != current_token)
        return base::report(Status::context, op, "prepare a reply only in a request handler, with the token it was given",
                            "reply prepared outside the handler that owns the token");
    if (!token->request())
        return base::report(Status::context, op, "a reply handler may send nothing; act in the request handler",
                            "reply prepared in a reply handler (to rank %u)", token->source);
    if (token->replied())
        return base::report(Status::context, op, "send at most one reply per request",
                            "second reply prepared to the request from rank %u", token->source);
    if (Status s = prepare_begin(category, token->source, least, most, nargs, buffer, size, op); s != Status::ok)
        return s;
    Prepared &p = slots[1];
    p.slot = 1;
    p.category = category;
    p.reply = true;
    p.dest = token->source;
    p.token = token;
    p.nargs = nargs;
    p.credited = false;
    return prepare_finish(p, immediate, least, most, buffer, size);
}

Status AmEngine::commit(std::uint8_t handler, std::size_t length, void *dest_addr, const std::uint32_t *args,
                        unsigned nargs, const char *op) {
    Prepared *pp = prepared_;
    if (!pp)
        return base::report(Status::state, op, "call sluice_am_prepare_request or _reply first",
                            "nothing is prepared on this thread");
    Prepared &p = *pp;
    if (length > p.size)
        return base::report(Status::too_large, op, "commit at most the size the prepare returned",
                            "%zu bytes committed, %zu prepared (the message stays prepared)", length, p.size);
    if (nargs != p.nargs)
        return base::report(Status::argument, op, "commit with the argument count given to the prepare",
                            "%u arguments committed, %u prepared (the message stays prepared)", nargs, p.nargs);
    const Send m = make_send(p.category, handler, p.buffer, length,
                             p.category == AmCategory::long_ ? dest_addr : nullptr, args, nargs);
    if (Status s = check_send(p.dest, m, op); s != Status::ok) return s;
    // From here the message is sent: sending may poll, and what runs then
    // sees no prepared message.
    prepared_ = nullptr;
    if (p.reply) {
        Token *token = p.token;
        token->state |= Token::token_replied;
        if (!p.native) return reply_transmit(token, m, conduit::am_flag_reply);
        std::uint8_t flags = conduit::am_flag_reply, byte = 0;
        if (token->credit()) {
            flags |= conduit::am_flag_credit;
            byte = credit_->reply_byte(token->source, token->credit_byte);
        }
        route_[p.dest]->commit_prepared(p.send, to_message(rank_, m, flags, byte));
        return Status::ok;
    }
    sent_mark(p.dest);
    const std::uint8_t flags = p.credited ? conduit::am_flag_credit : 0;
    if (!p.native) return transmit(p.dest, m, flags, p.credit_byte);
    route_[p.dest]->commit_prepared(p.send, to_message(rank_, m, flags, p.credit_byte));
    return Status::ok;
}

Status AmEngine::cancel(const char *op) {
    Prepared *pp = prepared_;
    if (!pp)
        return base::report(Status::state, op, "call sluice_am_prepare_request or _reply first",
                            "nothing is prepared on this thread");
    Prepared &p = *pp;
    prepared_ = nullptr;
    if (p.native) route_[p.dest]->cancel_prepared(p.send);
    if (p.credited) credit_->request_cancel(p.dest, p.credit_byte);
    return Status::ok;
}

} // namespace sluice::am
