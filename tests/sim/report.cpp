// tests/sim/report.cpp - running simulations and reporting them (report.hpp).
#include "tests/sim/report.hpp"

#include "tests/sim/simulation.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace sluice::sim {

std::vector<RunResult> runs_execute(const std::vector<RunParams> &runs, unsigned jobs, bool quiet) {
    std::vector<RunResult> results(runs.size());
    std::atomic<std::size_t> next{0};
    std::mutex print;
    auto worker = [&]() {
        for (;;) {
            const std::size_t i = next.fetch_add(1);
            if (i >= runs.size()) return;
            {
                Simulation sim(runs[i]);
                results[i] = sim.run();
            }
            if (!quiet) {
                std::lock_guard<std::mutex> g(print);
                std::fprintf(stderr, "creditsim: %-18s %6u nodes %11llu requests  %7.2f s  %s\n",
                             runs[i].label().c_str(), runs[i].nodes,
                             static_cast<unsigned long long>(results[i].requests), results[i].wall_s,
                             results[i].ok ? "ok" : "FAILED");
            }
        }
    };
    std::vector<std::thread> threads;
    const unsigned n = std::max(1u, std::min<unsigned>(jobs, static_cast<unsigned>(runs.size())));
    for (unsigned t = 1; t < n; ++t) threads.emplace_back(worker);
    worker();
    for (std::thread &t : threads) t.join();
    return results;
}

bool same_workload(const RunParams &a, const RunParams &b) {
    return a.nodes == b.nodes && a.pattern == b.pattern && a.messages == b.messages && a.seed == b.seed &&
           a.latency_ns == b.latency_ns && a.handler_ns == b.handler_ns && a.reply_ns == b.reply_ns &&
           a.sys_ns == b.sys_ns && a.sys_slots == b.sys_slots && a.sys_order == b.sys_order && a.credits_min == b.credits_min &&
           a.credits_max == b.credits_max && a.window == b.window && a.no_reply == b.no_reply &&
           a.shift_every == b.shift_every && a.stencil_random == b.stencil_random;
}

void throughput_fill(std::vector<RunResult> &results) {
    for (RunResult &r : results) {
        for (const RunResult &base : results) {
            if (base.config.policy == credit::Policy::off && base.ok && r.ok && same_workload(base.params, r.params) &&
                r.makespan_ns > 0) {
                r.throughput = static_cast<double>(base.makespan_ns) / static_cast<double>(r.makespan_ns);
                break;
            }
        }
    }
}

std::string kib(double bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", bytes / 1024.0);
    return b;
}

namespace {
std::string fixed(double v, int digits, double missing_below = -0.5) {
    if (v < missing_below) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.*f", digits, v);
    return b;
}
} // namespace

void table_print(std::FILE *out, const std::vector<RunResult> &results) {
    std::fprintf(out, "%-9s %6s %-13s %10s %9s %9s %7s %10s %9s %6s %6s %9s %7s %7s  %s\n", "pattern", "nodes",
                 "policy", "requests", "mem max", "mem mean", "stall%", "last move", "moved/ep", "thru", "hot",
                 "sys msgs", "wall s", "result", "config");
    std::fprintf(out, "%-9s %6s %-13s %10s %9s %9s %7s %10s %9s %6s %6s %9s %7s %7s  %s\n", "", "", "", "", "KiB",
                 "KiB", "", "us", "late", "x off", "x 1/H", "", "", "", "");
    for (const RunResult &r : results) {
        const credit::Config &c = r.config;
        std::string policy = r.policy;
        if (!r.params.policy) policy = "auto:" + policy;
        std::string config = c.policy == credit::Policy::off
                                 ? "unlimited"
                                 : "per_peer=" + std::to_string(c.per_peer) + " banked=" + std::to_string(c.banked) +
                                       " epoch=" + std::to_string(c.epoch_length) + " " + r.params.overrides.describe();
        std::string last = r.last_move_ns < 0 ? "none" : fixed(static_cast<double>(r.last_move_ns) / 1000.0, 1);
        std::string late = c.policy == credit::Policy::off ? "-" : fixed(r.moved_per_epoch_late, 2);
        std::fprintf(out, "%-9s %6u %-13s %10llu %9s %9s %7.3f %10s %9s %6s %6s %9llu %7.2f %7s  %s\n",
                     pattern_name(r.params.pattern), r.params.nodes, policy.c_str(),
                     static_cast<unsigned long long>(r.requests), kib(r.memory_max).c_str(),
                     kib(r.memory_mean).c_str(), 100.0 * r.stall_fraction(), last.c_str(), late.c_str(),
                     fixed(r.throughput, 3).c_str(), fixed(r.hot_rate, 3).c_str(),
                     static_cast<unsigned long long>(r.sys_sent), r.wall_s, r.ok ? "ok" : "FAILED", config.c_str());
    }
    for (const RunResult &r : results) {
        if (!r.notes.empty()) std::fprintf(out, "note, %s: %s\n", r.params.label().c_str(), r.notes.c_str());
        if (!r.ok) std::fprintf(out, "FAILED, %s: %s\n", r.params.label().c_str(), r.failure.c_str());
    }
}

