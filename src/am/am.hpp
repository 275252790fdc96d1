// src/am/am.hpp - the AM protocol: handler tables, tokens, Request/Reply
// rules, credits with hidden replies, and the segment table the Long and RMA
// bounds checks use.
#pragma once

#include "conduits/transport.hpp"
#include "credit/credit.hpp"

#include <sluice.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

// The object behind sluice_token_t: one per running handler.  Its state is
// one byte of bits so the reply fast path tests every rule with one compare:
// a request (may reply) that holds no credits and has not replied yet.
struct sluice_token {
    sluice::conduit::Rank source;
    std::uint8_t state;        // token_request | token_credit | token_replied
    std::uint8_t credit_byte;  // the request's credit byte, for its reply

    static constexpr std::uint8_t token_request = 1;  // a request, else a reply (may send nothing)
    static constexpr std::uint8_t token_credit = 4;   // holds credits of the sender (src/credit)
    static constexpr std::uint8_t token_replied = 8;
    bool request() const { return state & token_request; }
    bool credit() const { return state & token_credit; }
    bool replied() const { return state & token_replied; }
};

namespace sluice::am {

using base::Status;
using conduit::AmCategory;
using conduit::PollMode;
using conduit::Rank;
using conduit::Transport;
using Token = sluice_token;

// The internal handler table, one list so the layers above never clash.
enum SystemHandler : std::uint8_t {
    sys_noop_reply = 0,   // hidden reply: returns a credit
    sys_barrier,
    sys_exit_arrive,
    sys_exit_done,
    sys_exit_elect,
    sys_exit_elect_reply,
    sys_exit_request,
    sys_exit_ack,
    sys_put,
    sys_put_ack,
    sys_get,
    sys_get_reply,
    sys_credit,           // a credit engine system message (ask, grant, revoke, give)
    sys_flush,            // flush: answered after every earlier request from its sender ran
    sys_flush_reply,
    sys_long_header,      // two-part Long: the header (src/am/long.cpp)
    sys_long_data,        // two-part Long: its payload has landed
    sys_firehose_move,    // main pool: pin a region of my segment, release others (src/conduits/firehose)
    sys_firehose_move_reply,
    sys_atomic,           // atomic domains over AM: the operation at the target (src/atomic)
    sys_atomic_reply,
    sys_coll,             // team collectives: one step's data (src/coll)
    sys_coll_reply,
    sys_coll_fast,        // team collectives: the small reduce-to-all's fast lane (src/coll/fast.cpp)
    sys_vis_put,          // VIS: packed pieces to scatter at the target (src/rma/vis)
    sys_vis_put_ack,
    sys_vis_get,          // VIS: pieces to gather at the target and send back
    sys_vis_get_reply,
    sys_count
};

struct SegmentTable {
    struct Entry {
        std::uint64_t base = 0;
        std::uint64_t size = 0;
        char *view = nullptr;  // where it is mapped here, if it is
    };
    std::vector<Entry> entries;
    bool attached = false;

    bool contains(Rank r, std::uint64_t addr, std::size_t len) const {
        const Entry &e = entries[r];
        return addr >= e.base && len <= e.size && addr - e.base <= e.size - len;
    }
};

// A message to send, as the public calls describe it.
struct Send {
    AmCategory category = AmCategory::short_;
    std::uint8_t handler = 0;
    const std::uint32_t *args = nullptr;
    unsigned nargs = 0;
    const void *payload = nullptr;
    std::size_t length = 0;
    void *dest_addr = nullptr;
    bool payload_stable = false;  // conduit::AmMessage::payload_stable
};

inline Send make_send(AmCategory category, std::uint8_t handler, const void *payload, std::size_t length,
                      void *dest_addr, const std::uint32_t *args, unsigned nargs) {
    Send m;
    m.category = category;
    m.handler = handler;
    m.payload = payload;
    m.length = length;
    m.dest_addr = dest_addr;
    m.args = args;
    m.nargs = nargs;
    return m;
}

// A negotiated-payload message between prepare and commit (prepare.cpp).
struct Prepared;

// The conduit message for `m` from `source`.
conduit::AmMessage to_message(Rank source, const Send &m, std::uint8_t flags, std::uint8_t credit_byte);

class AmEngine {
public:
    // `route[r]` is the transport reaching rank r.  Request credits
    // (src/credit) are on when a transport needs them or SLUICE_CREDIT_FLOW
    // forces them; `notes` gets what the credit knobs adjusted.
    void configure(Rank rank, Rank size, std::vector<Transport *> route,
                   const SegmentTable *segments, std::vector<std::string> &notes);

