// spawners/pmi/launch_pmi.cpp - `sluicerun -spawner=pmi`: the job runs under
// srun (or SLUICE_PMI_LAUNCHER) with the PMI of SLUICE_PMI, and its ranks
// bootstrap over that PMI (bootstrap_pmix.cpp, bootstrap_pmi2.cpp in
// libsluice).  sluicerun execs the launcher, so its exit code, output and
// signal handling are the job's.
#include "spawners/job_spec.hpp"

#include "base/knobs.hpp"

#include <cstdlib>
#include <string>
#include <vector>

namespace sluice::spawner::pmi {

int run(const JobSpec &job) {
    std::vector<std::string> command = words_split(base::knob_string(base::Knob::PMI_LAUNCHER));
    if (command.empty()) command = {"srun"};
    std::string pmi = base::knob_string(base::Knob::PMI);
    if (pmi.empty()) pmi = "pmix";

    // The ranks take whichever PMI the launcher serves, and their
    // shared-memory names carry the job id.  srun passes its whole
    // environment to the tasks (--export=ALL, whatever the site's
    // SLURM_EXPORT_ENV), so the -E variables and the knobs arrive as they are.
    ::setenv("SLUICE_SPAWNER", "pmi", 1);
    ::setenv("SLUICE_JOB_ID", job.job_id.c_str(), 1);
    // A rank killed by a signal ends the job, as with every spawner: srun
    // does not do it by itself under --mpi=pmi2 (nor without a PMI) unless
    // the site sets KillOnBadExit.  First, so options in the knob win.
    command.insert(command.begin() + 1, "--kill-on-bad-exit=1");
    command.push_back("--mpi=" + pmi);
    command.push_back("--export=ALL");
    command.push_back("-n");
    command.push_back(std::to_string(job.ranks));
    if (job.hosts) {
        command.push_back("-N");
        command.push_back(std::to_string(job.hosts));
    }
    command.push_back(job.program_path.empty() ? job.program : job.program_path);
    command.insert(command.end(), job.arguments.begin(), job.arguments.end());
    return launcher_exec(job, command, "SLUICE_PMI_LAUNCHER");
}

} // namespace sluice::spawner::pmi
