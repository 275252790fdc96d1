// spawners/pmi/bootstrap_pmix.cpp - the rank side of spawner pmi over PMIx:
// a rank started by srun --mpi=pmix or by a PMIx server's mpirun (Open MPI,
// PRRTE) learns its rank and the job size from the server and exchanges its
// start-up data through the server's key-value store.
//
// Sharing (docs/mpi-hybrid.md): the PMIx client library counts
// PMIx_Init calls and finalizes on the last PMIx_Finalize.  Sluice always
// takes one reference and drops it in fini(), so PMIx that an MPI initialized
// (before or after Sluice) stays up as long as that MPI holds its own, and is
// never finalized under it.
#include "spawners/bootstrap.hpp"

#include "base/status.hpp"

#include <pmix.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace sluice::spawner::pmi {
namespace {

// The job size arrives as whatever integer type the server chose.
bool value_number(const pmix_value_t &v, std::uint64_t &out) {
    switch (v.type) {
    case PMIX_UINT32: out = v.data.uint32; return true;
    case PMIX_UINT16: out = v.data.uint16; return true;
    case PMIX_UINT8: out = v.data.uint8; return true;
    case PMIX_UINT64: out = v.data.uint64; return true;
    case PMIX_UINT: out = v.data.uint; return true;
    case PMIX_SIZE: out = v.data.size; return true;
    case PMIX_INT: out = v.data.integer >= 0 ? static_cast<std::uint64_t>(v.data.integer) : 0; return true;
    case PMIX_INT32: out = v.data.int32 >= 0 ? static_cast<std::uint64_t>(v.data.int32) : 0; return true;
    default: return false;
    }
}

class PmixBootstrap final : public Bootstrap {
public:
    ~PmixBootstrap() override { fini(); }
    const char *name() const override { return "pmix"; }
    std::uint32_t rank() const override { return rank_; }
    std::uint32_t size() const override { return size_; }

    bool start(std::string &error) {
        const bool shared = PMIx_Initialized() != 0;
        pmix_status_t rc = PMIx_Init(&self_, nullptr, 0);
        if (rc != PMIX_SUCCESS) {
            const char *ns = std::getenv("PMIX_NAMESPACE");
            error = std::string("PMIx_Init failed: ") + PMIx_Error_string(rc) + " (PMIX_NAMESPACE=" + (ns ? ns : "unset") +
                    "); fix: start the program with srun --mpi=pmix or an mpirun that serves PMIx (Open MPI's), "
                    "or choose another spawner with SLUICE_SPAWNER";
            return false;
        }
        referenced_ = true;
        base::say("pmix: PMIx_Init: namespace %s rank %u%s", self_.nspace, self_.rank,
                  shared ? " (PMIx was already initialized in this process: shared)" : "");
        pmix_proc_t job{};
        std::memcpy(job.nspace, self_.nspace, sizeof job.nspace);
        job.rank = PMIX_RANK_WILDCARD;
        pmix_value_t *value = nullptr;
        rc = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &value);
        std::uint64_t size = 0;
        const bool known = rc == PMIX_SUCCESS && value && value_number(*value, size);
        if (value) PMIX_VALUE_RELEASE(value);
        if (!known || size == 0 || size > 0xffffffffu || self_.rank >= size) {
            error = std::string("PMIx_Get of PMIX_JOB_SIZE in namespace ") + self_.nspace + " failed: " +
                    (rc == PMIX_SUCCESS ? "no usable number" : PMIx_Error_string(rc)) +
                    "; fix: use a launcher whose PMIx server announces the job size (Slurm 20.11 or later, "
                    "Open MPI 4 or later)";
            fini();
            return false;
        }
        rank_ = self_.rank;
        size_ = static_cast<std::uint32_t>(size);
        return true;
    }

