// spawners/local/launcher.hpp - the job sluicerun runs: fork N ranks on this
// host, serve their control sockets (protocol.hpp), forward signals, end the
// job with one code and nothing left behind.
#pragma once

#include "spawners/local/stream.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <poll.h>
#include <sys/types.h>

struct hwloc_topology;

namespace sluice::spawner::local {

enum class Binding { none, core, socket, numa };

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
    unsigned ranks = 0;                // ranks this launcher forks
    unsigned first_rank = 0;           // job rank of the first of them (ssh: this host's block)
    unsigned job_size = 0;             // ranks in the whole job; 0: `ranks`
    bool verbose = false;
    std::string program;               // as the user gave it (argv[0] of the ranks)
    std::string program_path;          // resolved, executable
    std::vector<std::string> arguments;  // after the program
    std::string job_id;
    std::vector<std::pair<std::string, std::string>> variables;  // more variables for every rank
    bool stdin_null = false;           // ranks read /dev/null instead of the launcher's stdin

    unsigned size() const { return job_size ? job_size : ranks; }
};

// SLUICE_JOB_ID if set, else 16 random hex digits.
std::string job_id_choose();

// The variables the launcher sets for its `rank`-th rank (job rank
// first_rank + rank), then options.variables; `fd` < 0 gives a placeholder
// (dry run).
std::vector<std::pair<std::string, std::string>>
rank_variables(const LaunchOptions &options, unsigned rank, int fd);

// Raises the soft descriptor limit when -n needs it (ranks get the original
// back); false, with a message naming the fix, when the hard limit is too low.
bool fd_limit_prepare(unsigned ranks, std::string &error);
// In a forked rank before exec: back to the limit sluicerun started with.
void fd_limit_restore();

// What concerns the whole job, for a launcher that runs one host's share of
// it (the ssh spawner's control processes): codes and the start of a
// graceful exit travel to the job's root, which answers with orders.
enum class JobEvent {
    notify,   // a rank reported its exit code (exit_notify)
    abort,    // a rank aborted the job: everything must die now
    failure,  // a rank (or a part of the job) ended abnormally: everything must die now
    exiting,  // a rank that reported its code has ended: the others get the exit timeout
    nonzero,  // a rank ended cleanly with a non-zero status
};

// The launcher's side, used by its relay.
class RankControl {
public:
    // A whole allgather_result frame for every rank still taking part.
    virtual void allgather_deliver(Frames result) = 0;
    // A signal the job's root received, forwarded to this host's ranks with
    // the usual grace before SIGKILL.
    virtual void signal_forward(int sig) = 0;
    // SIGKILL to every rank now.
    virtual void stop() = 0;
    // Ranks still running `seconds` from now are killed.
    virtual void deadline(double seconds, const std::string &reason) = 0;
    // A code from elsewhere in the job, counted as if a local rank gave it.
    virtual void event_merge(JobEvent event, int code) = 0;

protected:
    ~RankControl() = default;
};

// The rest of the job, seen from one host's launcher.  Its descriptors join
// the launcher's poll loop; the launcher tells it what its ranks did.
class JobRelay {
public:
    virtual ~JobRelay() = default;
    // Once, after the launcher watches its signals and before it forks.
    virtual void start(RankControl &control) = 0;
    virtual void poll_fill(std::vector<pollfd> &fds) = 0;
    // After every poll, with the entries poll_fill added (timers run here too).
    virtual void poll_handle(const pollfd *fds, std::size_t count) = 0;
    // Milliseconds until the relay's next timer; -1 for none.
    virtual int poll_timeout() const { return -1; }
    // A child process that is not a rank ended.
    virtual void child_ended(pid_t pid, int wstatus) = 0;
    // This host's part of an allgather round: for each local rank, a u32
    // length and the bytes, in rank order.
    virtual void allgather_block(std::string block) = 0;
    // No local rank takes part in allgathers any more (all finalized or
    // ended): their parts of every later round are empty.
    virtual void ranks_quiet() = 0;
    virtual void event(JobEvent event, int code) = 0;
    // A signal this launcher received (not one forwarded by the relay);
    // `second`: a second SIGINT.
    virtual void signal_received(int sig, bool second) = 0;
    // Every local rank has been reaped.
    virtual void ranks_ended() = 0;
    // The launcher may return once its ranks are reaped and this holds.
    virtual bool finished() const = 0;
};

// Runs the job to its end and returns its exit code: the first exit_notify
// code, else the first abnormal rank's code (or 128 + the signal that stopped
// the job), else the first non-zero exit status, else 0.  With a relay, this
// host's ranks are part of a bigger job; the relay starts the rest.
int launch(const LaunchOptions &options, const Binder &binder, JobRelay *relay = nullptr);

// One line on stderr, written at once so lines of several processes do not
// interleave: "sluicerun: ..." or the prefix set with say_prefix_set.
__attribute__((format(printf, 1, 2))) void say(const char *format, ...);
// `prefix` replaces "sluicerun"; with `origin_ns` (CLOCK_REALTIME) every
// line also says the seconds since then (the ssh spawner's -v timings).
void say_prefix_set(std::string prefix, long long origin_ns = 0);

} // namespace sluice::spawner::local
