// spawners/bootstrap.cpp - backend registry, the singleton backend, and the
// run-time choice of backend.
#include "spawners/bootstrap.hpp"

#include "base/knobs.hpp"
#include "sluice_config.h"

#include <cstdlib>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <string_view>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sluice::spawner {

namespace local {
bool local_probe();
std::unique_ptr<Bootstrap> local_create(std::string &error);
} // namespace local
#if SLUICE_SPAWNER_SSH
namespace ssh {
bool ssh_probe();
std::unique_ptr<Bootstrap> ssh_create(std::string &error);
} // namespace ssh
#endif
#if SLUICE_SPAWNER_PMIX
namespace pmi {
bool pmix_probe();
std::unique_ptr<Bootstrap> pmix_create(std::string &error);
} // namespace pmi
#endif
#if SLUICE_SPAWNER_PMI2
namespace pmi {
bool pmi2_probe();
std::unique_ptr<Bootstrap> pmi2_create(std::string &error);
} // namespace pmi
#endif

namespace {

// A program started without a launcher: one rank, nothing to exchange.
class SingletonBootstrap final : public Bootstrap {
public:
    const char *name() const override { return "singleton"; }
    std::uint32_t rank() const override { return 0; }
    std::uint32_t size() const override { return 1; }
    bool allgather(const void *in, std::size_t len, std::vector<std::string> &out) override {
        out.assign(1, std::string(static_cast<const char *>(in), len));
        return true;
    }
    [[noreturn]] void abort(int code) override { ::_exit(code); }
};

bool singleton_probe() { return true; }

// The fix for a process that a launcher started as one of several ranks but
// that cannot reach the others.
std::string launcher_fix(const LauncherMark &mark) {
    const std::string n = std::to_string(mark.size);
    if (std::string_view(mark.variable).rfind("SLURM_", 0) == 0)
        return "run srun with a PMI (srun --mpi=pmix, or --mpi=pmi2 for MPICH programs), or use sluicerun "
               "-spawner=pmi -n " + n;
    return "link libsluice-mpi (-Wl,--no-as-needed -lsluice-mpi, or call MPIX_Sluice_init), or start the job with "
           "sluicerun -spawner=mpi -n " + n + " (or sluicerun -n " + n + ")";
}

std::unique_ptr<Bootstrap> singleton_create(std::string &error) {
    // A launcher said there are several ranks but gave us no way to reach
    // them: running alone would silently compute the wrong thing.
    const char *size = std::getenv("SLUICE_SIZE");
    if (size && std::atoi(size) > 1) {
        error = std::string("this process is a singleton but SLUICE_SIZE=") + size +
                " says the job has more ranks; fix: start it with sluicerun (or unset SLUICE_SIZE)";
        return nullptr;
    }
    if (const LauncherMark mark = launcher_mark(); mark.size > 1) {
        error = std::string("a launcher started this process as one of ") + std::to_string(mark.size) +
                " ranks (" + mark.variable + "), but Sluice found no bootstrap that reaches the others; fix: " +
                launcher_fix(mark);
        return nullptr;
    }
    return std::make_unique<SingletonBootstrap>();
}

// A backend that trusts an outside launcher (mpi, pmix, pmi2) and came up as
// a job of one rank where that launcher started several: each rank would run
// alone (an MPICH program under srun --mpi=pmix does that).
bool size_mismatch(const Bootstrap &b, std::string &error) {
    const std::string_view name = b.name();
    if (name != "mpi" && name != "pmix" && name != "pmi2") return false;
    const LauncherMark mark = launcher_mark();
    if (b.size() != 1 || mark.size <= 1 || b.subset()) return false;
    error = std::string("the ") + b.name() + " bootstrap made this process a job of 1 rank, but " + mark.variable +
            "=" + std::to_string(mark.size) + " says the launcher started " + std::to_string(mark.size) +
            "; fix: " + launcher_fix(mark);
    return true;
}

bool is_pmi(std::string_view name) { return name == "pmix" || name == "pmi2"; }

std::mutex registry_mutex;
std::vector<BootstrapBackend> &registry() {
    // Probe order: the most specific environment first, singleton last.
    // Backends registered later (mpi, from libsluice-mpi) go before the PMI
    // ones: a hybrid program under mpirun bootstraps over MPI.
    static std::vector<BootstrapBackend> backends = {
        {"local", local::local_probe, local::local_create},
#if SLUICE_SPAWNER_SSH
        {"ssh", ssh::ssh_probe, ssh::ssh_create},
#endif
#if SLUICE_SPAWNER_PMIX
        {"pmix", pmi::pmix_probe, pmi::pmix_create},
#endif
#if SLUICE_SPAWNER_PMI2
        {"pmi2", pmi::pmi2_probe, pmi::pmi2_create},
#endif
        {"singleton", singleton_probe, singleton_create},
    };
    return backends;
}

} // namespace

