// src/conduits/transport.hpp - the one interface every conduit implements.
//
// Non-virtual-interface style: the public methods hold the policy every
// conduit shares (argument checks, retry-with-poll when the wire is full,
// statistics); the protected *_impl hooks only move bytes.  A conduit that
// implements send_impl and poll_impl is complete: src/rma supplies Put/Get
// over AM when capabilities().native_rma is false.
#pragma once

#include "base/status.hpp"
#include "spawners/bootstrap.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit {

using Rank = std::uint32_t;
using base::Status;

enum class AmCategory : std::uint8_t { short_ = 0, medium = 1, long_ = 2 };

// Header flags.
inline constexpr std::uint8_t am_flag_reply = 1;   // a reply (else a request)
inline constexpr std::uint8_t am_flag_system = 2;  // runtime-internal handler table
inline constexpr std::uint8_t am_flag_credit = 4;  // carries a credit byte (src/credit)

struct AmHeader {
    std::uint8_t handler = 0;
    AmCategory category = AmCategory::short_;
    std::uint8_t nargs = 0;
    std::uint8_t flags = 0;
    std::uint8_t credit = 0;      // the credit byte (src/credit) when flags has am_flag_credit
    Rank source = 0;
    std::uint64_t payload_length = 0;
    std::uint64_t dest_addr = 0;  // Long: address in the target's segment
};

// An outgoing message.  Medium and Long payloads are read from `payload`
// during the send call only.
struct AmMessage {
    AmHeader header;
    const std::uint32_t *args = nullptr;
    const void *payload = nullptr;
};

// Called by a conduit's poll for every arriving message.  `payload` is the
// Medium payload (valid during the call) or, for Long, the address in this
// rank's segment where the conduit has already placed the bytes.
using DeliverFn = void (*)(void *context, const AmHeader &header, const std::uint32_t *args,
                           void *payload);
// The same for a Short message, the latency path: no header to build.
// `credit` is the credit byte when `flags` has am_flag_credit, else 0.
// Conduits call it through Transport::deliver_short.
using DeliverShortFn = void (*)(void *context, Rank source, std::uint8_t handler, std::uint8_t flags,
                                std::uint8_t credit, const std::uint32_t *args, unsigned nargs);

struct Capabilities {
    std::size_t max_medium = 0;        // largest Medium payload
    std::size_t max_long = 0;          // largest Long payload in one message
    bool native_rma = false;           // put_impl/get_impl move bytes without AM
    bool load_store = false;           // peers' segments are mapped here (PSHM)
    bool needs_registration = false;   // local RMA buffers must be registered
    bool needs_credits = false;        // AM requests need per-peer credits
    std::size_t inline_limit = 0;      // bytes sent without a copy or a DMA
    bool native_barrier = false;       // barrier_impl covers every peer it reaches
    bool acknowledges = false;         // receivers acknowledge, senders retransmit (see quiesce)
};

enum class PollMode { all, replies_only };

// What a conduit is told at start-up.
struct TransportSetup {
    Rank rank = 0;
    Rank size = 0;
    std::vector<std::uint32_t> host_of;   // host index of every rank
    std::vector<Rank> peers;              // the ranks this transport must reach
    spawner::Bootstrap *bootstrap = nullptr;
    DeliverFn deliver = nullptr;
    DeliverShortFn deliver_short = nullptr;  // set by core with `deliver`
    void *deliver_context = nullptr;
    // Polls every transport of the rank (src/am): what a send waiting for
    // room runs, since the peer it waits on may itself wait on us over
    // another transport.  Null: this transport alone.
    int (*progress)(void *context, PollMode mode) = nullptr;
    void *progress_context = nullptr;
    std::string job_id;                   // for names of shared objects
};

// One rank's segment as every rank learns it.
struct SegmentRecord {
    std::uint64_t base = 0;
    std::uint64_t size = 0;
    std::string key;                      // conduit data (shm name, rkey, ...)
};

// Slow-path counters only: a locked increment per message would cost more
// than a same-host AM itself.
struct TransportStats {
    std::atomic<std::uint64_t> send_full{0};  // sends that had to poll and retry
};

class Transport {
public:
    virtual ~Transport() = default;
    Transport(const Transport &) = delete;
    Transport &operator=(const Transport &) = delete;

    const char *name() const { return name_; }
    const Capabilities &capabilities() const { return caps_; }
    TransportStats &stats() { return stats_; }

    Status init(const TransportSetup &setup) {
        setup_ = setup;
        return init_impl();
    }

    // Sends one AM.  While the wire is full, polls (replies only when sending
    // a reply, so reply chains cannot deadlock) and retries: never drops.
    Status send(Rank peer, const AmMessage &m) {
        Status s = send_impl(peer, m);
        if (__builtin_expect(s != Status::not_ready, 1)) return s;
        return send_retry(peer, m);
    }

    // The latency path: a Short message is a handler, flags, its credit
    // byte (when flags has am_flag_credit, else 0) and arguments.  A conduit
    // may encode it without the general message (send_short_impl).
    Status send_short(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                      const std::uint32_t *args, unsigned nargs) {
        Status s = send_short_impl(peer, handler, flags, credit, args, nargs);
        if (__builtin_expect(s != Status::not_ready, 1)) return s;
        return send_retry(peer, short_message(handler, flags, credit, args, nargs));
    }

