// src/conduits/portals/portals_transport.hpp - the portals conduit's
// transport class, shared by portals.cpp (messages, RDMA, events,
// delivery), portals_setup.cpp (interface, buffers, registrations,
// finalize) and atomics.cpp (NIC atomics).  README.md has the design.
//
// Locking: the layer's `lock_` (common/rdma_conduit.hpp) covers every call
// into Portals that changes the conduit's state and every buffer list.
// Handlers run outside it, one thread at a time, in each sender's order
// (PeerOrder's sequence numbers per sender and kind, since requests and
// replies arrive on different entries and queues).
#pragma once

#include "base/status.hpp"
#include "conduits/common/atomic_slots.hpp"
#include "conduits/common/free_list.hpp"
#include "conduits/common/peer_order.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/common/pin_limit.hpp"
#include "conduits/common/rdma_conduit.hpp"
#include "conduits/nic_atomics.hpp"
#include "conduits/transport.hpp"

#include "conduits/portals/portals_api.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit::portals::detail {

// A chunk of the send buffers (ReqSB, RplSB): the largest message body.
constexpr std::size_t chunk_bytes = 1024;
// What a message body holds besides a Medium's payload: 16 arguments
// (src/am counts 16 bytes of header too: one credit is a quarter of the
// largest request).
constexpr std::size_t body_room = 16 + 4 * 16;
// Puts and Gets of more than SLUICE_PORTALS_MAX_MESSAGE bytes are cut so
// that no piece is shorter than this (the reference implementation moves
// those between its inline limit and its buffer size wrongly; README).
constexpr std::size_t rma_min_large = 2048;

// Portal table entries, the same on every rank.
constexpr ptl_pt_index_t pt_am = 0;    // ReqRB buffers + catch-basin: requests with credits
constexpr ptl_pt_index_t pt_sys = 1;   // SYS buffers + catch-basin: messages without credits
constexpr ptl_pt_index_t pt_rpl = 2;   // the ReqSB: replies land in their request's chunk
constexpr ptl_pt_index_t pt_rma = 3;   // the segment (RAR): Put and Get
constexpr ptl_pt_index_t pt_long = 4;  // the segment again (RARAM): payloads with a notification

// Match bits of every message (the AM packed into them and the header
// data, as GASNet's Portals conduit does; the arguments and payload go
// into the chunk):
//   0-7 handler, 8-15 credit byte, 16-23 flags, 24-25 category,
//   26-30 argument count, 31 a conduit control message (never delivered),
//   32-55 the ReqSB chunk a reply goes to, plus 1 (0: none),
//   56-63 the control kind.
// On pt_long the bits 32-63 carry the notification's argument instead.
// Header data: 0-31 the source rank, 32-47 the sender's sequence number
// for this destination and kind (request, reply), 48-63 the body's length
// (the Put itself is at least a credit's slot long: see slot_).
struct Bits {
    static constexpr std::uint64_t control = 1ull << 31;
    static std::uint64_t make(std::uint8_t handler, std::uint8_t credit, std::uint8_t flags, AmCategory c,
                              unsigned nargs) {
        return std::uint64_t{handler} | std::uint64_t{credit} << 8 | std::uint64_t{flags} << 16 |
               std::uint64_t(static_cast<unsigned>(c) & 3u) << 24 | std::uint64_t(nargs & 31u) << 26;
    }
    static std::uint8_t handler(std::uint64_t b) { return static_cast<std::uint8_t>(b); }
    static std::uint8_t credit(std::uint64_t b) { return static_cast<std::uint8_t>(b >> 8); }
    static std::uint8_t flags(std::uint64_t b) { return static_cast<std::uint8_t>(b >> 16); }
    static AmCategory category(std::uint64_t b) { return static_cast<AmCategory>(b >> 24 & 3u); }
    static unsigned nargs(std::uint64_t b) { return static_cast<unsigned>(b >> 26 & 31u); }
    static std::uint32_t chunk(std::uint64_t b) { return static_cast<std::uint32_t>(b >> 32 & 0xffffffu); }
    static std::uint8_t kind(std::uint64_t b) { return static_cast<std::uint8_t>(b >> 56); }
};
constexpr std::uint64_t hdr_make(Rank source, std::uint16_t seq, std::size_t length = 0) {
    return std::uint64_t{source} | std::uint64_t{seq} << 32 | std::uint64_t(length & 0xffffu) << 48;
}
constexpr Rank hdr_source(std::uint64_t h) { return static_cast<Rank>(h); }
constexpr std::uint16_t hdr_seq(std::uint64_t h) { return static_cast<std::uint16_t>(h >> 32); }
constexpr std::size_t hdr_length(std::uint64_t h) { return static_cast<std::size_t>(h >> 48); }

