// src/credit/credit.hpp - the AM flow-control engine: how many requests a rank
// may have in flight to each peer, so that a receiver with fixed request
// buffers is never overrun, while the peers that talk most get the buffers.
//
// Pure bookkeeping: no wire, no I/O, no clock, no conduit.  A conduit (or
// src/am on its behalf) asks request_begin() before every AM request, puts
// the credit byte it gets into the request's header, hands the engine the
// credit byte of every request and reply that arrives, and sends the system
// messages the engine queues (sys_take()).  src/credit/README.md explains the
// scheme with a diagram; the rules are those of GASNet's Portals conduit (credit
// balancing and re-distribution) and its ibv conduit (static credits, slack,
// hidden replies), plus the on-demand policy below.
//
// Four policies:
//   off      no flow control: every request may go (unsafe on fixed buffers;
//            the simulator's "unlimited" baseline).
//   fixed    static credits per peer (GASNet ibv): each peer holds `per_peer`
//            of my buffers; a reply returns a request's credits; a request
//            whose handler does not reply banks them here, up to `slack`,
//            and they ride back on my next request or reply to that peer
//            (a hidden reply carries them when the slack is exceeded).
//   dynamic  GASNet's Portals scheme: every peer starts with `per_peer` (at least
//            `min_credits`), `banked` more are lent to peers that stall,
//            taken back from peers that stopped using them (revoke/return
//            system messages, the scavenge list), with decaying usage
//            statistics per epoch of received requests.  A request whose
//            handler does not reply has its credits held back, up to
//            `return_batch`, while the peer keeps a full-size request beyond
//            them; a reply, hidden or not, a request of mine to that peer
//            or a revoke carries them home, so one-way traffic costs a
//            hidden reply per batch rather than per request, and two-way
//            traffic none.
//   demand   peers start with nothing (credits held back as under dynamic,
//            but not while askers wait).  A peer's first
//            request asks for `min_credits` with an `ask` system message;
//            idle peers lose everything to the bank, and while askers wait
//            the replies to busy peers take their credits back (reclaim).
//            Receive memory follows the number of active peers, not the job
//            size.  A first message is never lost (the request waits for its
//            grant) and never deadlocks (asks are served first come first
//            served from credits that revokes and reclaims bring back).
//
// Thread-safe: every peer's state has its own spinlock, and the bank, the
// scavenge list, the askers' queue and the outbox share one engine lock
// taken only off the common path (stalls, grants, system messages, epochs).
#pragma once

#include "base/flag.hpp"
#include "credit/preferences.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace sluice::credit {

using Peer = std::uint32_t;

const char *policy_name(Policy p);
// "off", "fixed"/"static", "dynamic", "demand"; false if unknown.
bool policy_parse(const std::string &text, Policy &out);

// The most credits one request may take (the 4 bits of the credit byte).
inline constexpr unsigned max_request_credits = 15;

struct Config {
    Policy policy = Policy::dynamic;
    Peer nodes = 1;                  // ranks in the job
    Peer me = 0;
    std::size_t credit_bytes = 256;  // receive space one credit stands for
    unsigned per_peer = 4;           // credits each peer holds from me at start (fixed, dynamic)
    unsigned min_credits = 4;        // a full-size request; a peer holding any holds at least this
    unsigned max_per_peer = 400;     // most credits lent to one peer (< 2^16)
    unsigned banked = 0;             // discretionary credits at start (dynamic, demand)
    unsigned epoch_length = 1024;    // requests received per epoch
    unsigned revoke_limit = 64;      // most credits a borrower gives back per epoch
    unsigned lender_limit = 64;      // most extra credits lent to one peer per epoch
    unsigned scavenge_targets = 4;   // revokes sent per scavenge
    unsigned low_water = 0;          // scavenge below this many banked; 0: banked / 8
    unsigned slack = 1;              // fixed: credits banked before a hidden reply
    unsigned sys_outstanding = 64;   // asks awaiting a grant at once, and revokes awaiting a give
    unsigned ask_extra = 4;          // demand: an ask wants this many beyond its waiting request
    unsigned send_total = 0;         // most credits in use over every lender at once; 0: no bound
    unsigned return_batch = 8;       // dynamic, demand: credits of unanswered requests held back per
                                     // peer before a hidden reply; 0: a hidden reply for each
    unsigned reclaim_after = 32;     // dynamic, demand: requests a peer makes here on its loan before
                                     // replies take the loan back for askers; 0: at once

