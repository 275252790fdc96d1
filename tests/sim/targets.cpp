// tests/sim/targets.cpp - --targets (the acceptance numbers) and
// --sweep (the runs that choose Config::defaults' table).
#include "tests/sim/modes.hpp"
#include "tests/sim/report.hpp"

#include <chrono>
#include <cstdio>
#include <string>

namespace sluice::sim {

using credit::Policy;

namespace {

struct Verdict {
    std::string name, measured, limit;
    bool pass;
};

void verdicts_print(const std::vector<Verdict> &v) {
    std::printf("\n%-52s %14s %16s  %s\n", "target", "measured", "limit", "");
    for (const Verdict &x : v)
        std::printf("%-52s %14s %16s  %s\n", x.name.c_str(), x.measured.c_str(), x.limit.c_str(), x.pass ? "PASS" : "FAIL");
}

std::string fmt(const char *f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

void outputs_write(const Cli &cli, const std::vector<RunResult> &results, bool &ok) {
    if (!cli.csv.empty()) ok = csv_write(cli.csv, results) && ok;
    if (!cli.series_csv.empty()) ok = series_write(cli.series_csv, results) && ok;
    if (!cli.plots_dir.empty()) ok = plots_write(cli.plots_dir, results) && ok;
}

} // namespace

int targets_run(const Cli &cli) {
    const bool series = !cli.series_csv.empty() || !cli.plots_dir.empty();
    auto make = [&](Pattern pattern, credit::Peer nodes, std::uint64_t messages, std::optional<Policy> policy) {
        RunParams p = cli.base;
        p.nodes = nodes;
        p.pattern = pattern;
        p.messages = messages;
        p.policy = policy;
        p.watch = 0;
        p.series = series && policy != Policy::off;
        return p;
    };
    // Each policy run is followed by its unlimited baseline; the biggest first.
    enum { s100k, s100k_off, t100k, t100k_off, s10k, s10k_off, t10k, t10k_off, s512, s512_off, hot, hot_off };
    const std::vector<RunParams> runs = {
        make(Pattern::stencil, 100000, 100, std::nullopt), make(Pattern::stencil, 100000, 100, Policy::off),
        make(Pattern::tree, 100000, 100, std::nullopt),    make(Pattern::tree, 100000, 100, Policy::off),
        make(Pattern::stencil, 10000, 1000, std::nullopt), make(Pattern::stencil, 10000, 1000, Policy::off),
        make(Pattern::tree, 10000, 1000, std::nullopt),    make(Pattern::tree, 10000, 1000, Policy::off),
        make(Pattern::stencil, 512, 20000, Policy::dynamic), make(Pattern::stencil, 512, 20000, Policy::off),
        make(Pattern::hotspot, 10000, 20, std::nullopt),   make(Pattern::hotspot, 10000, 20, Policy::off),
    };
    const auto start = std::chrono::steady_clock::now();
    std::vector<RunResult> results = runs_execute(runs, cli.jobs, cli.quiet);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throughput_fill(results);
    table_print(stdout, results);
    checks_print(stdout, results);

    const double mib = 1024.0 * 1024.0;
    std::vector<Verdict> v;
    for (int i : {s10k, t10k}) {
        const RunResult &r = results[static_cast<std::size_t>(i)];
        const std::string what = std::string("10,000 nodes, ") + pattern_name(r.params.pattern) + ", " + r.policy;
        v.push_back({what + ": memory per node (max)", fmt("%.2f MiB", r.memory_max / mib), "<= 4 MiB",
                     r.ok && r.memory_max <= 4 * mib});
        v.push_back({what + ": throughput / unlimited", fmt("%.3f", r.throughput), ">= 0.95",
                     r.ok && r.throughput >= 0.95});
    }
    for (int i : {s100k, t100k}) {
        const RunResult &r = results[static_cast<std::size_t>(i)];
        const std::string what = std::string("100,000 nodes, ") + pattern_name(r.params.pattern) + ", " + r.policy;
        v.push_back({what + ": memory per node (max)", fmt("%.2f MiB", r.memory_max / mib), "<= 8 MiB",
                     r.ok && r.memory_max <= 8 * mib});
    }
    {
        const RunResult &r = results[hot];
        v.push_back({"hot spot, 10,000 nodes, " + r.policy + ": no overflow, no deadlock", r.ok ? "held" : "violated",
                     "invariants", r.ok});
        v.push_back({"hot spot: node 0's request rate x H", fmt("%.3f", r.hot_rate), ">= 0.9", r.ok && r.hot_rate >= 0.9});
    }
    for (int i : {s10k, s512}) {
        const RunResult &r = results[static_cast<std::size_t>(i)];
        v.push_back({"stencil, " + std::to_string(r.params.nodes) + " nodes, " + r.policy +
                         ": credits moved per epoch, settled",
                     fmt("%.3f", r.moved_per_epoch_late), "== 0", r.ok && r.moved_per_epoch_late == 0});
    }
    {
        const RunResult &r = results[s10k];
        v.push_back({"10,000 nodes, 10^7 messages (stencil): wall time", fmt("%.1f s", r.wall_s), "<= 60 s",
                     r.ok && r.wall_s <= 60 && r.requests >= 10'000'000});
    }
    bool all_ok = true;
    for (const RunResult &r : results) all_ok = all_ok && r.ok;
    v.push_back({"every run: invariants held, all delivered", all_ok ? "yes" : "no", "", all_ok});
    verdicts_print(v);
    std::printf("whole --targets run: %.1f s wall, %u jobs at once\n", wall, cli.jobs);

    bool ok = true;
    outputs_write(cli, results, ok);
    for (const Verdict &x : v) ok = ok && x.pass;
    return ok ? 0 : 1;
}

int sweep_run(const Cli &cli) {
    const Pattern pattern = cli.patterns.front();
    const std::optional<Policy> asked = cli.policies.front();
    const Policy policy = asked ? *asked : credit::Config::defaults(cli.base.nodes, 0).policy;
    if (policy == Policy::off) {
        std::fprintf(stderr, "creditsim: --sweep needs a policy with credits\n");
        return 2;
    }
    std::vector<RunParams> runs{cli.run_for(pattern, Policy::off)};
    const std::vector<unsigned> unset{0};
    const bool vary_per_peer = policy != Policy::demand, vary_rest = policy != Policy::fixed;
    for (unsigned per_peer : vary_per_peer ? cli.sweep_per_peer : unset)
        for (unsigned banked : vary_rest ? cli.sweep_banked : unset)
            for (unsigned epoch : vary_rest ? cli.sweep_epoch : unset) {
                RunParams p = cli.run_for(pattern, policy);
                if (vary_per_peer) p.overrides.per_peer = per_peer;
                if (vary_rest) {
                    p.overrides.banked = banked;
                    p.overrides.epoch_length = epoch;
                }
                runs.push_back(p);
            }
    std::vector<RunResult> results = runs_execute(runs, cli.jobs, cli.quiet);
    throughput_fill(results);
    std::printf("sweep: %u nodes, %s, %s, %llu requests per sender\n", cli.base.nodes, pattern_name(pattern),
                credit::policy_name(policy), static_cast<unsigned long long>(runs.front().messages));
    std::printf("%8s %8s %8s %10s %10s %8s %7s %9s %10s %7s\n", "per_peer", "banked", "epoch", "mem max", "mem mean",
                "stall%", "thru", "moved/ep", "last move", "result");
    std::printf("%8s %8s %8s %10s %10s %8s %7s %9s %10s %7s\n", "", "", "", "KiB", "KiB", "", "x off", "late", "us", "");
    bool ok = true;
    for (std::size_t i = 1; i < results.size(); ++i) {
        const RunResult &r = results[i];
        ok = ok && r.ok;
        const std::string last = r.last_move_ns < 0 ? "none" : fmt("%.1f", static_cast<double>(r.last_move_ns) / 1000.0);
        std::printf("%8u %8u %8u %10s %10s %8.3f %7.3f %9.2f %10s %7s\n", r.config.per_peer, r.config.banked,
                    r.config.epoch_length, kib(r.memory_max).c_str(), kib(r.memory_mean).c_str(),
                    100.0 * r.stall_fraction(), r.throughput, r.moved_per_epoch_late, last.c_str(),
                    r.ok ? "ok" : "FAILED");
    }
    for (const RunResult &r : results)
        if (!r.ok) std::printf("FAILED, %s: %s\n", r.params.label().c_str(), r.failure.c_str());
    checks_print(stdout, results);
    outputs_write(cli, results, ok);
    return ok ? 0 : 1;
}

} // namespace sluice::sim
