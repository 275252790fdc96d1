// spawners/bootstrap.cpp - backend registry, the singleton backend, and the
// run-time choice of backend.
#include "spawners/bootstrap.hpp"

#include "base/knobs.hpp"

#include <cstdlib>
#include <mutex>
#include <unistd.h>

namespace sluice::spawner {

namespace local {
bool local_probe();
std::unique_ptr<Bootstrap> local_create(std::string &error);
} // namespace local

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
std::unique_ptr<Bootstrap> singleton_create(std::string &error) {
    // A launcher said there are several ranks but gave us no way to reach
    // them: running alone would silently compute the wrong thing.
    const char *size = std::getenv("SLUICE_SIZE");
    if (size && std::atoi(size) > 1) {
        error = std::string("this process is a singleton but SLUICE_SIZE=") + size +
                " says the job has more ranks; fix: start it with sluicerun (or unset SLUICE_SIZE)";
        return nullptr;
    }
    // Started by an MPI launcher, but no mpi backend is linked in.
    if (const LauncherMark mark = mpi_launcher_mark(); mark.size > 1) {
        error = std::string("an MPI launcher started this process as one of ") + std::to_string(mark.size) +
                " ranks (" + mark.variable + "), but Sluice has no mpi bootstrap; fix: link libsluice-mpi "
                "(-Wl,--no-as-needed -lsluice-mpi, or call MPIX_Sluice_init), or start the job with sluicerun";
        return nullptr;
    }
    return std::make_unique<SingletonBootstrap>();
}

std::mutex registry_mutex;
std::vector<BootstrapBackend> &registry() {
    // Probe order: the most specific environment first, singleton last.
    static std::vector<BootstrapBackend> backends = {
        {"local", local::local_probe, local::local_create},
        {"singleton", singleton_probe, singleton_create},
    };
    return backends;
}

} // namespace

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
    r.insert(r.end() - 1, backend);  // before the singleton fallback
}

const std::vector<BootstrapBackend> &bootstrap_backends() { return registry(); }

std::unique_ptr<Bootstrap> select_bootstrap(std::string &error) {
    std::lock_guard<std::mutex> lock(registry_mutex);
    const std::string &wanted = base::knob_string(base::Knob::SPAWNER);
    if (!wanted.empty()) {
        for (const auto &b : registry())
            if (wanted == b.name) return b.create(error);
        error = "SLUICE_SPAWNER=" + wanted + " names no compiled-in spawner; fix: pick one of those `sluice-info --spawners` lists";
        return nullptr;
    }
    for (const auto &b : registry())
        if (b.probe()) return b.create(error);
    error = "no spawner recognises this environment";
    return nullptr;
}

} // namespace sluice::spawner
