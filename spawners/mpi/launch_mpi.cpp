// spawners/mpi/launch_mpi.cpp - `sluicerun -spawner=mpi`: the job runs under
// an MPI's mpirun, and its ranks bootstrap over MPI (SLUICE_SPAWNER=mpi makes
// libsluice load libsluice-mpi when the program does not link it).  sluicerun
// execs mpirun, so mpirun's exit code, output and signal handling are the
// job's.
#include "spawners/job_spec.hpp"

#include "base/knobs.hpp"
#include "sluice_config.h"

#include <cstdio>
#include <cstdlib>
#include <string>
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
