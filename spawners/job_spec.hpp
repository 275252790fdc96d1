// spawners/job_spec.hpp - what sluicerun's command line asks for, handed to
// the spawner that starts the job (local, ssh, pmi, mpi).
//
// sluicerun.cpp parses and checks it; each spawner's run() starts the job and
// returns the code sluicerun exits with (its dry run prints the commands it
// would run, one per line, and returns 0).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sluice::spawner {

struct JobSpec {
    std::string spawner;                 // local, ssh, pmi or mpi
    unsigned ranks = 0;                  // -n
    unsigned hosts = 0;                  // -N; 0: the spawner's choice
    std::vector<std::string> propagate;  // -E: variable names sent to every rank
    bool verbose = false;                // -v or SLUICE_VERBOSE=1
    bool dry_run = false;                // -t
    std::string program;                 // as given (argv[0] of the ranks)
    std::string program_path;            // resolved on this host; the remote
                                         // spawners run `program` when it has no '/'
    std::vector<std::string> arguments;  // after the program
    std::string job_id;                  // SLUICE_JOB_ID or random
};

// Shell quoting: a word a POSIX shell reads back unchanged.
std::string shell_quote(const std::string &word);
// The words as one line a shell runs unchanged (for -t and -v).
std::string command_line(const std::vector<std::string> &words);
// What a spawner sends to every rank on other hosts: the SLUICE_* knobs of
// this environment (not the variables a launcher set for this process), the
// job id, and the -E variables that are set here.
std::vector<std::pair<std::string, std::string>> job_environment(const JobSpec &job);
// A knob's command line split at spaces ("srun --mpi=pmix" -> two words).
std::vector<std::string> words_split(const std::string &text);
// For the spawners that hand the job to another launcher (pmi: srun, mpi:
// mpirun): prints `command` (dry run: on stdout, and returns 0; verbose: on
// stderr), then execs it, so its exit code, output and signals are the
// job's.  Returns 127 with a message naming `knob` if it cannot be run.
int launcher_exec(const JobSpec &job, const std::vector<std::string> &command, const char *knob);

// Spawners other than local (each in its own folder).
namespace ssh {
int run(const JobSpec &job);
}
namespace pmi {
int run(const JobSpec &job);
}
namespace mpi {
int run(const JobSpec &job);
}

} // namespace sluice::spawner
