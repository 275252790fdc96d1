// tests/sim/options.hpp - creditsim's command line: one table of options
// drives the parser and --help (README.md lists the same table).
#pragma once

#include "tests/sim/params.hpp"

#include <optional>
#include <string>
#include <vector>

namespace sluice::sim {

struct Cli {
    RunParams base;
    std::vector<Pattern> patterns{Pattern::uniform};
    std::vector<std::optional<credit::Policy>> policies{std::nullopt};  // nullopt: auto
    std::optional<std::uint64_t> total;  // total requests instead of --messages

    std::string csv, series_csv, plots_dir;
    unsigned jobs = 2;
    bool quiet = false;
    bool baseline = true;  // run Policy::off beside each pattern

    bool targets = false;
    bool sweep = false;
    std::vector<unsigned> sweep_per_peer{2, 4, 8, 16};
    std::vector<unsigned> sweep_banked{0, 1024, 4096, 16384};
    std::vector<unsigned> sweep_epoch{256, 1024, 4096};

    bool bench_locks = false;
    std::uint64_t bench_iterations = 2'000'000;

    // The run of `pattern` under `policy` (the messages per node from
    // --total where given).
    RunParams run_for(Pattern pattern, std::optional<credit::Policy> policy) const;
};

// Parses argv; on an error or --help prints to stderr/stdout and returns
// the exit code in `exit_code` (nullopt: go on).
Cli cli_parse(int argc, char **argv, std::optional<int> &exit_code);

} // namespace sluice::sim
