// spawners/ssh/node.cpp - a host's control process (node.hpp): read the job
// from stdin, connect back to the parent, start the hosts below, then fork
// and serve this host's ranks with the local launcher.
#include "spawners/ssh/node.hpp"

#include "base/knobs.hpp"
#include "spawners/local/launcher.hpp"
#include "spawners/local/protocol.hpp"
#include "spawners/ssh/tree.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <sys/prctl.h>
#include <unistd.h>

namespace sluice::spawner::ssh {

int node_main(int argc, char **argv) {
    (void)argc, (void)argv;
    local::say_prefix_set("sluicerun --ssh-node");
    // Dies with sshd's session process, its parent: SIGTERM reaches the
    // launcher loop, which then stops this host's ranks.
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (parent == 1 || ::getppid() != parent) return 1;
    if (::isatty(0)) {
        local::say("this is the control process of one host of an ssh job; it is started by "
                   "`sluicerun -spawner=ssh`, not by hand");
        return 2;
    }
    local::MessageType type;
    std::string payload;
    NodeJob job;
    if (!local::message_receive(0, type, payload) || type != static_cast<local::MessageType>(TreeMessage::job) ||
        !node_job_decode(payload, job)) {
        local::say("no job came on stdin from the parent; fix: SLUICE_SSH_OPTIONS must not contain -n or -f, and "
                   "SLUICE_SSH_REMOTE_CMD must start a sluicerun of the same version");
        return 1;
    }
    payload.assign(payload.size(), '\0');  // the secret stays in `job` only

    for (const auto &[name, value] : job.environment) ::setenv(name.c_str(), value.c_str(), 1);
    (void)base::knobs_load();  // the root already warned about bad values
    local::say_prefix_set("sluicerun[host " + std::to_string(job.host) + " " + job.names.front() + "]",
                          job.verbose ? job.origin_ns : 0);
    if (!job.directory.empty() && ::chdir(job.directory.c_str()) < 0) {
        const char *home = std::getenv("HOME");
        local::say("cannot enter %s (%s); the ranks start in %s", job.directory.c_str(), std::strerror(errno),
                   home ? home : "the login directory");
    }
    ::signal(SIGPIPE, SIG_IGN);

    const Placement placement{job.ranks, job.hosts};
    TreeSettings settings;
    settings.job = job;
    settings.degree = static_cast<unsigned>(std::clamp<std::int64_t>(base::knob_int(base::Knob::SSH_OUT_DEGREE), 1, 1 << 16));
    settings.local_first = placement.first(job.host);
    settings.local_count = placement.count(job.host);
    TreeRelay relay(std::move(settings));

    local::LaunchOptions options;
    options.ranks = placement.count(job.host);
    options.first_rank = placement.first(job.host);
    options.job_size = job.ranks;
    options.verbose = job.verbose;
    options.program = job.program;
    options.program_path = job.path;
    options.arguments = job.arguments;
    options.job_id = job.job_id;
    options.variables = {{"SLUICE_SPAWNER", "ssh"}};
    options.stdin_null = true;  // stdin is the ssh session: it tells us when the parent is gone

    std::string error;
    if (!local::fd_limit_prepare(options.ranks + 3 * static_cast<unsigned>(relay.subtrees().size()), error) ||
        !relay.prepare(error)) {
        local::say("%s", error.c_str());
        return 1;
    }
    if (job.verbose)
        local::say("started as pid %d: %u rank(s) from %u of %u, %zu host(s) to start", static_cast<int>(::getpid()),
                   options.ranks, options.first_rank, job.ranks, relay.subtrees().size());
    local::Binder binder;
    (void)local::launch(options, binder, &relay);
    // The job's code is the root's to give; this says whether the host ended
    // in order.
    return relay.parent_lost() ? 1 : 0;
}

} // namespace sluice::spawner::ssh
