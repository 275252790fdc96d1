// src/conduits/template/template.cpp - the template conduit.
//
// Copy this folder to start a conduit.  Every *_impl hook below says what a
// real conduit must do there; the bodies are a working loopback transport
// (one rank talking to itself), so the skeleton compiles, links into
// libsluice and can be driven by a unit test.  The shared policy (retry when
// the wire is full, statistics, stop at exit) is in the non-virtual wrapper in
// src/conduits/transport.hpp: a hook only moves bytes.
//
// Includes allowed here (docs/conduits.md, "What a conduit may include"):
// src/conduits/transport.hpp, src/conduits/common, src/credit,
// spawners/bootstrap.hpp and src/base.  Nothing from src/am, src/rma, src/core.
#include "conduits/template/template.hpp"

#include "base/status.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice::conduit::template_ {
namespace {

// Messages each queue may hold before send_impl answers not_ready.  It
// stands for the bounded space a real wire has (ring slots, preposted
// receive buffers, send descriptors) and keeps the retry path exercised.
constexpr std::size_t queue_depth = 256;

// Largest Medium payload.  A real conduit derives it from its eager buffer
// or MTU size minus its header.
constexpr std::size_t medium_limit = 64 * 1024;

// Messages one poll_impl call delivers at most, so a handler that sends to
// its own rank cannot keep a poll from returning.
constexpr int poll_budget = 64;

constexpr unsigned max_args = 16;

// RDMA operations the "NIC" holds before put_impl/get_impl answer not_ready
// (a real conduit: send-queue depth, completion-queue size).
constexpr std::size_t rdma_depth = 64;

// Largest Long packed into one message; larger Longs go as two-part Longs
// (payload by put_rc_impl, header by AM; src/am).  A real conduit puts its
// eager-buffer size here.
constexpr std::size_t packed_long_limit = 64 * 1024;

// What a conduit declares about itself.  src/am, src/rma and src/core read
// these fields and nothing else to decide how to use the transport:
//   max_medium          largest Medium payload (sluice_am_max_medium is the
//                       minimum over the transports a job uses).
//   max_long            largest Long payload; the reference RMA cuts bigger
//                       transfers into pieces.
//   max_packed_long     largest Long packed into one message with its header;
//                       above it (native_rma only) src/am sends a two-part
//                       Long: payload by put_rc, header by AM, matched by a
//                       Long ID.
//   max_packet_medium   largest Medium (16 arguments) that goes in one packet
//                       (0: no packets); the reference Get's replies are
//                       whole packets (Capabilities::get_piece).
//   remote_completion   put_rc_impl carries a notification with the write
//                       (write with immediate data); else the wrapper writes
//                       and then sends the notification by AM.
//   native_rma          put_impl/get_impl move bytes without AM (RDMA): the
//                       interface's hook for replacing the reference Put/Get
//                       over AM one operation at a time (SLUICE_NATIVE_RMA=0
//                       forces AM).  src/rma prefers the mapped view of
//                       load_store below when both are set.
//   load_store          peers' segments are mapped here: peer_segment_view_impl
//                       returns their addresses and RMA becomes memcpy.
//   needs_registration  local RMA buffers must be registered (firehose cache).
//   remote_offsets      put_impl/get_impl get offsets into the peer's segment
//                       instead of its virtual addresses.
//   provider_keys       the provider picks remote keys; when false,
//                       mem_register_impl is handed a key to use.
//   key_per_endpoint    a peer's key is unpacked per endpoint (per peer).
//   needs_credits       the receiver has fixed buffers: src/am counts a credit
//                       per request, and a request handler that sends no
//                       reply gets a hidden one so the credit comes back.
//   inline_limit        bytes sent without a copy or a DMA (inline sends).
//   native_barrier      barrier_impl synchronizes every peer it reaches.
//   acknowledges        receivers acknowledge and senders retransmit: at
//                       finalize quiesce_impl waits for every ack, and the
//                       rank polls on until every rank is that far.
// A conduit that learns a limit only in init_impl (from the device) sets it
// there through capabilities_mutable().
Capabilities declared_capabilities(bool registration) {
    Capabilities c;
    c.max_medium = medium_limit;
    // Loopback has no wire limit: a Long is one copy into my own segment,
    // bounded only by the segment itself (src/am checks that).
    c.max_long = std::numeric_limits<std::size_t>::max();
    // A conduit that implements only send and poll is complete (src/rma
    // runs Put/Get over AM); the template shows the native RDMA shape too:
    // put_impl/get_impl complete later, from poll_impl, like a NIC's
    // completion queue.  FILL IN HERE: set these only when they are real for
    // every peer.
    c.max_packed_long = packed_long_limit;
    c.native_rma = true;
    c.remote_completion = true;
    c.load_store = false;
    // The template's "NIC" can demand registration, as verbs and libfabric
    // providers with FI_MR_LOCAL do: make_template_transport_registered(),
    // "template_registered", which tests/conduit runs as a conduit of its
    // own.  It then refuses an operation whose local handle does
    // not name a live registration covering the buffer, and reads and
    // writes registered shared memory through its own mapping of the pages
    // (see mem_register_impl), as a NIC reads the pages pinned when they
    // were registered.
    c.needs_registration = registration;
    // Remote addresses arrive as offsets into the peer's segment (as with
    // verbs' zero-based regions or Portals' offsets); keys are the
    // provider's (mem_register_impl makes one up).
    c.remote_offsets = true;
    c.provider_keys = true;
    c.key_per_endpoint = false;
    // The queues below are bounded, but a full queue is reported as
    // not_ready and the sender polls; no per-peer credits are needed.
    c.needs_credits = false;
    c.inline_limit = 0;  // every payload is copied into the queue
    c.native_barrier = false;
    return c;
}

// One message in flight: the header, its arguments and a copy of the
// payload (the sender's buffer is valid only during the send call).
struct QueuedMessage {
    AmHeader header;
    std::array<std::uint32_t, max_args> args{};
    std::vector<std::byte> payload;
};

// The segment: an anonymous private mapping, unmapped on destruction.  A
// conduit whose peers map segments (like smp) uses shared memory instead; a
// conduit with RDMA registers this memory and publishes the remote key.
class AnonymousMapping {
public:
    AnonymousMapping() = default;
    AnonymousMapping(const AnonymousMapping &) = delete;
    AnonymousMapping &operator=(const AnonymousMapping &) = delete;
    ~AnonymousMapping() { reset(); }