// Conduit control messages: zero-byte Puts on pt_sys (GASNet's SYSMD),
// their kind in the match bits (Bits::kind); the layer's ping and pong
// (common::category_ping, category_pong) travel as these.
constexpr std::uint8_t control_ping = 1;
constexpr std::uint8_t control_pong = 2;

// An event's ni_fail_type in words (portals.cpp).
const char *fail_name(int ni_fail_type);

// What an initiator event's user_ptr points to.
enum class Tag : std::uint8_t { req_chunk, rpl_chunk, rma, control, atomic };
struct Context {
    Tag tag;
};

// A chunk of the ReqSB or the RplSB.  A request that holds credits keeps
// its chunk until the reply has landed in it and was delivered (a reply is
// certain: src/am sends a hidden one when the handler does not).
// Its Put is acknowledged: a message the peer's catch-basin took (no
// buffer had room: flow control off) comes back with nothing matched and
// is put again from the chunk (the ack says so).
struct Chunk : Context {
    std::uint32_t index = 0;
    Rank peer = 0;
    bool sending = false;        // the Put is not acknowledged yet
    bool awaiting_reply = false; // a request with credits: until its reply was delivered
    Chunk *next = nullptr;       // free list
    // The Put, kept for a second try.
    ptl_pt_index_t pt = 0;
    std::uint64_t bits = 0, hdr = 0, remote_offset = 0;
    std::size_t length = 0;
};

// A request or SYS receive buffer: a locally managed match entry that
// Portals fills message after message and unlinks once less than a chunk
// is left; appended again, empty, once every message in it was processed.
struct RecvBuffer {
    std::byte *bytes = nullptr;
    std::size_t size = 0;
    ptl_pt_index_t pt = pt_am;
    ptl_handle_me_t me{};
    unsigned pending = 0;   // messages in it not processed yet
    bool linked = false;    // on the portal table's list
};

// One PtlPut or PtlGet in flight, in the operation's own room
// (Transport::rma_context): the wrapper hands over at most rma_chunk_
// bytes at a time.
struct RmaPost : Context {
    RmaOp *op = nullptr;
    Rank peer = 0;
    bool write = true;
};
static_assert(sizeof(RmaPost) <= rma_context_size);

// An arrived message waiting for delivery.  `bytes` lies in a receive
// buffer, in a ReqSB chunk (a reply), or in `heap` (a copy of a message
// that came before its turn).
struct Arrival {
    const std::byte *bytes = nullptr;
    std::size_t length = 0;
    std::uint64_t bits = 0;
    Rank source = 0;
    std::uint16_t seq = 0;
    bool notification = false;   // a pt_long payload: the message is in `bits`
    RecvBuffer *buffer = nullptr;
    Chunk *chunk = nullptr;
    std::byte *heap = nullptr;
};

// Per peer, the order it sent in: one stream per kind (request, reply).
// An arrival held for its turn was copied out of its receive buffer first
// (PortalsTransport::arrived).
constexpr unsigned stream_request = 0, stream_reply = 1;
using PeerOrder = common::PeerOrder<Arrival, 2>;

// One NIC atomic in flight (common/atomic_slots.hpp): `compare` is
// PtlSwap's operand; one descriptor is bound over every slot.
struct AtomicSlot : Context, common::AtomicSlot {
    AtomicSlot *next = nullptr;  // free list
};

