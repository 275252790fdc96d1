// src/conduits/mpi/mpi_setup.cpp - the mpi conduit's set-up and tear-down:
// its communicator, the map between Sluice's ranks and MPI's, the posted
// receives and send buffers, the window over the segments, finalize and
// the counters.
#include "conduits/mpi/mpi.hpp"
#include "conduits/mpi/mpi_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"
#include "conduits/knobs.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace sluice::conduit::mpi {

namespace detail {
namespace {

const char *level_name(int level) {
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
    }
}

// MPI's text for an error code.
std::string mpi_error(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(code, text, &n) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(n));
}

// MPI_Get_library_version's first line ("Open MPI v4.1.4", "MPICH
// Version: 4.0.2").
std::string library_name() {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    if (MPI_Get_library_version(version, &length) != MPI_SUCCESS) return "an MPI";
    const std::string all(version, static_cast<std::size_t>(length));
    return all.substr(0, all.find_first_of("\n,"));
}

bool mpi_running() {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized;
}

} // namespace

MpiTransport::MpiTransport() : RdmaConduit("mpi", Capabilities{}) {}

MpiTransport::~MpiTransport() { close_all(false); }

Status MpiTransport::init_impl() {
    const char *op = "mpi conduit init";
    if (!mpi_running())
        return base::report(Status::transport, op,
                            "start the job with mpirun or srun (SLUICE_SPAWNER=mpi), or call MPI_Init before sluice_init",
                            "mpi: MPI is not initialized, or already finalized");
    max_medium_ = base::knob_size(knob(Knob::MPI_MAX_MEDIUM));
    msg_max_ = (max_medium_ + common::packed_head_room + 7) / 8 * 8;
    peer_timeout_s_ = std::max(0.1, base::knob_double(knob(Knob::MPI_PEER_TIMEOUT)));
    if (Status s = thread_check(); s != Status::ok) return s;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comm_) != MPI_SUCCESS)
        return base::report(Status::transport, op, nullptr, "mpi: MPI_Comm_dup of MPI_COMM_WORLD failed");
    // Errors come back to the conduit, which reports them naming the rank
    // and the call, instead of ending the job inside MPI.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    if (Status s = ranks_map(); s != Status::ok) return s;
    library_ = library_name();
    if (Status s = buffers_create(); s != Status::ok) return s;
    if (Status s = rma_probe(); s != Status::ok) return s;
    if (base::knob_bool(base::Knob::RCV_THREAD)) receive_thread_want();

    Capabilities &c = capabilities_mutable();
    c.max_medium = max_medium_;
    // A larger Long: the payload by a Put, then the header; with Put and
    // Get over AMs every Long is one message, as large as a posted receive
    // holds.
    const bool native = rma_ != RmaMode::am;
    c.max_long = native ? std::numeric_limits<std::size_t>::max() : max_medium_;
    c.max_packed_long = max_medium_;
    c.native_rma = native;
    c.rma_piece = rma_piece_max;
    c.remote_completion = false;
    c.needs_registration = false;     // MPI reads and writes any local memory
    c.remote_keys = false;            // the window covers every segment
    c.remote_offsets = false;         // virtual addresses, turned into displacements here
    c.provider_keys = true;
    // Requests beyond the posted receives wait in MPI as unexpected
    // messages; the credits bound how many.
    c.needs_credits = true;
    c.native_barrier = true;          // MPI_Ibarrier, when mpi reaches every peer
    liveness_setup(setup().size, peer_timeout_s_, "SLUICE_MPI_PEER_TIMEOUT");
    base::say("mpi: %s, %s; %zu receives of %zu bytes posted, %zu send buffers; Put/Get %s", library_.c_str(),
              level_name(thread_level_), recv_requests_.size(), msg_max_, sends_.size(),
              rma_ == RmaMode::window       ? "by MPI RMA (passive target)"
              : rma_ == RmaMode::get_window ? "Get by MPI RMA (passive target), Put by messages"
              : rma_ == RmaMode::messages   ? "by messages"
                                            : "over AMs");
    return Status::ok;
}

