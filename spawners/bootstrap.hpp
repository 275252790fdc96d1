// spawners/bootstrap.hpp - the bootstrap table: how a rank learns who it is
// and talks to the others before (and after) the conduits are up.
//
// Used only at start-up, for exit coordination and for abort; never on the
// AM or RMA path.  Backends: local (forked by sluicerun), ssh (started by a
// host's control process of sluicerun -spawner=ssh), pmix and pmi2 (spawners/
// pmi), mpi (libsluice-mpi registers it, src/mpi-interop), singleton.
// Selection order (spawners/README.md): SLUICE_SPAWNER, else the first
// backend whose probe recognises the environment; see select_bootstrap().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::spawner {

class Bootstrap {
public:
    virtual ~Bootstrap() = default;
    virtual const char *name() const = 0;
    virtual std::uint32_t rank() const = 0;
    virtual std::uint32_t size() const = 0;
    // Collective: every rank gives `in`; returns the contributions in rank
    // order (lengths may differ).  Returns false if the bootstrap failed.
    virtual bool allgather(const void *in, std::size_t len,
                           std::vector<std::string> &out) = 0;
    // Collective; by default an allgather of nothing.
    virtual bool barrier();
    // Collective: root's bytes reach every rank; by default over allgather.
    virtual bool broadcast(std::uint32_t root, std::string &data);
    // The rank is leaving with `code` (graceful or not); the launcher uses the
    // first code it hears as the job's.  `in_signal`: the bootstrap's own
    // library may be interrupted (a signal, or exit() called from inside
    // it): do only async-signal-safe work and call nothing of it.
    virtual void exit_notify(int code, bool in_signal) { (void)code, (void)in_signal; }
    // The exit protocol starts on this rank, before it tells the others:
    // release what only this rank can (the names given to
    // cleanup_register).  Once every rank has arrived, the first to leave
    // may make the launcher kill the rest wherever they are.
    virtual void exit_begin() {}
    // Coordination failed: end the whole job now with `code`.  Does not return.
    [[noreturn]] virtual void abort(int code) = 0;
    // Normal end of bootstrap use (finalize or graceful exit).
    virtual void fini() {}
    // A shared-memory name the launcher must unlink at job end if the rank
    // cannot (crash between create and unlink).
    virtual void cleanup_register(const std::string &shm_name) { (void)shm_name; }
    // Every shared-memory name that begins with `prefix` belongs to this job
    // on this host.  A rank that never answers the exit protocol (stopped,
    // or starved of the processor) may own one when another rank aborts the
    // job; under a launcher that cleans nothing, the aborting rank unlinks
    // them all.
    virtual void cleanup_register_job(const std::string &prefix) { (void)prefix; }
    // The job is deliberately a part of what the launcher started (the mpi
    // backend over a sub-communicator), so its size may differ from the
    // launcher's.
    virtual bool subset() const { return false; }
};

// For backends with no launcher of ours to clean up after them (mpi, pmix,
// pmi2): the shared-memory names registered during start-up, unlinked when
// the job aborts.  unlink_all() may run inside a signal handler: it neither
// allocates nor frees, and skips the list if another thread holds it.
// unlink_job() unlinks, besides, every name in /dev/shm with the job's
// prefix (other ranks' too), with system calls only.
class ShmNames {
public:
    void add(const std::string &name) {
        std::lock_guard<std::mutex> lock(mutex_);
        names_.push_back(name);
    }
    void job(const std::string &prefix) {
        std::lock_guard<std::mutex> lock(mutex_);
        job_prefix_ = prefix;
    }
    void unlink_all() noexcept;
    void unlink_job() noexcept;
    // For a rank leaving with `code`: a non-zero code ends the job under
    // these launchers the moment the rank is gone (they kill the others
    // wherever they are), so a rank that has not unlinked its own names by
    // then never will: unlink the job's.  Code 0: only this rank's.
    void unlink_leaving(int code) noexcept {
        if (code != 0) unlink_job();
        else unlink_all();
    }

private:
    std::mutex mutex_;
    std::vector<std::string> names_;
    std::string job_prefix_;  // "/sluice.<job>.", as shm_open takes it
};

// "Sluice rank R ends the job with code C" for an abort call, formatted
// without allocating (the exit path may run in a signal handler).
struct AbortMessage {
    char text[80];
    AbortMessage(std::uint32_t rank, int code) {
        std::snprintf(text, sizeof text, "Sluice rank %u ends the job with code %d", rank, code);
    }
};

// Picks and starts the backend for this process; on failure returns null and
// sets `error` to "what went wrong; fix: what to do".
std::unique_ptr<Bootstrap> select_bootstrap(std::string &error);

// Backend registry, so spawners living in other libraries (libsluice-mpi) can
// add themselves.  `probe` says whether the environment shows this backend.
struct BootstrapBackend {
    const char *name;
    bool (*probe)();
    std::unique_ptr<Bootstrap> (*create)(std::string &error);  // error: "what; fix: how"
};
void bootstrap_backend_register(const BootstrapBackend &backend);

// The mark an MPI or PMI launcher (mpirun of Open MPI or MPICH, srun with
// PMI) leaves in the environment of the processes it starts: the variable
// found and the job size it announces (0 when that variable holds no size).
struct LauncherMark {
    const char *variable = nullptr;  // null: no such launcher
    std::uint32_t size = 0;
};
LauncherMark mpi_launcher_mark();
// Any launcher's mark: the MPI launchers' above, then srun's count of the
// tasks of its step (set with or without a PMI).
LauncherMark launcher_mark();
const std::vector<BootstrapBackend> &bootstrap_backends();

// libsluice-mpi, for a program that does not link it: the mpi bootstrap
// backend and the mpi conduit register when it loads (before the first
// transport_registry() call, for the conduit).  SLUICE_MPI_LIBRARY, else
// with LAUNCHER_FLAVOR the build for the MPI of this process (the MPI
// library it has loaded, else the one whose mpirun started it) before the
// default build, without it the default build first; each beside libsluice,
// then wherever the dynamic linker finds it.  Empty, or why none loaded
// (the last dlerror).
std::string mpi_library_load(bool launcher_flavor);

} // namespace sluice::spawner