    // The defaults for a job of `nodes`, interpolated from the table in
    // credit.cpp (chosen with tests/sim/creditsim): dynamic for small jobs,
    // demand for large ones.
    static Config defaults(Peer nodes, Peer me);
    // Clamps every field to what the engine supports and returns what was
    // changed, one line each ("slack lowered to 0 so that ...").
    std::vector<std::string> normalize();
    // Credits this rank owns: what its peers hold at start plus the bank.
    std::uint64_t total_credits() const;
    // Request buffer memory the conduit sets aside for them.
    std::uint64_t receive_bytes() const { return total_credits() * credit_bytes; }
};


// The credit byte of every request and reply: E XXX NNNN.
//   E     the sender ended an epoch since its last message to this peer
//         (the receiver decays its usage statistics for the sender).
//   XXX   on a request: credits of the receiver's requests that the
//         sender had held back, returned (fixed: 0..7; dynamic, demand:
//         0..6, while no asker waits there), or `want` (7; dynamic,
//         demand): the sender stalled and wants extra (see request_begin);
//         on a reply: extra credits granted, 0..6, or `reclaim` (7): the
//         credits of the request go back to the lender's bank, not to the
//         requester.
//   NNNN  on a request: the credits it took; on a reply: the credits given
//         back (the request's own, plus banked ones under fixed).
struct CreditByte {
    bool epoch = false;
    std::uint8_t extra = 0;  // 0..7
    std::uint8_t count = 0;  // 0..15
    static constexpr std::uint8_t reclaim = 7;
    static constexpr std::uint8_t want = 7;
    std::uint8_t encode() const {
        return static_cast<std::uint8_t>((epoch ? 0x80u : 0u) | (extra & 7u) << 4 | (count & 15u));
    }
    static CreditByte decode(std::uint8_t b) {
        return CreditByte{(b & 0x80u) != 0, static_cast<std::uint8_t>(b >> 4 & 7u),
                          static_cast<std::uint8_t>(b & 15u)};
    }
};

// System messages travel out of band (src/am system requests, or a conduit's
// own control channel) and take no credits.  Each side initiates at most one
// per peer at a time, at most `sys_outstanding` asks and as many revokes
// (two budgets: a rank's own waiting asks never hold back the revokes that
// refill its bank for others); answers are sent as soon as they are known.
// They may arrive in any order, also relative to requests and replies.
enum class SysKind : std::uint8_t {
    ask,      // -> lender: lend me `count` (demand: a request is waiting); the
              //    `returned` credits I held but could not use come back with it
    grant,    // -> borrower: here are `count` credits (answers ask)
    revoke,   // -> borrower: give back what you do not use; `urgent`: askers wait;
              //    the `returned` credits of its requests I held back come home with it
    give,     // -> lender: `count` credits back (answers revoke; 0 = none this epoch)
};
const char *sys_kind_name(SysKind k);

struct SysMessage {
    Peer peer = 0;          // destination in sys_take(), source in sys_arrived()
    SysKind kind = SysKind::ask;
    bool epoch = false;     // E bit, as on the credit byte
    bool urgent = false;    // revoke only
    std::uint16_t count = 0;
    std::uint16_t returned = 0;  // ask and revoke
};

// One peer's state as the engine keeps it.  Send*
// counts what I hold from the peer, Loan* what it holds from me.
struct PeerCredits {
    std::uint16_t send_credits = 0;    // lent to me by the peer
    std::uint16_t send_inuse = 0;      // of those, in requests not yet answered
    std::uint16_t send_stalls = 0;     // times I waited for them (decayed)
    std::uint16_t send_max = 0;        // most in use at once (decayed)
    std::uint16_t send_revoked = 0;    // given back this epoch (decayed)
    std::uint16_t send_wanted = 0;     // my next requests that ask for extra (after a stall)
    std::uint16_t loan_credits = 0;    // lent by me to the peer
    std::uint16_t loan_requested = 0;  // extra it asked for (decayed)
    std::uint16_t loan_given = 0;      // extra I gave it (decayed)
    std::uint16_t loan_busy = 0;       // of its loan, in requests here not yet answered
    std::uint16_t owed = 0;            // fixed: credits banked here to return
    std::uint16_t loan_served = 0;     // its requests here since its last grant (reclaim_after)
};