// What portals counts besides the layer's common::Counters (where `sent`
// is every AM put from a chunk, `full` a post without a free send ticket,
// `completions` every event taken from the three queues); printed after
// them in SLUICE_PORTALS_STATS's line.
struct PortalsCounters {
    std::uint64_t replies = 0;   // AMs sent into their request's chunk (pt_rpl), of `sent`
    std::uint64_t sys = 0;       // AMs sent to the SYS entry, of `sent`
    std::uint64_t notified = 0;  // notifications of two-part Longs delivered
    std::uint64_t no_chunk = 0;  // sends put off for want of a free chunk
    std::uint64_t relinked = 0;  // receive buffers appended (again)
    std::uint64_t resent = 0;    // AMs a catch-basin took, put again
};

// A registration (mem_register): a memory descriptor over the region.
struct Region {
    ptl_handle_md_t md{};
    std::uint64_t base = 0;
    ptl_iovec_t iov{};  // what the descriptor covers (md_bind)
};

class PortalsTransport final : public common::RdmaConduit<Arrival, AtomicSlot> {
public:
    PortalsTransport();
    ~PortalsTransport() override;
    // NIC atomics (atomics.cpp): PtlAtomic, PtlFetchAtomic and PtlSwap on
    // the segment's entry, where the interface's limits allow them.
    std::string nic_atomics_support(sluice_dt_t type, std::uint64_t ops) override;

protected:
    Status init_impl() override;
    std::size_t receive_buffer_bytes_impl() override { return receive_memory(); }
    std::size_t receive_memory() const;
    Status send_impl(Rank peer, const AmMessage &m) override;
    Status send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                           const std::uint32_t *args, unsigned nargs) override;
    Status segment_connected(const std::vector<SegmentRecord> &all) override;
    Status put_rc_impl(Rank peer, void *remote, const void *local, std::size_t n, const AmMessage &notify, RmaOp *op,
                       bool &later) override;
    Status mem_register_impl(void *base, std::size_t size, std::uint64_t requested_key, std::uint64_t &handle,
                             std::string &rkey) override;
    void mem_deregister_impl(std::uint64_t handle) override;
    void exit_release_impl() override;
    void fini_impl() override;

    // The layer's hooks (common/rdma_conduit.hpp).
    bool up() const override { return ni_open_; }
    void reap() override;                                                           // under lock_
    bool take(const Arrival &a) override;                                           // under lock_
    void deliver_one(const Arrival &a) override;
    void delivered(const Arrival &a) override;                                      // under lock_
    void control_send(Rank peer, std::uint8_t category) override;                   // under lock_
    bool idle() override;                                                           // under lock_
    std::string path(Rank peer) const override;
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                bool &later) override;
    Status atomics_create() override;                                               // at init
    bool atomic_room(Rank) override { return tickets_ != 0; }                       // under lock_
    Status atomic_post(AtomicSlot *slot, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type, std::uint64_t op1,
                       std::uint64_t op2) override;                                 // under lock_