    Status handler_register(std::uint8_t index, sluice_handler_fn fn, AmCategory category,
                            unsigned nargs);
    void system_register(std::uint8_t index, sluice_handler_fn fn);

    // Public requests and replies: every check of the handler rules, then
    // the wire.  `operation` names the call in error messages.
    Status request(Rank dest, const Send &m, const char *operation);
    // SLUICE_FLAG_IMMEDIATE: the same, but where it would poll (credits,
    // room on the wire) Status::not_ready instead, nothing sent and every
    // credit given back.  A Long above the conduit's packed limit still
    // waits for its payload to leave once it is under way.
    Status request_immediate(Rank dest, const Send &m, const char *operation);
    Status reply(Token *token, const Send &m, const char *operation);
    // The same for Short messages, inline: when every rule holds (the
    // common case) and, with flow control on, the credit is there, straight
    // to the conduit's Short path with the credit byte; else the general
    // calls above, which wait for credits and report what is wrong.
    Status request_short(Rank dest, std::uint8_t handler, const std::uint32_t *args, unsigned nargs,
                         const char *operation) {
        if (__builtin_expect(!current_token && !prepared_ && dest < size_ && short_ok(handler, args, nargs), 1)) {
            sent_mark(dest);
            if (!credit_) return route_[dest]->send_short(dest, handler, 0, 0, args, nargs);
            std::uint8_t byte;
            if (__builtin_expect(credit_take(dest, 1, byte), 1))
                return route_[dest]->send_short(dest, handler, conduit::am_flag_credit, byte, args, nargs);
        }
        return request(dest, short_send(handler, args, nargs), operation);
    }
    Status reply_short(Token *token, std::uint8_t handler, const std::uint32_t *args, unsigned nargs,
                       const char *operation) {
        if (__builtin_expect(token == current_token && token && !prepared_ &&
                                 (token->state & ~Token::token_credit) == Token::token_request &&
                                 short_ok(handler, args, nargs), 1)) {
            token->state |= Token::token_replied;
            if (!token->credit())
                return route_[token->source]->send_short(token->source, handler, conduit::am_flag_reply, 0, args, nargs);
            return route_[token->source]->send_short(token->source, handler, conduit::am_flag_reply | conduit::am_flag_credit,
                                                     credit_->reply_byte(token->source, token->credit_byte), args, nargs);
        }
        return reply(token, short_send(handler, args, nargs), operation);
    }

    // SLUICE_FLAG_NBI: a request as above, except that a two-part Long
    // returns once under way; its payload may be reused when `nbi` (an NBI
    // counter of src/rma) drops back, after the Put completed.
    Status request_nbi(Rank dest, const Send &m, std::atomic<std::uint64_t> *nbi, const char *operation);