    bool map(std::size_t bytes) {
        void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                         0);
        if (p == MAP_FAILED) return false;
        base_ = p;
        size_ = bytes;
        return true;
    }
    void reset() {
        if (base_) ::munmap(base_, size_);
        base_ = nullptr;
        size_ = 0;
    }
    void *base() const { return base_; }
    std::size_t size() const { return size_; }
    bool contains(std::uint64_t address, std::uint64_t length) const {
        auto begin = reinterpret_cast<std::uint64_t>(base_);
        return address >= begin && length <= size_ && address - begin <= size_ - length;
    }

private:
    void *base_ = nullptr;
    std::size_t size_ = 0;
};

class TemplateTransport final : public Transport {
public:
    explicit TemplateTransport(bool registration)
        : Transport(registration ? "template_registered" : "template", declared_capabilities(registration)) {
        regions_.emplace_back();  // handle 0 names no registration
    }
    ~TemplateTransport() override { release(); }

protected:
    // Called once, after core has chosen this transport for setup().peers.
    // A real conduit opens its device or sockets here, allocates receive
    // buffers, and exchanges addresses with setup().bootstrap->allgather()
    // (the bootstrap is for start-up only, never for AM traffic).  Limits
    // learned from the device go into capabilities_mutable().  Errors are
    // reported here, once, with the knob or fix that helps.
    Status init_impl() override {
        for (Rank peer : setup().peers) {
            if (peer != setup().rank)
                return base::report(Status::transport, "template conduit init",
                                    "the template conduit is loopback-only; use smp on one "
                                    "host or a network conduit",
                                    "asked to reach rank %u", peer);
        }
        base::say("template conduit: loopback transport for rank %u", setup().rank);
        return Status::ok;
    }

