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

constexpr std::uint32_t cq_entries = 4096;  // each CQ's events
constexpr std::size_t rma_depth = 1024;     // FMA and BTE posts in flight at most
// SMSG sends between two reads of the local CQ, at most: each raises a
// local event, and with rma_depth posts they must not overrun it.
constexpr std::size_t reap_every = 1024;

// One FMA or BTE post in flight: its descriptor (which uGNI hands back
// from GNI_GetCompleted), the operation it completes, and the transient
// registration of a local buffer outside the segment.
struct RmaPost {
    gni_post_descriptor_t d{};
    RmaOp *op = nullptr;
    Rank peer = 0;
    bool write = true;
    bool bte = false;
    bool transient = false;      // local_mem_hndl was registered for this post alone
    RmaPost *next = nullptr;     // free list
};

// A message copied out of its mailbox, waiting for delivery.
struct Arrival {
    std::byte *bytes;
    std::size_t length;
};

// What every rank publishes at init (allgather_records).
struct Record {
    std::uint32_t nic_address;
    std::uint32_t inst_id;
    std::uint32_t mbox_bytes;   // one mailbox (GNI_SmsgBufferSizeNeeded, rounded to 64)
    std::uint32_t credits;      // SLUICE_GNI_MBOX_CREDITS
    std::uint32_t msg_maxsize;  // from SLUICE_GNI_MAX_MEDIUM
    std::uint32_t pad;
    std::uint64_t mbox_base;    // mailboxes by sender rank, mbox_bytes apart
    gni_mem_handle_t mbox_handle;
};
static_assert(sizeof(Record) == 48);

// A registration of this rank's (the segment, or another region the core
// registers), found by the local buffers RDMA reads or writes.
struct Registration {
    std::uint64_t base = 0, size = 0;
    gni_mem_handle_t handle{};
    bool live = false;
};

// Counters beyond the layer's.
struct GniCounters {
    std::uint64_t fma = 0, bte = 0, transient = 0, transient_refused = 0;
};

class GniTransport final : public common::RdmaConduit<Arrival> {
public:
    GniTransport();
    ~GniTransport() override;
    std::string nic_atomics_support(sluice_dt_t, std::uint64_t) override {
        return "gni: NIC atomics are not built yet (README.md, Not built yet); the AM path applies them";
    }

protected:
    Status init_impl() override;
    Status send_impl(Rank peer, const AmMessage &m) override;
    Status mem_register_impl(void *base, std::size_t size, std::uint64_t requested_key, std::uint64_t &handle,
                             std::string &rkey) override;
    void mem_deregister_impl(std::uint64_t handle) override;
    Status key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) override;
    void fini_impl() override;

    // The layer's hooks (common/rdma_conduit.hpp).
    bool up() const override { return nic_ != nullptr; }
    void reap() override;                                          // under lock_
    void deliver_one(const Arrival &a) override;
    void delivered(const Arrival &a) override;                     // under lock_
    void control_send(Rank peer, std::uint8_t category) override;  // under lock_
    bool idle() override { return rma_outstanding_ == 0; }         // under lock_
    std::string path(Rank peer) const override;
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                bool &later) override;

private:
    // gni_setup.cpp
    Status open_domain();
    Status mailboxes_create();
    Status endpoints_create();
    Status failed(const char *op, const char *call, gni_return_t rc, const char *fix = nullptr);
    void close_all();
    void stats_print() const;

    // gni.cpp
    void reap_local();                                // under lock_
    void reap_arrivals();                             // under lock_
    void drain(Rank peer);                            // under lock_
    void rma_done(RmaPost *p, bool ok);               // under lock_
    const Registration *covering(const void *p, std::size_t n) const;  // under lock_
    std::byte *buffer_take();                         // under lock_

    // uGNI objects, in order of creation.
    gni_cdm_handle_t cdm_ = nullptr;
    gni_nic_handle_t nic_ = nullptr;
    gni_cq_handle_t cq_ = nullptr;     // local completions: posts, SMSG sends
    gni_cq_handle_t rx_cq_ = nullptr;  // SMSG arrivals in this rank's mailboxes
    std::byte *mbox_ = nullptr;        // this rank's mailboxes, one per sender
    std::size_t mbox_total_ = 0;
    gni_mem_handle_t mbox_handle_{};
    bool mbox_registered_ = false;
    std::vector<gni_ep_handle_t> ep_;       // by rank (null: this rank)
    std::vector<gni_mem_handle_t> peer_segment_;  // by rank
    std::vector<Registration> regs_;        // handle = index + 1

    std::uint32_t ptag_ = 0, cookie_ = 0, dev_id_ = 0, nic_address_ = 0;
    std::size_t max_medium_ = 0;
    std::size_t msg_max_ = 0;          // SMSG msg_maxsize: a whole Medium with its header
    std::uint32_t mbox_bytes_ = 0;
    std::uint16_t credits_ = 0;
    std::size_t put_cutover_ = 0, get_cutover_ = 0;

    std::vector<RmaPost> posts_;
    common::FreeList<RmaPost> post_free_;
    std::size_t rma_outstanding_ = 0;
    std::size_t sends_since_reap_ = 0;
    std::vector<std::byte *> spare_;                   // message buffers of msg_max_ bytes, free
    std::vector<std::unique_ptr<std::byte[]>> owned_;  // every one made (freed at close)
    bool overrun_reported_ = false;
    GniCounters gni_counters_;
};

} // namespace sluice::conduit::gni::detail