std::size_t peak_rss_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return static_cast<std::size_t>(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
    }
    return 0;
}

void checks_print(std::FILE *out, const std::vector<RunResult> &results) {
    LedgerCounts c;
    std::uint64_t watchdog = 0, events = 0;
    for (const RunResult &r : results) {
        c.pair_checks += r.checks.pair_checks;
        c.node_checks += r.checks.node_checks;
        c.buffer_checks += r.checks.buffer_checks;
        c.accounted_checks += r.checks.accounted_checks;
        c.sweeps += r.checks.sweeps;
        watchdog += r.watchdog_checks;
        events += r.events;
    }
    std::fprintf(out,
                 "invariant checks: %llu pair laws, %llu node sums, %llu buffer bounds, %llu credits_accounted, "
                 "%llu full sweeps, %llu watchdog (%llu events)\n",
                 static_cast<unsigned long long>(c.pair_checks), static_cast<unsigned long long>(c.node_checks),
                 static_cast<unsigned long long>(c.buffer_checks), static_cast<unsigned long long>(c.accounted_checks),
                 static_cast<unsigned long long>(c.sweeps), static_cast<unsigned long long>(watchdog),
                 static_cast<unsigned long long>(events));
    std::fprintf(out, "simulator peak memory %.1f MiB\n", static_cast<double>(peak_rss_bytes()) / 1048576.0);
}

