// src/conduits/gni/gni_transport.hpp - the gni conduit's transport class,
// shared by gni.cpp (messages, RDMA, completions, delivery) and
// gni_setup.cpp (the domain, mailboxes, endpoints, registrations,
// finalize).  README.md has the design.
//
// Locking: the layer's `lock_` (common/rdma_conduit.hpp) covers every uGNI
// call and the conduit's lists: uGNI's calls on one domain are not
// thread-safe.  Handlers run outside it, one thread at a time, each peer's
// messages in its send order (SMSG keeps it).
#pragma once

#include "base/status.hpp"
#include "conduits/common/free_list.hpp"
#include "conduits/common/packed_am.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/common/pin_limit.hpp"
#include "conduits/common/rdma_conduit.hpp"
#include "conduits/gni/gni_api.hpp"
#include "conduits/transport.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit::gni::detail {

// Every message is a packed AM (conduits/common/packed_am.hpp), sent as
// the SMSG header with no separate data.
using WireHead = common::PackedHead;
constexpr std::size_t head_room = common::packed_head_room;

// SMSG sends between two reads of the local CQ, at most: each raises a
// local event, and with the posts and atomics in flight they must not
// overrun it (local CQ: SLUICE_GNI_NUM_PD + atomic slots + this + slack).
constexpr std::size_t reap_every = 1024;
constexpr std::uint32_t rx_cq_least = 4096;  // arrivals' events, at least (SLUICE_GNI_RX_CQ_SIZE=0)
// A post's own registered bytes: a Put's data or a Get's landing up to
// this size need no other buffer (the descriptor's immediate buffer).
constexpr std::size_t immediate_bytes = 128;
constexpr std::size_t max_barrier_rounds = 32;
// Mailboxes are made a chunk at a time: the first of this many, each next
// as many as all before it (so registrations stay few), at most the last.
constexpr std::uint32_t chunk_first = 8, chunk_most = 1024;
// The wildcard datagram's id; a connection request's is the peer's rank.
constexpr std::uint64_t wildcard_id = 0xffff'ffff'0000'0000ull;
// Polls between two probes for datagrams while no request of this rank's
// is in flight (a peer's request waits for the probe).
constexpr std::uint32_t datagram_probe_every = 16;

// What GNI_GetCompleted hands back: the descriptor, first, of an RMA post
// or of an atomic.
struct Posted {
    gni_post_descriptor_t d{};
    bool atomic = false;
};

// Where a post's local bytes are.
enum class Local : std::uint8_t {
    registered,  // in a registration of the core's (the segment) or the scratch region
    immediate,   // copied to or from the post's immediate buffer
    bounce,      // copied to or from a bounce buffer
    transient,   // the caller's buffer, registered for this post alone
};

// One FMA or BTE post in flight: its descriptor, the operation it
// completes, and where its local bytes are.
struct RmaPost : Posted {
    RmaOp *op = nullptr;         // null: the barrier's flag write
    Rank peer = 0;
    bool write = true;
    bool bte = false;
    Local local = Local::registered;
    std::byte *immediate = nullptr;  // this post's immediate buffer (in the scratch region)
    std::byte *staging = nullptr;    // the bounce buffer in use
    void *user = nullptr;            // a staged Get's destination
    RmaPost *next = nullptr;         // free list
};

// A NIC atomic in flight: the layer's slot, its descriptor, and the
// registered word its old value lands in.
struct GniAtomicSlot : common::AtomicSlot, Posted {
    std::uint64_t *landing = nullptr;
    GniAtomicSlot *next = nullptr;  // free list
};

// A message copied out of its mailbox, waiting for delivery.
struct Arrival {
    std::byte *bytes;
    std::size_t length;
};

// What every rank publishes at init (allgather_records): its NIC address
// and what must agree between ranks.  Mailboxes are set up with a peer
// at its first touch (Hello).
struct Record {
    std::uint32_t nic_address;
    std::uint32_t inst_id;
    std::uint32_t mbox_bytes;   // one mailbox (GNI_SmsgBufferSizeNeeded, rounded to 64)
    std::uint32_t credits;      // SLUICE_GNI_MBOX_CREDITS
    std::uint32_t msg_maxsize;  // from SLUICE_GNI_MAX_MEDIUM
    std::uint32_t pad;
};
static_assert(sizeof(Record) == 24);

// One SMSG mailbox of this rank's: `offset` bytes into a chunk of them,
// which is one registration whose SMSG arrivals raise events on the rx CQ.
struct Mailbox {
    std::byte *chunk = nullptr;
    gni_mem_handle_t handle{};
    std::uint32_t offset = 0;
};