    // Sends one AM to `peer` or answers not_ready: never blocks, never waits.
    //
    // not_ready means "no room on the wire now" (ring full, no send
    // descriptor, no credit the conduit tracks itself).  The wrapper then
    // polls (replies only, when this is a reply, so reply chains cannot
    // deadlock) and calls send_impl again; it never drops the message.  Any
    // other error is final: report it here, once.
    //
    // m.payload is readable only during this call: copy it, or send it
    // before returning.  For a Long, the bytes must be in the target's
    // segment at m.header.dest_addr before the target's poll hands the header
    // to deliver(): with RDMA, write the payload first and send the header
    // after it (or with it, as immediate data); without RDMA, carry the
    // payload and copy it into the segment at the target before deliver().
    Status send_impl(Rank peer, const AmMessage &m) override {
        if (peer != setup().rank)
            return base::report(Status::rank, "template conduit send",
                                "route other ranks to another conduit",
                                "rank %u is not reachable (loopback only)", peer);
        QueuedMessage q;
        if (Status s = message_copy(m, q); s != Status::ok) return s;
        std::lock_guard<std::mutex> lock(mutex_);
        std::deque<QueuedMessage> &queue = (q.header.flags & am_flag_reply) ? replies_ : requests_;
        if (queue.size() >= queue_depth) return Status::not_ready;
        queue.push_back(std::move(q));
        return Status::ok;
    }