void ShmNames::unlink_all() noexcept {
    if (!mutex_.try_lock()) return;
    for (const auto &n : names_) ::shm_unlink(n.c_str());
    mutex_.unlock();
}

// glibc's shm_open names are files in /dev/shm; the directory is read with
// getdents64 because opendir allocates.
namespace {
struct DirEntry64 {  // struct linux_dirent64, which glibc does not declare
    std::uint64_t ino;
    std::int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
};
} // namespace
void ShmNames::unlink_job() noexcept {
    unlink_all();
#ifdef __linux__
    if (!mutex_.try_lock()) return;
    const std::string_view prefix = job_prefix_.empty() ? std::string_view{}
                                                        : std::string_view(job_prefix_).substr(1);
    const int dir = prefix.empty() ? -1 : ::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    // Entries removed while the directory is read may hide others from the
    // same pass: read it again until a pass removes nothing (bounded).
    for (int pass = 0, removed = 1; dir >= 0 && removed > 0 && pass < 8; ++pass) {
        removed = 0;
        ::lseek(dir, 0, SEEK_SET);
        alignas(8) char buf[4096];
        long got;
        while ((got = ::syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
            for (long at = 0; at < got;) {
                const auto *e = reinterpret_cast<const DirEntry64 *>(buf + at);
                if (std::string_view(e->name).starts_with(prefix) && ::unlinkat(dir, e->name, 0) == 0)
                    ++removed;
                at += e->reclen;
            }
        }
    }
    if (dir >= 0) ::close(dir);
    mutex_.unlock();
#endif
}

LauncherMark launcher_mark() {
    if (LauncherMark mark = mpi_launcher_mark(); mark.size > 0) return mark;
    // srun sets it for the tasks of a step; a batch script has no step.
    if (const char *value = std::getenv("SLURM_STEP_NUM_TASKS"))
        return {"SLURM_STEP_NUM_TASKS", static_cast<std::uint32_t>(std::strtoul(value, nullptr, 10))};
    return mpi_launcher_mark();
}

LauncherMark mpi_launcher_mark() {
    // Open MPI's mpirun; MPICH's hydra (and srun with PMI-1/2); hydra's
    // count of ranks on this host (not the job's size); srun or prterun
    // with PMIx (no size).
    static constexpr struct {
        const char *name;
        bool is_size;
    } variables[] = {{"OMPI_COMM_WORLD_SIZE", true}, {"PMI_SIZE", true}, {"MPI_LOCALNRANKS", false}, {"PMIX_RANK", false}};
    for (const auto &v : variables)
        if (const char *value = std::getenv(v.name))
            return {v.name, v.is_size ? static_cast<std::uint32_t>(std::strtoul(value, nullptr, 10)) : 0};
    return {};
}

bool Bootstrap::barrier() {
    std::vector<std::string> ignored;
    return allgather(nullptr, 0, ignored);
}

bool Bootstrap::broadcast(std::uint32_t root, std::string &data) {
    std::vector<std::string> all;
    if (!allgather(data.data(), rank() == root ? data.size() : 0, all)) return false;
    data.swap(all[root]);
    return true;
}

void bootstrap_backend_register(const BootstrapBackend &backend) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto &r = registry();
    auto at = r.begin();
    while (at != r.end() && !is_pmi(at->name) && std::string_view(at->name) != "singleton") ++at;
    r.insert(at, backend);  // before the PMI backends and the singleton fallback
}