// What a rank sends a peer in the datagram that sets up SMSG between them
// (a connection request, or the answer of the wildcard): its mailbox for
// the peer, the channel number the peer's messages must carry as their
// remote event data, and its barrier flags.
struct Hello {
    std::uint64_t mbox_base;
    gni_mem_handle_t mbox_handle;
    std::uint32_t mbox_offset;
    std::uint32_t mbox_bytes;
    std::uint32_t channel;
    std::uint32_t rank;
    std::uint64_t flags_base;     // the barrier's flags, in the scratch registration
    gni_mem_handle_t scratch_handle;
};
static_assert(sizeof(Hello) <= GNI_DATAGRAM_MAXSIZE);

// An endpoint bound to a peer with SMSG between one of this rank's
// mailboxes and one of the peer's (ready once both sides' Hellos are
// known); its index in the channel table is the number the peer's SMSG
// events carry.  Two ranks that ask each other at once may get two; each
// sends on the first it got and receives on both.
struct Channel {
    gni_ep_handle_t ep = nullptr;
    Rank peer = 0;
    Mailbox box;
    bool ready = false;
};

// What a rank holds for a peer it touched (PeerTable: nothing for the
// others): the endpoint it sends on, its connection request while in
// flight, the peer's barrier flags.
struct GniPeer {
    gni_ep_handle_t send = nullptr;  // the first channel's endpoint: every SMSG and post to the peer
    gni_ep_handle_t dial = nullptr;  // bound, its datagram (id = the peer's rank) in flight
    std::uint32_t dial_channel = 0;
    bool mailbox_full = false;       // the last send to it found its mailbox full
    std::uint64_t flags_base = 0;
    gni_mem_handle_t scratch{};
    Hello out{}, in{};               // the request's datagram and the answer's landing
};

// A chunk of mailboxes: the first is in the scratch region, each later one
// is a mapping and a registration of its own.
struct MailboxChunk {
    std::byte *base = nullptr;
    std::size_t bytes = 0;
    std::uint32_t count = 0;
    gni_mem_handle_t handle{};
    bool separate = false;
};

// A registration of this rank's (the segment, or another region the core
// registers), found by the local buffers RDMA reads or writes.
struct Registration {
    std::uint64_t base = 0, size = 0;
    gni_mem_handle_t handle{};
    bool live = false;
};

// Counters beyond the layer's.
struct GniCounters {
    std::uint64_t fma = 0, bte = 0, transient = 0, transient_refused = 0, immediate = 0, bounced = 0, amo = 0,
                  rx_overruns = 0, dials = 0, accepts = 0, connect_waits = 0;
};

class GniTransport final : public common::RdmaConduit<Arrival, GniAtomicSlot> {
public:
    GniTransport();
    ~GniTransport() override;
    std::string nic_atomics_support(sluice_dt_t type, std::uint64_t ops) override;  // atomics.cpp

protected:
    Status init_impl() override;
    // The mailboxes made so far (SMSG), a chunk of them at a time.
    std::size_t receive_buffer_bytes_impl() override { return mailbox_bytes_; }
    Status send_impl(Rank peer, const AmMessage &m) override;
    Status mem_register_impl(void *base, std::size_t size, std::uint64_t requested_key, std::uint64_t &handle,
                             std::string &rkey) override;
    void mem_deregister_impl(std::uint64_t handle) override;
    Status key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) override;
    void fini_impl() override;
    Status barrier_impl(bool (*poll_fn)(void *), void *context) override;  // gni.cpp

    // The layer's hooks (common/rdma_conduit.hpp).
    bool up() const override { return nic_ != nullptr; }
    void reap() override;                                          // under lock_
    void deliver_one(const Arrival &a) override;
    void delivered(const Arrival &a) override;                     // under lock_
    void control_send(Rank peer, std::uint8_t category) override;  // under lock_
    bool idle() override { return rma_outstanding_ == 0; }         // under lock_ (posts and atomics)
    std::string path(Rank peer) const override;
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                bool &later) override;
    // atomics.cpp
    Status atomics_create() override;
    bool atomic_room(Rank) override { return true; }  // the slots bound them; the local CQ has room for all
    Status atomic_post(GniAtomicSlot *s, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type, std::uint64_t op1,
                       std::uint64_t op2) override;

