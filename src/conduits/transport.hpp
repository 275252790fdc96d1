// src/conduits/transport.hpp - the one interface every conduit implements.
//
// Non-virtual-interface style: the public methods hold the policy every
// conduit shares (argument checks, retry-with-poll when the wire is full,
// statistics); the protected *_impl hooks only move bytes.  A conduit that
// implements send_impl and poll_impl is complete: src/rma supplies Put/Get
// over AM when capabilities().native_rma is false.
#pragma once

#include "base/status.hpp"
#include "credit/preferences.hpp"

#include <algorithm>
#include <poll.h>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace sluice::spawner {
class Bootstrap;
}

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
// during the send call only, unless `payload_stable`: the sender promises
// the bytes stay readable (and whatever they hold is what may be sent)
// until the transport has finished with the message, so a conduit that
// keeps messages for retransmission may send and resend them from there
// instead of copying them (udp, for a reference Get's replies, which read
// the segment).  Other conduits ignore it.
struct AmMessage {
    AmHeader header;
    const std::uint32_t *args = nullptr;
    const void *payload = nullptr;
    bool payload_stable = false;
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
    std::size_t max_long = 0;          // largest Long payload (src/am splits nothing)
    // Largest Long packed into one message (header and payload together,
    // GASNet-EX's ibv conduit calls it the packed-Long limit).  A larger Long, up to max_long, is
    // a two-part Long (src/am): the payload by put_rc, the header by AM.
    // Only conduits with native_rma may set it below max_long.
    std::size_t max_packed_long = SIZE_MAX;
    // Largest Medium payload, with 16 arguments, that travels as one packet
    // (0: the conduit has no packets); see get_piece.
    std::size_t max_packet_medium = 0;
    bool native_rma = false;           // put_impl/get_impl move bytes without AM
    // The most bytes one put_impl/get_impl/put_rc_impl call is handed (0: no
    // limit).  The wrapper cuts a larger transfer into pieces, each a call
    // and a completion of its own, and queues what the conduit has no room
    // for; a cut Put with remote completion sends its notification by AM
    // after the last piece.  A registrar's lease (LocalRegistrar,
    // RemoteRegistrar) is taken once for as much as it covers and shared
    // by the pieces cut from that span.  No piece is longer than
    // rma_piece_gap_low and shorter than rma_piece_gap_high (a NIC that
    // mangles such lengths); with such a gap, rma_piece is 0 or at least
    // twice its high end.
    std::size_t rma_piece = 0;
    std::size_t rma_piece_gap_low = 0, rma_piece_gap_high = 0;
    bool remote_completion = false;    // put_rc_impl writes with immediate data (else: write, then AM)
    // With remote_completion: the largest notification put_rc_impl carries
    // is a Short of this many arguments (16: any Short or Medium); the
    // wrapper sends a larger one by AM after the write, as without it.
    unsigned rc_notify_max_args = 16;
    bool load_store = false;           // peers' segments are mapped here (PSHM)
    // Memory domain: what the network demands of memory it reads or writes.
    bool needs_registration = false;   // local RMA buffers must be registered
    // RMA reaches a peer's memory only through a key the peer registered
    // and published (its segment's, or a region's): SLUICE_SEGMENT=large
    // then leaves the segment unregistered and firehose's main pool
    // registers regions of it on demand.
    bool remote_keys = false;
    bool remote_offsets = false;       // remote addresses are offsets into the peer's segment
    bool provider_keys = true;         // the provider picks keys (else mem_register_impl gets one)
    bool key_per_endpoint = false;     // a peer's key is unpacked for each endpoint (peer)
    bool needs_credits = false;        // AM requests need per-peer credits
    // With needs_credits, on a conduit whose receive buffers hold one
    // message each: how many requests its buffers absorb from all peers
    // together, and from one peer (0: no such bound).  src/am caps the
    // credits this rank lends to fit, since a request takes at least one.
    std::size_t request_slots = 0;
    std::size_t request_slots_per_peer = 0;
    // Flow control as the conduit's own knobs ask it (src/credit).
    credit::Preferences credit_prefs;
    std::size_t inline_limit = 0;      // bytes sent without a copy or a DMA
    bool native_barrier = false;       // barrier_impl covers every peer it reaches
    bool acknowledges = false;         // receivers acknowledge, senders retransmit (see quiesce)
    // prepare_impl hands out room in the conduit's own send buffer for a
    // Medium of up to prepare_max_args arguments (negotiated payload, src/am):
    // the caller writes the payload there and no copy is made at the send.
    bool prepare_medium = false;
    unsigned prepare_max_args = 0;