const std::vector<BootstrapBackend> &bootstrap_backends() { return registry(); }

namespace {

std::unique_ptr<Bootstrap> checked(std::unique_ptr<Bootstrap> b, std::string &error) {
    if (b && size_mismatch(*b, error)) return nullptr;
    return b;
}

bool registered(std::string_view name) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    for (const auto &b : registry())
        if (name == b.name) return true;
    return false;
}

// The MPI of this process: the one whose library it has loaded (an MPI
// program), else the one whose launcher started it (Open MPI's mpirun leaves
// OMPI_* variables; hydra and srun do not).
const char *mpi_flavor() {
    for (const auto &[library, flavor] : {std::pair{"libmpi.so.40", "openmpi"}, std::pair{"libmpich.so.12", "mpich"}})
        if (void *h = ::dlopen(library, RTLD_NOW | RTLD_NOLOAD)) {
            ::dlclose(h);  // only asked whether it is there
            return flavor;
        }
    return std::getenv("OMPI_COMM_WORLD_SIZE") ? "openmpi" : "mpich";
}

} // namespace

std::string mpi_library_load(bool launcher_flavor) {
    const std::string &path = base::knob_string(base::Knob::MPI_LIBRARY);
    std::vector<std::string> names;
    if (!path.empty()) {
        names.push_back(path);
    } else {
        const char *flavor = mpi_flavor();
        names = {std::string("libsluice-mpi-") + flavor + ".so.0", "libsluice-mpi.so.0"};
        if (!launcher_flavor) std::swap(names[0], names[1]);
        Dl_info self{};
        if (::dladdr(reinterpret_cast<void *>(&mpi_library_load), &self) && self.dli_fname) {
            std::string dir = self.dli_fname;
            dir = dir.substr(0, dir.rfind('/') + 1);
            if (!dir.empty()) names.insert(names.begin(), {dir + names[0], dir + names[1]});
        }
    }
    std::string why;
    for (const auto &n : names) {
        if (::dlopen(n.c_str(), RTLD_NOW | RTLD_GLOBAL)) return "";
        const char *e = ::dlerror();
        why = e ? e : n + ": not loaded";
    }
    return why;
}

std::unique_ptr<Bootstrap> select_bootstrap(std::string &error) {
    const std::string &wanted = base::knob_string(base::Knob::SPAWNER);
    if (wanted == "mpi" && !registered("mpi")) mpi_library_load(true);  // outside the lock: it registers
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (!wanted.empty()) {
        for (const auto &b : registry())
            if (wanted == b.name) return checked(b.create(error), error);
        // "pmi" (sluicerun -spawner=pmi): whichever PMI the launcher serves.
        if (wanted == "pmi")
            for (const auto &b : registry())
                if (is_pmi(b.name) && b.probe()) return checked(b.create(error), error);
        if (wanted == "pmi")
            error = "SLUICE_SPAWNER=pmi, but neither a PMIx server nor Slurm's PMI2 shows in this process's "
                    "environment; fix: start it with srun --mpi=pmix (or --mpi=pmi2), or sluicerun -spawner=pmi";
        else if (wanted == "mpi")
            error = "SLUICE_SPAWNER=mpi, but no libsluice-mpi could be loaded; fix: link the program with "
                    "libsluice-mpi, or set SLUICE_MPI_LIBRARY to the path of the libsluice-mpi built for this MPI";
        else
            error = "SLUICE_SPAWNER=" + wanted +
                    " names no compiled-in spawner; fix: pick one of those `sluice-info --spawners` lists";
        return nullptr;
    }
    for (const auto &b : registry())
        if (b.probe()) return checked(b.create(error), error);
    error = "no spawner recognises this environment";
    return nullptr;
}

} // namespace sluice::spawner
