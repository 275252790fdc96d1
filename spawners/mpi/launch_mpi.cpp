// spawners/mpi/launch_mpi.cpp - `sluicerun -spawner=mpi`: the job runs under
// an MPI's mpirun, and its ranks bootstrap over MPI (SLUICE_SPAWNER=mpi makes
// libsluice load libsluice-mpi when the program does not link it).  sluicerun
// execs mpirun, so mpirun's exit code, output and signal handling are the
// job's.
#include "spawners/job_spec.hpp"

#include "base/knobs.hpp"
#include "sluice_config.h"

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sluice::spawner::mpi {
namespace {

enum class Flavor { openmpi, mpich, unknown };

// What `mpirun --version` says it is.
Flavor flavor_of(const std::string &mpirun) {
    const std::string command = shell_quote(mpirun) + " --version 2>&1";
    FILE *p = ::popen(command.c_str(), "r");
    if (!p) return Flavor::unknown;
    std::string text;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) text += buf;
    ::pclose(p);
    if (text.find("Open MPI") != std::string::npos || text.find("OpenRTE") != std::string::npos)
        return Flavor::openmpi;
    if (text.find("HYDRA") != std::string::npos || text.find("Hydra") != std::string::npos) return Flavor::mpich;
    return Flavor::unknown;
}

// The slots Open MPI's mpirun counts on this host without a host list: the
// cores (not hardware threads) this process may run on.
unsigned cores_here() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    std::set<std::pair<std::string, std::string>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set)) continue;
        const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        std::ifstream package(dir + "physical_package_id"), core(dir + "core_id");
        std::string p, c;
        if (!(package >> p) || !(core >> c)) return static_cast<unsigned>(CPU_COUNT(&set));
        cores.insert({p, c});
    }
    return static_cast<unsigned>(cores.size());
}

// Whether the user's mpirun command or a batch allocation already says
// where ranks go: then its slots are theirs to set, not ours.
bool placement_given(const std::vector<std::string> &command) {
    if (std::getenv("SLURM_JOB_ID") || std::getenv("PBS_NODEFILE") || std::getenv("LSB_JOBID")) return true;
    for (std::size_t i = 1; i < command.size(); ++i) {
        const std::string &w = command[i];
        for (const char *option : {"--oversubscribe", "-oversubscribe", "--hostfile", "-hostfile", "--machinefile",
                                   "-machinefile", "-H", "--host", "-host", "--map-by", "-map-by", "--default-hostfile"})
            if (w == option || w.rfind(std::string(option) + "=", 0) == 0) return true;
    }
    return false;
}

} // namespace

int run(const JobSpec &job) {
    std::string configured = base::knob_string(base::Knob::MPIRUN);
    if (configured.empty()) configured = SLUICE_MPIRUN_DEFAULT;
    if (configured.empty()) configured = "mpirun";
    std::vector<std::string> command = words_split(configured);
    if (command.empty()) command = {"mpirun"};
    const Flavor flavor = flavor_of(command[0]);
    if (job.verbose)
        std::fprintf(stderr, "sluicerun: mpirun %s is %s\n", command[0].c_str(),
                     flavor == Flavor::openmpi ? "Open MPI's" : flavor == Flavor::mpich ? "MPICH's (hydra)"
                                                                                       : "of an unknown MPI");

    // The ranks bootstrap over MPI, and their shared-memory names carry the
    // job id.  Local ranks inherit sluicerun's environment with either MPI;
    // Open MPI forwards variables to other hosts only when named with -x
    // (hydra forwards everything by default).
    ::setenv("SLUICE_SPAWNER", "mpi", 1);
    ::setenv("SLUICE_JOB_ID", job.job_id.c_str(), 1);
    // Open MPI refuses more ranks than cores ("not enough slots") where the
    // local spawner and hydra run them; ask for the same here.
    if (flavor == Flavor::openmpi && !placement_given(command)) {
        const unsigned cores = cores_here();
        if (cores > 0 && job.ranks > cores) {
            command.push_back("--oversubscribe");
            if (job.verbose)
                std::fprintf(stderr, "sluicerun: %u ranks on %u cores: passing --oversubscribe to Open MPI's mpirun\n",
                             job.ranks, cores);
        }
    }
    command.push_back("-n");
    command.push_back(std::to_string(job.ranks));
    if (flavor == Flavor::openmpi) {
        for (const auto &[name, value] : job_environment(job)) {
            command.push_back("-x");
            command.push_back(name);
        }
    }
    command.push_back(job.program_path);
    command.insert(command.end(), job.arguments.begin(), job.arguments.end());
    return launcher_exec(job, command, "SLUICE_MPIRUN");
}

} // namespace sluice::spawner::mpi
