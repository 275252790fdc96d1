// spawners/ssh/launch_ssh.cpp - `sluicerun -spawner=ssh`: find the hosts,
// place the ranks, and run the root of the tree of control processes (no
// rank runs here); -t prints the ssh commands of the whole tree instead.
#include "spawners/job_spec.hpp"

#include "base/knobs.hpp"
#include "spawners/local/launcher.hpp"
#include "spawners/ssh/hosts.hpp"
#include "spawners/ssh/remote.hpp"
#include "spawners/ssh/tree.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <unistd.h>

namespace sluice::spawner::ssh {
namespace {

constexpr int usage_error = 2;

long long realtime_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}


// -t: the ssh command of every host, in the order the tree starts them,
// each under a comment saying who runs it and what the host will run.
void tree_print(const TreeRelay &relay, const TreeSettings &settings) {
    const Placement placement{settings.job.ranks, settings.job.hosts};
    for (const Subtree &s : relay.subtrees()) {
        TreeSettings below = settings;
        below.root = false;
        below.job = relay.child_job(s, "");
        below.local_first = placement.first(s.first);
        below.local_count = placement.count(s.first);
        const TreeRelay child(below);
        std::printf("# %s, ranks %u-%u, started by %s:\n", child.name().c_str(), below.local_first,
                    below.local_first + below.local_count - 1, relay.name().c_str());
        std::printf("%s\n", command_line(ssh_command(below.job.names.front(),
                                                     remote_command(below.job.job_id, s.first))).c_str());
        tree_print(child, below);
    }
}

void dry_run_print(const TreeRelay &relay, const TreeSettings &settings) {
    const NodeJob &job = settings.job;
    std::printf("# job %s: %u rank(s) on %u host(s), out-degree %u, tree depth %u; each control process reads "
                "its part of the job (secret, environment, command) on the stdin of its ssh\n",
                job.job_id.c_str(), job.ranks, job.hosts, settings.degree, tree_depth(job.hosts, settings.degree));
    tree_print(relay, settings);
    std::string env;
    for (const auto &[name, value] : job.environment) env += " " + shell_quote(name + "=" + value);
    std::vector<std::string> run{job.path};
    run.insert(run.end(), job.arguments.begin(), job.arguments.end());
    std::printf("# on every host, in %s, each rank runs: env SLUICE_RANK=<rank> SLUICE_SIZE=%u SLUICE_SPAWNER=ssh "
                "SLUICE_LOCAL_FD=<socket>%s %s\n",
                shell_quote(job.directory).c_str(), job.ranks, env.c_str(), command_line(run).c_str());
    std::fflush(stdout);
}

} // namespace

int run(const JobSpec &spec) {
    const long long origin = realtime_ns();
    local::say_prefix_set("sluicerun", spec.verbose ? origin : 0);
    std::vector<std::string> hosts;
    std::string source, error;
    if (!hosts_find(hosts, source, error)) {
        local::say("%s", error.c_str());
        return usage_error;
    }
    if (spec.hosts > hosts.size()) {
        local::say("-N %u asks for more hosts than the %zu %s names; fix: lower -N or list more hosts", spec.hosts,
                   hosts.size(), source.c_str());
        return usage_error;
    }
    if (spec.hosts) hosts.resize(spec.hosts);
    if (hosts.size() > spec.ranks) {
        if (spec.hosts) {
            local::say("-N %u hosts for -n %u ranks would leave a host without a rank; fix: -N %u or more ranks",
                       spec.hosts, spec.ranks, spec.ranks);
            return usage_error;
        }
        hosts.resize(spec.ranks);  // every host runs at least one rank
    }
    const std::int64_t degree = base::knob_int(base::Knob::SSH_OUT_DEGREE);
    if (degree < 1) {
        local::say("SLUICE_SSH_OUT_DEGREE=%lld: each process must start at least one host; fix: set it to 1 or more",
                   static_cast<long long>(degree));
        return usage_error;
    }

    TreeSettings settings;
    settings.root = true;
    settings.degree = static_cast<unsigned>(std::min<std::int64_t>(degree, 1 << 16));
    NodeJob &job = settings.job;
    job.secret = secret_make();
    if (job.secret.empty()) {
        local::say("cannot make the job's secret: no random numbers (getrandom failed)");
        return 1;
    }
    job.job_id = spec.job_id;
    job.origin_ns = origin;
    job.verbose = spec.verbose;
    job.ranks = spec.ranks;
    job.hosts = static_cast<unsigned>(hosts.size());
    job.names = hosts;
    char directory[4096];
    job.directory = ::getcwd(directory, sizeof directory) ? directory : "";
    job.program = spec.program;
    // A name without '/' is looked up in each host's PATH; a path is made
    // absolute here (file systems are shared at the same place).
    job.path = spec.program.find('/') == std::string::npos ? spec.program
               : spec.program_path.front() == '/'        ? spec.program_path
                                                         : job.directory + "/" + spec.program_path;
    job.arguments = spec.arguments;
    job.environment = job_environment(spec);
    TreeRelay relay(settings);

    if (spec.dry_run) {
        dry_run_print(relay, settings);
        return 0;
    }
    if (spec.verbose)
        local::say("job %s: %u rank(s) of %s on %u host(s) from %s, out-degree %u, tree depth %u "
                   "(ssh round trips in sequence)",
                   job.job_id.c_str(), job.ranks, job.path.c_str(), job.hosts, source.c_str(), settings.degree,
                   tree_depth(job.hosts, settings.degree));
    ::signal(SIGPIPE, SIG_IGN);  // a dead ssh's pipe must give EPIPE, not end sluicerun
    if (!relay.prepare(error)) {
        local::say("%s", error.c_str());
        return 1;
    }
    local::LaunchOptions options;
    options.job_size = job.ranks;
    options.verbose = spec.verbose;
    options.program = spec.program;
    options.program_path = job.path;
    options.job_id = job.job_id;
    if (!local::fd_limit_prepare(3 * static_cast<unsigned>(relay.subtrees().size()), error)) {
        local::say("%s", error.c_str());
        return usage_error;
    }
    local::Binder binder;
    const int code = local::launch(options, binder, &relay);
    if (spec.verbose) local::say("job %s ended with code %d", job.job_id.c_str(), code);
    return code;
}

} // namespace sluice::spawner::ssh
