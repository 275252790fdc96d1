// src/conduits/ibv/ibv_transport.hpp - the ibv conduit's transport class,
// shared by ibv.cpp (messages, RDMA, completions, delivery) and
// ibv_setup.cpp (ports, queue pairs, buffers, registrations, finalize).
// README.md has the design; its sections are named after GASNet-EX's ibv.
//
// Rails (GASNet-EX's multi-rail): the ports the conduit uses, on one or two
// HCAs; each peer has one RC queue pair per rail.  A peer's AMs, control
// messages and Puts with remote completion use one rail, its AM rail
// (am_rail: the same one in both directions), so they stay in order; large
// RDMA is striped over every rail.
//
// Locking: the layer's `lock_` (common/rdma_conduit.hpp) covers the queue
// pairs, the completion queues and every buffer list.  Handlers run
// outside it, one thread at a time, in completion order: an RC queue pair
// delivers in order, and its receives complete in order, so each peer's
// messages arrive in the order it sent them.
#pragma once

#include "base/status.hpp"
#include "conduits/common/atomic_slots.hpp"
#include "conduits/common/free_list.hpp"
#include "conduits/common/packed_am.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/common/pin_limit.hpp"
#include "conduits/common/rdma_conduit.hpp"
#include "conduits/common/receive_thread.hpp"
#include "conduits/nic_atomics.hpp"
#include "conduits/transport.hpp"

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::conduit::ibv::detail {

constexpr int cq_batch = 16;          // completions one ibv_poll_cq takes
constexpr std::size_t head_room = common::packed_head_room;
constexpr unsigned max_rails = 8;  // SLUICE_NUM_QPS at most
constexpr unsigned max_hcas = 2;   // a remote key is one 32-bit key per HCA in 64 bits

// A port that SLUICE_IBV_PORTS selects (ibv_setup.cpp: port_list).
struct PortInfo {
    std::string device;
    std::uint8_t port = 0;
    bool active = false;
    bool selected = false;
    bool named = false;      // SLUICE_IBV_PORTS names this port, not just its HCA
    ibv_port_attr attr{};
};

// An HCA the rails use: what its rails share.
struct Hca {
    std::string name;
    ibv_context *ctx = nullptr;
    ibv_pd *pd = nullptr;
    ibv_comp_channel *channel = nullptr;  // SLUICE_RCV_THREAD: its receive CQ's events
    // Completions of sends (AMs, RDMA, atomics: SLUICE_NETWORKDEPTH_TOTAL
    // sizes it) and of receives, apart, as in GASNet-EX's ibv conduit, so
    // that the receive thread can sleep on and poll arrivals alone
    // (SLUICE_RCV_THREAD_POLL_MODE).
    ibv_cq *send_cq = nullptr;
    ibv_cq *recv_cq = nullptr;
    ibv_srq *srq = nullptr;
    ibv_mr *pool_mr = nullptr;            // the AM buffers, registered with its PD
    ibv_mr *bounce_mr = nullptr;          // the bounce buffers (SLUICE_NONBULKPUT_BOUNCE_LIMIT)
    ibv_device_attr attr{};
    std::uint8_t rd_atom = 16;            // RDMA reads and atomics outstanding per queue pair (SLUICE_QP_RD_ATOM)
};

struct Rail {
    unsigned hca = 0;   // index in IbvTransport::hcas_
    PortInfo port;
    ibv_gid gid{};
    ibv_mtu mtu = IBV_MTU_4096;     // its port's active MTU, at most SLUICE_MAX_MTU
    std::uint16_t pkey_index = 0;   // of SLUICE_IBV_PKEY in its port's table
};

// A rail's address as every rank publishes it.
struct RailAddress {
    char device[32];
    std::uint16_t lid;
    std::uint8_t port;
    std::uint8_t global;      // Ethernet (RoCE): paths by GID
    std::uint8_t gid[16];
    std::uint32_t mtu;        // ibv_mtu
};

// What every rank publishes at init: its rails' addresses, then the
// numbers of the queue pairs it made for each rank of the job, rail by
// rail (0: none).
struct ConnectHead {
    std::uint32_t ranks;
    std::uint32_t ud_qpn;     // its queue pair for dynamic connections, 0: takes none
    std::uint32_t rails;
    std::uint32_t pad;
    RailAddress rail[max_rails];
};

// What this rank keeps of a peer's ConnectHead, 8 bytes for every rank:
// its queue pair for dynamic connections, and which of the job's distinct
// sets of rail addresses is its (ranks of a host share one; index + 1 into
// IbvTransport::rail_sets_, 0: not a peer over ibv).
struct PeerHead {
    std::uint32_t ud_qpn = 0;
    std::uint32_t rails = 0;
};

// Messages and RDMA of a rank to itself never reach the HCA: the layer
// copies them in memory (RdmaConduit::self_send, self_rma).

// Control messages beyond the layer's ping and pong (common::category_ping,
// category_pong), in PackedHead::category: handled by the conduit in its
// poll, never delivered, uncredited.
constexpr std::uint8_t category_rtu = 5;   // a dynamic connection's first message (connect.cpp)

// Work-request ids: the low 3 bits say what completes.
enum class Wr : std::uint64_t { recv = 0, send = 1, rma = 2, inline_send = 3, long_data = 4, atomic = 5 };
constexpr std::uint64_t tag_mask = 7;
inline std::uint64_t wr_id(const void *p, Wr tag) {
    return reinterpret_cast<std::uint64_t>(p) | static_cast<std::uint64_t>(tag);
}
template <class T> T *wr_pointer(std::uint64_t id) { return reinterpret_cast<T *>(id & ~tag_mask); }
// A signaled work request of one scatter-gather entry.
inline ibv_send_wr signaled_wr(std::uint64_t id, ibv_sge *sge, ibv_wr_opcode opcode) {
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = IBV_SEND_SIGNALED;
    return wr;
}

// An AM buffer of buffer_size_ + head_room bytes in the registered pool.
struct Buffer {
    std::byte *bytes = nullptr;
    Buffer *next = nullptr;   // free list
    Rank peer = 0;            // the queue pair it was posted to (per-peer receives) or sent on
    unsigned hca = 0;         // a receive buffer: the HCA whose SRQ it is posted to
    bool *gathered = nullptr; // a send gathering its payload in place: set once it completed
};

// The work requests of one RDMA transfer (at most rma_chunk_ bytes: the
// wrapper cuts larger ones), posted together: its pieces round the rails
// when striped, the fenced reads behind them, a Put's notification.
struct RmaPost {
    RmaOp *op = nullptr;
    bool write = true;
    Rank peer = 0;
    std::size_t n = 0;
    unsigned outstanding = 0;    // work requests posted, not completed
    Buffer *notify = nullptr;    // put_rc: the header sent after the write
    Buffer *bounce = nullptr;    // put_rc: the payload's copy the write is from (op completed already)
};

// A connection's state (connect.cpp).  A rank that asks for one is
// `requesting` until the answer comes, then `ready`; the one asked is
// `accepted` until the first message over the new queue pair arrives (so
// it never sends before the asker's queue pair can receive), then `ready`.
enum class Conn : std::uint8_t { none, requesting, accepted, ready, failed };

// A registration for RDMA: one memory region per HCA (the handle
// mem_register_impl returns).
struct MrSet {
    ibv_mr *mr[max_hcas]{};
    std::size_t length = 0;
    void *base = nullptr;
};

// One NIC atomic in flight (NicAtomics, atomics.cpp): the fetched word
// lives here, in memory registered once, so the caller's result may be
// anywhere.  An operation the verbs lack is a compare-and-swap loop driven
// from the completions: `expected` is the word's last value seen.
struct AtomicSlot : common::AtomicSlot {
    std::uint64_t expected = 0;  // `operand` is a loop's
    std::uint64_t remote = 0;
    AtomicSlot *next = nullptr;  // free list
    std::uint32_t rkey = 0;
    sluice_aop_t op = SLUICE_OP_GET;
    sluice_dt_t type = SLUICE_DT_U64;
    bool loop = false;     // a compare-and-swap loop
    bool swapping = false;  // its compare-and-swap is the one in flight
};

struct Peer {
    ibv_qp *qp[max_rails]{};
    unsigned send_posted[max_rails]{};  // work requests in each queue pair's send queue
    Conn conn = Conn::none;
    bool used = false;           // traffic went either way (SLUICE_CONNECTFILE_OUT)
    std::uint32_t remote_qpn = 0;  // its queue pair of rail 0
    std::uint64_t retry_at = 0;  // ns: a request's next retransmission
    std::uint64_t interval = 0;  // ns: the wait before it
    unsigned tries = 0;
    bool rtu_owed = false;       // its RTU found no room: sent again from connect_serve
    ibv_ah *ah = nullptr;        // to the peer's UD queue pair
};

// An arrived message waiting for delivery: in its receive buffer, a spare
// posted in its place (SLUICE_RBUF_SPARES), or, with no spare free, in
// `copy`, its buffer posted again at once (receive.cpp).
struct Arrival {
    Buffer *buffer = nullptr;
    std::size_t length = 0;
    std::byte *copy = nullptr;
};

// ibv's counters beyond the layer's (common::Counters), printed after them
// in the SLUICE_IBV_STATS line (IbvTransport::stats_print).
struct IbvCounters {
    std::uint64_t long_two_part = 0, long_bounced = 0, connect_static = 0, connect_asked = 0, connect_accepted = 0,
                  connect_retransmits = 0, rtu_resent = 0, fences = 0, atomic_retries = 0;
    std::uint64_t hca_full = 0;  // posts the HCA refused with ENOMEM (its send queue full), made again later
    std::uint64_t rail_bytes[max_rails]{};  // RDMA bytes posted on each rail
    std::uint64_t gathered = 0;            // AMs whose payload the HCA read in place (SLUICE_AM_GATHER_MIN)
    std::uint64_t in_place = 0, copied = 0;  // arrivals held in their buffer, copied out (SLUICE_RBUF_SPARES)
    std::uint64_t spares_peak = 0;         // most spares in use at once
    std::uint64_t depth_full = 0;          // times an operation found SLUICE_NETWORKDEPTH_TOTAL reached
    std::uint64_t depth_peak = 0;          // most work requests in flight at once
    std::uint64_t reaped_thread = 0, reaped_other = 0;  // arrivals taken while it ran: by the receive thread, by others
};

// Sleeps until one of `channels` has a completion event (at most 100 ms)
// and takes what they have; the caller arms their completion queues again
// (ibv.cpp).
void channel_wait(ibv_comp_channel *const *channels, std::size_t n);

class IbvTransport final : public common::RdmaConduit<Arrival, AtomicSlot> {
public:
    IbvTransport();
    ~IbvTransport() override;
    // NIC atomics (atomics.cpp): 64-bit fetch-and-add and compare-and-swap
    // on rail 0, the rest as compare-and-swap loops.
    std::string nic_atomics_support(sluice_dt_t type, std::uint64_t ops) override;

protected:
    Status init_impl() override;
    std::size_t receive_buffer_bytes_impl() override;
    Status send_impl(Rank peer, const AmMessage &m) override;
    Status segment_connected(const std::vector<SegmentRecord> &all) override;
    Status put_rc_impl(Rank peer, void *remote, const void *local, std::size_t n, const AmMessage &notify, RmaOp *op,
                       bool &later) override;
    Status mem_register_impl(void *base, std::size_t size, std::uint64_t requested_key, std::uint64_t &handle,
                             std::string &rkey) override;
    void mem_deregister_impl(std::uint64_t handle) override;
    Status key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) override;
    Status region_key_unpack_impl(Rank peer, const std::string &rkey, std::uint64_t &key) override;
    void fini_impl() override;

    // The layer's hooks (common/rdma_conduit.hpp).
    bool up() const override { return up_; }
    void reap() override;                                          // under lock_
    void poll_more() override {                                    // under lock_
        if (__builtin_expect(dynamic_, 0)) connect_serve();
        if (__builtin_expect((++polls_ & async_every) == 0, 0)) async_events();
    }
    void deliver_one(const Arrival &a) override;
    void delivered(const Arrival &a) override;                     // under lock_
    void control_send(Rank peer, std::uint8_t category) override;  // under lock_
    bool idle() override;                                          // under lock_
    std::string path(Rank peer) const override;
    void receive_wait() override;
    bool wake_arm(WakeSet &w) override;
    void wake_finish_impl() override;
    std::string receive_sleeps_on() const override { return "the completion channel"; }
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                bool &later) override;
    Status atomic_prepare(Rank peer) override { return peer == setup().rank ? Status::ok : connection(peer); }
    Status atomics_create() override;                                           // under lock_
    bool atomic_room(Rank peer) override {                                      // under lock_
        ibv_counters_.depth_full += !depth_room(1);
        return atomic_posted(peer) < send_depth_ && depth_room(1);
    }
    Status atomic_post(AtomicSlot *s, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type, std::uint64_t op1,
                       std::uint64_t op2) override;                             // under lock_

