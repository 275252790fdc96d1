// src/mpi-interop/bootstrap_mpi.cpp - the mpi bootstrap backend (libsluice-mpi).
//
// A Sluice program started by mpirun, or one that already called MPI_Init,
// exchanges its start-up data over MPI.  The rules (docs/mpi-hybrid.md):
// initialize MPI only if nobody has, and remember it; work on a private
// duplicate of the communicator; hook MPI_Finalize through an attribute on
// MPI_COMM_SELF so Sluice quiesces first; finalize MPI only if Sluice
// initialized it.  MPI is used at start-up, finalize and exit, never on the
// AM or RMA path.
#include "mpi-interop/mpi_interop.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <sluice.h>

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <execinfo.h>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace sluice::mpi_interop {
namespace {

struct Shared {
    MPI_Comm parent = MPI_COMM_NULL;  // set by MPIX_Sluice_init; else MPI_COMM_WORLD
    bool we_initialized = false;      // Sluice called MPI_Init_thread
    bool in_mpi_finalize = false;     // running inside MPI_Finalize's callback
    bool exiting = false;             // the exit protocol finalizes MPI
    MPI_Comm job = MPI_COMM_NULL;     // the running job's private communicator
    int self_keyval = MPI_KEYVAL_INVALID;
};
Shared shared;

// Whether a rank leaving with a non-zero code calls MPI_Finalize first (see
// MpiBootstrap::exit_notify).
#if defined(OPEN_MPI)
constexpr bool finalize_before_failing = false;
#else
constexpr bool finalize_before_failing = true;
#endif

const char *level_name(int level) {
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "an unknown thread level";
}

// Whether SLUICE_NETWORK names the mpi conduit, which calls MPI on every
// AM and RMA, from whichever thread calls Sluice.
bool network_is_mpi() {
    const std::string &list = base::knob_string(base::Knob::NETWORK);
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        if (list.compare(at, comma - at, "mpi") == 0) return true;
        at = comma + 1;
    }
    return false;
}

// The thread level Sluice needs: MPI is called by the thread in sluice_init
// and sluice_finalize, and in exit by whichever thread exits; the progress
// thread may be that thread, so it needs calls from any one thread at a time.
// The mpi conduit calls MPI from any thread that calls Sluice (one at a
// time, under its lock), and from Sluice's own threads beside the
// program's: when Sluice initializes MPI for it (`initializing`) it asks
// for serialized, or multiple with those threads; an MPI the program
// initialized is judged by the conduit (src/conduits/mpi).
bool required_level(int &level, bool initializing, std::string &error) {
    const std::string &knob = base::knob_string(base::Knob::MPI_THREAD);
    const bool threads = base::knob_bool(base::Knob::PROGRESS_THREAD) || base::knob_bool(base::Knob::RCV_THREAD);
    if (knob.empty() || knob == "auto") {
        level = base::knob_bool(base::Knob::PROGRESS_THREAD) ? MPI_THREAD_SERIALIZED : MPI_THREAD_SINGLE;
        if (initializing && network_is_mpi()) level = threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
        return true;
    }
    static const struct { const char *name; int level; } names[] = {
        {"single", MPI_THREAD_SINGLE},
        {"funneled", MPI_THREAD_FUNNELED},
        {"serialized", MPI_THREAD_SERIALIZED},
        {"multiple", MPI_THREAD_MULTIPLE},
    };
    for (const auto &n : names)
        if (knob == n.name) {
            level = n.level;
            if (base::knob_bool(base::Knob::PROGRESS_THREAD) && level < MPI_THREAD_SERIALIZED) level = MPI_THREAD_SERIALIZED;
            return true;
        }
    error = "SLUICE_MPI_THREAD=" + knob + " is not a thread level; fix: use single, funneled, serialized, multiple or auto";
    return false;
}

// MPI_Finalize deletes the attributes of MPI_COMM_SELF first, while MPI still
// works: Sluice finalizes there (collectively, as MPI_Finalize is), so its
// traffic is drained and its shared memory released before MPI goes away.
int on_self_delete(MPI_Comm, int, void *, void *) {
    shared.in_mpi_finalize = true;
    if (!shared.exiting && sluice_initialized()) (void)sluice_finalize();
    return MPI_SUCCESS;
}

// This thread is inside one of the backend's MPI calls.  MPICH's abort
// path calls exit() from inside its progress loop; an exit hook that got
// here must not call MPI again (UCX asserts on the re-entry).
thread_local int in_mpi = 0;
struct InMpi {
    InMpi() { ++in_mpi; }
    ~InMpi() { --in_mpi; }
    InMpi(const InMpi &) = delete;
    InMpi &operator=(const InMpi &) = delete;
};

// Whether this thread is inside MPI: one of our own calls, or any frame of
// the MPI library on the stack (MPICH's abort of a communicator exits from
// an active message handler inside whatever MPI call the program made).
bool inside_mpi() {
    if (in_mpi) return true;
    Dl_info mpi{};
    if (!::dladdr(reinterpret_cast<void *>(&PMPI_Finalize), &mpi) || !mpi.dli_fbase) return false;
    void *frames[128];
    const int n = ::backtrace(frames, 128);
    for (int i = 0; i < n; ++i) {
        Dl_info at{};
        if (::dladdr(frames[i], &at) && at.dli_fbase == mpi.dli_fbase) return true;
    }
    return false;
}

bool mpi_finalized() {
    int done = 0;
    MPI_Finalized(&done);
    return done != 0;
}

class MpiBootstrap final : public spawner::Bootstrap {
public:
    ~MpiBootstrap() override {
        if (shared.job == comm_) shared.job = MPI_COMM_NULL;
    }
    const char *name() const override { return "mpi"; }
    std::uint32_t rank() const override { return rank_; }
    std::uint32_t size() const override { return size_; }

    bool start(std::string &error) {
        int initialized = 0;
        MPI_Initialized(&initialized);
        int level = MPI_THREAD_SINGLE;
        if (!required_level(level, !initialized, error)) return false;
        if (mpi_finalized()) {
            error = "MPI is already finalized; fix: initialize Sluice before MPI_Finalize";
            return false;
        }
        if (!initialized) {
            int provided = MPI_THREAD_SINGLE;
            if (MPI_Init_thread(nullptr, nullptr, level, &provided) != MPI_SUCCESS) {
                error = "MPI_Init_thread failed; fix: start the program with mpirun (or the launcher of its MPI)";
                return false;
            }
            if (provided < level) {
                error = std::string("Sluice asked MPI for ") + level_name(level) + " and got " + level_name(provided) +
                        "; fix: use an MPI built with thread support, or lower SLUICE_MPI_THREAD, or unset SLUICE_PROGRESS_THREAD";
                MPI_Finalize();  // ours, and unusable: leave no MPI behind the failed start
                return false;
            }
            shared.we_initialized = true;
        } else {
            int provided = MPI_THREAD_SINGLE;
            MPI_Query_thread(&provided);
            if (provided < level) {
                error = std::string("the application initialized MPI with ") + level_name(provided) + ", but Sluice needs " +
                        level_name(level) +
                        (base::knob_bool(base::Knob::PROGRESS_THREAD) ? " for SLUICE_PROGRESS_THREAD" : " (SLUICE_MPI_THREAD)") +
                        "; fix: call MPI_Init_thread with at least that level, or unset SLUICE_PROGRESS_THREAD";
                return false;
            }
        }
        MPI_Comm parent = shared.parent == MPI_COMM_NULL ? MPI_COMM_WORLD : shared.parent;
        if (MPI_Comm_dup(parent, &comm_) != MPI_SUCCESS) {
            error = "MPI_Comm_dup of the communicator failed; fix: pass a valid communicator that MPI_Finalize has not freed";
            return false;
        }
        int r = 0, n = 0;
        MPI_Comm_rank(comm_, &r);
        MPI_Comm_size(comm_, &n);
        rank_ = static_cast<std::uint32_t>(r);
        size_ = static_cast<std::uint32_t>(n);
        shared.job = comm_;
        if (shared.self_keyval == MPI_KEYVAL_INVALID) {
            MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_self_delete, &shared.self_keyval, nullptr);
            MPI_Comm_set_attr(MPI_COMM_SELF, shared.self_keyval, nullptr);
        }
        return true;
    }

    bool allgather(const void *in, std::size_t len, std::vector<std::string> &out) override {
        InMpi guard;
        const int mine = static_cast<int>(len);
        std::vector<int> lengths(size_), offsets(size_);
        if (MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_) != MPI_SUCCESS) return false;
        int total = 0;
        for (std::uint32_t i = 0; i < size_; ++i) {
            offsets[i] = total;
            total += lengths[i];
        }
        std::vector<char> all(static_cast<std::size_t>(total) + 1);
        if (MPI_Allgatherv(in, mine, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, comm_) != MPI_SUCCESS)
            return false;
        out.resize(size_);
        for (std::uint32_t i = 0; i < size_; ++i) out[i].assign(all.data() + offsets[i], lengths[i]);
        return true;
    }

    bool barrier() override {
        InMpi guard;
        return MPI_Barrier(comm_) == MPI_SUCCESS;
    }

    // MPI_Abort on MPI_COMM_WORLD when the job is all of it: MPICH 4.0 ends
    // a job through its launcher (PMI abort, which hydra reports with the
    // code) only for MPI_COMM_WORLD; on a duplicate it signals the peers
    // itself, which a rank busy in its own code never hears.
    [[noreturn]] void abort(int code) override {
        shm_names_.unlink_job();
        if (!inside_mpi() && !mpi_finalized())
            MPI_Abort(comm_ == MPI_COMM_NULL || !subset() ? MPI_COMM_WORLD : comm_, code);
        ::_exit(code);
    }

    // A rank leaving by the exit protocol (sluice_exit, return from main,
    // a signal).  The job's code reaches mpirun as this process's exit
    // status.  Open MPI calls an exit 0 without MPI_Finalize improper and
    // fails the job; MPICH's hydra takes a non-zero exit without it for a
    // crash and SIGKILLs the ranks still on their way out, so the job ends
    // with 9 instead of the code.  Every rank is here (a graceful exit is
    // collective), so finalize MPI if nobody has -- except for a non-zero
    // code under Open MPI, which reports that code without MPI_Finalize and
    // whose mpirun (4.1 with PMIx 4.2) can crash in PMIx_server_finalize
    // when one rank waits in MPI_Finalize's fence while another, stopped
    // inside an MPI call, exits without it.  The runtime calls this from
    // the main thread whenever that thread can be reached.  `in_signal`:
    // MPI may be interrupted (exit() from inside it), leave it alone.
    // Either way no shared-memory name is left: under mpirun nobody else
    // would unlink it.
    void exit_notify(int code, bool in_signal) override {
        shm_names_.unlink_leaving(code);
        exit_in_signal_ = in_signal;
        if (in_signal || mpi_finalized() || inside_mpi() || (code != 0 && !finalize_before_failing)) {
            exit_in_signal_ = true;  // fini() leaves MPI alone too
            return;
        }
        shared.exiting = true;
        if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
        MPI_Finalize();
    }

    void fini() override {
        shared.job = MPI_COMM_NULL;
        if (!exit_in_signal_ && !mpi_finalized() && !inside_mpi()) {
            // Sluice is going away: the MPI_COMM_SELF callback must not
            // finalize it again over the communicator freed here.
            shared.exiting = true;
            if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
            if (shared.we_initialized && !shared.in_mpi_finalize) MPI_Finalize();
        }
        comm_ = MPI_COMM_NULL;
    }

    bool subset() const override {
        int world = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        return size_ < static_cast<std::uint32_t>(world);
    }

    void cleanup_register(const std::string &name) override { shm_names_.add(name); }
    void cleanup_register_job(const std::string &prefix) override { shm_names_.job(prefix); }
    // Open MPI's mpirun kills the other ranks when the first exits with a
    // non-zero code (they do not wait in MPI_Finalize, see exit_notify): a
    // name left for exit_notify could stay in /dev/shm.
    void exit_begin() override { shm_names_.unlink_all(); }

private:
    MPI_Comm comm_ = MPI_COMM_NULL;
    bool exit_in_signal_ = false;
    std::uint32_t rank_ = 0, size_ = 1;
    spawner::ShmNames shm_names_;  // unlinked on abort: nobody else would under this launcher
};

// mpirun of Open MPI or MPICH (hydra), srun with PMI: the environment shows
// an MPI launcher.  MPI already initialized counts too.
bool mpi_probe() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return true;
    return spawner::mpi_launcher_mark().variable != nullptr;
}

std::unique_ptr<spawner::Bootstrap> mpi_create(std::string &error) {
    auto b = std::make_unique<MpiBootstrap>();
    if (!b->start(error)) return nullptr;
    return b;
}

} // namespace

void register_backend() {
    static std::once_flag once;
    std::call_once(once, [] { spawner::bootstrap_backend_register({"mpi", mpi_probe, mpi_create}); });
}

void parent_set(MPI_Comm comm) { shared.parent = comm; }
MPI_Comm job_comm() { return shared.job; }

// Linked in, the backend is there before main (and so before sluice_init).
__attribute__((constructor)) void register_at_load() { register_backend(); }

} // namespace sluice::mpi_interop