    // Negotiated payload (prepare.cpp): a Medium or Long request (or, in a
    // request handler, a reply) whose payload the caller writes into
    // `*buffer` (`*size` bytes, least <= *size <= most): the conduit's send
    // buffer where it hands one out (prepare_medium), else a buffer of this
    // thread's.  Request credits are taken here.  One per thread, until
    // commit or cancel; meanwhile this thread's AM calls, and the poll and
    // barrier of the C API (prepared_refuse), fail with Status::state.
    // `immediate`: Status::not_ready where it would wait for credits or room.
    Status prepare_request(AmCategory category, Rank dest, std::size_t least, std::size_t most, unsigned nargs,
                           bool immediate, void **buffer, std::size_t *size, const char *operation);
    Status prepare_reply(AmCategory category, Token *token, std::size_t least, std::size_t most, unsigned nargs,
                         bool immediate, void **buffer, std::size_t *size, const char *operation);
    // Sends the prepared message (`length` <= the prepared size); on an error
    // nothing is sent and it stays prepared.
    Status commit(std::uint8_t handler, std::size_t length, void *dest_addr, const std::uint32_t *args,
                  unsigned nargs, const char *operation);
    Status cancel(const char *operation);
    // The largest payload a prepare (or a send) to `dest` may ask for.
    std::size_t max_medium_for(Rank dest, unsigned nargs) const;
    std::size_t max_long_for(Rank dest, unsigned nargs) const;
    // This thread holds a prepared message: `operation` is refused
    // (reported, Status::state).
    static bool prepared() { return prepared_ != nullptr; }
    [[gnu::noinline]] static Status prepared_refuse(const char *operation);
    // The prepared message holds the conduit's queue to `dest`.
    static bool prepared_blocks(Rank dest);
    // After a handler: the message prepared on this thread before it ran,
    // `outer`, is this thread's again, and one the handler left prepared is
    // cancelled and reported.
    [[gnu::noinline]] static void prepared_restore(Prepared *outer);
    // The innermost message prepared on this thread (null: none).
    static constinit thread_local Prepared *prepared_;

    // Runtime-internal messages: no user checks, no credits.
    Status system_request(Rank dest, const Send &m, bool immediate = false);
    Status system_reply(Token *token, const Send &m);

    // Flush: sends a flush request to every peer this rank sent a user
    // request to since the last flush, and returns a target for
    // flush_done().  A conduit delivers a peer's requests in order, one
    // handler after the other (transport.hpp), so the answer to a flush
    // means every earlier request from this rank to that peer has run its
    // handler, and the replies they sent, hidden or not, have run here.
    // The caller polls until flush_done(target); barrier and finalize
    // flush first, so no request is still unhandled when they return.
    Status flush_begin(std::uint64_t &target);
    bool flush_done(std::uint64_t target) const {
        return flush_answered_.load(std::memory_order_acquire) >= target;
    }

    // Inline: the empty poll is what a waiting rank spins on.
    int poll(PollMode mode = PollMode::all) {
        int n = 0;
        for (Transport *t : transports_) n += t->poll(mode);
        if (__builtin_expect(credit_ != nullptr, 0) && credit_->sys_pending()) credit_flush();
        if (__builtin_expect(hook_work_.load(std::memory_order_relaxed) != 0, 0) && mode == PollMode::all)
            n += hooks_run();
        if (n == 0) base::idle();
        else base::idle_reset();
        return n;
    }

    // Progress hooks: the layers above (collectives, VIS, atomics) advance
    // their own state machines from poll, outside handlers, where sending
    // may wait for room.  A hook is registered once at init; poll runs the
    // hooks only while some layer has said it has work (hook_work_add(+1)
    // when an operation starts, -1 when it ends): one relaxed load otherwise.
    // A hook returns how much progress it made (0: none).
    using ProgressHook = int (*)(void *context);
    void hook_register(ProgressHook fn, void *context);
    void hook_work_add(int delta) { hook_work_.fetch_add(delta, std::memory_order_relaxed); }

    // The credit engine, null while flow control is off.
    credit::Engine *credits() const { return credit_.get(); }
    // Writes SLUICE_CREDIT_STATS, if set (at finalize).
    void credit_stats_write() const;

    std::size_t max_medium() const { return max_medium_; }
    std::size_t max_long() const { return max_long_; }
    // Parts of two-part Longs waiting for their other part (tests).
    std::size_t lid_cache_size() {
        std::lock_guard<std::mutex> lock(lid_lock_);
        return lid_cache_.size();
    }
    Transport *route(Rank r) const { return route_[r]; }
    const std::vector<Transport *> &transports() const { return transports_; }

    // Exit: user handlers no longer run (their messages are dropped).
    void user_handlers_disable() { user_enabled_.store(false); }