private:
    // gni_setup.cpp
    Status open_domain();
    Status scratch_create();
    Status records_exchange();
    Status mailbox_take(Mailbox &box);
    Status wildcard_post();
    std::uint32_t nic_of(Rank r) const { return nic_of_rank_.empty() ? nic_of_host_[setup().host_of[r]] : nic_of_rank_[r]; }
    Status failed(const char *op, const char *call, gni_return_t rc, const char *fix = nullptr);
    void close_all();
    bool stats_wanted() const override;
    void stats_print() override;

    // gni.cpp
    void reap_local();                                // under lock_
    void reap_arrivals();                             // under lock_
    void drain(std::uint32_t channel, std::size_t most);  // under lock_
    // Connections (gni.cpp): datagrams carry the Hellos.
    Status connect_start(Rank peer);                  // under lock_
    Status bound(Rank peer, gni_ep_handle_t &ep);     // under lock_: an endpoint to post on
    void datagrams(bool now = false);                 // under lock_
    bool accepted();                                  // under lock_: false: not taken
    bool dialed(Rank peer);                           // under lock_: false: not taken
    bool established(Rank peer, gni_ep_handle_t ep, std::uint32_t channel, const Hello &theirs);  // under lock_
    Hello hello(std::uint32_t channel) const;
    void rma_done(RmaPost *p, bool ok);               // under lock_
    void atomic_done(GniAtomicSlot *s, bool ok);      // under lock_ (atomics.cpp)
    const Registration *covering(const void *p, std::size_t n) const;  // under lock_
    bool stage(RmaPost *p, bool write, void *local, std::size_t n);    // under lock_
    Status post(RmaPost *p, Rank peer, const char *what);              // under lock_
    std::byte *buffer_take();                         // under lock_

    // uGNI objects, in order of creation.
    gni_cdm_handle_t cdm_ = nullptr;
    gni_nic_handle_t nic_ = nullptr;
    gni_cq_handle_t cq_ = nullptr;     // local completions: posts, SMSG sends
    gni_cq_handle_t rx_cq_ = nullptr;  // SMSG arrivals in this rank's mailboxes
    // The scratch region, one registration (raising the rx CQ's events
    // for SMSG): the first chunk of mailboxes; the posts' immediate
    // buffers; the atomics' landing words; the bounce buffers; the
    // barrier's flags and its sources.
    std::byte *scratch_ = nullptr;
    std::size_t scratch_total_ = 0;
    gni_mem_handle_t scratch_handle_{};
    bool scratch_registered_ = false;
    std::byte *immediates_ = nullptr;      // immediate_bytes per post
    std::uint64_t *landings_ = nullptr;    // a word per atomic slot
    std::byte *bounce_ = nullptr;          // bounce_count_ buffers of bounce_bytes_
    std::uint64_t *flags_ = nullptr;       // max_barrier_rounds lines of 64 bytes: the byte peers write
    gni_ep_handle_t ep_self_ = nullptr;     // this rank's atomics on its own words (made with the atomics)
    // Peers: nothing for one never touched but its segment's handle and
    // the NIC address of its host.
    common::PeerTable<GniPeer> peers_;
    std::vector<gni_mem_handle_t> peer_segment_;  // by rank
    std::vector<std::uint32_t> nic_of_host_;      // by host index
    std::vector<std::uint32_t> nic_of_rank_;      // by rank, only when a host's ranks differ
    std::vector<Channel> channels_;               // by channel number
    std::vector<MailboxChunk> chunks_;
    std::uint32_t chunk_used_ = 0;                // mailboxes of the last chunk taken
    std::size_t mailbox_bytes_ = 0;               // of every chunk
    gni_ep_handle_t wild_ep_ = nullptr;           // unbound: the wildcard datagram, always posted
    std::uint32_t wild_channel_ = 0;
    Hello wild_out_{}, wild_in_{};
    std::size_t dials_ = 0;                       // connection requests in flight
    std::uint32_t datagram_polls_ = 0;
    bool datagram_stuck_ = false;                 // reported: a completed datagram could not be taken
    std::vector<Registration> regs_;        // handle = index + 1

    std::uint32_t ptag_ = 0, cookie_ = 0, dev_id_ = 0, nic_address_ = 0;
    std::size_t max_medium_ = 0;
    std::size_t msg_max_ = 0;          // SMSG msg_maxsize: a whole Medium with its header
    std::uint32_t mbox_bytes_ = 0;
    std::uint16_t credits_ = 0;
    std::size_t put_cutover_ = 0, get_cutover_ = 0;
    std::size_t put_bounce_ = 0, get_bounce_ = 0;  // *_BOUNCE_REGISTER_CUTOVER
    std::size_t bounce_bytes_ = 0, bounce_count_ = 0;
    std::size_t num_pd_ = 0, memreg_ = 0, transients_ = 0;
    std::uint16_t dlvr_mode_ = GNI_DLVMODE_PERFORMANCE;  // SLUICE_GNI_MEM_CONSISTENCY
    std::uint64_t barrier_epoch_ = 0;
    common::PinLimit pin_;             // registered for RDMA, against SLUICE_PHYSMEM_PINNABLE_RATIO and _MAX

    std::vector<RmaPost> posts_;
    common::FreeList<RmaPost> post_free_;
    std::size_t rma_outstanding_ = 0;
    std::size_t sends_since_reap_ = 0;
    std::unique_ptr<std::uint64_t[]> send_buffer_words_;  // msg_max_ bytes: send_impl encodes there
    std::byte *send_buffer_ptr() const { return reinterpret_cast<std::byte *>(send_buffer_words_.get()); }
    std::vector<std::byte *> bounce_free_;
    std::vector<std::byte *> spare_;                   // message buffers of msg_max_ bytes, free
    std::vector<std::unique_ptr<std::byte[]>> owned_;  // every one made (freed at close)
    bool overrun_reported_ = false;
    GniCounters gni_counters_;
};

} // namespace sluice::conduit::gni::detail