private:
    // portals_setup.cpp
    Status open_interface();
    void udp_buffer_check(const std::vector<int> &sockets) const;
    Status exchange_ids();
    Status buffers_create();
    Status receive_buffers(ptl_pt_index_t pt, std::size_t count, std::vector<std::unique_ptr<RecvBuffer>> &out);
    Status catch_basin(ptl_pt_index_t pt);
    Status segment_entries();
    void credit_preferences();
    std::size_t reqrb_count() const;
    void close_all();
    bool stats_wanted() const override;
    void stats_print() override;

    // portals.cpp
    Status message(Rank peer, std::uint64_t bits, const std::uint32_t *args, unsigned nargs, AmCategory category,
                   std::uint64_t dest_addr, const void *payload, std::size_t length);
    Status post(Chunk *c, bool reply_chunk, Rank peer, ptl_pt_index_t pt, std::uint64_t bits, std::size_t length,
                std::uint64_t remote_offset);                                      // under lock_
    Status rma_post(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                     const AmMessage *notify, bool &later);
    void rma_done(RmaPost *p, const ptl_event_t &e);                                // under lock_
    void event(const ptl_event_t &e);                                               // under lock_
    void arrived(Arrival a);                                                        // under lock_
    void processed(const Arrival &a);                                               // under lock_
    void relink(RecvBuffer *b);                                                     // under lock_
    int md_bind(void *start, std::size_t length, unsigned options, ptl_iovec_t &iov, ptl_handle_md_t &md);
    void chunk_free(Chunk *c);                                                      // under lock_
    int chunk_put(Chunk *c);                                                        // under lock_
    void chunk_acked(Chunk *c, const ptl_event_t &e);                               // under lock_
    Status fatal(const char *op, Rank peer, int rc, const char *what);

    // atomics.cpp
    void atomic_done(AtomicSlot *slot, const ptl_event_t &e);                       // under lock_

    // Portals objects, in order of creation.
    bool initialized_ = false;   // PtlInit
    ptl_handle_ni_t ni_{};
    bool ni_open_ = false;
    ptl_ni_limits_t limits_{};
    ptl_handle_eq_t safe_eq_{}, am_eq_{}, sys_eq_{};
    bool eqs_ = false;
    bool pts_[5] = {};
    std::vector<ptl_process_t> id_;       // by rank: the logical id
    std::vector<ptl_process_t> physical_; // by rank: nid and pid
    common::PeerTable<PeerOrder> order_;  // by rank, made at its first message either way

    // Send side: the ReqSB (also a match entry on pt_rpl, where replies
    // land), the RplSB, an empty descriptor for control messages.
    std::unique_ptr<std::byte[]> reqsb_bytes_, rplsb_bytes_;
    std::vector<Chunk> reqsb_, rplsb_;
    common::FreeList<Chunk> req_free_, rpl_free_;
    ptl_handle_md_t reqsb_md_{}, rplsb_md_{}, control_md_{};
    ptl_iovec_t reqsb_iov_{}, rplsb_iov_{}, control_iov_{};
    ptl_handle_me_t reqsb_me_{};
    bool mds_ = false;
    Context control_ctx_{Tag::control};
    std::byte control_bytes_[64] = {};
    unsigned tickets_ = 0;                 // send tickets free
    std::deque<Chunk *> resend_;           // messages a catch-basin took, to put again
    bool overflow_said_ = false;
    unsigned msg_limit_ = 0;

    // Receive side.
    std::vector<std::unique_ptr<RecvBuffer>> reqrb_, sysrb_;
    ptl_handle_me_t am_cb_{}, sys_cb_{};
    std::size_t reqrb_size_ = 0;
    unsigned safe_limit_ = 0, am_limit_ = 0, sys_limit_ = 0;
    std::size_t am_eq_size_ = 0, safe_eq_size_ = 0, sys_eq_size_ = 0;

    // The reply resources the delivering thread holds for the request it
    // delivers (take(); as in GASNet: tickets and a reply chunk before an AM
    // event), given back by delivered() when the handler did not reply.
    Chunk *reserved_chunk_ = nullptr;
    bool reserved_ticket_ = false;

    // The segment: created here when no same-host conduit owns it.
    ptl_handle_md_t segment_md_{};
    ptl_handle_me_t rma_me_{}, long_me_{};
    bool segment_md_bound_ = false, segment_mes_ = false;
    bool packed_long_ = true;

    // NIC atomics: off (and why) by SLUICE_PORTALS_ATOMICS; else the slots
    // and their descriptor, made at init.
    std::string atomics_off_;
    ptl_handle_md_t atomic_md_{};
    ptl_iovec_t atomic_iov_{};
    bool atomic_md_bound_ = false;

    std::size_t max_message_ = 0;  // SLUICE_PORTALS_MAX_MESSAGE
    std::size_t max_medium_ = 0;
    // What a credit stands for, and the least a message takes of a receive
    // buffer (as in GASNet: 256 bytes and one event): every AM Put is at least
    // this long, so the buffers fill before their event queue can.
    std::size_t slot_ = 0;
    std::size_t rma_chunk_ = 0;
    std::size_t rma_outstanding_ = 0;
    PortalsCounters own_counters_;    // beside the layer's counters_
    common::PinLimit pin_;            // memory descriptors, against SLUICE_PHYSMEM_PINNABLE_RATIO
};

} // namespace sluice::conduit::portals::detail
