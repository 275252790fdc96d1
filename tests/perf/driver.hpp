// tests/perf/driver.hpp - the benchmark driver: sluice-bench run directly.
// It runs the Sluice and MPI jobs, measures the bare references (cache-line
// ping-pong, memcpy, launch times, shared memory per rank), prints the table,
// writes the CSV and checks the targets.
//   driver.cpp      options and the order of the run
//   jobs.cpp        finding the programs, running a job under a time limit
//   references.cpp  ping-pong, memcpy, result files, the memory census
//   report.cpp      table, CSV, targets
#pragma once

#include <cstddef>
#include <sys/types.h>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sluice::perf {

int driver_main(int argc, char **argv);

inline constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();

struct Options {
    int reps = 5;
    bool reps_given = false;
    bool quick = false;
    bool all_sizes = false;
    std::string only; // --only NAME: figures whose name contains NAME
    std::string only_size; // --size N: sized figures at N bytes only
    std::string csv = "sluice-bench.csv";
    std::string plot;  // --plot FILE: the ratios as an SVG (gnuplot)
    std::string sluicerun;
    std::string mpirun;
    std::string mpi_reference;
    std::string bind = "core"; // sluicerun --bind for the 2-rank suite; "" = launcher default
    bool no_mpi = false;
    bool skip_launch = false;
    bool skip_shm = false;
    int launch_ranks = 8;
    std::vector<int> shm_ranks{2, 8, 32};
    double timeout = 300;
    double wait_idle = 5;
    bool keep = false;
    bool strict = false;
    // The udp section (issue 6): auto (when the build has the udp conduit),
    // only (--udp), skip (--no-udp).
    enum class Udp { auto_, only, skip } udp = Udp::auto_;
    long udp_count = 0;          // --udp-count: AMs each way of the exactly-once check
    bool udp_any_transport = false; // --udp-any-transport: the benchmark's own test
    // The ofi section: auto (when the build has an ofi conduit
    // that probes), only (--ofi), skip (--no-ofi); one job per provider.
    enum class Ofi { auto_, only, skip } ofi = Ofi::auto_;
    std::vector<std::string> ofi_providers{"tcp;ofi_rxm", "shm"};
    std::string ofi_network = "ofi"; // --ofi-network: the benchmark's own test
    // The ibv section: auto (when the build has the ibv conduit
    // and it probes: a verbs device, or the software NIC under softnic-run),
    // only (--ibv), skip (--no-ibv).
    enum class Ibv { auto_, only, skip } ibv = Ibv::auto_;
    // The portals section: auto (when the build has the portals
    // conduit and it probes), only (--portals), skip (--no-portals).
    enum class Portals { auto_, only, skip } portals = Portals::auto_;
    std::string portals_network = "portals"; // --portals-network: the benchmark's own test
    // The gni section: auto (when the build has the gni conduit and it
    // probes, or the software uGNI NIC's softnic-run is at hand), only
    // (--gni), skip (--no-gni).
    enum class Gni { auto_, only, skip } gni = Gni::auto_;
    // The lapi section, the same way (the software LAPI's softnic-run);
    // one job per LAPI mode.
    enum class Lapi { auto_, only, skip } lapi = Lapi::auto_;
};

// Every value measured, by (metric, size), one per repetition.
using Key = std::pair<std::string, std::size_t>;
using Samples = std::map<Key, std::vector<double>>;

// ---- jobs.cpp ------------------------------------------------------------------
std::string self_path();
// The folder of the program as built (without libtool's .libs/).
std::string build_dir_of_self();
// The first candidate that names an executable file (bare names: on PATH).
std::string first_executable(const std::vector<std::string> &candidates);
// libtool's wrapper script -> the binary it wraps (LD_LIBRARY_PATH set);
// anything else unchanged.
std::string unwrap_libtool(const std::string &program);

struct JobResult {
    bool ok = false;
    bool timed_out = false;
    int code = -1;
    double seconds = 0;
};
std::string describe(const std::vector<std::string> &argv);
// fork/exec `argv` in its own process group, stdout and stderr into `log`,
// with `env` ("NAME=value") added to the environment; past `timeout` seconds
// the group gets SIGTERM, then SIGKILL.
JobResult run_job(const std::vector<std::string> &argv, const std::string &log,
                  double timeout, const std::vector<std::string> &env = {});
void show_failure(const char *what, const std::vector<std::string> &argv,
                  const JobResult &r, const std::string &log);

