// src/conduits/template/template_setup.cpp - the template conduit's
// set-up and teardown: what it declares, init, the segment, the memory
// domain (registration and remote keys) and release.
#include "conduits/template/template_transport.hpp"

#include "base/status.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace sluice::conduit::template_::detail {

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
//   rma_piece           the most bytes one put_impl/get_impl/put_rc_impl call
//                       is handed (0: any): the wrapper cuts larger transfers,
//                       queues what finds no room, and completes the caller
//                       after the last piece.  rma_piece_gap_low/_high: no
//                       piece between them (a NIC that mangles such lengths).
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

// Called once, after core has chosen this transport for setup().peers.
// A real conduit opens its device or sockets here, allocates receive
// buffers, and exchanges addresses with setup().bootstrap->allgather()
// (the bootstrap is for start-up only, never for AM traffic).  Limits
// learned from the device go into capabilities_mutable().  Errors are
// reported here, once, with the knob or fix that helps.
Status TemplateTransport::init_impl() {
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


// Creates this rank's segment of `size` bytes (core has checked the
// size; 0 is allowed) and fills `key` with whatever peers need to reach
// it: an shm name, a remote key, a registration handle.  Core allgathers
// base, size and key, then calls segment_connect_impl.
Status TemplateTransport::segment_create_impl(std::size_t size, void **base, std::string &key) {
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
Status TemplateTransport::segment_connect_impl(const std::vector<SegmentRecord> &all) {
    if (all.size() <= setup().rank ||
        all[setup().rank].base != reinterpret_cast<std::uint64_t>(segment_.base()))
        return base::report(Status::state, "template conduit segment connect", nullptr,
                            "the segment table does not hold this rank's segment");
    return Status::ok;
}


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
Status TemplateTransport::mem_register_impl(void *base, std::size_t size, std::uint64_t, std::uint64_t &handle,
                                            std::string &rkey) {
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

void TemplateTransport::mem_deregister_impl(std::uint64_t handle) {
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
Status TemplateTransport::key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) {
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


void TemplateTransport::release() {
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

} // namespace sluice::conduit::template_::detail