// Sluice calls MPI from its own threads (SLUICE_PROGRESS_THREAD,
// SLUICE_RCV_THREAD) while the program may call it from its own: that
// needs MPI_THREAD_MULTIPLE.  Otherwise the conduit's lock keeps Sluice's
// calls one at a time.
Status MpiTransport::thread_check() {
    MPI_Query_thread(&thread_level_);
    const bool threads = base::knob_bool(base::Knob::PROGRESS_THREAD) || base::knob_bool(base::Knob::RCV_THREAD);
    if (threads && thread_level_ < MPI_THREAD_MULTIPLE)
        return base::report(Status::state, "mpi conduit init",
                            "initialize MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) (or SLUICE_MPI_THREAD=multiple when "
                            "Sluice initializes it), or unset SLUICE_PROGRESS_THREAD and SLUICE_RCV_THREAD",
                            "mpi: %s calls MPI from a thread of Sluice's own, but MPI was initialized with %s",
                            base::knob_bool(base::Knob::PROGRESS_THREAD) ? "SLUICE_PROGRESS_THREAD" : "SLUICE_RCV_THREAD",
                            level_name(thread_level_));
    return Status::ok;
}

// Every Sluice rank's rank in the conduit's communicator, by the
// bootstrap's allgather: the two numberings need not agree (a PMIx
// bootstrap beside an MPI the program initialized).
Status MpiTransport::ranks_map() {
    const char *op = "mpi conduit init";
    int mine = 0, size = 0;
    MPI_Comm_rank(comm_, &mine);
    MPI_Comm_size(comm_, &size);
    if (static_cast<Rank>(size) != setup().size)
        return base::report(Status::state, op,
                            "run every process of MPI_COMM_WORLD in the Sluice job, or use another SLUICE_NETWORK",
                            "mpi: MPI_COMM_WORLD has %d processes and the Sluice job %u", size, setup().size);
    std::vector<std::string> all;
    const auto record = static_cast<std::int32_t>(mine);
    if (Status s = common::allgather_records(setup(), "mpi", "an MPI rank", &record, sizeof record, all); s != Status::ok)
        return s;
    mpi_rank_.assign(setup().size, 0);
    std::vector<Rank> sluice_rank(setup().size, setup().size);  // by MPI rank: taken by whom
    for (Rank r = 0; r < setup().size; ++r) {
        std::int32_t theirs = 0;
        std::memcpy(&theirs, all[r].data(), sizeof theirs);
        if (theirs < 0 || theirs >= size || sluice_rank[theirs] != setup().size)
            return base::report(Status::state, op, "this is a Sluice bug",
                                "mpi: rank %u says it is MPI rank %d, which is out of range or taken", r, theirs);
        mpi_rank_[r] = theirs;
        sluice_rank[theirs] = r;
    }
    return Status::ok;
}

// The receives, posted now (persistent, any source), and the send buffers.
Status MpiTransport::buffers_create() {
    const char *op = "mpi conduit init";
    std::size_t recvs = static_cast<std::size_t>(base::knob_int(knob(Knob::MPI_RECVS)));
    if (recvs == 0) {
        recvs = std::clamp<std::size_t>((setup().size - 1) * recvs_per_peer, 16, 1024);
    }
    const std::size_t sends = static_cast<std::size_t>(base::knob_int(knob(Knob::MPI_SEND_BUFFERS)));
    const std::size_t words = msg_max_ / 8;
    copies_.configure(msg_max_);
    recv_words_ = std::make_unique<std::uint64_t[]>(words * recvs);
    send_words_ = std::make_unique<std::uint64_t[]>(words * sends);
    recv_requests_.assign(recvs, MPI_REQUEST_NULL);
    recv_active_.assign(recvs, false);
    recv_held_ = std::make_unique<std::atomic<std::uint8_t>[]>(recvs);
    done_index_.assign(std::max(recvs, sends), 0);
    for (std::size_t i = 0; i < recvs; ++i) {
        int rc = MPI_Recv_init(recv_words_.get() + i * words, static_cast<int>(msg_max_), MPI_BYTE, MPI_ANY_SOURCE, am_tag,
                               comm_, &recv_requests_[i]);
        if (rc == MPI_SUCCESS) rc = MPI_Start(&recv_requests_[i]);
        recv_active_[i] = rc == MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            return base::report(Status::resource, op, "lower SLUICE_MPI_RECVS or SLUICE_MPI_MAX_MEDIUM",
                                "mpi: cannot post receive %zu of %zu: %s", i + 1, recvs, mpi_error(rc).c_str());
    }
    sends_.assign(sends, SendBuffer{});
    send_requests_.assign(sends, MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < sends; ++i)
        sends_[i].bytes = reinterpret_cast<std::byte *>(send_words_.get() + i * words);
    send_free_.fill(sends_.data(), sends_.size());
    // As many Puts and Gets in flight as the largest descriptor pools of
    // the RDMA conduits; more wait, polling.
    posts_.assign(512, RmaPost{});
    rma_requests_.assign(posts_.size(), MPI_REQUEST_NULL);
    post_free_.fill(posts_.data(), posts_.size());
    if (done_index_.size() < posts_.size()) done_index_.resize(posts_.size());
    return Status::ok;
}

