// spawners/pmi/bootstrap_pmi2.cpp - the rank side of spawner pmi over
// Slurm's PMI2 (srun --mpi=pmi2): rank and size from PMI2_Init, start-up
// data through the step's key-value store.
//
// PMI2 values are strings of at most PMI2_MAX_VALLEN characters: binary
// contributions travel base64url-encoded (no ';', which the wire protocol
// escapes, and no '=') in chunks, the first chunk carrying the chunk count.
// Sharing: if PMI2 is already initialized in the process (an MPI did it),
// Sluice uses it and never finalizes it.  Slurm's client library is not
// thread-safe: every call here holds one lock.
#include "spawners/bootstrap.hpp"

#include "base/status.hpp"
#include "sluice_config.h"

#include SLUICE_PMI2_HEADER

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

namespace sluice::spawner::pmi {
namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
// Encoded characters per value: well inside PMI2_MAX_VALLEN with the count
// in front, and inside one wire command with key and framing.
constexpr std::size_t chunk_chars = 512;
static_assert(chunk_chars + 16 < PMI2_MAX_VALLEN);

std::string encode(const unsigned char *in, std::size_t len) {
    std::string out;
    out.reserve((len + 2) / 3 * 4);
    for (std::size_t i = 0; i < len; i += 3) {
        const std::uint32_t n = static_cast<std::uint32_t>(in[i]) << 16 |
                                (i + 1 < len ? static_cast<std::uint32_t>(in[i + 1]) << 8 : 0) |
                                (i + 2 < len ? in[i + 2] : 0);
        const std::size_t chars = len - i >= 3 ? 4 : len - i + 1;
        for (std::size_t c = 0; c < chars; ++c) out += alphabet[(n >> (18 - 6 * c)) & 63];
    }
    return out;
}

bool decode(std::string_view in, std::string &out) {
    if (in.size() % 4 == 1) return false;
    out.clear();
    std::uint32_t bits = 0;
    int held = 0;
    for (char ch : in) {
        const char *at = std::strchr(alphabet, ch);
        if (!at || ch == '\0') return false;
        bits = bits << 6 | static_cast<std::uint32_t>(at - alphabet);
        held += 6;
        if (held >= 8) {
            held -= 8;
            out += static_cast<char>((bits >> held) & 0xff);
        }
    }
    return true;
}

// PMI2_Abort ends the process with exit(1); an exit handler registered just
// before it runs first (handlers run in reverse order) and keeps the code.
std::atomic<int> abort_code{1};
void exit_with_abort_code() { ::_exit(abort_code.load()); }

class Pmi2Bootstrap final : public Bootstrap {
public:
    ~Pmi2Bootstrap() override { fini(); }
    const char *name() const override { return "pmi2"; }
    std::uint32_t rank() const override { return rank_; }
    std::uint32_t size() const override { return size_; }

    bool start(std::string &error) {
        std::lock_guard<std::mutex> lock(mutex_);
        int spawned = 0, size = 0, rank = 0, appnum = 0;
        if (PMI2_Initialized()) {
            PMI2_Job_GetRank(&rank);
            PMI2_Info_GetSize(&size);
            base::say("pmi2: PMI2 was already initialized in this process: shared, never finalized by Sluice");
        } else {
            if (const int rc = PMI2_Init(&spawned, &size, &rank, &appnum); rc != PMI2_SUCCESS) {
                error = "PMI2_Init failed with code " + std::to_string(rc) +
                        "; fix: start the program with srun --mpi=pmi2, or choose another spawner with SLUICE_SPAWNER";
                return false;
            }
            we_initialized_ = true;
        }
        if (size < 1 || rank < 0 || rank >= size) {
            error = "PMI2 gave rank " + std::to_string(rank) + " of " + std::to_string(size) +
                    "; fix: start the program with srun --mpi=pmi2";
            return false;
        }
        char id[PMI2_MAX_VALLEN + 1] = {};
        if (const int rc = PMI2_Job_GetId(id, sizeof id - 1); rc != PMI2_SUCCESS) {
            error = "PMI2_Job_GetId failed with code " + std::to_string(rc) +
                    "; fix: start the program with srun --mpi=pmi2";
            return false;
        }
        job_id_ = id;
        rank_ = static_cast<std::uint32_t>(rank);
        size_ = static_cast<std::uint32_t>(size);
        base::say("pmi2: rank %u of %u, PMI2 job %s", rank_, size_, job_id_.c_str());
        return true;
    }

    bool allgather(const void *in, std::size_t len, std::vector<std::string> &out) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const std::string prefix = "sluice" + std::to_string(sequence_++) + ".";
        const std::string encoded = encode(static_cast<const unsigned char *>(in), len);
        const std::size_t chunks = encoded.empty() ? 1 : (encoded.size() + chunk_chars - 1) / chunk_chars;
        for (std::size_t c = 0; c < chunks; ++c) {
            std::string value = encoded.substr(c * chunk_chars, chunk_chars);
            if (c == 0) value = std::to_string(chunks) + "." + value;
            if (const int rc = PMI2_KVS_Put(key(prefix, rank_, c).c_str(), value.c_str()); rc != PMI2_SUCCESS)
                return failed("PMI2_KVS_Put", rc);
        }
        if (const int rc = PMI2_KVS_Fence(); rc != PMI2_SUCCESS) return failed("PMI2_KVS_Fence", rc);
        std::vector<std::string> all(size_);
        for (std::uint32_t r = 0; r < size_; ++r) {
            std::string text, value;
            std::size_t count = 1;
            for (std::size_t c = 0; c < count; ++c) {
                if (!get(key(prefix, r, c), r, value)) return false;
                if (c == 0) {
                    const std::size_t dot = value.find('.');
                    count = dot == std::string::npos ? 0 : std::strtoul(value.c_str(), nullptr, 10);
                    if (count == 0) return failed(("a malformed value from rank " + std::to_string(r)).c_str(), 0);
                    value.erase(0, dot + 1);
                }
                text += value;
            }
            if (!decode(text, all[r])) return failed(("undecodable data from rank " + std::to_string(r)).c_str(), 0);
        }
        out.swap(all);
        return true;
    }