bool csv_write(const std::string &path, const std::vector<RunResult> &results) {
    std::ofstream out(path);
    if (!out) {
        std::fprintf(stderr, "creditsim: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
        return false;
    }
    out << "pattern,nodes,policy_asked,policy,per_peer,min_credits,max_per_peer,banked,epoch_length,overrides,"
           "messages_per_node,requests,credits_min,credits_max,window,no_reply,latency_ns,handler_ns,reply_ns,sys_ns,"
           "sys_slots,seed,makespan_ns,steady_end_ns,memory_max_bytes,memory_mean_bytes,receive_max_bytes,"
           "state_max_bytes,stall_fraction,stalls,last_move_ns,moved,moved_per_epoch_late,settled,throughput,"
           "hot_rate,granted,revoked,reclaimed,hidden_replies,banked_answers,sys_sent,sys_refused,epochs,events,"
           "pair_checks,node_checks,buffer_checks,accounted_checks,sweeps,watchdog_checks,wall_s,sim_bytes,ok,"
           "failure\n";
    for (const RunResult &r : results) {
        const RunParams &p = r.params;
        const credit::Config &c = r.config;
        std::string failure = r.failure;
        std::replace(failure.begin(), failure.end(), '"', '\'');
        std::replace(failure.begin(), failure.end(), '\n', ' ');
        std::replace(failure.begin(), failure.end(), ',', ';');
        out << pattern_name(p.pattern) << ',' << p.nodes << ',' << p.policy_label() << ',' << r.policy << ','
            << c.per_peer << ',' << c.min_credits << ',' << c.max_per_peer << ',' << c.banked << ','
            << c.epoch_length << ",\"" << p.overrides.describe() << "\"," << p.messages << ',' << r.requests << ','
            << p.credits_min << ',' << p.credits_max << ',' << p.window << ',' << p.no_reply << ',' << p.latency_ns
            << ',' << p.handler_ns << ',' << p.reply_ns << ',' << p.sys_ns << ',' << p.sys_slots << ',' << p.seed
            << ',' << r.makespan_ns << ',' << r.steady_end_ns << ',' << r.memory_max << ',' << r.memory_mean << ','
            << r.receive_max << ',' << r.state_max << ',' << r.stall_fraction() << ',' << r.stalls << ','
            << r.last_move_ns << ',' << r.moved << ',' << r.moved_per_epoch_late << ',' << (r.settled ? 1 : 0)
            << ',' << r.throughput << ',' << r.hot_rate << ',' << r.granted << ',' << r.revoked << ','
            << r.reclaimed << ',' << r.hidden_replies << ',' << r.banked_answers << ',' << r.sys_sent << ','
            << r.sys_refused << ',' << r.epochs << ',' << r.events << ',' << r.checks.pair_checks << ','
            << r.checks.node_checks << ',' << r.checks.buffer_checks << ',' << r.checks.accounted_checks << ','
            << r.checks.sweeps << ',' << r.watchdog_checks << ',' << r.wall_s << ',' << r.sim_bytes << ','
            << (r.ok ? 1 : 0) << ",\"" << failure << "\"\n";
    }
    return static_cast<bool>(out);
}

bool series_write(const std::string &path, const std::vector<RunResult> &results) {
    std::ofstream out(path);
    if (!out) {
        std::fprintf(stderr, "creditsim: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
        return false;
    }
    out << "pattern,nodes,policy,node,time_ns,peer,held,lent\n";
    for (const RunResult &r : results) {
        for (const SeriesRow &s : r.series) {
            out << pattern_name(r.params.pattern) << ',' << r.params.nodes << ',' << r.policy << ',' << r.params.watch
                << ',' << s.time_ns << ',';
            if (s.peer == Ledger::none) out << "bank,," << s.lent << '\n';
            else out << s.peer << ',' << s.held << ',' << s.lent << '\n';
        }
        if (r.series_truncated)
            std::fprintf(stderr, "creditsim: %s: series cut at %zu rows (--series-max)\n", r.params.label().c_str(),
                         r.series.size());
    }
    return static_cast<bool>(out);
}

// ---- plots ---------------------------------------------------------------------------

namespace {

bool gnuplot_found() {
    const char *path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "/usr/bin:/bin");
    std::string d;
    while (std::getline(dirs, d, ':')) {
        if (!d.empty() && access((d + "/gnuplot").c_str(), X_OK) == 0) return true;
    }
    return false;
}

// One run's series as gnuplot blocks: the 8 busiest peers, then the bank.
// Returns how many peer blocks were written.
unsigned series_blocks(std::ostream &out, const RunResult &r) {
    std::map<std::uint32_t, std::size_t> changes;
    for (const SeriesRow &s : r.series)
        if (s.peer != Ledger::none) ++changes[s.peer];
    std::vector<std::pair<std::size_t, std::uint32_t>> busiest;
    for (const auto &[peer, n] : changes) busiest.emplace_back(n, peer);
    std::sort(busiest.rbegin(), busiest.rend());
    if (busiest.size() > 8) busiest.resize(8);
    std::sort(busiest.begin(), busiest.end(), [](auto &a, auto &b) { return a.second < b.second; });
    const bool lent_at_start = r.config.policy == credit::Policy::fixed || r.config.policy == credit::Policy::dynamic;
    const unsigned start = lent_at_start ? r.config.per_peer : 0;
    // A series cut at --series-max ends where it was cut.
    const std::int64_t end = r.series_truncated && !r.series.empty() ? r.series.back().time_ns : r.makespan_ns;
    const double end_us = static_cast<double>(end) / 1000.0;
    for (const auto &[n, peer] : busiest) {
        out << "peer" << peer << " lent held\n0 " << start << ' ' << start << '\n';
        unsigned lent = start, held = start;
        for (const SeriesRow &s : r.series) {
            if (s.peer != peer) continue;
            lent = s.lent;
            held = s.held;
            out << static_cast<double>(s.time_ns) / 1000.0 << ' ' << lent << ' ' << held << '\n';
        }
        out << end_us << ' ' << lent << ' ' << held << "\n\n\n";
    }
    out << "bank bank bank\n0 " << r.config.banked << ' ' << r.config.banked << '\n';
    std::uint32_t bank = r.config.banked;
    for (const SeriesRow &s : r.series) {
        if (s.peer != Ledger::none) continue;
        bank = s.lent;
        out << static_cast<double>(s.time_ns) / 1000.0 << ' ' << bank << ' ' << bank << '\n';
    }
    out << end_us << ' ' << bank << ' ' << bank << "\n\n\n";
    return static_cast<unsigned>(busiest.size());
}

} // namespace

bool plots_write(const std::string &dir, const std::vector<RunResult> &results) {
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        std::fprintf(stderr, "creditsim: cannot create %s: %s\n", dir.c_str(), std::strerror(errno));
        return false;
    }
    std::ofstream gp(dir + "/plots.gp");
    gp << "# made by creditsim --plots; run: gnuplot " << dir << "/plots.gp\n";
    std::vector<std::string> pngs;
    std::map<std::string, unsigned> seen;
    for (const RunResult &r : results) {
        const credit::Policy p = r.config.policy;
        if ((p != credit::Policy::dynamic && p != credit::Policy::demand) || r.series.empty()) continue;
        std::string name = std::string("credits-") + pattern_name(r.params.pattern) + "-" +
                           (r.params.policy ? "" : "auto-") + r.policy + "-" + std::to_string(r.params.nodes);
        if (seen[name]++) name += "-" + std::to_string(seen[name]);
        std::ofstream data(dir + "/" + name + ".dat");
        const unsigned k = series_blocks(data, r);
        const std::string png = dir + "/" + name + ".png";
        pngs.push_back(png);
        gp << "reset\nset terminal pngcairo size 1100,800 noenhanced\nset output '" << png << "'\n"
           << "set multiplot layout 2,1 title 'node " << r.params.watch << " of " << r.params.nodes << ", "
           << pattern_name(r.params.pattern) << ", " << r.policy << " (per_peer " << r.config.per_peer << ", banked "
           << r.config.banked << ")'\n"
           << "set key outside right\nset xlabel 'time (us)'\nset ylabel 'credits lent to the peer'\n"
           << "set y2label 'bank'\nset y2tics\nset ytics nomirror\nset yrange [0:*]\n"
           << "plot ";
        for (unsigned i = 0; i < k; ++i)
            gp << "'" << dir << "/" << name << ".dat' index " << i << " using 1:2 with steps lw 2 title columnheader(1), ";
        gp << "'" << dir << "/" << name << ".dat' index " << k << " using 1:2 with steps dt 2 lc rgb 'black' axes x1y2 title 'bank'\n"
           << "unset y2label\nunset y2tics\nset ylabel 'credits held from the peer'\nplot ";
        for (unsigned i = 0; i < k; ++i)
            gp << (i ? ", " : "") << "'" << dir << "/" << name << ".dat' index " << i
               << " using 1:3 with steps lw 2 title columnheader(1)";
        if (!k) gp << "0 notitle";
        gp << "\nunset multiplot\nset ytics mirror\n\n";
    }
    // Stall fraction and throughput per pattern (rows) and policy (columns).
    std::vector<std::string> policies;
    std::vector<Pattern> patterns;
    for (const RunResult &r : results) {
        if (r.config.policy == credit::Policy::off) continue;
        const std::string p = r.params.policy ? r.policy : "auto:" + r.policy;
        if (std::find(policies.begin(), policies.end(), p) == policies.end()) policies.push_back(p);
        if (std::find(patterns.begin(), patterns.end(), r.params.pattern) == patterns.end())
            patterns.push_back(r.params.pattern);
    }
    if (!policies.empty()) {
        for (const char *what : {"stall", "throughput"}) {
            std::ofstream data(dir + "/" + what + ".dat");
            data << "pattern";
            for (const std::string &p : policies) data << ' ' << p;
            data << '\n';
            for (Pattern pat : patterns) {
                data << pattern_name(pat);
                for (const std::string &p : policies) {
                    std::string v = "-";
                    for (const RunResult &r : results) {
                        const std::string rp = r.params.policy ? r.policy : "auto:" + r.policy;
                        if (r.params.pattern != pat || rp != p) continue;
                        v = std::string(what) == "stall" ? fixed(100.0 * r.stall_fraction(), 4) : fixed(r.throughput, 4);
                    }
                    data << ' ' << v;
                }
                data << '\n';
            }
            const std::string png = dir + "/" + (std::string(what) == "stall" ? "stall-fraction" : "throughput") + ".png";
            pngs.push_back(png);
            gp << "reset\nset terminal pngcairo size 1000,550 noenhanced\nset output '" << png << "'\n"
               << "set style data histograms\nset style histogram clustered gap 1\n"
               << "set style fill solid 0.8 border -1\nset datafile missing '-'\nset key outside right\n"
               << "set yrange [0:*]\nset grid ytics\n"
               << (std::string(what) == "stall" ? "set ylabel 'requests that stalled (%)'\nset title 'Stall fraction per policy and pattern, "
                                                : "set ylabel 'throughput / unlimited credits'\nset title 'Throughput relative to Policy::off, ")
               << results.front().params.nodes << " nodes'\n"
               << "plot for [i=2:" << policies.size() + 1 << "] '" << dir << "/" << what
               << ".dat' using i:xtic(1) title columnheader(i)\n\n";
        }
    }
    gp.close();
    if (!gnuplot_found()) {
        std::fprintf(stderr,
                     "creditsim: gnuplot is not installed (apt-get install gnuplot-nox): plots skipped; the data "
                     "and %s/plots.gp are written\n",
                     dir.c_str());
        return true;
    }
    // gnuplot's warnings (flat ranges) go to a log, shown only if it fails.
    const std::string cmd = "gnuplot '" + dir + "/plots.gp' > '" + dir + "/gnuplot.log' 2>&1";
    if (std::system(cmd.c_str()) != 0) {
        std::fprintf(stderr, "creditsim: gnuplot failed, see %s/gnuplot.log\n", dir.c_str());
        return false;
    }
    for (const std::string &p : pngs) std::printf("plot: %s\n", p.c_str());
    return true;
}

} // namespace sluice::sim