    // The payload of one reply of the reference Get over AM when the job's
    // largest Medium is `job_medium`: with packets, whole ones (one, if
    // job_medium is smaller: fewer requests, nothing to reassemble), so no
    // reply ends in a nearly empty packet; without, job_medium.
    std::size_t get_piece(std::size_t job_medium) const {
        const std::size_t p = std::min(max_packet_medium, max_medium);
        if (!p) return std::max<std::size_t>(1, job_medium);
        return std::max(p, job_medium - job_medium % p);
    }
};

enum class PollMode { all, replies_only };

// Every blocking wait for RDMA completion (Transport::rma_wait, src/rma's
// RmaEngine::wait_counter): `poll()` (returning what it progressed) until
// `counter` is 0, idling after a poll that found nothing.
template <class Poll>
void wait_for_zero(const std::atomic<std::uint64_t> &counter, Poll &&poll) {
    while (counter.load(std::memory_order_acquire) != 0) {
        if (poll() == 0) base::idle();
        else base::idle_reset();
    }
}

// A Medium being written in the conduit's send buffer (Transport::prepare):
// `buffer` holds `size` bytes the caller fills; commit or cancel ends it.
// The conduit keeps what it reserved in `state`.
struct PreparedSend {
    void *buffer = nullptr;
    std::size_t size = 0;
    Rank peer = 0;
    std::uint8_t flags = 0;  // am_flag_reply for a reply
    unsigned nargs = 0;
    std::uint64_t state[6] = {};
};

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
    std::string key;                      // the creating conduit's data (shm name, ...)
    // Packed remote keys of the segment, one per transport that registered
    // it (by transport name): what mem_register_impl returned on that rank.
    std::vector<std::pair<std::string, std::string>> rkeys;
};

// A registered region of local memory (Transport::mem_register).
struct MemRegion {
    void *base = nullptr;
    std::size_t size = 0;
    std::uint64_t handle = 0;             // the conduit's local handle (lkey, descriptor, ...)
    std::string rkey;                     // packed remote key, to publish to peers
    bool registered = false;
};

// A non-blocking RDMA operation the Transport wrapper tracks from start to
// completion (transport.cpp).  Conduits treat it as opaque: one that cannot
// finish an operation during put_impl/get_impl keeps the pointer (as its
// work-request id) and hands it to rma_complete() from poll_impl.
struct RmaOp;
struct RmaSpan;
constexpr std::size_t rma_context_size = 96;  // Transport::rma_context