// Engine-wide counters (statistics and the simulator's metrics).
struct Totals {
    std::uint64_t requests_sent = 0;
    std::uint64_t stalls = 0;            // request_begin() answered false
    std::uint64_t total_stalls = 0;      // ... for send_total, the peer's own credits aside
    std::uint64_t granted = 0;           // extra credits lent (reply XXX and grants)
    std::uint64_t revoked = 0;           // credits that came back by give or with an ask
    std::uint64_t reclaimed = 0;         // credits taken back by reclaiming replies
    std::uint64_t hidden_replies = 0;    // reply_needed() answered true without a handler reply
    std::uint64_t held_back = 0;         // ... false: its credits held back for a later reply (return_batch)
    std::uint64_t sys_sent = 0;
    std::uint64_t sys_refused = 0;
    std::uint64_t epochs = 0;
};

class Engine {
public:
    // `config` is normalized (Config::normalize) first.
    explicit Engine(const Config &config);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    const Config &config() const { return config_; }

    // ---- sending a request --------------------------------------------------
    // May a request worth `n` credits (1..15) go to `p` now?  True: the
    // credits are taken and `byte` is the request's credit byte.  False:
    // nothing is taken; poll (replies and system messages bring credits)
    // and ask again.  A false may queue an ask (demand) for sys_take().
    // Requests to myself and under `off` always go.
    bool request_begin(Peer p, unsigned n, std::uint8_t &byte);
    // A request that request_begin let go, with `byte`, was not sent after
    // all (SLUICE_FLAG_IMMEDIATE: the wire had no room): its credits, and
    // what its byte carried (the epoch mark, banked or wanted credits), go
    // back as if it had never begun.
    void request_cancel(Peer p, std::uint8_t byte);

    // ---- receiving a request ------------------------------------------------
    // Before its handler runs: the request's credit byte (epoch bit, the
    // fixed policy's returned credits, the epoch count).
    void request_arrived(Peer p, std::uint8_t byte);
    // The credit byte of the reply to that request, sent by its handler or
    // hidden: returns its credits, may grant extra or reclaim them.
    std::uint8_t reply_byte(Peer p, std::uint8_t request_byte);
    // Its handler sent no reply: true if a hidden reply must go now (then
    // take its byte from reply_byte()); false if the credits were banked
    // here to ride on a later message (fixed, up to the slack).
    bool reply_needed(Peer p, std::uint8_t request_byte);

    // ---- receiving a reply --------------------------------------------------
    void reply_arrived(Peer p, std::uint8_t byte);

    // ---- system messages ----------------------------------------------------
    // Moves up to `max` messages to send into `out`; returns how many.
    std::size_t sys_take(SysMessage *out, std::size_t max);
    bool sys_pending() const { return outbox_size_.load(std::memory_order_acquire) != 0; }
    // A system message from `m.peer` arrived; may queue answers.
    void sys_arrived(const SysMessage &m);
    // A message from sys_take() could not be delivered (the receiver's
    // system queue was full): it is queued again.
    void sys_refused(const SysMessage &m);