    // Runs the deliver callback for arrived messages; returns how many.
    // Every conduit delivers the requests of one peer in the order they
    // were sent, each handler returning before the next request of that
    // peer is delivered, and the same for replies: src/am's flush (barrier,
    // finalize) relies on it.
    int poll(PollMode mode = PollMode::all) { return poll_impl(mode); }

    // Segment set-up, driven by core: create mine, then (after core has
    // allgathered every record) connect to every peer's, then, after a
    // barrier, drop names that only served the set-up.
    Status segment_create(std::size_t size, void **base, std::string &key) {
        return segment_create_impl(size, base, key);
    }
    Status segment_connect(const std::vector<SegmentRecord> &all) {
        return segment_connect_impl(all);
    }
    void setup_done() { setup_done_impl(); }

    // Address in this process where `peer`'s segment is mapped, or null.
    void *peer_segment_view(Rank peer) const { return peer_segment_view_impl(peer); }

    // Native RMA (only when capabilities().native_rma).  Remote addresses
    // are in the peer's space and already bounds-checked by src/rma.
    Status put(Rank peer, void *remote, const void *local, std::size_t n) {
        return put_impl(peer, remote, local, n);
    }
    Status get(void *local, Rank peer, const void *remote, std::size_t n) {
        return get_impl(local, peer, remote, n);
    }

    // Native barrier over every peer this transport reaches (plus me), for
    // conduits with capabilities().native_barrier.  `poll_fn` keeps AMs
    // moving while waiting; returns false if it should give up (exit).
    Status barrier(bool (*poll_fn)(void *), void *context) {
        return barrier_impl(poll_fn, context);
    }

    // Exit in progress: a send still waiting for room at `deadline_ns`
    // (base::now_ns() clock) gives up with Status::transport.
    void send_deadline_set(std::uint64_t deadline_ns) { send_deadline_.store(deadline_ns); }

    // The handler running on this thread will never return (it called exit):
    // hand its message back so the queue it came from keeps moving.
    void dispatch_abandon() { dispatch_abandon_impl(); }

    // Finalize, after the last barrier: a conduit that acknowledges what it
    // receives (capabilities().acknowledges) returns once everything it sent
    // is acknowledged, so a peer still waiting for a lost datagram gets its
    // retransmission.  Its own peer timeout bounds the wait: a peer that
    // stops answering ends the job with an error naming it.  The peers keep
    // answering meanwhile: each polls until every rank has returned from
    // here (core::Runtime::finalize).
    void quiesce() { quiesce_impl(); }

    // False while this thread is in the middle of updating the conduit's
    // state, where an exit run from a signal handler could not use it; the
    // conduit then runs base::signal_deferred_run() when it leaves.
    bool signal_exit_safe() const { return signal_exit_safe_impl(); }

    // Releases every resource, in reverse order of creation.
    void fini() { fini_impl(); }

protected:
    Transport(const char *name, Capabilities caps) : name_(name), caps_(caps) {}

    const TransportSetup &setup() const { return setup_; }
    void deliver(const AmHeader &h, const std::uint32_t *args, void *payload) {
        setup_.deliver(setup_.deliver_context, h, args, payload);
    }
    // A Short message: `credit` is its credit byte, 0 without am_flag_credit.
    void deliver_short(Rank source, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                       const std::uint32_t *args, unsigned nargs) {
        setup_.deliver_short(setup_.deliver_context, source, handler, flags, credit, args, nargs);
    }
    Capabilities &capabilities_mutable() { return caps_; }

    virtual Status init_impl() = 0;
    // Status::not_ready when there is no room now; the wrapper polls and retries.
    virtual Status send_impl(Rank peer, const AmMessage &m) = 0;
    virtual Status send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                                   const std::uint32_t *args, unsigned nargs) {
        return send_impl(peer, short_message(handler, flags, credit, args, nargs));
    }
    AmMessage short_message(std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                            const std::uint32_t *args, unsigned nargs) const {
        AmMessage m;
        m.header.handler = handler;
        m.header.nargs = static_cast<std::uint8_t>(nargs);
        m.header.flags = flags;
        m.header.credit = credit;
        m.header.source = setup_.rank;
        m.args = args;
        return m;
    }
    virtual int poll_impl(PollMode mode) = 0;
    virtual Status segment_create_impl(std::size_t size, void **base, std::string &key) = 0;
    virtual Status segment_connect_impl(const std::vector<SegmentRecord> &all) = 0;
    virtual void setup_done_impl() {}
    virtual void *peer_segment_view_impl(Rank) const { return nullptr; }
    virtual Status put_impl(Rank, void *, const void *, std::size_t) { return Status::transport; }
    virtual Status get_impl(void *, Rank, const void *, std::size_t) { return Status::transport; }
    virtual Status barrier_impl(bool (*)(void *), void *) { return Status::transport; }
    virtual void dispatch_abandon_impl() {}
    virtual void quiesce_impl() {}
    virtual bool signal_exit_safe_impl() const { return true; }
    virtual void fini_impl() {}

private:
    // The queue was full: poll every transport (replies only, for a reply)
    // and try again until it fits or the send deadline passes.
    Status send_retry(Rank peer, const AmMessage &m);

    const char *name_;
    Capabilities caps_;
    TransportSetup setup_;
    TransportStats stats_;
    std::atomic<std::uint64_t> send_deadline_{0};
};

} // namespace sluice::conduit