// How the wrapper reaches local memory outside the segment on a conduit
// that sets needs_registration.  src/conduits/firehose installs one per such
// transport (Transport::local_registrar_set); the conduit sees only the
// result: the local address and registration handle of each operation it
// is handed (Transport::local_handle), so it registers nothing itself.
// Called from any thread that starts or finishes RDMA: thread-safe.
class LocalRegistrar {
public:
    // What one pin covers: the first `n` bytes of the range asked for (at
    // least 1).  The wrapper hands the conduit `local` (the caller's buffer,
    // or a registered bounce buffer the registrar filled for a Put and
    // copies out of for a Get) and `handle`, which covers [local, local+n);
    // it cuts the rest off into another operation, pinned after this one.
    struct Lease {
        std::size_t n = 0;
        void *local = nullptr;
        std::uint64_t handle = 0;
        void *token = nullptr;  // handed back to unpin
    };
    virtual ~LocalRegistrar() = default;
    // `get`: the conduit will write into [local, local+n), else read it.
    // Status::not_ready: nothing free now (every registration and bounce
    // buffer in use); the wrapper retries the operation from poll, after
    // completions.  Another status is final and reported.
    virtual Status pin(void *local, std::size_t n, bool get, Lease &lease) = 0;
    // The operation that held the lease is over: `completed` (a Get's bytes
    // are in place: copy them out of a bounce buffer) or abandoned (fini).
    virtual void unpin(void *token, bool completed) = 0;
    // Transport::fini, before the conduit closes its memory domain: every
    // lease was given back; deregister what is cached.
    virtual void release_all() = 0;
};

// How the wrapper reaches a peer's segment the peer left unregistered
// (SLUICE_SEGMENT=large on a conduit that sets remote_keys):
// src/conduits/firehose's main pool asks the owner, by move request, to
// register a region of it and hands out the region's key.  Consulted only
// for peers that published no key (Transport::peer_unregistered).
// Thread-safe, like LocalRegistrar.
class RemoteRegistrar {
public:
    // What one pin covers: the first `n` bytes (at least 1) of the remote
    // range asked for, reachable with `key` (what the conduit's
    // region_key_unpack_impl made of the owner's packed key) in the region
    // registered from `base` (an address in the peer's space).
    struct Lease {
        std::size_t n = 0;
        std::uint64_t key = 0;
        std::uint64_t base = 0;
        void *token = nullptr;  // handed back to unpin
        // The owner wrote the first `carried` bytes (at most n) of the Put
        // asked for when it registered the region: they travelled in the
        // move request (SLUICE_PUTINMOVE_LIMIT, docs/firehose.md).  The
        // wrapper skips them.
        std::size_t carried = 0;
    };
    virtual ~RemoteRegistrar() = default;
    // Status::not_ready: the region is being registered, or every region
    // this rank may hold at that peer is in use; the wrapper retries from
    // poll.  Another status is final (reported by the registrar).
    // `put`: the n bytes a Put writes at `remote`, which the move request
    // may carry; `carrier`: its operation, which will ask again once the
    // region is ready and then learns what was carried.  Both null for a
    // Get, or an operation that may give up instead of asking again.
    virtual Status pin(Rank peer, std::uint64_t remote, std::size_t n, const void *put, const void *carrier,
                       Lease &lease) = 0;
    // The transfer that held the lease is over (completed or failed).
    virtual void unpin(void *token) = 0;
    // Transport::fini, before the conduit closes its memory domain:
    // deregister every region registered for peers; leases of operations
    // never completed are void.
    virtual void release_all() = 0;
};

// Slow-path counters only: a locked increment per message would cost more
// than a same-host AM itself.
struct TransportStats {
    std::atomic<std::uint64_t> send_full{0};  // sends that had to poll and retry
    std::atomic<std::uint64_t> rma_backlogged{0};  // RDMA operations queued on "retry"
    std::atomic<std::uint64_t> rma_deferred{0};    // RDMA operations completed from poll
    // Puts done by the move request that pinned their region (they carried
    // all they had left: SLUICE_PUTINMOVE_LIMIT), with no RDMA.
    std::atomic<std::uint64_t> rma_put_in_move{0};
};

class Transport {
public:
    virtual ~Transport();
    Transport(const Transport &) = delete;
    Transport &operator=(const Transport &) = delete;

    const char *name() const { return name_; }
    // How many ranks this transport reaches (besides this one).
    std::size_t setup_peers() const { return setup_.peers.size(); }
    const Capabilities &capabilities() const { return caps_; }
    TransportStats &stats() { return stats_; }