    // ---- queries --------------------------------------------------------------
    PeerCredits peer(Peer p) const;      // a consistent copy
    // Credits in use over every lender (bounded by Config::send_total).
    std::uint32_t send_total_inuse() const { return send_total_inuse_.load(std::memory_order_relaxed); }
    std::uint32_t bank() const;
    std::size_t waiting_askers() const;  // demand: asks not yet granted
    std::size_t scavenge_list_size() const;
    // Epochs ended: one per epoch_length requests received.
    std::uint64_t epoch() const { return epoch_.load(std::memory_order_relaxed); }
    Totals totals() const;
    // Bytes of per-peer state and queues this engine holds (not counting
    // the request buffers, which are config().receive_bytes()).
    std::size_t state_bytes() const;
    // Credits this rank owns that are lent, banked or owed, summed: equals
    // config().total_credits() whenever no system message or reply that
    // moves credits is in flight (the simulator checks it across ranks).
    std::uint64_t credits_accounted() const;
    // Per-peer statistics, one line per peer with anything non-zero
    // (SLUICE_CREDIT_STATS).
    void stats_write(std::FILE *out) const;

private:
    struct State;
    struct Page;
    struct Mid;
    struct Asker {
        Peer peer;
        std::uint16_t count;
    };
    struct Counters {
        std::atomic<std::uint64_t> requests_sent{0}, stalls{0}, total_stalls{0}, granted{0}, revoked{0},
            reclaimed{0}, hidden_replies{0}, held_back{0}, sys_sent{0}, sys_refused{0};
    };

    // Per-peer state lives in pages allocated on first touch (two levels:
    // 256 peers per directory slot, 16 per page), so a rank that talks to
    // a few peers of 100,000 holds a few pages, and a peer never touched
    // costs nothing but its share of the directory.
    State &state(Peer p);                    // allocates the page on first touch
    State &state_create(Peer p);             // state's first touch: out of the hot path
    State *state_lookup(Peer p) const;       // null if its page is not there yet
    const State *state_find(Peer p) const;   // state_lookup with a bounds check
    State initial_state() const;
    void lock_engine();
    void unlock_engine();
    void catch_up(State &s);
    bool epoch_flag_take(State &s);
    static void send_decay(State &s);
    void scavenge_list_add(Peer p, State &s);
    void scavenge_list_remove(State &s);
    void loan_return(State &s, unsigned n);
    void scavenge(bool urgent);
    void initiate(const SysMessage &m);
    void answer(const SysMessage &m);
    void sys_answered(SysKind initiated);
    void askers_serve();
    void grant_send(Peer p, State &s, std::uint16_t count);
    unsigned floor_credits() const;
    // Whether replies to the peer of `s` may take its loan back for askers:
    // it made reclaim_after requests here since its last grant.  Taking a
    // loan back at every reply while askers wait would move the credits
    // round every sender at once; a turn of some requests each still
    // serves every asker in time.
    bool reclaimable(const State &s) const;

    Config config_;
    std::vector<std::atomic<Mid *>> directory_;
    std::atomic<std::size_t> pages_{0}, mids_{0};
    std::atomic<Peer> touched_{0};  // peers other than me with state
    std::atomic<std::uint64_t> received_{0};
    // epoch(), kept as requests arrive so that no hot path divides:
    // received_ / epoch_length, and the count at which the next epoch ends.
    std::atomic<std::uint64_t> epoch_{0}, epoch_end_{0};
    std::atomic<State *> last_state_{nullptr};  // state()'s
    [[gnu::noinline]] void epoch_advance();
    // Credits in use over every lender (Config::send_total), and whether the
    // last request it refused has not yet been followed by one that went.
    std::atomic<std::uint32_t> send_total_inuse_{0}, send_total_max_{0};
    std::atomic<bool> total_stalling_{false};
    void send_total_release(unsigned n);
    void inuse_release(State &s, unsigned n);
    // Whether a request's XXX are credits it returns (not a want).
    bool returned(const CreditByte &b) const { return config_.policy == Policy::fixed || b.extra != CreditByte::want; }
    std::atomic<std::size_t> askers_waiting_{0};
    std::atomic<std::size_t> outbox_size_{0};
    Counters counters_;

    // Under the engine lock:
    base::SpinLock lock_;
    std::uint32_t bank_ = 0;
    std::uint32_t low_water_ = 0;
    std::vector<Peer> scavenge_;        // peers lent more than the floor
    std::size_t scavenge_cursor_ = 0;
    std::vector<Asker> askers_;         // demand: asks waiting for credits, FIFO
    std::size_t askers_head_ = 0;
    std::vector<SysMessage> outbox_;
    // [0] asks, [1] revokes: initiations awaiting an answer, and those
    // beyond sys_outstanding waiting their turn.
    std::vector<SysMessage> deferred_[2];
    unsigned initiations_[2] = {0, 0};
};

} // namespace sluice::credit
