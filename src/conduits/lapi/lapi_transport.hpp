// src/conduits/lapi/lapi_transport.hpp - the lapi conduit's transport
// class, shared by lapi.cpp (AMs, header and completion handlers, RDMA,
// counters) and lapi_setup.cpp (POE's variables, LAPI_Init, the handler
// table, finalize).  README.md has the design.
//
// Threads and locking.  LAPI runs header handlers in its dispatcher: on
// its notification thread (interrupt mode) or inside this rank's own LAPI
// calls (LAPI_Probe, LAPI_Getcntr, which the poll makes under the layer's
// `lock_`); completion handlers on its completion thread.  What they touch
// (tokens, Medium buffers, the per-peer receive order, the arrivals in
// order, the peers heard from) is under `arrival_lock_`, which every
// thread holds for a few instructions and never across a LAPI call; the
// poll moves the arrivals into the layer's ready queue under `lock_`
// (lock_ may be held while taking arrival_lock_, never the reverse).  A
// handler never waits for `lock_`: a polling thread holds it most of the
// time, and a notification thread waiting for it waited a scheduler time
// slice whenever that thread was descheduled holding it (README.md,
// Design).  No handler calls LAPI or runs an AM handler: AM handlers run
// from the poll (the layer's deliver_from), outside both locks, one at a time.
#pragma once

#include "base/status.hpp"
#include "conduits/common/buffer_pool.hpp"
#include "conduits/common/free_list.hpp"
#include "conduits/common/packed_am.hpp"
#include "conduits/common/peer_order.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/common/rdma_conduit.hpp"
#include "conduits/lapi/lapi_api.hpp"
#include "conduits/transport.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit::lapi::detail {

// The header handlers, at these LAPI_Addr_set indices on every task.
constexpr int handler_am = 1;       // every AM
constexpr int handler_control = 2;  // ping and pong (liveness)

// The most user-header bytes the conduit uses, whatever LAPI's
// MAX_UHDR_SZ: a packed AM is encoded on the stack.
constexpr std::size_t uhdr_room = 4096;
// Tokens made at init; more are made when an arrival finds none free.
constexpr std::size_t tokens_first = 64;

// An AM arriving, from its header handler until its AM handler ran: the
// token (the user header: head, arguments, and the payload when packed)
// and where its payload is.
struct Token {
    std::byte *message = nullptr;   // a packed message: `room`, or a Medium buffer of the pool
    std::uint32_t length = 0;       // its bytes
    std::uint64_t long_bytes = 0;   // an unpacked Long: its payload, in the segment (`message` says 0)
    std::atomic<bool> complete{false};  // its data are in place (a packed one at once; else its completion handler)
    bool pooled = false;            // `message` is a Medium buffer
    bool dropped = false;           // refused (reported): nothing to deliver
    std::unique_ptr<std::uint64_t[]> room;  // the user header's bytes, 8-aligned
    Token *next = nullptr;          // free list
};
using Arrival = Token *;

// An AM whose payload goes as the message's data: copied here, since LAPI
// reads it until the message's origin counter moves.
struct SendBuffer {
    lapi_cntr_t origin{};
    std::byte *bytes = nullptr;
    SendBuffer *next = nullptr;  // free list
};

// A Put or Get in flight and its counter: a Put's completion counter
// (LAPI moves it once the target has the data), a Get's origin counter
// (once the data are here).
struct RmaPost {
    lapi_cntr_t done{};
    RmaOp *op = nullptr;
    RmaPost *next = nullptr;  // free list
};

// What every rank publishes at init (allgather_records).
struct Record {
    std::uint32_t task;        // LAPI's TASK_ID
    std::uint32_t max_medium;  // SLUICE_LAPI_MAX_MEDIUM
};
static_assert(sizeof(Record) == 8);

// Counters beyond the layer's: the poll's (under lock_) and the handlers'
// (under arrival_lock_; received and held are the layer's, added at
// finalize).
struct LapiCounters {
    std::uint64_t unpacked_mediums = 0, unpacked_longs = 0;  // sent with their payload as data
    std::uint64_t probes = 0;    // LAPI_Probe calls
    std::atomic<std::uint64_t> async_errors{0};  // LAPI's error handler calls
};
struct ArrivalCounters {
    std::uint64_t received = 0, held = 0;
    std::uint64_t completion_handlers = 0;
    std::uint64_t nested = 0;    // header handlers run inside this rank's own LAPI calls
    std::uint64_t dropped = 0;   // arrivals refused (reported)
};

class LapiTransport final : public common::RdmaConduit<Arrival> {
public:
    LapiTransport();
    ~LapiTransport() override;