// How Put and Get go: SLUICE_MPI_RMA, whose auto is the window on the MPI
// it has been validated with (Open MPI), and elsewhere Gets on the window
// and Puts by messages (MPICH 4.0 over UCX needs the target to progress
// for MPI_Win_flush to return, so a rank ending the job can leave another
// inside it; a Get's request is only tested).  A window is first tried on
// one word (some MPIs make none without the hardware their one-sided
// component wants), every rank agreeing; auto without one goes by
// messages.
Status MpiTransport::rma_probe() {
    const char *op = "mpi conduit init";
    const std::string &want = base::knob_string(knob(Knob::MPI_RMA));
    const bool open_mpi = library_.find("Open MPI") != std::string::npos;
    if (want == "am" || want == "messages") {
        rma_ = want == "am" ? RmaMode::am : RmaMode::messages;
        return Status::ok;
    }
    static std::uint64_t word;
    MPI_Win w = MPI_WIN_NULL;
    int ok = MPI_Win_create(&word, sizeof word, 1, MPI_INFO_NULL, comm_, &w) == MPI_SUCCESS;
    if (ok) MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    if (ok && MPI_Win_lock_all(MPI_MODE_NOCHECK, w) != MPI_SUCCESS) ok = 0;
    if (ok) MPI_Win_unlock_all(w);
    int all = 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm_) != MPI_SUCCESS)
        return base::report(Status::transport, op, nullptr, "mpi: MPI_Allreduce failed");
    if (w != MPI_WIN_NULL) MPI_Win_free(&w);
    if (all == 0) {
        if (want != "auto")
            return base::report(Status::transport, op, "set SLUICE_MPI_RMA=messages or auto",
                                "mpi: SLUICE_MPI_RMA=%s but this MPI makes no window%s", want.c_str(),
                                ok ? " on another rank" : " here");
        base::say("mpi: this MPI makes no window; Put and Get go by messages");
        rma_ = RmaMode::messages;
        return Status::ok;
    }
    rma_ = want == "window" || (want == "auto" && open_mpi) ? RmaMode::window : RmaMode::get_window;
    return Status::ok;
}

// One window over every rank's segment in a passive-target epoch for the
// whole run.
Status MpiTransport::segment_connected(const std::vector<SegmentRecord> &all) {
    if (!has_window()) return Status::ok;
    const char *op = "segment_attach (mpi)";
    const SegmentRecord &mine = all[setup().rank];
    Guard g(*this);
    int rc = MPI_Win_create(reinterpret_cast<void *>(mine.base), static_cast<MPI_Aint>(mine.size), 1, MPI_INFO_NULL,
                            comm_, &win_);
    if (rc != MPI_SUCCESS) {
        win_ = MPI_WIN_NULL;
        return base::report(Status::transport, op, "set SLUICE_MPI_RMA=messages",
                            "mpi: MPI_Win_create over the %llu-byte segment: %s",
                            static_cast<unsigned long long>(mine.size), mpi_error(rc).c_str());
    }
    MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
    if ((rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, win_)) != MPI_SUCCESS)
        return base::report(Status::transport, op, "set SLUICE_MPI_RMA=messages",
                            "mpi: MPI_Win_lock_all: %s", mpi_error(rc).c_str());
    return Status::ok;
}

void MpiTransport::fini_impl() {
    receive_thread_stop();
    stats_report();
    close_all(true);
}

