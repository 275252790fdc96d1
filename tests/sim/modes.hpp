// tests/sim/modes.hpp - creditsim's modes besides the plain matrix of runs.
#pragma once

#include "tests/sim/options.hpp"

namespace sluice::sim {

// --targets: the targets, PASS/FAIL per line; 0 if all pass.
int targets_run(const Cli &cli);
// --sweep: per_peer x banked x epoch_length for one size and pattern.
int sweep_run(const Cli &cli);
// --bench-locks: ns per engine operation, 1 to 4 threads.
int bench_locks_run(const Cli &cli);

} // namespace sluice::sim
