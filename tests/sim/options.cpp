// tests/sim/options.cpp - the option table and its parser (options.hpp).
#include "tests/sim/options.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>

namespace sluice::sim {

namespace {

bool to_u64(const std::string &s, std::uint64_t &out) {
    if (s.empty() || s[0] == '-') return false;
    char *end = nullptr;
    errno = 0;
    // Accept 1e7 and 10000000 alike.
    if (s.find_first_of("eE.") != std::string::npos) {
        const double d = std::strtod(s.c_str(), &end);
        if (*end || d < 0 || d > 1.8e19 || d != static_cast<double>(static_cast<std::uint64_t>(d))) return false;
        out = static_cast<std::uint64_t>(d);
        return true;
    }
    out = std::strtoull(s.c_str(), &end, 10);
    return !*end && errno == 0;
}

bool to_unsigned(const std::string &s, unsigned &out) {
    std::uint64_t v = 0;
    if (!to_u64(s, v) || v > 0xffffffffu) return false;
    out = static_cast<unsigned>(v);
    return true;
}

bool to_i64(const std::string &s, std::int64_t &out) {
    std::uint64_t v = 0;
    if (!to_u64(s, v) || v > static_cast<std::uint64_t>(INT64_MAX)) return false;
    out = static_cast<std::int64_t>(v);
    return true;
}

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(item);
    return out;
}

bool unsigned_list(const std::string &s, std::vector<unsigned> &out) {
    out.clear();
    for (const std::string &item : split(s)) {
        unsigned v = 0;
        if (!to_unsigned(item, v)) return false;
        out.push_back(v);
    }
    return !out.empty();
}

struct Option {
    const char *name;
    const char *arg;  // nullptr: a flag
    const char *help;
    std::function<bool(Cli &, const std::string &)> set;
};

auto i64_field(std::int64_t RunParams::*f) {
    return [f](Cli &c, const std::string &v) { return to_i64(v, c.base.*f); };
}
auto u64_field(std::uint64_t RunParams::*f) {
    return [f](Cli &c, const std::string &v) { return to_u64(v, c.base.*f); };
}
auto override_field(std::optional<unsigned> ConfigOverrides::*f) {
    return [f](Cli &c, const std::string &v) {
        unsigned x = 0;
        if (!to_unsigned(v, x)) return false;
        c.base.overrides.*f = x;
        return true;
    };
}

const std::vector<Option> &options() {
    static const std::vector<Option> table = {
        // The job and its traffic
        {"nodes", "N", "nodes in the job (default 64)",
         [](Cli &c, const std::string &v) { return to_unsigned(v, c.base.nodes) && c.base.nodes >= 2; }},
        {"pattern", "LIST", "uniform, hotspot, stencil, tree, shifting or all (comma list; default uniform)",
         [](Cli &c, const std::string &v) {
             c.patterns.clear();
             for (const std::string &s : split(v)) {
                 if (s == "all") {
                     c.patterns.assign(std::begin(all_patterns), std::end(all_patterns));
                     continue;
                 }
                 Pattern p;
                 if (!pattern_parse(s, p)) return false;
                 c.patterns.push_back(p);
             }
             return !c.patterns.empty();
         }},
        {"policy", "LIST",
         "off, fixed, dynamic, demand, auto (Config::defaults) or all (= fixed,dynamic,demand,auto); comma list; "
         "default auto.  Every pattern also runs under off, the unlimited baseline",
         [](Cli &c, const std::string &v) {
             c.policies.clear();
             for (const std::string &s : split(v)) {
                 if (s == "auto") {
                     c.policies.push_back(std::nullopt);
                 } else if (s == "all") {
                     for (auto p : {credit::Policy::fixed, credit::Policy::dynamic, credit::Policy::demand})
                         c.policies.push_back(p);
                     c.policies.push_back(std::nullopt);
                 } else {
                     credit::Policy p;
                     if (!credit::policy_parse(s, p)) return false;
                     c.policies.push_back(p);
                 }
             }
             return !c.policies.empty();
         }},
        {"messages", "M", "requests each sending node sends (default 1000)", u64_field(&RunParams::messages)},
        {"total", "T", "total requests instead: each sending node sends T / senders, rounded up",
         [](Cli &c, const std::string &v) {
             std::uint64_t t = 0;
             if (!to_u64(v, t) || t == 0) return false;
             c.total = t;
             return true;
         }},
        {"credits", "A[-B]", "credits per request, or drawn uniformly from A..B like Mediums (1..15; default 1)",
         [](Cli &c, const std::string &v) {
             const auto dash = v.find('-');
             unsigned a = 0, b = 0;
             if (!to_unsigned(v.substr(0, dash), a)) return false;
             b = a;
             if (dash != std::string::npos && !to_unsigned(v.substr(dash + 1), b)) return false;
             if (a < 1 || b < a || b > credit::max_request_credits) return false;
             c.base.credits_min = a;
             c.base.credits_max = b;
             return true;
         }},
        {"window", "W", "requests a sender keeps awaiting replies, 1..65535 (default 64)",
         [](Cli &c, const std::string &v) {
             return to_unsigned(v, c.base.window) && c.base.window > 0 && c.base.window < 65536;
         }},
        {"no-reply", "F", "fraction of request handlers that send no reply (default 0)",
         [](Cli &c, const std::string &v) {
             char *end = nullptr;
             c.base.no_reply = std::strtod(v.c_str(), &end);
             return !*end && c.base.no_reply >= 0 && c.base.no_reply <= 1;
         }},
        {"shift-every", "K", "shifting pattern: new partners every K requests (default 2000)",
         u64_field(&RunParams::shift_every)},
        {"stencil-order", "turn|random",
         "stencil: the neighbours in turn like a halo exchange (default), or a random one per request",
         [](Cli &c, const std::string &v) {
             if (v != "turn" && v != "random") return false;
             c.base.stencil_random = v == "random";
             return true;
         }},
        {"seed", "S", "random seed (default 1)", u64_field(&RunParams::seed)},
        // The machine
        {"latency-ns", "NS", "one-way latency of every message, 1 ns to 2 s (default 1000)",
         [](Cli &c, const std::string &v) {
             return to_i64(v, c.base.latency_ns) && c.base.latency_ns >= 1 && c.base.latency_ns <= 2'000'000'000;
         }},
        {"handler-ns", "NS", "a request handler's time on its node's CPU (default 200)",
         i64_field(&RunParams::handler_ns)},
        {"reply-ns", "NS", "processing a reply (default 50)", i64_field(&RunParams::reply_ns)},
        {"sys-ns", "NS", "processing a system message or a refusal (default 50)", i64_field(&RunParams::sys_ns)},
        {"sys-slots", "S", "system receive queue slots per node; a message to a full queue is refused (default 256)",
         [](Cli &c, const std::string &v) { return to_unsigned(v, c.base.sys_slots) && c.base.sys_slots > 0; }},
        {"sys-order", "ORDER",
         "how a node's CPU serves its queues: fifo (all in arrival order, default), first (system messages before "
         "requests and replies), alternate (one of each in turn)",
         [](Cli &c, const std::string &v) {
             using O = RunParams::SysOrder;
             if (v == "fifo") c.base.sys_order = O::fifo;
             else if (v == "first") c.base.sys_order = O::first;
             else if (v == "alternate") c.base.sys_order = O::alternate;
             else return false;
             return true;
         }},
        // Config overrides
        {"per-peer", "C", "Config::per_peer", override_field(&ConfigOverrides::per_peer)},
        {"min-credits", "C", "Config::min_credits", override_field(&ConfigOverrides::min_credits)},
        {"max-per-peer", "C", "Config::max_per_peer", override_field(&ConfigOverrides::max_per_peer)},
        {"banked", "C", "Config::banked", override_field(&ConfigOverrides::banked)},
        {"epoch-length", "R", "Config::epoch_length", override_field(&ConfigOverrides::epoch_length)},
        {"revoke-limit", "C", "Config::revoke_limit", override_field(&ConfigOverrides::revoke_limit)},
        {"lender-limit", "C", "Config::lender_limit", override_field(&ConfigOverrides::lender_limit)},
        {"scavenge-targets", "K", "Config::scavenge_targets", override_field(&ConfigOverrides::scavenge_targets)},
        {"low-water", "C", "Config::low_water", override_field(&ConfigOverrides::low_water)},
        {"slack", "C", "Config::slack", override_field(&ConfigOverrides::slack)},
        {"sys-outstanding", "K", "Config::sys_outstanding", override_field(&ConfigOverrides::sys_outstanding)},
        {"ask-extra", "C", "Config::ask_extra", override_field(&ConfigOverrides::ask_extra)},
        {"credit-bytes", "B", "Config::credit_bytes",
         [](Cli &c, const std::string &v) {
             std::uint64_t b = 0;
             if (!to_u64(v, b) || b == 0) return false;
             c.base.overrides.credit_bytes = b;
             return true;
         }},
        // Checking
        {"stall-bound-ns", "NS", "a sender stalled this long (simulated) fails the run (default: max(20 ms, 50 N x costs))",
         i64_field(&RunParams::stall_bound_ns)},
        {"full-check-every", "E", "re-read every pair from both engines every E events (default 0: at the end)",
         u64_field(&RunParams::full_check_every)},
        {"accounted-every", "E", "compare one node's credits_accounted() every E events (default 1024)",
         u64_field(&RunParams::accounted_every)},
        {"inject-fault", "N",
         "corrupt the N-th reply on the wire (XXX off by one, a grant nobody made): the checks must fail the run",
         u64_field(&RunParams::inject_fault)},
        // Output
        {"watch", "NODE", "the node whose credits per peer --series and --plots record (default 0)",
         [](Cli &c, const std::string &v) { return to_unsigned(v, c.base.watch); }},
        {"series-max", "ROWS", "rows of that series kept per run (default 200000)",
         [](Cli &c, const std::string &v) {
             std::uint64_t r = 0;
             if (!to_u64(v, r)) return false;
             c.base.series_max = r;
             return true;
         }},
        {"csv", "FILE", "per-run metrics as CSV", [](Cli &c, const std::string &v) { c.csv = v; return !v.empty(); }},
        {"series", "FILE", "the watched node's credits per peer over time, CSV",
         [](Cli &c, const std::string &v) { c.series_csv = v; return !v.empty(); }},
        {"plots", "DIR", "PNG plots with gnuplot (credits per peer for dynamic and demand, stall fraction per policy)",
         [](Cli &c, const std::string &v) { c.plots_dir = v; return !v.empty(); }},
        {"jobs", "J", "runs at once, one thread each (default 2)",
         [](Cli &c, const std::string &v) { return to_unsigned(v, c.jobs) && c.jobs > 0; }},
        {"no-baseline", nullptr, "skip the Policy::off run of each pattern (no throughput ratio then)",
         [](Cli &c, const std::string &) { return !(c.baseline = false); }},
        {"quiet", nullptr, "no line per finished run on stderr", [](Cli &c, const std::string &) { return c.quiet = true; }},
        // Modes
        {"targets", nullptr, "run the issue's targets (10,000 and 100,000 nodes) and print PASS/FAIL",
         [](Cli &c, const std::string &) { return c.targets = true; }},
        {"sweep", nullptr, "for --nodes and the first --pattern/--policy, vary per_peer, banked, epoch_length",
         [](Cli &c, const std::string &) { return c.sweep = true; }},
        {"sweep-per-peer", "LIST", "per_peer values of --sweep (default 2,4,8,16)",
         [](Cli &c, const std::string &v) { return unsigned_list(v, c.sweep_per_peer); }},
        {"sweep-banked", "LIST", "banked values of --sweep (default 0,1024,4096,16384)",
         [](Cli &c, const std::string &v) { return unsigned_list(v, c.sweep_banked); }},
        {"sweep-epoch", "LIST", "epoch_length values of --sweep (default 256,1024,4096)",
         [](Cli &c, const std::string &v) { return unsigned_list(v, c.sweep_epoch); }},
        {"bench-locks", nullptr, "time request/reply cycles on one Engine pair: 1, 2, 4 threads; adjacent, far or the same peer",
         [](Cli &c, const std::string &) { return c.bench_locks = true; }},
        {"bench-iterations", "I", "cycles per thread of --bench-locks (default 2000000)",
         [](Cli &c, const std::string &v) { return to_u64(v, c.bench_iterations) && c.bench_iterations > 0; }},
    };
    return table;
}

void usage(std::FILE *out) {
    std::fprintf(out,
                 "usage: creditsim [options]\n"
                 "Simulates N nodes, each running a real sluice::credit::Engine, and checks the credit\n"
                 "invariants after every event (tests/sim/README.md).\n\n");
    for (const Option &o : options()) {
        std::string left = std::string("--") + o.name + (o.arg ? std::string(" ") + o.arg : "");
        std::fprintf(out, "  %-24s %s\n", left.c_str(), o.help);
    }
    std::fprintf(out, "  %-24s %s\n", "--help", "this list");
}

} // namespace

