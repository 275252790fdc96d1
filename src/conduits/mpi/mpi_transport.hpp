// src/conduits/mpi/mpi_transport.hpp - the mpi conduit's transport class
// and the small types its hooks share.  Set-up and tear-down are in
// mpi_setup.cpp, traffic in mpi.cpp.  Every MPI call is made under the
// conduit's lock (RdmaConduit), so MPI sees one Sluice thread at a time.
#pragma once

#include "conduits/common/buffer_pool.hpp"
#include "conduits/common/free_list.hpp"
#include "conduits/common/rdma_conduit.hpp"

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sluice::conduit::mpi::detail {

// Every message is a packed AM (conduits/common/packed_am.hpp), sent as
// one MPI message with this tag on the conduit's communicator; MPI keeps
// the messages of one sender in order, as the AM layer needs.
constexpr int am_tag = 0x51;

// AMs of at most this many bytes (a Short, a small Medium) are encoded
// into their send buffer under the lock (one lock, not two); larger ones
// outside it.
constexpr std::size_t small_send = 256;

// Receives posted per other rank under SLUICE_MPI_RECVS=0 (within 16 and
// 1024 in all).
constexpr std::size_t recvs_per_peer = 16;

// A Put or Get piece at most (MPI counts are ints).
constexpr std::size_t rma_piece_max = std::size_t{1} << 30;

// How Put and Get go (SLUICE_MPI_RMA): by MPI RMA on a window over the
// segments; by messages, each a header the target answers by posting the
// matching receive or send on the segment, the payload one MPI message
// between the two buffers; Gets on the window and Puts by messages
// (get_window: no MPI_Win_flush, which some MPIs complete only while the
// target calls MPI); or by the AM layer (src/rma).
enum class RmaMode { am, window, messages, get_window };

// Under RmaMode::messages: the payload messages' tags (MPI keeps one
// sender's messages of one tag in order, and the target posts its
// receives and sends in the order the headers arrived, so each payload
// meets its own), and the conduit's control categories for the header and
// the Put's acknowledgement, beside common's ping and pong.
constexpr int put_tag = 0x52, get_tag = 0x53;
constexpr std::uint8_t category_put = 5, category_get = 6, category_put_done = 7;

// The header of a Put or Get by messages, and a Put's acknowledgement
// (`post`: the origin's RmaPost, returned in it).
struct RmaHeader {
    common::PackedHead head;
    std::uint64_t remote = 0;
    std::uint64_t length = 0;
    std::uint32_t post = 0;
    std::uint32_t pad = 0;
};

// A message that arrived (its head names its sender).  A Short is
// delivered from its posted receive (`ring` its index there), which is
// posted again once the Short is unpacked, before its handler runs; any
// other message is copied out (ring: copied), its receive posted again at
// the next poll, so that a rank inside a handler still receives and the
// peer's rendezvous sends complete.
struct Arrival {
    static constexpr std::uint32_t copied = ~std::uint32_t{0};
    std::byte *bytes = nullptr;
    std::uint32_t length = 0;
    std::uint32_t ring = copied;
};

// One send buffer and the MPI_Isend that carries it.
struct SendBuffer {
    std::byte *bytes = nullptr;
    MPI_Request request = MPI_REQUEST_NULL;
    SendBuffer *next = nullptr;
};

// One Put or Get in flight (MPI_Rput / MPI_Rget, or the payload's
// MPI_Isend / MPI_Irecv).  A Put by messages is complete once both its
// send is and the target acknowledged it.
struct RmaPost {
    RmaOp *op = nullptr;
    Rank peer = 0;
    bool write = false;
    bool sent = false, acked = false;
    RmaPost *next = nullptr;
};

// A Put or Get a peer asked of this rank by messages: the receive into,
// or the send from, this rank's segment.
struct Serve {
    Rank origin = 0;
    std::uint32_t post = 0;  // the origin's, for the acknowledgement
    bool put = false;
};

struct MpiCounters {
    std::uint64_t flushes = 0;  // MPI_Win_flush calls (a Put is complete at its target after one)
    std::uint64_t served = 0;   // Puts and Gets peers made here by messages
    std::uint64_t spilled = 0;  // Shorts copied out of their receives while they waited (spill)
};

class MpiTransport final : public common::RdmaConduit<Arrival> {
public:
    MpiTransport();
    ~MpiTransport() override;

protected:
    Status init_impl() override;
    std::size_t receive_buffer_bytes_impl() override { return recv_requests_.size() * msg_max_; }
    Status send_impl(Rank peer, const AmMessage &m) override;
    Status send_short_impl(Rank peer, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                           const std::uint32_t *args, unsigned nargs) override;
    Status mem_register_impl(void *, std::size_t, std::uint64_t, std::uint64_t &handle, std::string &) override {
        handle = 0;
        return Status::ok;
    }
    void mem_deregister_impl(std::uint64_t) override {}
    Status key_unpack_impl(Rank, std::uint64_t, std::uint64_t, const std::string &) override { return Status::ok; }
    Status segment_connected(const std::vector<SegmentRecord> &all) override;  // mpi_setup.cpp
    void fini_impl() override;
    void exit_release_impl() override;
    bool exit_quiet_impl(std::uint64_t deadline_ns) override;
    Status barrier_impl(bool (*poll_fn)(void *), void *context) override;  // mpi.cpp

    // The layer's hooks (common/rdma_conduit.hpp).
    bool up() const override { return comm_ != MPI_COMM_NULL; }
    void reap() override;                                          // under lock_
    void deliver_one(const Arrival &a) override;
    void delivered(const Arrival &a) override;                     // under lock_
    void control_send(Rank peer, std::uint8_t category) override;  // under lock_
    bool idle() override { return sends_out_ == 0 && rma_out_ == 0 && serves_out_ == 0; }
    std::string path(Rank peer) const override;
    Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                bool &later) override;

private:
    // mpi_setup.cpp
    Status thread_check();
    Status ranks_map();
    Status buffers_create();
    Status rma_probe();
    void close_all(bool collective);
    bool stats_wanted() const override;
    void stats_print() override;

    // mpi.cpp
    static int finished(std::vector<MPI_Request> &requests, std::vector<int> &index);  // under lock_
    void reap_sends();     // under lock_
    void reap_arrivals();  // under lock_
    void restart_taken();  // under lock_
    void arrived(std::size_t index);  // under lock_
    void spill();          // under lock_
    std::byte *copy_out(const std::byte *bytes, std::size_t n);  // under lock_
    void reap_rma();       // under lock_
    void reap_serves();    // under lock_
    void rma_finish(RmaPost *p);                                    // under lock_
    Status rma_messages_post(RmaPost *p, std::uint64_t remote, void *local, int count, MPI_Request &r);  // under lock_
    void serve_arrived(Rank origin, const std::byte *bytes);  // under lock_
    SendBuffer *send_buffer();                                      // under lock_
    Status send_copy(Rank peer, const void *bytes, std::size_t n);  // under lock_
    bool ack_send(Rank origin, std::uint32_t post);                 // under lock_
    Status isend(SendBuffer *b, Rank peer, std::size_t length);  // under lock_
    // Under lock_: `n` bytes that `fill` writes into a free send buffer,
    // sent by MPI_Isend; Status::not_ready when none is free.  Never a
    // blocking MPI_Send under the lock: under MPICH's UCX with more threads
    // than cores one took seconds, and the rank answered nothing meanwhile
    // (its peers took it for dead).  So small a send is usually complete
    // already (eager): its buffer comes back at once, and no MPI_Testsome
    // has to find it later.
    template <class Fill> Status send_small(Rank peer, std::size_t n, Fill fill) {
        SendBuffer *b = send_buffer();
        if (!b) return Status::not_ready;
        fill(b->bytes);
        if (const Status s = isend(b, peer, n); s != Status::ok) return s;
        int done = 0;
        if (MPI_Test(&send_requests_[static_cast<std::size_t>(b - sends_.data())], &done, MPI_STATUS_IGNORE) ==
                MPI_SUCCESS &&
            done) {
            send_free_.give(b);
            --sends_out_;
            ++counters_.completions;
        }
        return Status::ok;
    }

    MPI_Comm comm_ = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD, Sluice's own
    MPI_Win win_ = MPI_WIN_NULL;     // over every rank's segment, in a passive-target epoch (lock_all)
    RmaMode rma_ = RmaMode::am;
    bool has_window() const { return rma_ == RmaMode::window || rma_ == RmaMode::get_window; }
    // A Put or Get (`write`) goes by messages (a header, then its payload).
    bool by_messages(bool write) const {
        return rma_ == RmaMode::messages || (rma_ == RmaMode::get_window && write);
    }
    int thread_level_ = MPI_THREAD_SINGLE;
    std::vector<int> mpi_rank_;      // by Sluice rank: its rank in comm_

    std::size_t max_medium_ = 0, msg_max_ = 0;
    // The posted receives: one buffer of msg_max_ bytes each, persistent
    // requests restarted once their message was delivered.
    std::unique_ptr<std::uint64_t[]> recv_words_;
    std::vector<MPI_Request> recv_requests_;
    std::vector<std::uint8_t> recv_active_; // started, its message not yet taken
    // Taken, its Short still in ready_ or being unpacked: not posted again
    // until deliver_one has unpacked it (or spill copied it out).
    std::unique_ptr<std::atomic<std::uint8_t>[]> recv_held_;
    std::size_t recv_head_ = 0;             // the oldest posted receive, the next to fill
    std::size_t recv_taken_ = 0;            // the receives before recv_head_ to post again
    bool quiet_ = true;                     // the last poll took no message
    common::BufferPool copies_;             // arrivals copied out, msg_max_ bytes each
    std::vector<int> done_index_;           // MPI_Testsome's (sends, Puts and Gets)
    // The send buffers and their requests (by index, for MPI_Testsome).
    std::unique_ptr<std::uint64_t[]> send_words_;
    std::vector<SendBuffer> sends_;
    std::vector<MPI_Request> send_requests_;
    common::FreeList<SendBuffer> send_free_;
    std::size_t sends_out_ = 0;
    std::uint32_t polls_ = 0;               // reap()'s, to reap sends now and then
    // Put and Get in flight.
    std::vector<RmaPost> posts_;
    std::vector<MPI_Request> rma_requests_;
    common::FreeList<RmaPost> post_free_;
    std::size_t rma_out_ = 0;
    std::vector<Rank> flush_;               // peers written to whose Puts completed locally
    // What peers asked of this rank by messages (grown as needed: a
    // header must be answered when it arrives).
    std::vector<Serve> serves_;
    std::vector<MPI_Request> serve_requests_;
    std::vector<std::uint32_t> serve_free_;
    std::vector<int> serve_done_;
    std::size_t serves_out_ = 0;
    std::vector<std::pair<Rank, std::uint32_t>> acks_owed_;  // (origin, post): no send buffer was free
    std::string library_;                   // MPI_Get_library_version's first line
    MpiCounters mpi_counters_;
};

} // namespace sluice::conduit::mpi::detail