    // True while this thread runs a handler.
    static bool in_handler() { return current_token != nullptr; }
    // The innermost handler running on this thread (handlers nest only when
    // a reply waits for room and polls replies).
    // constinit: no dynamic initialization, so other files read it without
    // a call to a TLS wrapper.
    static constinit thread_local Token *current_token;
    // What every handler has done before a barrier completes happens before
    // the code after it (through the peers; base/tsan.hpp).
    static inline char handlers_done;

    static void deliver(void *context, const conduit::AmHeader &h, const std::uint32_t *args,
                        void *payload);
    // A Short (conduit::DeliverShortFn): a user handler runs with no header
    // built; anything else goes to deliver().
    static void deliver_short(void *context, Rank source, std::uint8_t handler, std::uint8_t flags,
                              std::uint8_t credit, const std::uint32_t *args, unsigned nargs);

private:
    // A handler's category and argument count in one word, so a message is
    // checked against its registration with one compare; `unregistered`
    // matches no message.
    static constexpr std::uint16_t signature(AmCategory c, unsigned nargs) {
        return static_cast<std::uint16_t>(static_cast<unsigned>(c) << 8 | nargs);
    }
    static constexpr std::uint16_t unregistered = 0xffff;
    // A handler may be registered while the progress thread delivers: the
    // signature is stored after the function (release) and read before it
    // (acquire), so a message that matches the signature runs that function.
    // Registering a handler anew while messages for it arrive is the
    // caller's race.
    struct Entry {
        std::atomic<sluice_handler_fn> fn_{nullptr};
        std::atomic<std::uint16_t> signature_{unregistered};
        std::uint16_t signature() const { return signature_.load(std::memory_order_acquire); }
        sluice_handler_fn fn() const { return fn_.load(std::memory_order_relaxed); }
    };

    // A user request to `dest` is on its way: the next flush includes it.
    // A load of a line that stays shared while nothing changes, so the
    // latency path pays no store after the first request.
    void sent_mark(Rank dest) {
        if (__builtin_expect(!sent_to_[dest].load(std::memory_order_relaxed), 0)) {
            sent_to_[dest].store(1, std::memory_order_relaxed);
            sent_any_.store(true, std::memory_order_release);
        }
    }
    bool short_ok(std::uint8_t handler, const std::uint32_t *args, unsigned nargs) const {
        return nargs <= SLUICE_AM_MAX_ARGS && (args || !nargs) &&
               user_[handler].signature() == signature(AmCategory::short_, nargs);
    }
    static Send short_send(std::uint8_t handler, const std::uint32_t *args, unsigned nargs) {
        Send m;
        m.handler = handler;
        m.args = args;
        m.nargs = nargs;
        return m;
    }
    Status check_send(Rank dest, const Send &m, const char *operation) const;
    Status request_check(Rank dest, const Send &m, const char *operation) const;
    Status check_send_slow(Rank dest, const Send &m, const char *operation) const;
    Status reply_transmit(Token *token, const Send &m, std::uint8_t flags);
    Status transmit(Rank dest, const Send &m, std::uint8_t flags, std::uint8_t credit_byte = 0);
    std::uint8_t credit_acquire(Rank dest, const Send &m);
    unsigned credit_count(const Send &m) const;
    // `n` credits for a request to `dest` if they are free now (`byte`: its
    // credit byte); the system messages that queued go out at once.
    bool credit_take(Rank dest, unsigned n, std::uint8_t &byte) {
        if (!credit_->request_begin(dest, n, byte)) return false;
        if (__builtin_expect(credit_->sys_pending(), 0)) credit_flush();
        return true;
    }
    // Around a handler that arrived with credits: their accounting before
    // it runs, and after it the hidden reply of a request that got none
    // (both deliver paths).
    void credit_arrived(const Token &token);
    void credit_settle(Token &token) {
        if (__builtin_expect(token.state == (Token::token_request | Token::token_credit), 0)) credit_hidden_reply(token);
    }
    void credit_hidden_reply(Token &token);
    // Sends the credit engine's system messages; only outside handlers
    // (from poll), so a full wire never nests handlers.
    [[gnu::noinline]] void credit_flush();
    static void credit_system_message(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned);
    static void flush_request(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned);
    static void flush_reply(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned);
    [[noreturn]] void dispatch_refuse(const conduit::AmHeader &h) const;
    // The handler a message runs (null: user handlers are off), or fatal.
    sluice_handler_fn dispatch_resolve(const conduit::AmHeader &h) const;