private:
    // ibv_setup.cpp
    Status open_port();
    Status rails_path();
    Status hca_open(Hca &h);
    Status inline_probe();
    Status cqs_create(std::size_t peers);
    Status qp_create(Rank peer);
    Status qp_new(Rank peer, unsigned rail, unsigned receives, ibv_qp *&qp);
    Status qp_connect(Rank peer, unsigned rail, const RailAddress &theirs, std::uint32_t qpn);
    Status qp_ready(ibv_qp *qp, Rank peer, unsigned rail, const RailAddress &theirs, std::uint32_t qpn);
    RailAddress rail_address(unsigned rail) const;
    int remote_access(unsigned hca) const;  // what a segment and a queue pair allow peers
    unsigned am_rail(Rank peer) const { return (setup().rank + peer) % static_cast<unsigned>(rails_.size()); }
    const Hca &hca_of(unsigned rail) const { return hcas_[rails_[rail].hca]; }
    std::string rail_name(unsigned rail) const;
    void close_all();
    bool stats_wanted() const override;
    void stats_print() override;

    // atomics.cpp
    Status atomics_setup();                                  // at init: SLUICE_IBV_ATOMICS, atomic_cap
    // Under lock_: one verbs atomic of the slot `s` (a loop's step too).
    Status atomic_verb(AtomicSlot *s, ibv_wr_opcode opcode, std::uint64_t compare_add, std::uint64_t swap);
    void atomic_completion(const ibv_wc &c);                 // under lock_
    unsigned &atomic_posted(Rank peer) { return peer == setup().rank ? loop_posted_ : this->peer(peer).send_posted[0]; }

    // memory.cpp: the buffers, and registrations, counted against
    // SLUICE_PINNED_REGIONS_MAX (every one includes rail 0's HCA, hcas_[0],
    // whose regions are counted).
    Status buffers_create();
    // One AM buffer of the pool: a Medium and its header, 64-byte aligned.
    std::size_t am_slot() const { return (buffer_size_ + head_room + 63) & ~std::size_t{63}; }
    Status bounces_create();
    Status pool_map(std::size_t count, std::size_t slot, const char *what, const char *fix, std::byte *&out,
                    std::size_t &bytes, ibv_mr *Hca::*mr, std::vector<Buffer> &buffers);
    Status register_raw(ibv_pd *pd, void *base, std::size_t size, int access, ibv_mr *&mr, const char *what);
    void mr_release(ibv_mr *&mr);                         // deregisters, uncounts
    Status regions_check(std::size_t local_ranks);        // end of init: the share, firehose's pools in it

    // receive.cpp: arrivals (SLUICE_RBUF_SPARES, SLUICE_RCV_THREAD_POLL_MODE)
    void reap_cq(ibv_cq *cq);                             // under lock_
    void arrived(Buffer *b, std::size_t length);          // under lock_
    void repost(Buffer *b);                               // under lock_
    void copies_free();

    // connect.cpp
    Status connect_all();
    Status connect_wanted(std::vector<bool> &wanted);
    Status connect_setup();
    Status connect_need(Rank peer);                      // under lock_
    Status qp_connect_rails(Rank peer, const std::uint32_t *qpn);
    void connect_serve();                                 // under lock_
    void connect_answer(const void *message);             // under lock_
    void connect_send(Rank peer, std::uint32_t kind);     // under lock_
    void connect_ready(Rank peer);                        // under lock_
    void connect_recv_post(unsigned slot);                // under lock_
    void connect_thread_wait();
    void connect_file_write();
    void connect_close();
    // Status::ok when `peer` is connected, else connect_need's answer.
    Status connection(Rank peer) {
        if (__builtin_expect(connected_[peer].load(std::memory_order_acquire), 1)) return Status::ok;
        Guard g(*this);
        if (!up_) return Status::transport;
        return connect_need(peer);
    }

    // ibv.cpp
    // Under lock_: one send of `length` bytes from `bytes` (`b` null:
    // inline), followed by `gather` when there is one (its payload in place).
    Status post_send(Rank peer, const void *bytes, std::size_t length, Buffer *b, const ibv_sge *gather = nullptr);
    Status send_gathered(Rank peer, const AmMessage &m, const ibv_mr *const *mr);
    void send_done(Buffer *b);                              // under lock_: a send buffer's send completed
    // SLUICE_NETWORKDEPTH_TOTAL, under lock_: room for `need` more work
    // requests (any, when none is in flight: an operation larger than the
    // cap still goes, alone); one posted on, or completed from, the queue
    // pair counted by `slot`.
    bool depth_room(unsigned need) const { return total_posted_ + need <= total_depth_ || total_posted_ == 0; }
    void depth_posted(unsigned &slot) {
        ++slot;
        if (++total_posted_ > ibv_counters_.depth_peak) ibv_counters_.depth_peak = total_posted_;
    }
    void depth_completed(unsigned &slot) {
        --slot;
        --total_posted_;
    }
    Status rma_post(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                    Buffer *notify, std::size_t notify_length, bool &later, Buffer *bounce = nullptr);
    bool control(Buffer *b, std::size_t length);          // under lock_
    void rma_done(RmaPost *g);                              // under lock_
    void completion(const ibv_wc &c);                       // under lock_
    unsigned rail_of(const ibv_wc &c) const { return rails_.size() == 1 ? 0 : qp_rail_.at(c.qp_num).second; }
    void completion_error(const ibv_wc &wc);                // under lock_
    void async_events();                                    // under lock_
    Status send_queue_full(unsigned posted);                // under lock_
    Buffer *send_buffer_take();                             // under lock_
    Status fatal(const char *op, Rank peer, const char *what, int error);

    // Verbs objects.
    std::vector<Hca> hcas_;
    std::vector<Rail> rails_;
    bool up_ = false;                  // the verbs objects exist (under lock_)
    bool fenced_puts_ = false;         // SLUICE_USE_FENCED_PUTS over rails of several HCAs
    std::size_t stripe_min_ = 0;       // RDMA this large or larger is striped
    common::PeerTable<Peer> peers_;    // by rank, made at first touch (peer)
    // Peer r's state, made at its first touch (a queue pair, a connection,
    // a message), under the lock; a receive thread only finds peers whose
    // queue pairs brought it their messages.
    Peer &peer(Rank r) {
        if (Peer *p = peers_.find(r)) [[likely]]
            return *p;
        return peers_.insert(r, std::make_unique<Peer>());
    }
    std::unique_ptr<std::atomic<bool>[]> connected_;  // by rank: Conn::ready, read without lock_
    std::vector<PeerHead> heads_;      // by rank, from the start-up exchange
    std::vector<std::array<RailAddress, max_rails>> rail_sets_;  // the job's distinct ones
    const RailAddress &peer_rail(Rank r, unsigned rail) const { return rail_sets_[heads_[r].rails - 1][rail]; }
    std::unordered_map<std::uint32_t, std::pair<Rank, unsigned>> qp_rail_;  // RC queue pair number: peer, rail
    std::vector<std::size_t> recv_first_;  // per-peer receives: the peer's first buffer
    std::vector<std::uint64_t> peer_rkey_;  // by rank: its segment's keys, one per HCA (32 bits each)
    common::PinLimit pin_;             // registered for RDMA, against SLUICE_PHYSMEM_MAX

    // Limits.
    std::size_t buffer_size_ = 0;      // Medium payload
    std::size_t inline_limit_ = 0;     // whole message
    std::size_t rma_chunk_ = 0;
    unsigned send_depth_ = 0;          // per queue pair
    unsigned total_depth_ = 0;         // over every queue pair (SLUICE_NETWORKDEPTH_TOTAL)
    unsigned total_posted_ = 0;        // work requests in flight over every queue pair
    // SLUICE_AM_GATHER_MIN (-1: never), and the segment's registration the
    // payloads are gathered from (null: not registered by this conduit).
    long long gather_min_ = -1;
    std::atomic<MrSet *> segment_mr_{nullptr};
    MrSet *last_registered_ = nullptr;  // under lock_: the segment's, until segment_connected
    // SLUICE_RCV_THREAD_POLL_MODE=exclusive: while the receive thread runs
    // (rcv_polling_), only it polls the receive CQs.
    bool exclusive_ = false;
    // Block mode: each HCA's channel (both CQs, non-blocking) is what a
    // sleeping rank waits on; false with the receive thread, which owns the
    // channels (a sleeping rank naps then).
    bool wake_channels_ = false;
    std::atomic<bool> rcv_polling_{false};
    // SLUICE_PINNED_REGIONS_MAX: regions registered now (counted on
    // hcas_[0]), this rank's share, and how it was reached, for messages.
    std::atomic<std::size_t> regions_{0}, regions_peak_{0};
    std::size_t region_share_ = SIZE_MAX;
    std::string region_how_;
    std::uint8_t qp_timeout_ = 14, qp_retries_ = 7;  // SLUICE_QP_TIMEOUT, SLUICE_QP_RETRY_COUNT
    // The HCAs' asynchronous events are read every (async_every + 1)th
    // poll (ibv.cpp, async_events).
    static constexpr std::uint32_t async_every = 255;
    std::uint32_t polls_ = 0;
    unsigned recv_per_peer_ = 0;       // without SRQ
    bool use_srq_ = true;

    // Buffers: one registered pool, receives first, then sends.
    std::byte *pool_ = nullptr;
    std::size_t pool_bytes_ = 0;
    std::vector<Buffer> buffers_;
    std::size_t recv_count_ = 0;       // per HCA with SRQs; in all without
    common::FreeList<Buffer> send_free_;
    // Spare receive buffers, posted in place of arrivals that wait for
    // their handler (SLUICE_RBUF_SPARES); heap copies of arrivals when none
    // is free, reused.
    std::size_t spare_count_ = 0;
    common::FreeList<Buffer> spare_free_;
    std::vector<std::unique_ptr<std::byte[]>> copies_;
    std::vector<std::byte *> copy_free_;
    // Bounce buffers of bounce_limit_ bytes for two-part Longs (GASNet-EX's
    // non-bulk bounce limit), registered with every HCA.
    std::size_t bounce_limit_ = 0;
    std::byte *bounce_pool_ = nullptr;
    std::size_t bounce_pool_bytes_ = 0;
    std::vector<Buffer> bounces_;
    common::FreeList<Buffer> bounce_free_;
    std::size_t send_count_ = 0;
    std::size_t rma_outstanding_ = 0;

    // Dynamic connections (connect.cpp): a UD queue pair with its own
    // completion queue and channel, small registered buffers (receives,
    // then sends), the requests waiting for an answer, and a thread that
    // answers requests while the application does not poll.
    bool dynamic_ = false;
    ibv_comp_channel *conn_channel_ = nullptr;
    ibv_cq *conn_cq_ = nullptr;
    ibv_qp *conn_qp_ = nullptr;
    std::byte *conn_pool_ = nullptr;
    std::size_t conn_pool_bytes_ = 0;
    ibv_mr *conn_mr_ = nullptr;
    unsigned conn_rcvs_ = 0;
    std::vector<unsigned> conn_send_free_;
    std::vector<Rank> conn_pending_;
    std::vector<Rank> conn_rtu_owed_;  // accepted peers whose RTU is not sent yet (Peer::rtu_owed)
    std::uint64_t retrans_min_ns_ = 0, retrans_max_ns_ = 0;
    common::ReceiveThread conn_thread_;

    // NIC atomics: off (and why) by SLUICE_IBV_ATOMICS or an HCA without
    // them; slots registered on first use; a queue pair connected to
    // another of this rank (rail 0's HCA), for its own words.
    std::string atomics_off_;
    ibv_mr *atomic_mr_ = nullptr;
    ibv_qp *loop_qp_[2]{};
    unsigned loop_posted_ = 0;

    // The segment this conduit created (no same-host conduit owns it).

    IbvCounters ibv_counters_;
};

} // namespace sluice::conduit::ibv::detail
