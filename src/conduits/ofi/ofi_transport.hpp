// src/conduits/ofi/ofi_transport.hpp - the ofi conduit's transport class,
// shared by ofi.cpp (messages, RDMA, completions, delivery) and
// ofi_setup.cpp (provider choice, endpoint, registrations, finalize).
// README.md has the design.
//
// Locking: the layer's `lock_` (common/rdma_conduit.hpp) covers the
// endpoint, the completion queue and every buffer list (libfabric is
// opened FI_THREAD_DOMAIN: the conduit serializes its calls).  Handlers
// run outside it, one thread at a time, in each peer's send order
// (FI_ORDER_SAS, and the sequence numbers of PeerOrder).
#pragma once

#include "base/flag.hpp"
#include "base/status.hpp"
#include "conduits/common/atomic_slots.hpp"
#include "conduits/common/free_list.hpp"
#include "conduits/common/packed_am.hpp"
#include "conduits/common/peer_order.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/ofi/fabric_api.hpp"
#include "conduits/common/rdma_conduit.hpp"
#include "conduits/nic_atomics.hpp"
#include "conduits/transport.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sluice::conduit::ofi::detail {

constexpr unsigned cq_batch = 16;         // completions one fi_cq_read takes

// Messages are packed AMs (conduits/common/packed_am.hpp); the head's
// `seq` is the sender's per-peer sequence number (completions come in any
// order).
using WireHead = common::PackedHead;
constexpr std::size_t head_room = common::packed_head_room;

// Every operation posted with a context starts with one of these, so a
// completion tells what it completes.  `fi` first: providers that ask for
// FI_CONTEXT / FI_CONTEXT2 use that memory.
enum class Tag : std::uint8_t { recv, send, rma, atomic };
struct Context {
    fi_context2 fi{};
    Tag tag = Tag::send;
};

// A multi-receive buffer (FI_MULTI_RECV): messages land back to back; it is
// reposted once the provider released it and every message in it was
// delivered.
struct RecvBuffer : Context {
    std::byte *bytes = nullptr;
    std::size_t size = 0;
    fid_mr *mr = nullptr;
    unsigned pending = 0;    // messages in it not delivered yet
    bool posted = false;     // the provider owns it
};

// A send buffer of eager_limit + head_room bytes.
struct SendBuffer : Context {
    std::byte *bytes = nullptr;
    SendBuffer *next = nullptr;  // free list
    Rank peer = 0;               // while posted
};

// One fi_write/fi_read in flight, in the operation's own room
// (Transport::rma_context): the wrapper hands over at most rma_chunk_
// bytes at a time.
struct RmaPost : Context {
    RmaOp *op = nullptr;
    Rank peer = 0;
    bool write = true;
    std::size_t n = 0;
};
static_assert(sizeof(RmaPost) <= rma_context_size);

// One NIC atomic in flight (common/atomic_slots.hpp).
struct AtomicSlot : Context, common::AtomicSlot {
    AtomicSlot *next = nullptr;  // free list
};

// An arrived message waiting for delivery.
struct Arrival {
    const std::byte *bytes;
    std::size_t length;
    RecvBuffer *buffer;
};

// Per peer: the order of its messages (providers match receives in order,
// FI_ORDER_SAS, but may complete them in any order, comp_order
// FI_ORDER_NONE), and the greetings at init (OfiTransport::connect_peers).
struct Peer {
    common::PeerOrder<Arrival> order;
    bool greeted = false, greet_answered = false, greet_owed = false, answer_owed = false;
};

// Control messages beyond the layer's ping and pong: handled by the
// conduit in its poll, never delivered, not numbered.
constexpr std::uint8_t category_greet = 5;
constexpr std::uint8_t category_greet_answer = 6;

// What libfabric demands of memory, after SLUICE_OFI_MR_MODE_ADD.
struct MrMode {
    bool local = false;       // FI_MR_LOCAL: descriptors for local buffers
    bool virt_addr = false;   // FI_MR_VIRT_ADDR: remote addresses are virtual
    bool prov_key = false;    // FI_MR_PROV_KEY: the provider picks keys
    bool endpoint = false;    // FI_MR_ENDPOINT: bind registrations to the endpoint
    bool real_prov_key = false, real_endpoint = false;  // what the provider itself asked
    bool allocated = false;   // FI_MR_ALLOCATED: only mapped memory (always true here)
};