    // Delivers arrived messages through deliver() and returns how many.
    //
    // PollMode::replies_only is used while a reply waits for room: deliver
    // only replies then (reply handlers send nothing, so this always makes
    // progress).  A real conduit keeps requests and replies apart for the
    // same reason (separate rings, receive pools or tags).
    //
    // deliver() runs the handler: call it with no lock held, since a handler
    // may send (and so re-enter send_impl and poll_impl).  Medium payloads
    // need only stay valid during the call.  A Long's bytes must already be
    // at header.dest_addr, and the payload argument is that address.
    // Credits, hidden replies and tokens are src/am's business, not the
    // conduit's: it only reports what arrived.
    int poll_impl(PollMode mode) override {
        int delivered = rdma_progress();
        for (int budget = poll_budget; budget > 0; --budget) {
            QueuedMessage q;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                std::deque<QueuedMessage> *queue = nullptr;
                if (!replies_.empty()) queue = &replies_;
                else if (mode == PollMode::all && !requests_.empty()) queue = &requests_;
                else break;
                q = std::move(queue->front());
                queue->pop_front();
            }
            land_and_deliver(q);
            ++delivered;
        }
        return delivered;
    }

    // Creates this rank's segment of `size` bytes (core has checked the
    // size; 0 is allowed) and fills `key` with whatever peers need to reach
    // it: an shm name, a remote key, a registration handle.  Core allgathers
    // base, size and key, then calls segment_connect_impl.
    Status segment_create_impl(std::size_t size, void **base, std::string &key) override {
        if (segment_.base())
            return base::report(Status::state, "template conduit segment create", nullptr,
                                "the segment exists already");
        const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        const std::size_t rounded = (size + page - 1) / page * page;
        if (rounded && !segment_.map(rounded))
            return base::report(Status::resource, "template conduit segment create",
                                "ask for a smaller segment or raise the memory limit (ulimit -v)",
                                "mmap of %zu bytes failed: %s", rounded, std::strerror(errno));
        *base = segment_.base();
        key.clear();  // nothing to publish: no peer maps or registers it
        return Status::ok;
    }

    // Every rank's segment record, in rank order.  A real conduit maps
    // peers' shared memory here (load_store), or imports their remote keys
    // (native_rma).  Only the peers in setup().peers concern this transport.
    Status segment_connect_impl(const std::vector<SegmentRecord> &all) override {
        if (all.size() <= setup().rank ||
            all[setup().rank].base != reinterpret_cast<std::uint64_t>(segment_.base()))
            return base::report(Status::state, "template conduit segment connect", nullptr,
                                "the segment table does not hold this rank's segment");
        return Status::ok;
    }

    // After a barrier that follows segment_connect_impl: drop what served
    // only the set-up (unlink shm names, free connect files).  Nothing here.
    void setup_done_impl() override {}

    // Where `peer`'s segment is mapped in this process, only for load_store
    // conduits.  The template does not claim load_store (see
    // declared_capabilities), so it answers null for every peer.
    void *peer_segment_view_impl(Rank) const override { return nullptr; }

    // Memory domain.  Register [base, base+size) with the NIC and return
    // its local handle and the packed remote key peers need to reach it
    // (verbs: ibv_reg_mr, lkey and rkey; libfabric: fi_mr_reg, fi_mr_key,
    // and the raw key with FI_MR_RAW).  When capabilities().provider_keys
    // is false, use `requested_key` (unique in this process).  FILL IN HERE:
    // the template's "NIC" is a table of regions; the handle and the key
    // are its index, packed with a check word so a corrupt key is refused
    // on unpack.  With needs_registration it "pins" the pages of shared
    // memory by mapping them a second time (mremap of old size 0 works on
    // shared mappings only; private memory is reached at its address): if
    // the program unmaps the range and maps new memory there, this
    // registration still reaches the old pages, as a NIC's would.
    Status mem_register_impl(void *base, std::size_t size, std::uint64_t, std::uint64_t &handle,
                             std::string &rkey) override {
        char *alias = nullptr;
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        if (capabilities().needs_registration && size && reinterpret_cast<std::uintptr_t>(base) % page == 0) {
            void *p = ::mremap(base, 0, size, MREMAP_MAYMOVE);
            if (p != MAP_FAILED) alias = static_cast<char *>(p);
        }
        std::lock_guard<std::mutex> lock(mutex_);
        regions_.push_back(Region{reinterpret_cast<std::uint64_t>(base), size, true, alias});
        handle = regions_.size() - 1;
        const PackedKey k{handle, key_check ^ handle};
        rkey.assign(reinterpret_cast<const char *>(&k), sizeof k);
        return Status::ok;
    }
    void mem_deregister_impl(std::uint64_t handle) override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (handle >= regions_.size() || !regions_[handle].live) return;
        Region &r = regions_[handle];
        if (r.alias) ::munmap(r.alias, r.size);
        r = Region{};
    }
    // A peer's packed key for its segment at `base`: check it and keep
    // what put/get need (verbs: the rkey; libfabric with FI_MR_ENDPOINT or
    // key_per_endpoint: fi_mr_map_raw per endpoint).  An empty key means the
    // peer registered nothing (an empty segment).
    Status key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) override {
        if (rkey.empty()) return Status::ok;
        PackedKey k;
        if (rkey.size() != sizeof k)
            return base::report(Status::argument, "template conduit key unpack", "this is a Sluice bug",
                                "rank %u's key has %zu bytes, not %zu", peer, rkey.size(), sizeof k);
        std::memcpy(&k, rkey.data(), sizeof k);
        std::lock_guard<std::mutex> lock(mutex_);
        if ((k.index ^ key_check) != k.check || k.index >= regions_.size() || !regions_[k.index].live ||
            regions_[k.index].base != base || regions_[k.index].size < size)
            return base::report(Status::argument, "template conduit key unpack", "this is a Sluice bug",
                                "rank %u's key does not name its registered segment", peer);
        peer_key_ = k.index;
        return Status::ok;
    }

    // Native RDMA (native_rma).  Post the operation and return at once:
    // `later` = true and keep `op` (as the work-request id) when the NIC
    // completes it afterwards; poll_impl then hands it to rma_complete().
    // Status::not_ready when the send queue is full: the wrapper queues the
    // operation and retries from poll, so the caller never waits for room.
    // `remote` is an offset into the peer's segment here (remote_offsets).
    // The remote range is already checked against the segment table by
    // src/rma; a conduit needing local registration (needs_registration)
    // looks `local` up in the firehose cache first.  FILL IN HERE: the
    // template's "NIC" is the rdma_ queue, worked off by poll_impl.
    // With needs_registration, local_handle(op) names the registration of
    // `local` (the segment's, or firehose's for memory outside it).
    Status put_impl(Rank peer, void *remote, const void *local, std::size_t n, RmaOp *op, bool &later) override {
        return rdma_post(peer, Rdma::put, remote, const_cast<void *>(local), n, nullptr, op, later);
    }
    Status get_impl(void *local, Rank peer, const void *remote, std::size_t n, RmaOp *op, bool &later) override {
        return rdma_post(peer, Rdma::get, const_cast<void *>(remote), local, n, nullptr, op, later);
    }
    // Put with remote completion (remote_completion): the write, then
    // `notify` delivered at the target after the bytes, as with an RDMA
    // write with immediate data whose receive completion carries a small
    // tag the target turns back into the message (verbs: the immediate
    // indexes a table both sides agree on).  `notify` is valid during the
    // call only: copy it.
    Status put_rc_impl(Rank peer, void *remote, const void *local, std::size_t n, const AmMessage &notify,
                       RmaOp *op, bool &later) override {
        return rdma_post(peer, Rdma::put, remote, const_cast<void *>(local), n, &notify, op, later);
    }

    // A hardware or conduit-level barrier over every peer this transport
    // reaches, only when native_barrier is set; otherwise core runs its
    // dissemination barrier over AM.  While waiting, call poll_fn(context) so
    // AMs keep moving, and give up with Status::transport when it returns
    // false (the job is exiting).  Loopback: the only participant is me.
    Status barrier_impl(bool (*poll_fn)(void *), void *context) override {
        if (poll_fn && !poll_fn(context)) return Status::transport;
        return Status::ok;
    }

    // The handler running on this thread called exit and will never return.
    // A conduit that delivers in place from its receive buffer (a ring slot,
    // a preposted buffer) releases that slot here, or hands the message back,
    // so the queue it came from keeps moving for the exit protocol.  The
    // template pops each message before delivering it: nothing is held.
    void dispatch_abandon_impl() override {}

    // Releases everything in reverse order of creation: segment
    // registrations, connections, buffers, the device.  Core calls it once,
    // after the last AM; the destructor calls it again, so it is idempotent.
    void fini_impl() override { release(); }