    // Each contribution goes under a key of its own (a new sequence number
    // per call: every rank calls the collectives in the same order), the
    // fence with PMIX_COLLECT_DATA brings every rank's value to every host,
    // and the gets are then answered locally.
    bool allgather(const void *in, std::size_t len, std::vector<std::string> &out) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string key = "sluice.allgather." + std::to_string(sequence_++);
        pmix_value_t value{};
        value.type = PMIX_BYTE_OBJECT;
        value.data.bo.bytes = len ? const_cast<char *>(static_cast<const char *>(in)) : nullptr;
        value.data.bo.size = len;
        pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);  // copies the bytes
        if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
        if (rc != PMIX_SUCCESS) return failed("PMIx_Put/PMIx_Commit", rc);
        if (!fence(true)) return false;
        std::vector<std::string> all(size_);
        pmix_proc_t peer{};
        std::memcpy(peer.nspace, self_.nspace, sizeof peer.nspace);
        for (std::uint32_t r = 0; r < size_; ++r) {
            peer.rank = r;
            pmix_value_t *got = nullptr;
            rc = PMIx_Get(&peer, key.c_str(), nullptr, 0, &got);
            const bool bytes = rc == PMIX_SUCCESS && got && got->type == PMIX_BYTE_OBJECT;
            if (bytes && got->data.bo.size) all[r].assign(got->data.bo.bytes, got->data.bo.size);
            if (got) PMIX_VALUE_RELEASE(got);
            if (!bytes) return failed(("PMIx_Get of " + key + " from rank " + std::to_string(r)).c_str(), rc);
        }
        out.swap(all);
        return true;
    }

    bool barrier() override {
        std::lock_guard<std::mutex> lock(mutex_);
        return fence(false);
    }

    [[noreturn]] void abort(int code) override {
        shm_names_.unlink_job();
        if (referenced_) {
            const AbortMessage message(rank_, code);
            (void)PMIx_Abort(code, message.text, nullptr, 0);  // every process of our namespace
        }
        ::_exit(code);
    }

    // A graceful exit finalizes (Open MPI's mpirun calls a rank that exits
    // after PMIx_Init without PMIx_Finalize a failure), but not when PMIx
    // may be interrupted (`in_signal`).  Nobody else unlinks our names.
    void exit_notify(int code, bool in_signal) override {
        shm_names_.unlink_leaving(code);
        if (in_signal) in_signal_.store(true);
    }

    void fini() override {
        if (in_signal_.load() || !referenced_.exchange(false)) return;
        (void)PMIx_Finalize(nullptr, 0);  // drops our reference; an MPI's stays
    }

    void cleanup_register(const std::string &name) override { shm_names_.add(name); }
    void cleanup_register_job(const std::string &prefix) override { shm_names_.job(prefix); }

private:
    bool fence(bool collect) {
        pmix_info_t info;
        std::memset(&info, 0, sizeof info);
        bool yes = true;
        PMIx_Info_load(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
        const pmix_status_t rc = PMIx_Fence(nullptr, 0, collect ? &info : nullptr, collect ? 1 : 0);
        return rc == PMIX_SUCCESS || failed("PMIx_Fence", rc);
    }

    // The caller (src/core) reports the failed collective with its fix; the
    // PMIx detail is narrated under SLUICE_VERBOSE.
    bool failed(const char *what, pmix_status_t rc) const {
        base::say("pmix: %s failed: %s", what, PMIx_Error_string(rc));
        return false;
    }

    pmix_proc_t self_{};
    std::uint32_t rank_ = 0, size_ = 1;
    std::atomic<bool> referenced_{false};  // our PMIx_Init not yet balanced by PMIx_Finalize
    std::atomic<bool> in_signal_{false};
    std::uint64_t sequence_ = 0;
    std::mutex mutex_;  // sequence numbers in call order
    ShmNames shm_names_;  // unlinked on abort: nobody else would under this launcher
};

} // namespace

// A PMIx server started us: srun --mpi=pmix, prterun and Open MPI's mpirun
// set both.
bool pmix_probe() { return std::getenv("PMIX_NAMESPACE") && std::getenv("PMIX_RANK"); }

std::unique_ptr<Bootstrap> pmix_create(std::string &error) {
    auto b = std::make_unique<PmixBootstrap>();
    if (!b->start(error)) return nullptr;
    return b;
}

} // namespace sluice::spawner::pmi
