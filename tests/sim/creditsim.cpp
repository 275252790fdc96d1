// tests/sim/creditsim.cpp - the credit flow-control simulator (issue 5, item
// 3): N nodes, each running the real sluice::credit::Engine, under five
// traffic patterns and every policy, with the credit invariants checked
// after every event.  README.md explains the model, the options and the
// output.
#include "tests/sim/modes.hpp"
#include "tests/sim/options.hpp"
#include "tests/sim/report.hpp"

#include <cstdio>

using namespace sluice::sim;

int main(int argc, char **argv) {
    std::optional<int> exit_code;
    const Cli cli = cli_parse(argc, argv, exit_code);
    if (exit_code) return *exit_code;
    if (cli.bench_locks) return bench_locks_run(cli);
    if (cli.targets) return targets_run(cli);
    if (cli.sweep) return sweep_run(cli);

    // Every pattern under every policy asked for, each after its unlimited
    // (Policy::off) baseline, which gives the throughput ratio.
    const bool series = !cli.series_csv.empty() || !cli.plots_dir.empty();
    std::vector<RunParams> runs;
    for (Pattern pattern : cli.patterns) {
        if (cli.baseline) runs.push_back(cli.run_for(pattern, sluice::credit::Policy::off));
        for (const auto &policy : cli.policies) {
            if (policy == sluice::credit::Policy::off) continue;
            RunParams p = cli.run_for(pattern, policy);
            p.series = series;
            runs.push_back(p);
        }
    }
    std::vector<RunResult> results = runs_execute(runs, cli.jobs, cli.quiet);
    throughput_fill(results);
    const RunResult &first = results.front();
    std::printf("creditsim: %u nodes, %llu requests per sender, credits %u..%u, window %u, no-reply %.2f, "
                "L=%lld H=%lld reply=%lld sys=%lld ns, %u system slots, seed %llu\n",
                cli.base.nodes, static_cast<unsigned long long>(first.params.messages), cli.base.credits_min,
                cli.base.credits_max, cli.base.window, cli.base.no_reply, static_cast<long long>(cli.base.latency_ns),
                static_cast<long long>(cli.base.handler_ns), static_cast<long long>(cli.base.reply_ns),
                static_cast<long long>(cli.base.sys_ns), cli.base.sys_slots,
                static_cast<unsigned long long>(cli.base.seed));
    for (const RunResult &r : results)
        if (r.config.policy == sluice::credit::Policy::off)
            std::printf("  %s: %s\n", pattern_name(r.params.pattern), r.workload.c_str());
    table_print(stdout, results);
    checks_print(stdout, results);

    bool ok = true;
    for (const RunResult &r : results) ok = ok && r.ok;
    if (!cli.csv.empty()) ok = csv_write(cli.csv, results) && ok;
    if (!cli.series_csv.empty()) ok = series_write(cli.series_csv, results) && ok;
    if (!cli.plots_dir.empty()) ok = plots_write(cli.plots_dir, results) && ok;
    return ok ? 0 : 1;
}