    Status init(const TransportSetup &setup) {
        setup_ = setup;
        return init_impl();
    }

    // Sends one AM.  While the wire is full, polls (replies only when sending
    // a reply, so reply chains cannot deadlock) and retries: never drops.
    // Refuses (reported) a bad rank, more than 16 arguments, a Medium above
    // max_medium, a Long above the packed limit or outside the peer's
    // segment; send_short trusts its caller (src/am checked it).
    Status send(Rank peer, const AmMessage &m) {
        if (__builtin_expect(!send_valid(peer, m.header), 0)) return send_refuse(peer, m.header);
        Status s = send_impl(peer, m);
        if (__builtin_expect(s != Status::not_ready, 1)) return s;
        return send_retry(peer, m);
    }

    // SLUICE_FLAG_IMMEDIATE: one try, never a poll; Status::not_ready
    // when the wire has no room now (nothing was sent).
    Status send_immediate(Rank peer, const AmMessage &m) {
        if (__builtin_expect(!send_valid(peer, m.header), 0)) return send_refuse(peer, m.header);
        return send_impl(peer, m);
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

    // Negotiated payload (capabilities().prepare_medium): room for a Medium
    // to `peer` of `nargs` arguments in the conduit's send buffer, at least
    // `least` and at most `most` bytes (most <= max_medium), as much as
    // there is room for now.  While there is not `least`, polls (replies only
    // for a reply) and tries again, unless `immediate` (Status::not_ready).
    // Until commit_prepared or cancel_prepared, the conduit may hold the
    // queue to `peer`: this thread sends nothing else on this transport.
    Status prepare(Rank peer, std::uint8_t flags, unsigned nargs, std::size_t least, std::size_t most,
                   bool immediate, PreparedSend &p);
    // Sends the prepared Medium: `m` as for send() (its payload is already in
    // p.buffer, m.header.payload_length <= p.size, the same nargs); never waits.
    void commit_prepared(PreparedSend &p, const AmMessage &m) { commit_impl(p, m); }
    // Gives the room back: the receiver skips it, nothing is delivered.
    void cancel_prepared(PreparedSend &p) { cancel_impl(p); }

    // The conduit's counters on stderr when its SLUICE_<NAME>_STATS is
    // set, once: at finalize, or when the job exits otherwise (sluice_exit,
    // a signal, a failed peer), showing what the exit found.
    void stats_report() {
        if (!stats_reported_.exchange(true)) stats_report_impl();
    }

    // Bytes this transport set aside to receive into: posted or ring
    // buffers, kernel socket receive buffers as granted (sluice_receive_memory).
    std::size_t receive_buffer_bytes() { return receive_buffer_bytes_impl(); }

    // Runs the deliver callback for arrived messages; returns how many.
    // Every conduit delivers the requests of one peer in the order they
    // were sent, each handler returning before the next request of that
    // peer is delivered, and the same for replies: src/am's flush (barrier,
    // finalize) relies on it.  RDMA work (completions the conduit reaped,
    // operations waiting on the backlog) is finished here too: one relaxed
    // load when there is none.
    int poll(PollMode mode = PollMode::all) {
        int n = poll_impl(mode);
        if (__builtin_expect(rma_work_.load(std::memory_order_relaxed) != 0, 0)) n += rma_progress();
        return n;
    }

    // Segment set-up, driven by core: create mine, register it with every
    // transport (segment_register: the packed remote key core allgathers),
    // then (after core has allgathered every record) connect to every
    // peer's, then, after a barrier, drop names that only served the set-up.
    Status segment_create(std::size_t size, void **base, std::string &key) {
        return segment_create_impl(size, base, key);
    }
    Status segment_register(void *base, std::size_t size, std::string &rkey);
    // Unpacks every peer's key for this transport (key_unpack_impl) and
    // learns their segment bases (for remote_offsets), then connects.
    Status segment_connect(const std::vector<SegmentRecord> &all);
    void setup_done() { setup_done_impl(); }

    // Address in this process where `peer`'s segment is mapped, or null.
    void *peer_segment_view(Rank peer) const { return peer_segment_view_impl(peer); }

    // Memory domain: registers [base, base+size) for RDMA (a no-op region on
    // conduits that need none) and returns its local handle and packed
    // remote key; deregister releases it.  Idempotent on an unregistered one.
    Status mem_register(void *base, std::size_t size, MemRegion &region);
    void mem_deregister(MemRegion &region);

    // Non-blocking RDMA (only when capabilities().native_rma).  Remote
    // addresses are in the peer's space and already bounds-checked by
    // src/rma; the wrapper turns them into offsets for remote_offsets
    // conduits.  `counter` is incremented now and decremented (release)
    // once the operation is complete: at once, from a later poll that reaps
    // the conduit's completion, or after the backlog retried it when the
    // conduit said "retry".  Never waits for room.  Returns Status::ok or a
    // final error (the counter then unchanged).  `immediate`
    // (SLUICE_FLAG_IMMEDIATE): where the operation would wait on the
    // backlog before any of it was issued (queue full, registrations
    // busy, operations already waiting), Status::not_ready instead, with
    // nothing started and the counter unchanged.
    Status put_nb(Rank peer, void *remote, const void *local, std::size_t n,
                  std::atomic<std::uint64_t> &counter, bool immediate = false);
    Status get_nb(void *local, Rank peer, const void *remote, std::size_t n,
                  std::atomic<std::uint64_t> &counter, bool immediate = false);
    // Put with remote completion: `notify` (a Short or a Medium, copied
    // here) is delivered at the target after the bytes are there.  With
    // capabilities().remote_completion the conduit carries it (a write with
    // immediate data); otherwise the wrapper sends it by AM once the write
    // completed.  The counter drops after the notification was sent.
    Status put_rc(Rank peer, void *remote, const void *local, std::size_t n, const AmMessage &notify,
                  std::atomic<std::uint64_t> &counter);
    // Blocking: start, then poll (every transport) until this operation alone
    // is complete.
    Status put(Rank peer, void *remote, const void *local, std::size_t n);
    Status get(void *local, Rank peer, const void *remote, std::size_t n);
    // Polls (every transport, through the runtime's progress) until
    // `counter` is 0.
    void rma_wait(const std::atomic<std::uint64_t> &counter);

    // The registrar consulted, on a conduit with needs_registration, for an
    // operation whose local buffer is not (wholly) in the segment.  Set it
    // before the first RDMA operation and leave it until fini(); it must
    // outlive the transport's fini().  Without one such an operation gets
    // handle 0 and the conduit refuses it.
    void local_registrar_set(LocalRegistrar *r) { registrar_ = r; }
    LocalRegistrar *local_registrar() const { return registrar_; }
    // The registrar consulted for RDMA to a peer whose segment is not
    // registered (peer_unregistered); set it before the first RDMA
    // operation, leave it until fini(), and keep it alive past fini().
    // Without one such an operation is refused.
    void remote_registrar_set(RemoteRegistrar *r) { remote_registrar_ = r; }
    // On a conduit that sets remote_keys: `peer` attached a segment
    // and published no key for it on this transport (SLUICE_SEGMENT=large).
    bool peer_unregistered(Rank peer) const { return peer < peer_unregistered_.size() && peer_unregistered_[peer]; }
    // The conduit's remote key for a region a peer registered and packed
    // (MemRegion::rkey on that peer): what a RemoteRegistrar::Lease carries.
    Status region_key_unpack(Rank peer, const std::string &rkey, std::uint64_t &key) {
        return region_key_unpack_impl(peer, rkey, key);
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

    // False while this thread holds what the exit needs of the conduit (its
    // lock): a termination signal's handler then returns instead of waiting,
    // and the thread parks at its next poll (core/exit.cpp).
    bool signal_exit_safe() const { return signal_exit_safe_impl(); }

    // The process ends now (_exit, after the exit protocol) without
    // fini(): release what the operating system would leave behind, such
    // as a provider's named shared memory.  Any thread, possibly while
    // another is inside the conduit: a conduit that cannot take its lock
    // at once leaves it.
    void exit_release() { exit_release_impl(); }

    // The exit protocol is about to hand the process to the bootstrap
    // (which may finalize MPI on this thread): a conduit whose network is
    // MPI stops every other thread's use of it first, waiting until
    // `deadline_ns` at most.  False: it could not, so the bootstrap must
    // leave MPI alone.  Never returns to service: the process ends.
    bool exit_quiet(std::uint64_t deadline_ns) { return exit_quiet_impl(deadline_ns); }

    // Block mode (SLUICE_WAIT=block, base::idle): a rank about to sleep
    // asks each of its transports in turn.  wake_prepare adds the
    // descriptors whose readiness means work for this transport (poll(2)
    // events) to `w` and lowers `w.sleep_ns` to the longest it may sleep
    // (a timer due, or a transport with nothing to sleep on), arming whatever
    // makes an arrival after this call wake the sleeper (add(fd)); it answers false
    // when work is already there (the rank then polls instead of sleeping).
    // After the sleep, or after a false answer, each transport asked is told
    // wake_finish (in the same order), which disarms.  Any thread; several
    // may sleep at once.
    // A plain array: a rank may wait (and sleep) while the process exits,
    // after its thread's thread_local objects are gone.
    struct WakeSet {
        static constexpr std::size_t most = 16;
        struct ::pollfd fds[most];
        std::size_t count = 0;
        std::uint64_t sleep_ns = 0;
        std::uint64_t nap_ns = 0;  // SLUICE_WAIT_NAP: the sleep of a transport with nothing to sleep on
        void add(int fd) {
            if (count < most) fds[count++] = ::pollfd{fd, POLLIN, 0};
            else sleep_ns = std::min(sleep_ns, nap_ns);  // no room to watch it: nap
        }
    };
    bool wake_prepare(WakeSet &w) { return wake_prepare_impl(w); }
    void wake_finish() { wake_finish_impl(); }

    // Releases every resource, in reverse order of creation: RDMA
    // operations never completed (and their local registrations), the
    // registrar's cache, the segment's registration, then the conduit's.
    void fini();

protected:
    Transport(const char *name, Capabilities caps) : name_(name), caps_(caps) {}

    const TransportSetup &setup() const { return setup_; }
    // Whether [addr, addr + n) lies in the segment of rank `peer`
    // (segment_connect's records; false before them).
    bool in_peer_segment(Rank peer, std::uint64_t addr, std::size_t n) const {
        return peer < peer_size_.size() && addr >= peer_base_[peer] && n <= peer_size_[peer] &&
               addr - peer_base_[peer] <= peer_size_[peer] - n;
    }
    std::uint64_t peer_segment_base(Rank peer) const { return peer_base_[peer]; }
    void deliver(const AmHeader &h, const std::uint32_t *args, void *payload) {
        setup_.deliver(setup_.deliver_context, h, args, payload);
    }
    // A Short message: `credit` is its credit byte, 0 without am_flag_credit.
    void deliver_short(Rank source, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                       const std::uint32_t *args, unsigned nargs) {
        setup_.deliver_short(setup_.deliver_context, source, handler, flags, credit, args, nargs);
    }
    Capabilities &capabilities_mutable() { return caps_; }
    // Polls every transport of the rank (the application's poll), or this
    // one alone without the rank's progress function: what a conduit's
    // own thread (SLUICE_RCV_THREAD) runs.
    int progress_all(PollMode mode) {
        return setup_.progress ? setup_.progress(setup_.progress_context, mode) : poll(mode);
    }
    // An operation put_impl/get_impl/put_rc_impl kept (`later` set) is
    // complete: call from poll_impl (any thread); the wrapper's poll then
    // signals the caller.  For put_rc_impl, "complete" means the target
    // will deliver the notification.
    void rma_complete(RmaOp *op);
    // Room (rma_context_size bytes) in every operation handed to
    // put_impl/get_impl/put_rc_impl for the conduit's record of it while it
    // is posted (a provider's context, a tag, the operation itself), so
    // that posting allocates nothing.  Trivially destructible; valid until
    // rma_complete.
    static void *rma_context(RmaOp *op);
    // The local handle (MemRegion::handle) of a registration covering the
    // local buffer `op` hands put_impl/get_impl/put_rc_impl, or 0 when no
    // registration covers it: for a conduit that sets needs_registration,
    // the buffer is then not registered.  The segment's registration
    // covers buffers in the segment; the registrar's (LocalRegistrar) the
    // rest, where the wrapper may hand the conduit a bounce buffer instead
    // of the caller's, or a piece of the caller's operation.
    static std::uint64_t local_handle(const RmaOp *op);
    // True when the remote range of `op` lies in a region of the peer's
    // segment registered on demand (RemoteRegistrar): `key` is then the
    // region's key, and `remote`, on a remote_offsets conduit, an offset
    // from the region's start.  False: the peer's segment key applies.
    static bool remote_key(const RmaOp *op, std::uint64_t &key);

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
    virtual std::size_t receive_buffer_bytes_impl() { return 0; }
    virtual void stats_report_impl() {}
    virtual void *peer_segment_view_impl(Rank) const { return nullptr; }
    // RDMA hooks (native_rma).  Return Status::ok with `later` false when
    // the operation completed during the call; Status::ok with `later` true
    // when the conduit keeps `op` and reports it to rma_complete() from
    // poll_impl; Status::not_ready when there is no room now (nothing
    // started: the wrapper queues it and retries from poll); else a final
    // error.  `remote` is an offset into the peer's segment when
    // capabilities().remote_offsets.
    virtual Status put_impl(Rank, void *, const void *, std::size_t, RmaOp *, bool &) { return Status::transport; }
    virtual Status get_impl(void *, Rank, const void *, std::size_t, RmaOp *, bool &) { return Status::transport; }
    // Only with capabilities().remote_completion: the write, then `notify`
    // delivered at the target (through its deliver()) after the bytes.
    virtual Status put_rc_impl(Rank, void *, const void *, std::size_t, const AmMessage &, RmaOp *, bool &) {
        return Status::transport;
    }
    // Memory-domain hooks.  The defaults suit conduits that need no
    // registration: an empty key, handle 0.  `requested_key` is a key
    // unique in this process when !capabilities().provider_keys, else 0.
    virtual Status mem_register_impl(void *, std::size_t, std::uint64_t, std::uint64_t &handle, std::string &rkey) {
        handle = 0;
        rkey.clear();
        return Status::ok;
    }
    virtual void mem_deregister_impl(std::uint64_t) {}
    // `rkey` is what `peer`'s mem_register_impl returned for its segment
    // (empty if it registered none), `base`/`size` that segment.  Called for
    // every peer in setup().peers before segment_connect_impl.
    virtual Status key_unpack_impl(Rank, std::uint64_t, std::uint64_t, const std::string &) { return Status::ok; }
    // A region's packed key (Transport::region_key_unpack).  The default
    // suits conduits whose key is one 64-bit word.
    virtual Status region_key_unpack_impl(Rank peer, const std::string &rkey, std::uint64_t &key);
    virtual Status barrier_impl(bool (*)(void *), void *) { return Status::transport; }
    virtual void dispatch_abandon_impl() {}
    virtual void quiesce_impl() {}
    virtual bool signal_exit_safe_impl() const { return true; }
    virtual void exit_release_impl() {}
    virtual bool exit_quiet_impl(std::uint64_t) { return true; }
    virtual void fini_impl() {}
    // No wake-up descriptor: a nap.
    virtual bool wake_prepare_impl(WakeSet &w) {
        w.sleep_ns = std::min(w.sleep_ns, w.nap_ns);
        return true;
    }
    virtual void wake_finish_impl() {}
    // Negotiated payload, for conduits that set prepare_medium: reserve
    // (Status::not_ready while there is no room for `least`), publish with
    // `m`'s header and arguments, or publish something the receiver skips.
    virtual Status prepare_impl(PreparedSend &, std::size_t, std::size_t) { return Status::transport; }
    virtual void commit_impl(PreparedSend &, const AmMessage &) {}
    virtual void cancel_impl(PreparedSend &) {}

private:
    // The queue was full: poll every transport (replies only, for a reply)
    // and try again until it fits or the send deadline passes.
    Status send_retry(Rank peer, const AmMessage &m);
    bool send_valid(Rank peer, const AmHeader &h) const {
        if (peer >= setup_.size || h.nargs > 16) return false;
        if (h.category == AmCategory::short_) return true;
        if (h.category == AmCategory::medium) return h.payload_length <= caps_.max_medium;
        if (h.payload_length > caps_.max_long || h.payload_length > caps_.max_packed_long) return false;
        if (peer >= peer_size_.size()) return true;  // segments not connected yet: the conduit checks
        return in_peer_segment(peer, h.dest_addr, h.payload_length);
    }
    [[gnu::noinline]] Status send_refuse(Rank peer, const AmHeader &h) const;
    bool rc_carried(const RmaOp &op) const;
    Status rma_enqueue(RmaOp *op);
    Status rma_hand_over(RmaOp *op, bool from_backlog);
    // One call of the conduit's hook for `op` (or, when the registrar
    // covers only its start, a piece cut off it); `rest` is set when the
    // remainder of `op` is still to be issued.
    Status rma_hand_over_one(RmaOp *op, bool from_backlog, bool &rest);
    std::size_t rma_cut(std::size_t rest) const;
    void rma_backlog(RmaOp *op, bool from_backlog);
    // "Retry" for `op`: the backlog, or for an immediate one with nothing
    // issued, Status::not_ready and `op` gone.
    Status rma_later(RmaOp *op, bool from_backlog);
    Status rma_fail(RmaOp *op, Status s);
    void rma_finish(RmaOp *op);
    // `carried`: the front of `op` the owner of the peer's region wrote
    // with the move that registered it (nothing pinned then).
    Status rma_pin(RmaOp *op, std::size_t &carried);
    void rma_release(RmaOp *op, bool completed);
    int rma_progress();

    const char *name_;
    Capabilities caps_;
    TransportSetup setup_;
    TransportStats stats_;
    std::atomic<std::uint64_t> send_deadline_{0};
    std::atomic<bool> stats_reported_{false};
    // RDMA state (transport.cpp): operations the conduit said "retry" to,
    // in order, and completions reaped by poll_impl not yet signalled.
    std::mutex rma_lock_;
    std::deque<RmaOp *> backlog_;
    std::vector<RmaOp *> done_;
    std::atomic<std::uint32_t> rma_work_{0};     // backlog_ + done_ sizes
    std::atomic<bool> rma_busy_{false};          // one thread finishes at a time
    std::vector<std::uint64_t> peer_base_;       // segment bases, for remote_offsets
    std::vector<std::uint64_t> peer_size_;       // segment sizes, for the Long check
    MemRegion segment_region_;
    LocalRegistrar *registrar_ = nullptr;
    RemoteRegistrar *remote_registrar_ = nullptr;
    std::vector<bool> peer_unregistered_;        // SLUICE_SEGMENT=large peers
    std::unordered_set<RmaSpan *> pinned_;       // holding a LocalRegistrar lease, under rma_lock_
    std::uint64_t next_key_ = 1;
};

} // namespace sluice::conduit