    // LAPI's entry points into the conduit (static: LAPI passes no object;
    // one handle per process, so one live transport).
    static void *am_header(lapi_handle_t *hndl, void *uhdr, uint *uhdr_len, ulong *msg_len, compl_hndlr_t **comp_h,
                           void **user_info);
    static void *control_header(lapi_handle_t *hndl, void *uhdr, uint *uhdr_len, ulong *msg_len,
                                compl_hndlr_t **comp_h, void **user_info);
    static void am_complete(lapi_handle_t *hndl, void *user_info);
    static void error_handler(lapi_handle_t *hndl, int *code, lapi_err_t *type, int *task, int *source);

protected:
    Status init_impl() override;                                   // lapi_setup.cpp
    // The Medium buffers made so far (LAPI's own receive buffers are its own).
    std::size_t receive_buffer_bytes_impl() override {
        base::SpinGuard a(arrival_lock_);
        return medium_pool_.allocated() * msg_max_;
    }
    Status send_impl(Rank peer, const AmMessage &m) override;
    void fini_impl() override;                                     // lapi_setup.cpp

    // The layer's hooks (common/rdma_conduit.hpp).
    bool up() const override { return open_.load(std::memory_order_acquire); }
    void reap() override;                                          // under lock_
    bool take(const Arrival &a) override { return a->complete.load(std::memory_order_acquire); }  // in order, once complete
    void deliver_one(const Arrival &a) override;
    void delivered(const Arrival &a) override;                     // under lock_
    void control_send(Rank peer, std::uint8_t category) override;  // under lock_
    bool idle() override;                                          // under lock_
    std::string path(Rank peer) const override;
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                bool &later) override;

private:
    // lapi.cpp
    void *arrive(const void *uhdr, std::size_t uhdr_len, std::size_t data_len, compl_hndlr_t **comp_h,
                 void **user_info);
    void control_arrive(const void *uhdr, std::size_t uhdr_len);
    Token *token_take();                       // under arrival_lock_
    void arrivals_take();                      // under lock_
    template <class Record, class Done>
    void counters_reap(std::vector<Record *> &outstanding, lapi_cntr_t Record::*counter, const char *what,
                       Done done);                // under lock_
    bool counter_zero(lapi_cntr_t &counter, const char *what);
    void reap_sends();                         // under lock_
    void reap_rma();                           // under lock_
    Status amsend(Rank peer, std::byte *head, std::size_t head_len, SendBuffer *b, std::size_t n);  // under lock_

    // lapi_setup.cpp
    Status job_open();
    Status handlers_set();
    Status buffers_create();
    Status failed(const char *op, const char *call, int rc, Rank peer, const char *fix = nullptr) const;
    void close_all();
    bool stats_wanted() const override;
    void stats_print() override;

    static std::atomic<LapiTransport *> live_;

    lapi_handle_t handle_ = 0;
    std::atomic<bool> open_{false};  // between LAPI_Init and finalize (handlers look too)
    bool lapi_live_ = false;     // LAPI_Init succeeded, LAPI_Term not yet called
    bool polling_ = false;       // SLUICE_LAPI_MODE=POLLING
    std::size_t uhdr_max_ = 0;   // LAPI's MAX_UHDR_SZ, at most uhdr_room
    std::size_t packed_max_ = 0; // the largest AM sent packed (SLUICE_LAPI_PACKED_MAX)
    std::size_t max_medium_ = 0, msg_max_ = 0;  // a Medium buffer: the largest unpacked Medium, head and payload
    std::uint64_t max_data_ = 0; // LAPI's MAX_DATA_SZ
    int packet_bytes_ = 0;       // LAPI's MAX_PKT_SZ, for sluice-info and the verbose line
    std::string env_note_;       // how the task id, task count and job key were set

    // Arrivals, under arrival_lock_.
    base::SpinLock arrival_lock_;
    std::vector<std::unique_ptr<Token>> tokens_;  // every token made
    common::FreeList<Token> token_free_;
    common::BufferPool medium_pool_;              // msg_max_ bytes each
    common::PeerTable<common::PeerOrder<Token *>> receive_order_;  // by rank, at its first AM: its numbers expected
    std::vector<Token *> arrived_;                // in their senders' order, for ready_
    std::vector<Rank> heard_from_;                // peers heard from since the last poll
    std::vector<std::uint8_t> heard_flag_, ping_flag_;  // by rank: in heard_from_; a ping came
    std::atomic<bool> arrivals_{false};           // the above have something for the poll
    ArrivalCounters arrival_counters_;
    common::PeerTable<common::PeerOrder<Token *>> send_order_;  // by rank, at the first AM to it (under lock_)
    std::vector<Rank> pong_to_;                   // pings to answer (under lock_)

    // Sends with their payload as data, and the AMs' completion count.
    std::vector<SendBuffer> sends_;
    std::unique_ptr<std::uint64_t[]> send_words_;
    common::FreeList<SendBuffer> send_free_;
    std::vector<SendBuffer *> sending_;           // waiting for their origin counter
    lapi_cntr_t am_done_{};                       // every AM's completion counter
    std::uint64_t am_sent_ = 0;                   // AMs (and control messages) sent since it was last zeroed

    // Put and Get.
    std::vector<RmaPost> posts_;
    common::FreeList<RmaPost> post_free_;
    std::vector<RmaPost *> in_flight_;

    LapiCounters lapi_counters_;
    bool probe_reported_ = false;
};

} // namespace sluice::conduit::lapi::detail