// What the driver leaves behind when SIGINT, SIGTERM or SIGHUP ends it
// (a CI time limit, ^C): the running job's process group gets SIGTERM, then
// SIGKILL after 3 s, and the paths given here are removed (a folder with
// its contents), before the signal ends the driver as it would have.
// remove_at_signal returns false when all of its slots are taken.
bool remove_at_signal(const std::string &path, bool folder);
void forget_at_signal(const std::string &path);

// A private folder under $TMPDIR (or /tmp), removed with its contents unless kept (also
// when a signal ends the driver: remove_at_signal).
struct TempDir {
    std::string path;
    TempDir();
    ~TempDir();
    void keep_it(bool keep);
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

private:
    bool keep_ = false;
};

// Waits up to `seconds` for the CPUs to be quiet; returns the busy share
// (0..1) last seen.
double wait_quiet(double seconds);
std::string cpu_model();

// ---- references.cpp ------------------------------------------------------------
bool read_results(const std::string &path, Samples &samples);
double median(std::vector<double> v);
void read_udp_stats(const std::string &log, const std::string &prefix, Samples &samples);
// The main pool's statistics (SLUICE_FIREHOSE_STATS=1, one line per rank
// at finalize): {prefix}_peak_pinned (bytes of peers' segments held at
// most, the largest over the ranks), _budget and _moves (summed).
void read_main_pool_stats(const std::string &log, const std::string &prefix, Samples &samples);
// The first `n` CPUs this process may run on, and pinning to one of them
// (the forked ping-pongs: like the 2-rank jobs, one CPU each).
std::vector<int> usable_cpus(std::size_t n);
void pin_to(int cpu);
// Waits for the two processes of a forked ping-pong, killing both once
// `timeout` seconds have passed.
void reap_pair(pid_t responder, pid_t measurer, double timeout);
// ns per round trip of the bare cross-process cache-line ping-pong.
double cacheline_pingpong(long iters, double timeout);
// ns per x86 PAUSE instruction (NaN elsewhere).
double pause_cost();
// The state of the machine a suite job ran in, from its own bare ping-pong
// (state_pingpong_first and _last, this repetition's values in `now` beyond
// those in `before`): "busy" when either took busy_from_ns or more (other
// work shared the CPUs), else "near" when both were under near_below_ns,
// "far" when neither was, "mixed" when the job crossed over, "" when it
// measured none.
inline constexpr double near_below_ns = 300, busy_from_ns = 1000;
std::string job_state(const Samples &now, const Samples &before, double &first, double &last);
// Appends the values in `now` beyond those in `before` to `into`.
void add_new(const Samples &now, const Samples &before, Samples &into);
struct CommonOptions;
// memcpy ns per copy at every RMA size, into samples["memcpy"].
void measure_memcpy(const CommonOptions &o, Samples &samples);

struct ShmFigure {
    bool ok = false;
    double per_rank = nan_value;        // distinct non-segment shm bytes / ranks
    double mapped_per_rank = nan_value; // non-segment bytes each rank maps, mean
    std::size_t objects = 0;
};
ShmFigure aggregate_shm(const std::string &dir, int ranks);

// ---- report.cpp ----------------------------------------------------------------
struct Findings {
    bool have_mpi = false;
    std::string mpi_note;
    bool udp = false;    // the udp section ran
    std::string udp_note;
    std::vector<std::string> ofi_providers; // the ofi section ran for these
    std::string ofi_note;
    bool ibv = false;    // the ibv section ran
    std::string ibv_note;
    bool portals = false; // the portals section ran
    std::string portals_note;
    bool gni = false;     // the gni section ran
    bool gni_softnic = false; // ... on the software uGNI NIC, under its softnic-run
    std::string gni_note;
    bool lapi = false;    // the lapi section ran
    bool lapi_softnic = false; // ... on the software LAPI, under its softnic-run
    std::string lapi_note;
    // The suite's repetitions by the state their job ran in (job_state):
    // their values and the driver's references of the same repetitions.
    std::map<std::string, Samples> by_state;
    int busy_reps = 0;   // repetitions that started on a busy machine
    double busiest = 0;  // the busiest share seen
    std::map<int, ShmFigure> shm;
};
// Prints the table, the notes and the targets and writes the CSV; returns
// how many targets were not met.
int report(const Options &o, const Samples &samples, const Findings &f);

} // namespace sluice::perf