class OfiTransport final : public common::RdmaConduit<Arrival, AtomicSlot> {
public:
    OfiTransport();
    ~OfiTransport() override;
    // NIC atomics (ofi.cpp): fi_fetch_atomic and fi_compare_atomic where
    // fi_query_atomic allows them.
    std::string nic_atomics_support(sluice_dt_t type, std::uint64_t ops) override;

protected:
    Status init_impl() override;
    std::size_t receive_buffer_bytes_impl() override;
    Status send_impl(Rank peer, const AmMessage &m) override;
    Status segment_connected(const std::vector<SegmentRecord> &all) override;
    Status mem_register_impl(void *base, std::size_t size, std::uint64_t requested_key, std::uint64_t &handle,
                             std::string &rkey) override;
    void mem_deregister_impl(std::uint64_t handle) override;
    Status key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) override;
    void fini_impl() override;

    // The layer's hooks (common/rdma_conduit.hpp).
    bool up() const override { return ep_ != nullptr; }
    void reap() override;                                             // under lock_
    void deliver_one(const Arrival &a) override;
    void delivered(const Arrival &a) override;                        // under lock_
    void control_send(Rank peer, std::uint8_t category) override;     // under lock_
    bool idle() override;                                             // under lock_
    std::string path(Rank peer) const override;
    void receive_wait() override;
    bool wake_arm(WakeSet &w) override;
    std::string receive_sleeps_on() const override;
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                bool &later) override;
    Status atomics_create() override;                                 // under lock_
    bool atomic_room(Rank) override { return rma_outstanding_ < tx_depth_ && posts_since_reap_ < reap_every_; }
    Status atomic_post(AtomicSlot *slot, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type, std::uint64_t op1,
                       std::uint64_t op2) override;                   // under lock_

private:

    // ofi_setup.cpp
    Status open_fabric();
    Status exchange_addresses();
    Status buffers_create();
    Status connect_peers();
    Status register_raw(void *base, std::size_t size, std::uint64_t access, std::uint64_t key, fid_mr *&mr,
                        const char *what);
    void close_all();
    void exit_release_impl() override;
    bool stats_wanted() const override;
    void stats_print() override;

    // ofi.cpp
    Status post(Rank peer, const void *bytes, std::size_t length);  // under lock_
    void rma_done(RmaPost *p);                                        // under lock_
    bool arrived(const Arrival &a);                                   // under lock_
    std::uint16_t stamp(Rank peer, std::byte *message);               // under lock_
    void reap_error();                                                // under lock_
    void repost(RecvBuffer *b);                                       // under lock_
    void release(RecvBuffer *b);                                      // under lock_
    Status fatal(const char *op, Rank peer, int error, const char *what);

    // libfabric objects, in order of creation.
    fi_info *info_ = nullptr;
    fid_fabric *fabric_ = nullptr;
    fid_domain *domain_ = nullptr;
    fid_av *av_ = nullptr;
    fid_cq *cq_ = nullptr;
    fid_ep *ep_ = nullptr;
    std::string provider_;          // "tcp;ofi_rxm"
    std::string domain_name_;
    MrMode mr_;
    std::vector<fi_addr_t> addr_;   // by rank
    std::vector<std::uint64_t> peer_key_;
    common::PeerTable<Peer> peers_;  // by rank, made at first touch (peer)
    Peer &peer(Rank r) {             // under the conduit's lock
        if (Peer *p = peers_.find(r)) [[likely]]
            return *p;
        return peers_.insert(r, std::make_unique<Peer>());
    }

    // Limits.
    std::size_t inject_limit_ = 0;  // whole message
    std::size_t eager_limit_ = 0;   // Medium payload
    std::size_t rma_chunk_ = 0;
    std::size_t tx_depth_ = 0;      // pieces posted at most
    // Posts between two reads of the completion queue, at most: a provider
    // may complete a packet into a queue that its own sends filled (the
    // udp layer under udp;ofi_rxd in libfabric 1.17 then overwrites
    // completions and loses its receive buffers).
    std::size_t reap_every_ = 0;
    std::size_t posts_since_reap_ = 0;
    bool delivery_complete_ = true;
    bool manual_progress_ = false;    // FI_PROGRESS_MANUAL: data moves in this rank's polls only
    std::size_t min_free_ = 0;        // FI_OPT_MIN_MULTI_RECV
    bool in_order_receives_ = false;  // receives complete in order (FI_ORDER_STRICT)
    bool multi_recv_ = true;          // FI_MULTI_RECV buffers, else one message per buffer

    // Buffers.
    std::vector<std::unique_ptr<RecvBuffer>> recv_;
    std::unique_ptr<std::byte[]> send_bytes_;
    std::vector<SendBuffer> send_;
    fid_mr *send_mr_ = nullptr;
    common::FreeList<SendBuffer> send_free_;
    std::deque<RecvBuffer *> posted_;  // in the order they were posted
    std::uint64_t next_key_ = 1u << 31;  // keys this conduit makes up itself

    std::size_t rma_outstanding_ = 0;  // pieces posted

    // The receive thread (SLUICE_RCV_THREAD) sleeps on the completion
    // queue's file descriptor (-1: the provider has none, it polls at
    // SLUICE_RCV_THREAD_RATE or every millisecond).
    int wait_fd_ = -1;
    unsigned unposted_ = 0;            // receive buffers a repost left unposted

    // NIC atomics: on when the provider took FI_ATOMIC on the chosen domain
    // (and SLUICE_OFI_ATOMICS is on); slots registered on first use.
    bool atomics_ = false;
    std::string atomics_off_;  // why they were not asked for (SLUICE_OFI_ATOMICS)
    fid_mr *atomic_mr_ = nullptr;
    std::vector<std::uint64_t> atomic_base_;  // segment bases, for offsets without FI_MR_VIRT_ADDR
};

} // namespace sluice::conduit::ofi::detail