// The process ends without finalize: the receives are withdrawn, so that
// an MPI_Finalize of the bootstrap finds nothing of the conduit's pending.
void MpiTransport::exit_release_impl() {
    if (!lock_.try_lock()) return;
    close_all(false);
    lock_.unlock();
}

// The bootstrap may finalize MPI on this thread next: the lock is taken
// (while another thread is inside MPI through the conduit, it is waited
// for) and kept, so no thread of Sluice's enters MPI again; the receives
// are withdrawn.  A thread of this one's own inside the conduit (a
// handler does not run there) or one that does not come out in time: MPI
// is left alone.
bool MpiTransport::exit_quiet_impl(std::uint64_t deadline_ns) {
    if (common::in_conduit_lock) return false;
    while (!lock_.try_lock()) {
        if (base::now_ns() > deadline_ns) return false;
        base::cpu_relax();
    }
    close_all(false);
    return true;
}

// In reverse order of creation.  `collective`: every rank is here
// (finalize), so the window is freed too; without, it is left to
// MPI_Finalize.
void MpiTransport::close_all(bool collective) {
    if (comm_ == MPI_COMM_NULL || !mpi_running()) {
        comm_ = MPI_COMM_NULL;
        return;
    }
    if (win_ != MPI_WIN_NULL) {
        MPI_Win_unlock_all(win_);
        if (collective) MPI_Win_free(&win_);
        win_ = MPI_WIN_NULL;
    }
    // Only an active receive is cancelled (one taken and not yet posted
    // again, or that failed to start again, is inactive), then every one
    // freed.
    for (std::size_t i = 0; i < recv_requests_.size(); ++i) {
        MPI_Request &r = recv_requests_[i];
        if (r == MPI_REQUEST_NULL) continue;
        if (recv_active_[i]) {
            MPI_Cancel(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&r);
    }
    recv_requests_.clear();
    recv_active_.clear();
    recv_head_ = recv_taken_ = 0;
    // Puts and Gets by messages still in flight (only when the job ends
    // without finalize): receives cancelled, sends left to complete.
    if (by_messages(true)) {
        auto withdraw = [](MPI_Request &r, bool receive) {
            if (r == MPI_REQUEST_NULL) return;
            if (receive) MPI_Cancel(&r);
            MPI_Request_free(&r);
        };
        for (std::size_t i = 0; i < rma_requests_.size(); ++i)
            if (by_messages(posts_[i].write)) withdraw(rma_requests_[i], !posts_[i].write);
        for (std::size_t i = 0; i < serve_requests_.size(); ++i) withdraw(serve_requests_[i], serves_[i].put);
    }
    for (MPI_Request &r : send_requests_)
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    send_requests_.clear();
    if (collective) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
}

bool MpiTransport::stats_wanted() const { return base::knob_bool(knob(Knob::MPI_STATS)); }

void MpiTransport::stats_print() {
    const std::string extra = "window flushes " + std::to_string(mpi_counters_.flushes) + ", served " +
                              std::to_string(mpi_counters_.served) + ", Shorts spilled " +
                              std::to_string(mpi_counters_.spilled);
    common::stats_line(setup().rank, "mpi", path(setup().rank), counters_, receive_wakeups(), extra);
}

std::string MpiTransport::path(Rank peer) const {
    return library_ + ", MPI rank " + std::to_string(peer < mpi_rank_.size() ? mpi_rank_[peer] : -1);
}

} // namespace detail

std::unique_ptr<Transport> make_mpi_transport() { return std::make_unique<detail::MpiTransport>(); }

std::string probe() {
    if (detail::mpi_running()) return "";
    int finalized = 0;
    MPI_Finalized(&finalized);
    return finalized ? "MPI is already finalized"
                     : "MPI is not initialized (start the job with mpirun or srun and SLUICE_SPAWNER=mpi, or call "
                       "MPI_Init before sluice_init)";
}

std::string limits() {
    const std::size_t medium = base::knob_size(knob(Knob::MPI_MAX_MEDIUM));
    return "  mpi library             " + detail::library_name() + "\n  mpi max Medium payload   " +
           std::to_string(medium) + " bytes, SLUICE_MPI_MAX_MEDIUM (512 bytes to 1M); max Long the same when "
           "Put/Get go over AMs (SLUICE_MPI_RMA=am)\n";
}

} // namespace sluice::conduit::mpi