RunParams Cli::run_for(Pattern pattern, std::optional<credit::Policy> policy) const {
    RunParams p = base;
    p.pattern = pattern;
    p.policy = policy;
    if (total) {
        const std::uint64_t senders = pattern == Pattern::hotspot ? p.nodes - 1 : p.nodes;
        p.messages = (*total + senders - 1) / senders;
    }
    return p;
}

Cli cli_parse(int argc, char **argv, std::optional<int> &exit_code) {
    Cli cli;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage(stdout);
            exit_code = 0;
            return cli;
        }
        std::string value;
        bool has_value = false;
        if (arg.rfind("--", 0) == 0) {
            const auto eq = arg.find('=');
            if (eq != std::string::npos) {
                value = arg.substr(eq + 1);
                arg = arg.substr(0, eq);
                has_value = true;
            }
            arg = arg.substr(2);
        }
        const Option *found = nullptr;
        for (const Option &o : options())
            if (arg == o.name) found = &o;
        if (!found) {
            std::fprintf(stderr, "creditsim: unknown option '%s' (--help lists them)\n", argv[i]);
            exit_code = 2;
            return cli;
        }
        if (found->arg && !has_value) {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "creditsim: --%s needs a value (%s)\n", found->name, found->arg);
                exit_code = 2;
                return cli;
            }
            value = argv[++i];
        }
        if (!found->set(cli, value)) {
            std::fprintf(stderr, "creditsim: bad value '%s' for --%s (%s)\n", value.c_str(), found->name, found->help);
            exit_code = 2;
            return cli;
        }
    }
    if (cli.base.watch >= cli.base.nodes) {
        std::fprintf(stderr, "creditsim: --watch %u is not a node of %u\n", cli.base.watch, cli.base.nodes);
        exit_code = 2;
    }
    return cli;
}

} // namespace sluice::sim
