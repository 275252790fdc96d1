// tests/sim/report.hpp - running a list of simulations, and what creditsim
// prints and writes about them: the summary table, the CSVs, the plots.
#pragma once

#include "tests/sim/results.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace sluice::sim {

// Runs every simulation, `jobs` at a time on their own threads; the
// results keep the order of `runs`.
std::vector<RunResult> runs_execute(const std::vector<RunParams> &runs, unsigned jobs, bool quiet);

// Two runs with the same workload (pattern, size, traffic, costs, seed)
// differ only in their credits.
bool same_workload(const RunParams &a, const RunParams &b);
// Sets each run's throughput relative to the Policy::off run of the same
// workload: its makespan over this run's.
void throughput_fill(std::vector<RunResult> &results);

void table_print(std::FILE *out, const std::vector<RunResult> &results);
// Invariant checks performed, summed, and the simulator's peak memory.
void checks_print(std::FILE *out, const std::vector<RunResult> &results);
bool csv_write(const std::string &path, const std::vector<RunResult> &results);
bool series_write(const std::string &path, const std::vector<RunResult> &results);
// Data, a gnuplot script and the PNGs in `dir`; without gnuplot, says so
// and leaves the data and the script.
bool plots_write(const std::string &dir, const std::vector<RunResult> &results);

std::size_t peak_rss_bytes();
std::string kib(double bytes);

} // namespace sluice::sim