    bool barrier() override {
        std::lock_guard<std::mutex> lock(mutex_);
        const int rc = PMI2_KVS_Fence();
        return rc == PMI2_SUCCESS || failed("PMI2_KVS_Fence", rc);
    }

    // No lock: the exit path may have interrupted a PMI2 call of this
    // process; the job ends either way.
    [[noreturn]] void abort(int code) override {
        shm_names_.unlink_job();
        if (we_initialized_ || PMI2_Initialized()) {
            abort_code.store(code);
            std::atexit(exit_with_abort_code);
            const AbortMessage message(rank_, code);
            PMI2_Abort(1, message.text);  // the whole job; exits
        }
        ::_exit(code);
    }

    // Nobody else unlinks our names under this launcher.
    void exit_notify(int code, bool in_signal) override {
        shm_names_.unlink_leaving(code);
        if (in_signal) in_signal_.store(true);
    }

    // Only what Sluice initialized, and never where PMI2 may be interrupted.
    void fini() override {
        if (in_signal_.load()) return;
        std::lock_guard<std::mutex> lock(mutex_);
        if (!we_initialized_) return;
        we_initialized_ = false;
        (void)PMI2_Finalize();
    }

    void cleanup_register(const std::string &name) override { shm_names_.add(name); }
    void cleanup_register_job(const std::string &prefix) override { shm_names_.job(prefix); }

private:
    static std::string key(const std::string &prefix, std::uint32_t rank, std::size_t chunk) {
        return prefix + std::to_string(rank) + (chunk ? "." + std::to_string(chunk) : std::string());
    }

    bool get(const std::string &k, std::uint32_t from, std::string &value) {
        char buffer[PMI2_MAX_VALLEN + 1] = {};
        int length = 0;
        const int rc = PMI2_KVS_Get(job_id_.c_str(), static_cast<int>(from), k.c_str(), buffer, sizeof buffer - 1,
                                    &length);
        if (rc != PMI2_SUCCESS) return failed(("PMI2_KVS_Get of " + k).c_str(), rc);
        if (length < 0 || static_cast<std::size_t>(length) >= sizeof buffer)
            return failed(("PMI2_KVS_Get of " + k + " (value too long)").c_str(), 0);
        value.assign(buffer, static_cast<std::size_t>(length));
        return true;
    }

    // The caller (src/core) reports the failed collective with its fix; the
    // PMI2 detail is narrated under SLUICE_VERBOSE.
    bool failed(const char *what, int rc) const {
        base::say("pmi2: %s failed (code %d)", what, rc);
        return false;
    }


    std::uint32_t rank_ = 0, size_ = 1;
    std::string job_id_;
    bool we_initialized_ = false;
    std::atomic<bool> in_signal_{false};
    std::uint64_t sequence_ = 0;
    std::mutex mutex_;  // every PMI2 call
    ShmNames shm_names_;  // unlinked on abort: nobody else would under this launcher
};

bool prefix_is(const char *value, std::string_view prefix) {
    return value && std::string_view(value).substr(0, prefix.size()) == prefix;
}

// An MPI of this process is initialized but Slurm's PMI2 client is not: the
// MPI speaks PMI on PMI_FD with a client of its own (MPICH's is built in),
// and a second client on the same socket would hang both.  MPI_Initialized
// may be called at any time; it is looked up, libsluice does not link MPI.
bool foreign_pmi_client() {
    using Initialized = int (*)(int *);
    auto mpi_initialized = reinterpret_cast<Initialized>(::dlsym(RTLD_DEFAULT, "MPI_Initialized"));
    int initialized = 0;
    return mpi_initialized && mpi_initialized(&initialized) == 0 && initialized && !PMI2_Initialized();
}

} // namespace

// srun --mpi=pmi2 hands the rank a PMI socket (PMI_FD) and names the step
// (PMI_JOBID); MPICH's hydra sets PMI_FD without PMI_JOBID and is left to
// the mpi backend, which is probed first.  Not when an MPI already holds the
// socket: the singleton fallback then names the fix (libsluice-mpi).
bool pmi2_probe() {
    return std::getenv("PMI_FD") &&
           (std::getenv("PMI_JOBID") || prefix_is(std::getenv("SLURM_MPI_TYPE"), "pmi2")) && !foreign_pmi_client();
}

std::unique_ptr<Bootstrap> pmi2_create(std::string &error) {
    if (!std::getenv("PMI_FD") && !PMI2_Initialized()) {
        error = "the pmi2 bootstrap needs the PMI socket srun --mpi=pmi2 gives its tasks, and PMI_FD is not set; "
                "fix: start the program with srun --mpi=pmi2 (or sluicerun -spawner=pmi with SLUICE_PMI=pmi2)";
        return nullptr;
    }
    if (foreign_pmi_client()) {
        error = "MPI is initialized in this process and talks to srun's PMI socket with its own PMI2 client, "
                "which Sluice cannot share; fix: bootstrap Sluice over MPI: link libsluice-mpi "
                "(-Wl,--no-as-needed -lsluice-mpi) or set SLUICE_SPAWNER=mpi";
        return nullptr;
    }
    auto b = std::make_unique<Pmi2Bootstrap>();
    if (!b->start(error)) return nullptr;
    return b;
}

} // namespace sluice::spawner::pmi