private:
    // Checks a message and copies it (header, arguments, payload) into `q`.
    Status message_copy(const AmMessage &m, QueuedMessage &q) const {
        const AmHeader &h = m.header;
        if (h.nargs > max_args)
            return base::report(Status::argument, "template conduit send", nullptr,
                                "%u arguments, at most %u", h.nargs, max_args);
        const std::size_t length =
            h.category == AmCategory::short_ ? 0 : static_cast<std::size_t>(h.payload_length);
        if (h.category == AmCategory::medium && length > capabilities().max_medium)
            return base::report(Status::too_large, "template conduit send", nullptr,
                                "Medium of %zu bytes, at most %zu", length,
                                capabilities().max_medium);
        if (h.category == AmCategory::long_ && length > capabilities().max_packed_long)
            return base::report(Status::too_large, "template conduit send", nullptr,
                                "packed Long of %zu bytes, at most %zu", length,
                                capabilities().max_packed_long);
        if (h.category == AmCategory::long_ && length > 0 && !segment_.contains(h.dest_addr, length))
            return base::report(Status::segment, "template conduit send", nullptr,
                                "Long of %zu bytes at 0x%llx is outside the segment", length,
                                static_cast<unsigned long long>(h.dest_addr));

        // Copy before taking the lock: the lock only guards the queues.
        q.header = h;
        if (h.nargs) std::memcpy(q.args.data(), m.args, h.nargs * sizeof(std::uint32_t));
        if (length) {
            const auto *bytes = static_cast<const std::byte *>(m.payload);
            q.payload.assign(bytes, bytes + length);
        }
        return Status::ok;
    }

    // One posted RDMA operation of the template's "NIC".
    struct Rdma {
        enum Kind : std::uint8_t { put, get };
        Kind kind = put;
        std::uint64_t offset = 0;  // into the peer's (here: my) segment
        void *local = nullptr;
        std::size_t n = 0;
        RmaOp *op = nullptr;
        bool notify = false;
        QueuedMessage message;     // the notification of a put_rc
    };
    struct Region {
        std::uint64_t base = 0;
        std::size_t size = 0;
        bool live = false;
        char *alias = nullptr;  // the pages registered, mapped again (shared memory)
    };
    struct PackedKey {
        std::uint64_t index = 0;
        std::uint64_t check = 0;
    };
    static constexpr std::uint64_t key_check = 0x5a17ce5a17ce5a17ull;

    Status rdma_post(Rank peer, Rdma::Kind kind, void *remote, void *local, std::size_t n, const AmMessage *notify,
                     RmaOp *op, bool &later) {
        if (peer != setup().rank) return Status::rank;
        const auto offset = reinterpret_cast<std::uint64_t>(remote);
        if (offset > segment_.size() || n > segment_.size() - offset)
            return base::report(Status::segment, "template conduit RDMA", "this is a Sluice bug",
                                "%zu bytes at offset %llu are outside the segment", n,
                                static_cast<unsigned long long>(offset));
        Rdma r;
        r.kind = kind;
        r.offset = offset;
        r.local = local;
        if (capabilities().needs_registration && n) {
            if (Status s = local_check(local, n, local_handle(op), r.local); s != Status::ok) return s;
        }
        r.n = n;
        r.op = op;
        if (notify) {
            if (Status s = message_copy(*notify, r.message); s != Status::ok) return s;
            r.notify = true;
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (peer_key_ >= regions_.size() || !regions_[peer_key_].live)
            return base::report(Status::segment, "template conduit RDMA", "attach the segment first",
                                "rank %u has no registered segment", peer);
        if (rdma_.size() >= rdma_depth) return Status::not_ready;
        rdma_.push_back(std::move(r));
        later = true;
        return Status::ok;
    }

    // A NIC that reaches only registered memory: `handle` must name a live
    // registration covering [local, local+n).  `reach` is where the NIC
    // reads or writes those bytes: through the registration's own mapping
    // of the pages when it has one.
    Status local_check(void *local, std::size_t n, std::uint64_t handle, void *&reach) {
        const auto at = reinterpret_cast<std::uint64_t>(local);
        std::lock_guard<std::mutex> lock(mutex_);
        const Region *r = handle < regions_.size() ? &regions_[handle] : nullptr;
        if (!r || !r->live || at < r->base || n > r->size || at - r->base > r->size - n)
            return base::report(Status::argument, "template conduit RDMA", "register local buffers (firehose)",
                                "%zu bytes at %p are not covered by registration %llu", n, local,
                                static_cast<unsigned long long>(handle));
        reach = r->alias ? r->alias + (at - r->base) : local;
        return Status::ok;
    }

    // The "NIC" at work: performs posted operations and reports them
    // complete, as reaping a completion queue would.  A put_rc's
    // notification joins the AM queue after its bytes are in place.
    int rdma_progress() {
        int done = 0;
        for (int budget = poll_budget; budget > 0; --budget) {
            Rdma r;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (rdma_.empty()) break;
                r = std::move(rdma_.front());
                rdma_.pop_front();
            }
            char *at = static_cast<char *>(segment_.base()) + r.offset;
            if (r.n) {
                if (r.kind == Rdma::put) std::memmove(at, r.local, r.n);
                else std::memmove(r.local, at, r.n);
            }
            if (r.notify) {
                std::lock_guard<std::mutex> lock(mutex_);
                ((r.message.header.flags & am_flag_reply) ? replies_ : requests_).push_back(std::move(r.message));
            }
            rma_complete(r.op);
            ++done;
        }
        return done;
    }

    void land_and_deliver(QueuedMessage &q) {
        const std::uint32_t *args = q.header.nargs ? q.args.data() : nullptr;
        switch (q.header.category) {
        case AmCategory::short_:
            deliver(q.header, args, nullptr);
            break;
        case AmCategory::medium:
            deliver(q.header, args, q.payload.data());
            break;
        case AmCategory::long_: {
            // The payload lands in the segment before the handler runs.
            auto *dest = reinterpret_cast<void *>(static_cast<std::uintptr_t>(q.header.dest_addr));
            if (!q.payload.empty()) std::memcpy(dest, q.payload.data(), q.payload.size());
            deliver(q.header, args, dest);
            break;
        }
        }
    }

    void release() {
        std::size_t dropped = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            dropped = requests_.size() + replies_.size();
            requests_.clear();
            replies_.clear();
        }
        if (dropped) base::say("template conduit: %zu undelivered messages dropped at fini", dropped);
        segment_.reset();
    }

    std::mutex mutex_;
    std::deque<QueuedMessage> requests_;
    std::deque<QueuedMessage> replies_;
    std::deque<Rdma> rdma_;
    std::vector<Region> regions_;
    std::uint64_t peer_key_ = 0;  // the region index my (only) peer published
    AnonymousMapping segment_;
};

} // namespace

std::unique_ptr<Transport> make_template_transport() { return std::make_unique<TemplateTransport>(false); }

std::unique_ptr<Transport> make_template_transport_registered() { return std::make_unique<TemplateTransport>(true); }

} // namespace sluice::conduit::template_