    // The two-part Long (src/am/long.cpp): a Long above the route's packed
    // limit on an RDMA conduit goes as a Put with remote completion into the
    // target's segment (its notification is sys_long_data) and a header
    // (sys_long_header, carrying the credit and reply flags); whichever
    // arrives second runs the handler, matched by a Long ID in the LID cache.
    bool long_two_part(Rank dest, const Send &m) const {
        if (m.category != AmCategory::long_) return false;
        const conduit::Capabilities &c = route_[dest]->capabilities();
        return m.length > c.max_packed_long && c.native_rma;
    }
    // The header on the wire: fixed fields, then the arguments in use.
    struct LongHeader {
        std::uint64_t dest_addr = 0;
        std::uint64_t length = 0;
        std::uint32_t lid = 0;
        std::uint8_t handler = 0;
        std::uint8_t nargs = 0;
        std::uint8_t flags = 0;  // am_flag_system: the handler is an internal one
        std::uint8_t data = 0;   // in the LID cache: 1 if this entry is the payload's arrival
        std::uint32_t args[SLUICE_AM_MAX_ARGS] = {};

        static constexpr std::size_t fixed = 24;
        std::size_t wire_size() const { return fixed + 4u * nargs; }
    };
    // `nbi`: count the payload's Put there and return without waiting.
    Status long_transmit(Rank dest, const Send &m, std::uint8_t flags, std::uint8_t credit_byte,
                         std::atomic<std::uint64_t> *nbi = nullptr);
    Status prepare_begin(AmCategory category, Rank dest, std::size_t least, std::size_t &most, unsigned nargs,
                         void **buffer, std::size_t *size, const char *op) const;
    Status prepare_finish(Prepared &p, bool immediate, std::size_t least, std::size_t most, void **buffer,
                          std::size_t *size);
    friend struct Prepared;
    static void long_header_arrived(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned);
    static void long_data_arrived(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned);
    // Records one part of Long `lid` from `source`; true when the other part
    // was there already (the entry is gone then, and `header` holds the
    // header when this part is the data).
    bool lid_match(Rank source, std::uint32_t lid, const LongHeader *arrived, LongHeader &header);
    void long_run(Token *token, const LongHeader &h);

    Rank rank_ = 0, size_ = 0;
    std::vector<Transport *> route_;
    std::vector<Transport *> transports_;
    const SegmentTable *segments_ = nullptr;
    std::size_t max_medium_ = 0, max_long_ = 0;
    Entry user_[256];
    sluice_handler_fn system_[sys_count] = {};
    std::atomic<bool> user_enabled_{true};
    std::unique_ptr<credit::Engine> credit_;
    std::size_t largest_request_ = 0;  // receive space of the largest request
    // Flush state: peers sent a user request since the last flush, flush
    // requests sent and answered.
    std::unique_ptr<std::atomic<std::uint8_t>[]> sent_to_;
    std::atomic<bool> sent_any_{false};
    std::atomic<std::uint64_t> flush_sent_{0};
    std::atomic<std::uint64_t> flush_answered_{0};
    // Two-part Longs: the next Long ID, and the LID cache: parts that
    // arrived first, by (source << 32 | lid).
    static AmEngine *long_owner_;  // whose LID cache the handlers use
    std::atomic<std::uint32_t> next_lid_{0};
    std::mutex lid_lock_;
    std::unordered_map<std::uint64_t, std::unique_ptr<LongHeader>> lid_cache_;
    // Progress hooks (hook_register): a handful, fixed at init.
    int hooks_run();
    static constexpr int max_hooks = 8;
    struct Hook {
        ProgressHook fn = nullptr;
        void *context = nullptr;
    };
    Hook hooks_[max_hooks];
    std::atomic<int> hook_count_{0};
    std::atomic<int> hook_work_{0};
};

} // namespace sluice::am
