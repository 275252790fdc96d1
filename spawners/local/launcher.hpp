// spawners/local/launcher.hpp - the job sluicerun runs: fork N ranks on this
// host, serve their control sockets (protocol.hpp), forward signals, end the
// job with one code and nothing left behind.
#pragma once

#include <string>
#include <utility>
#include <vector>

struct hwloc_topology;

namespace sluice::spawner::local {

enum class Binding { none, core, numa };

const char *binding_name(Binding binding);

// Where each rank runs.  Loaded in the launcher before any fork; apply() runs
// in the child between fork and exec.
class Binder {
public:
    Binder() = default;
    ~Binder();
    Binder(const Binder &) = delete;
    Binder &operator=(const Binder &) = delete;

    // Reads the machine's topology when `binding` needs it.  False, with a
    // message naming the fix, when it cannot (no hwloc in this build).
    bool load(Binding binding, std::string &error);
    Binding binding() const { return binding_; }
    // "core 1 (cpus 1,3)", "NUMA node 0 (cpus 0-7)" or "none".
    std::string describe(unsigned rank) const;
    // Binds the calling process; false with a message on failure.
    bool apply(unsigned rank, std::string &error) const;

private:
    Binding binding_ = Binding::none;
    hwloc_topology *topology_ = nullptr;
};

struct LaunchOptions {
    unsigned ranks = 0;
    bool verbose = false;
    std::string program;               // as the user gave it (argv[0] of the ranks)
    std::string program_path;          // resolved, executable
    std::vector<std::string> arguments;  // after the program
    std::string job_id;
};

// SLUICE_JOB_ID if set, else 16 random hex digits.
std::string job_id_choose();

// The variables the launcher sets for `rank`; `fd` < 0 gives a placeholder
// (dry run).
std::vector<std::pair<std::string, std::string>>
rank_variables(const LaunchOptions &options, unsigned rank, int fd);

// Raises the soft descriptor limit when -n needs it (ranks get the original
// back); false, with a message naming the fix, when the hard limit is too low.
bool fd_limit_prepare(unsigned ranks, std::string &error);
// In a forked rank before exec: back to the limit sluicerun started with.
void fd_limit_restore();

// Runs the job to its end and returns its exit code: the first exit_notify
// code, else the first abnormal rank's code (or 128 + the signal that stopped
// the job), else the first non-zero exit status, else 0.
int launch(const LaunchOptions &options, const Binder &binder);

} // namespace sluice::spawner::local
