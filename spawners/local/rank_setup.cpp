// spawners/local/rank_setup.cpp - what each rank gets besides its program:
// its binding (hwloc), its environment, its descriptor limit, the job id.
#include "sluice_config.h"

#include "spawners/local/launcher.hpp"

#include "base/knobs.hpp"
#include "spawners/local/protocol.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef SLUICE_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace sluice::spawner::local {

const char *binding_name(Binding binding) {
    switch (binding) {
    case Binding::core: return "core";
    case Binding::socket: return "socket";
    case Binding::numa: return "numa";
    case Binding::none: break;
    }
    return "none";
}

#ifdef SLUICE_HAVE_HWLOC
namespace {

hwloc_obj_type_t binding_type(Binding binding, hwloc_topology_t topology) {
    if (binding == Binding::numa) return HWLOC_OBJ_NUMANODE;
    if (binding == Binding::socket) return HWLOC_OBJ_PACKAGE;
    // Some virtual machines report PUs without cores.
    return hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
}

hwloc_obj_t binding_object(Binding binding, hwloc_topology_t topology, unsigned rank) {
    hwloc_obj_type_t type = binding_type(binding, topology);
    int count = hwloc_get_nbobjs_by_type(topology, type);
    return count > 0 ? hwloc_get_obj_by_type(topology, type, rank % static_cast<unsigned>(count)) : nullptr;
}

} // namespace
#endif

Binder::~Binder() {
#ifdef SLUICE_HAVE_HWLOC
    if (topology_) hwloc_topology_destroy(topology_);
#endif
}

bool Binder::load(Binding binding, std::string &error) {
    if (binding == Binding::none) return true;
#ifndef SLUICE_HAVE_HWLOC
    error = std::string("--bind=") + binding_name(binding) +
            " needs hwloc, which this build lacks; install libhwloc-dev and reconfigure, or use --bind=none";
    return false;
#else
    // Disallowed PUs (cgroups, cpusets) are left out by hwloc's default load.
    if (hwloc_topology_init(&topology_) < 0 || hwloc_topology_load(topology_) < 0 ||
        !binding_object(binding, topology_, 0)) {
        error = std::string("--bind=") + binding_name(binding) +
                ": hwloc cannot read this machine's topology; use --bind=none";
        return false;
    }
    binding_ = binding;
    return true;
#endif
}

std::string Binder::describe(unsigned rank) const {
#ifdef SLUICE_HAVE_HWLOC
    if (binding_ != Binding::none) {
        hwloc_obj_t obj = binding_object(binding_, topology_, rank);
        char *cpus = nullptr;
        hwloc_bitmap_list_asprintf(&cpus, obj->cpuset);
        std::string text = binding_ == Binding::numa     ? "NUMA node "
                           : binding_ == Binding::socket ? "socket "
                           : obj->type == HWLOC_OBJ_CORE ? "core "
                                                         : "PU ";
        text += std::to_string(obj->logical_index) + " (cpus " + (cpus ? cpus : "?") + ")";
        std::free(cpus);
        return text;
    }
#endif
    (void)rank;
    return "none";
}

bool Binder::apply(unsigned rank, std::string &error) const {
#ifdef SLUICE_HAVE_HWLOC
    if (binding_ != Binding::none) {
        hwloc_obj_t obj = binding_object(binding_, topology_, rank);
        if (hwloc_set_cpubind(topology_, obj->cpuset, HWLOC_CPUBIND_PROCESS) < 0) {
            error = "cannot bind to " + describe(rank) + ": " + std::strerror(errno) + "; use --bind=none";
            return false;
        }
    }
#endif
    (void)rank;
    (void)error;
    return true;
}

std::string job_id_choose() {
    const std::string &given = base::knob_string(base::Knob::JOB_ID);
    if (!given.empty()) return given;
    unsigned char bytes[8];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n > 0) {
            got += static_cast<std::size_t>(n);
        } else if (errno != EINTR) {  // no getrandom: time and pid still differ per job
            std::uint64_t mix = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                                (static_cast<std::uint64_t>(::getpid()) << 40);
            std::memcpy(bytes, &mix, sizeof bytes);
            break;
        }
    }
    char hex[2 * sizeof bytes + 1];
    for (std::size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
    return hex;
}

std::vector<std::pair<std::string, std::string>> rank_variables(const LaunchOptions &options, unsigned rank,
                                                                 int fd) {
    std::vector<std::pair<std::string, std::string>> variables = {
        {env_fd, fd < 0 ? std::string("<socket>") : std::to_string(fd)},
        {env_rank, std::to_string(options.first_rank + rank)},
        {env_size, std::to_string(options.size())},
        {env_job_id, options.job_id},
    };
    variables.insert(variables.end(), options.variables.begin(), options.variables.end());
    return variables;
}

namespace {
// The launcher raises its descriptor limit for large -n; ranks get the
// limit sluicerun was started with.
rlimit original_fd_limit{};
bool fd_limit_raised = false;
} // namespace

bool fd_limit_prepare(unsigned ranks, std::string &error) {
    // One socket per rank, plus stdio, the signalfd, a socketpair being made
    // and whatever hwloc opens while it loads.
    rlim_t need = static_cast<rlim_t>(ranks) + 32;
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) < 0 || limit.rlim_cur >= need) return true;
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < need) {
        error = "-n " + std::to_string(ranks) + " needs about " + std::to_string(need) +
                " file descriptors but the hard limit is " + std::to_string(limit.rlim_max) +
                "; raise it (ulimit -Hn) or lower -n";
        return false;
    }
    original_fd_limit = limit;
    limit.rlim_cur = need;
    if (::setrlimit(RLIMIT_NOFILE, &limit) < 0) {
        error = std::string("cannot raise the file descriptor limit: ") + std::strerror(errno) +
                "; raise `ulimit -n` or lower -n";
        return false;
    }
    fd_limit_raised = true;
    return true;
}

void fd_limit_restore() {
    if (fd_limit_raised) ::setrlimit(RLIMIT_NOFILE, &original_fd_limit);
}

} // namespace sluice::spawner::local
