// spawners/sluicerun.cpp - the launcher: `sluicerun [-spawner=S] -n N prog
// args...` runs N ranks of prog with spawner S: local (this host; the job
// itself is spawners/local/launcher.cpp), ssh (spawners/ssh), pmi (srun,
// spawners/pmi) or mpi (mpirun, spawners/mpi).  This file reads the command
// line, picks the spawner and checks everything that can be checked before
// anything starts.
#include "spawners/job_spec.hpp"
#include "spawners/local/launcher.hpp"
#include "spawners/ssh/node.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "conduits/registry.hpp"
#include "sluice_config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace spawner = sluice::spawner;
namespace local = sluice::spawner::local;
namespace base = sluice::base;
using spawner::JobSpec;

namespace {

constexpr unsigned max_ranks = 1u << 20;
constexpr int usage_error = 2;

const char usage[] =
    "usage: sluicerun [-spawner=local|ssh|pmi|mpi] -n N [-N H] [-E VAR,...] [-v] [-t]\n"
    "                 [--bind=core|socket|numa|none] [--] program [args...]\n"
    "Runs N ranks of program.\n"
    "  -spawner=S         how to start the ranks (also SLUICE_SPAWNER):\n"
    "                     local  forked on this host (default)\n"
    "                     ssh    on the hosts of SLUICE_SSH_NODES (or the node file, or\n"
    "                            the batch system's list), through a tree of ssh\n"
    "                     pmi    by srun with a PMI (SLUICE_PMI_LAUNCHER, SLUICE_PMI)\n"
    "                     mpi    by mpirun (SLUICE_MPIRUN); the ranks bootstrap over MPI\n"
    "  -n N, -np N        number of ranks, at least 1\n"
    "  -N H               number of hosts (ssh, pmi); ranks are placed in blocks\n"
    "  -E VAR1,VAR2       send these environment variables to every rank\n"
    "                     (local and mpi ranks inherit the whole environment anyway)\n"
    "  -v, --verbose      narrate each step on stderr (also SLUICE_VERBOSE=1)\n"
    "  -t, --dry-run      print what would run and exit\n"
    "  --bind=core        rank i on core (i mod cores)             [local, hwloc]\n"
    "  --bind=socket      rank i on socket (i mod sockets)         [local, hwloc]\n"
    "  --bind=numa        rank i on NUMA node (i mod nodes)        [local, hwloc]\n"
    "  --bind=none        no binding (default)\n"
    "  -h, --help         this text\n"
    "Options end at the program name or at `--`.\n"
    "Spawner: -spawner=, else SLUICE_SPAWNER, else what the environment shows\n"
    "(SLUICE_SSH_NODES or SLUICE_SSH_NODEFILE: ssh; inside a Slurm allocation: pmi;\n"
    "PBS_NODEFILE: ssh), else the configure default (" SLUICE_DEFAULT_SPAWNER ").\n"
    "Exit code: the job's (the first code a rank reported, else 128+signal of the\n"
    "first rank that crashed, else the first non-zero exit status, else 0); srun's\n"
    "or mpirun's own code with -spawner=pmi or mpi.  Bad usage exits with 2.\n"
    "Knobs: SLUICE_KILL_GRACE, SLUICE_EXIT_TIMEOUT, SLUICE_JOB_ID, SLUICE_VERBOSE,\n"
    "SLUICE_SSH_*, SLUICE_PMI*, SLUICE_MPIRUN (`sluice-info` lists them all).\n";

constexpr const char *spawner_names[] = {"local", "ssh", "pmi", "mpi"};

struct CommandLine {
    JobSpec job;
    local::Binding binding = local::Binding::none;
    std::string spawner_flag;  // -spawner=
    std::string spawner_source;  // what chose the spawner, for -v
    bool help = false;
};

// One line naming the problem and the fix; false so callers can return it.
bool fail(std::string &error, std::string message) {
    error = std::move(message);
    return false;
}

bool count_parse(const std::string &text, const char *option, const char *what, unsigned &out, std::string &error) {
    char *end = nullptr;
    errno = 0;
    unsigned long n = std::strtoul(text.c_str(), &end, 10);
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end || errno || n < 1 ||
        n > max_ranks)
        return fail(error, std::string(option) + " needs a number of " + what + " from 1 to " +
                               std::to_string(max_ranks) + ", not '" + text + "'; e.g. sluicerun " + option +
                               " 4 ./prog");
    out = static_cast<unsigned>(n);
    return true;
}

// -E A,B,C: names of environment variables.
bool names_parse(const std::string &text, std::vector<std::string> &out, std::string &error) {
    std::size_t start = 0;
    do {
        std::size_t comma = text.find(',', start);
        if (comma == std::string::npos) comma = text.size();
        std::string name = text.substr(start, comma - start);
        const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                           name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                               std::string::npos;
        if (!valid)
            return fail(error, "-E needs environment variable names separated by commas, not '" + text +
                                   "'; e.g. sluicerun -E OMP_NUM_THREADS,MY_VAR -n 4 ./prog");
        out.push_back(name);
        start = comma + 1;
    } while (start <= text.size());
    return true;
}

bool binding_parse(const std::string &text, local::Binding &out, std::string &error) {
    if (text == "core") out = local::Binding::core;
    else if (text == "socket") out = local::Binding::socket;
    else if (text == "numa") out = local::Binding::numa;
    else if (text == "none") out = local::Binding::none;
    else return fail(error, "unknown binding '" + text + "'; use --bind=core, --bind=socket, --bind=numa or --bind=none");
    return true;
}

// `-n 4`, `-n4`, `-np 4`, `--np=4`, `--bind core`, `--bind=core`: the value
// is glued (after `=` for long options) or is the next argument.
bool value_take(int argc, char **argv, int &i, const std::string &glued, const char *option, std::string &value,
                std::string &error) {
    if (!glued.empty()) {
        value = glued;
        return true;
    }
    if (i + 1 >= argc) return fail(error, std::string(option) + " needs a value; see sluicerun --help");
    value = argv[++i];
    return true;
}

bool arguments_parse(int argc, char **argv, CommandLine &cl, std::string &error) {
    int i = 1;
    bool have_ranks = false;
    for (; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--") {
            ++i;
            break;
        }
        if (arg.empty() || arg[0] != '-') break;  // the program
        std::string value;
        auto long_value = [&](const char *name) {
            std::string prefix = std::string(name) + "=";
            return arg.compare(0, prefix.size(), prefix) == 0 ? arg.substr(prefix.size()) : std::string();
        };
        if (arg == "-h" || arg == "--help") {
            cl.help = true;
            return true;
        } else if (arg == "-v" || arg == "--verbose") {
            cl.job.verbose = true;
        } else if (arg == "-t" || arg == "--dry-run") {
            cl.job.dry_run = true;
        } else if (arg == "-spawner" || arg == "--spawner" || arg.rfind("-spawner=", 0) == 0 ||
                   arg.rfind("--spawner=", 0) == 0) {
            std::string glued = arg.rfind("--", 0) == 0 ? long_value("--spawner") : long_value("-spawner");
            if (!value_take(argc, argv, i, glued, "-spawner", value, error)) return false;
            cl.spawner_flag = value;
        } else if (arg == "-N" || (arg.rfind("-N", 0) == 0 && arg.size() > 2)) {
            if (!value_take(argc, argv, i, arg.substr(2), "-N", value, error)) return false;
            if (!count_parse(value, "-N", "hosts", cl.job.hosts, error)) return false;
        } else if (arg == "-E" || (arg.rfind("-E", 0) == 0 && arg.size() > 2)) {
            if (!value_take(argc, argv, i, arg.substr(2), "-E", value, error)) return false;
            if (!names_parse(value, cl.job.propagate, error)) return false;
        } else if (arg == "-np" || arg == "--np" || arg.rfind("--np=", 0) == 0 || arg == "-n" ||
                   (arg.rfind("-n", 0) == 0 && arg.size() > 2 && std::isdigit(static_cast<unsigned char>(arg[2])))) {
            std::string glued = arg.rfind("--np=", 0) == 0 ? long_value("--np")
                                : (arg == "-n" || arg == "-np" || arg == "--np") ? "" : arg.substr(2);
            if (!value_take(argc, argv, i, glued, "-n", value, error)) return false;
            if (!count_parse(value, "-n", "ranks", cl.job.ranks, error)) return false;
            have_ranks = true;
        } else if (arg == "--bind" || arg.rfind("--bind=", 0) == 0) {
            if (!value_take(argc, argv, i, long_value("--bind"), "--bind", value, error)) return false;
            if (!binding_parse(value, cl.binding, error)) return false;
        } else {
            return fail(error, "unknown option '" + arg + "'; see sluicerun --help (options go before the program)");
        }
    }
    if (!have_ranks) return fail(error, "missing the number of ranks; use sluicerun -n N program [args...]");
    if (i >= argc) return fail(error, "no program to run; use sluicerun -n N program [args...]");
    cl.job.program = argv[i++];
    cl.job.arguments.assign(argv + i, argv + argc);
    return true;
}

// 0 if `path` is a regular file we may execute, else the errno that says why not.
int executable_check(const std::string &path) {
    struct stat st;
    if (::stat(path.c_str(), &st) < 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (!S_ISREG(st.st_mode)) return EACCES;
    return ::access(path.c_str(), X_OK) < 0 ? errno : 0;
}

// Done before any fork, so a typo costs one clear line instead of N failed
// execs; the ranks then exec the path found here.
bool program_resolve(const std::string &program, std::string &path, std::string &error) {
    auto explain = [&](const std::string &where, int err) {
        if (err == ENOENT) return fail(error, "cannot run '" + where + "': no such file; check the path");
        if (err == EISDIR) return fail(error, "cannot run '" + where + "': it is a directory, not a program");
        return fail(error, "cannot run '" + where + "': " + std::strerror(err) + "; make it executable (chmod +x " +
                               where + ")");
    };
    if (program.find('/') != std::string::npos) {
        int err = executable_check(program);
        if (err) return explain(program, err);
        path = program;
        return true;
    }
    const char *search = std::getenv("PATH");
    std::string dirs = search ? search : "/bin:/usr/bin";  // execvp's own default
    int first_error = 0;
    std::string first_seen;
    for (std::size_t start = 0; start <= dirs.size();) {
        std::size_t colon = dirs.find(':', start);
        if (colon == std::string::npos) colon = dirs.size();
        std::string dir = dirs.substr(start, colon - start);
        std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
        int err = executable_check(candidate);
        if (!err) {
            path = candidate;
            return true;
        }
        if (err != ENOENT && err != ENOTDIR && !first_error) {
            first_error = err;
            first_seen = candidate;
        }
        start = colon + 1;
    }
    if (first_error) return explain(first_seen, first_error);
    return fail(error, "cannot run '" + program + "': not found in PATH; give its path (./" + program +
                           ") or add its folder to PATH");
}

void dry_run_print(const local::LaunchOptions &options, const local::Binder &binder) {
    for (unsigned r = 0; r < options.ranks; ++r) {
        std::string line = "rank " + std::to_string(r) + ": env";
        for (const auto &[name, value] : local::rank_variables(options, r, -1)) line += " " + name + "=" + value;
        line += "; bind " + binder.describe(r) + "; exec " + spawner::shell_quote(options.program_path);
        if (options.program_path != options.program) line += " (argv[0] " + spawner::shell_quote(options.program) + ")";
        for (const auto &a : options.arguments) line += " " + spawner::shell_quote(a);
        std::printf("%s\n", line.c_str());
    }
    std::fflush(stdout);
}

// The spawner: -spawner=, else SLUICE_SPAWNER, else what the environment
// shows, else the configure default.  The knob also names rank-side
// backends; pmix and pmi2 mean the pmi spawner here.
bool spawner_choose(CommandLine &cl, std::string &out, std::string &error) {
    std::string &source = cl.spawner_source;
    source = "-spawner";
    out = cl.spawner_flag;
    if (out.empty()) {
        out = base::knob_string(base::Knob::SPAWNER);
        source = "SLUICE_SPAWNER";
        if (out == "pmix" || out == "pmi2") out = "pmi";
    }
    if (out.empty()) {
        if (!base::knob_string(base::Knob::SSH_NODES).empty()) {
            out = "ssh";
            source = "SLUICE_SSH_NODES is set";
        } else if (!base::knob_string(base::Knob::SSH_NODEFILE).empty()) {
            out = "ssh";
            source = "SLUICE_SSH_NODEFILE is set";
        } else if (std::getenv("SLURM_JOB_ID")) {
            out = "pmi";
            source = "SLURM_JOB_ID is set: inside a Slurm allocation";
        } else if (std::getenv("PBS_NODEFILE")) {
            out = "ssh";
            source = "PBS_NODEFILE is set: inside a PBS job";
        } else {
            out = SLUICE_DEFAULT_SPAWNER;
            source = "the default; choose with -spawner= or SLUICE_SPAWNER";
        }
        return true;
    }
    for (const char *name : spawner_names)
        if (out == name) return true;
    return fail(error, source + " names no spawner: '" + out + "'; use local, ssh, pmi or mpi");
}

// What each spawner cannot do, said before anything starts.
bool spawner_check(const CommandLine &cl, std::string &error) {
    const std::string &s = cl.job.spawner;
    if (cl.job.hosts > 1 && (s == "local" || s == "mpi"))
        return fail(error, "-N " + std::to_string(cl.job.hosts) + " needs a spawner that starts ranks on other hosts; " +
                               (s == "mpi" ? "give mpirun its hosts (e.g. SLUICE_MPIRUN='mpirun --hostfile FILE')"
                                           : "use -spawner=ssh or -spawner=pmi"));
    if (cl.job.hosts > cl.job.ranks)
        return fail(error, "-N " + std::to_string(cl.job.hosts) + " hosts for " + std::to_string(cl.job.ranks) +
                               " ranks would leave hosts empty; give at most as many hosts as ranks");
    if (cl.binding != local::Binding::none && s != "local")
        return fail(error, std::string("--bind=") + local::binding_name(cl.binding) +
                               " works with -spawner=local only; bind with the launcher's own options");
    return true;
}

int local_run(CommandLine &cl) {
    std::string error;
    local::LaunchOptions launch;
    launch.ranks = cl.job.ranks;
    launch.verbose = cl.job.verbose;
    launch.program = cl.job.program;
    launch.program_path = cl.job.program_path;
    launch.arguments = cl.job.arguments;
    launch.job_id = cl.job.job_id;
    local::Binder binder;
    if (!binder.load(cl.binding, error) || (!cl.job.dry_run && !local::fd_limit_prepare(launch.ranks, error))) {
        std::fprintf(stderr, "sluicerun: %s\n", error.c_str());
        return usage_error;
    }
    if (cl.job.dry_run) {
        dry_run_print(launch, binder);
        return 0;
    }
    return local::launch(launch, binder);
}

// More ranks on a host than it has cores (this host's count, taken for
// every host): under -v, says what the ranks will do while they wait.  Each
// rank decides (SLUICE_WAIT=auto, core/runtime.cpp): it sleeps when every
// conduit it uses can wake it, else it spins and yields its core.
void wait_mode_choose(const CommandLine &cl) {
    const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    const unsigned hosts = std::max(1u, cl.job.hosts);
    const unsigned per_host = (cl.job.ranks + hosts - 1) / hosts;
    if (static_cast<long>(per_host) <= cores) return;
    const char *set = std::getenv("SLUICE_WAIT");
    if (set && *set) {
        if (cl.job.verbose)
            std::fprintf(stderr, "sluicerun: %u ranks per host on %ld cores; SLUICE_WAIT=%s as set\n", per_host, cores,
                         set);
        return;
    }
    if (cl.job.verbose)
        std::fprintf(stderr,
                     "sluicerun: %u ranks per host on %ld cores: SLUICE_WAIT=auto (a waiting rank sleeps until work "
                     "arrives where its conduits can wake it, else spins yielding its core; SLUICE_WAIT=spin or block "
                     "chooses for every rank)\n",
                     per_host, cores);
}

// A launcher started with stdin, stdout or stderr closed would hand that
// number to a control socket, and a rank's printf would land in it.
void stdio_ensure() {
    for (int fd = 0; fd <= 2; ++fd)
        if (::fcntl(fd, F_GETFD) < 0 && ::open("/dev/null", O_RDWR) < 0) break;
}

} // namespace

// A spawner left out of this build (its folder's Makefile.inc adds the real
// run() to sluicerun, which replaces these).
namespace sluice::spawner {
namespace {
int not_built(const JobSpec &job) {
    std::fprintf(stderr, "sluicerun: this sluicerun was built without the %s spawner; fix: use -spawner=local, or "
                 "rebuild Sluice with it (see spawners/%s/README.md)\n", job.spawner.c_str(), job.spawner.c_str());
    return usage_error;
}
} // namespace
[[gnu::weak]] int ssh::run(const JobSpec &job) { return not_built(job); }
[[gnu::weak]] int pmi::run(const JobSpec &job) { return not_built(job); }
} // namespace sluice::spawner

int main(int argc, char **argv) {
    sluice::conduit::knobs_register();  // before any knob is read, here or in --ssh-node
    // A host's control process of the ssh spawner (started over ssh by its parent).
    if (argc > 1 && std::strcmp(argv[1], "--ssh-node") == 0) return spawner::ssh::node_main(argc, argv);
    stdio_ensure();
    CommandLine cl;
    std::string error;
    if (!arguments_parse(argc, argv, cl, error)) {
        std::fprintf(stderr, "sluicerun: %s\n", error.c_str());
        return usage_error;
    }
    if (cl.help) {
        std::fputs(usage, stdout);
        return 0;
    }
    // A knob value the ranks would refuse ends the job here, said once,
    // before any rank starts.
    if (const std::vector<std::string> bad = base::knobs_load(); !bad.empty()) {
        for (const std::string &e : bad) std::fprintf(stderr, "sluicerun: error: %s\n", e.c_str());
        std::fprintf(stderr, "sluicerun: fix or unset %s; `sluice-info --knobs` lists every knob and its range\n",
                     bad.size() == 1 ? "this value" : "these values");
        return usage_error;
    }
    cl.job.verbose |= base::knob_bool(base::Knob::VERBOSE);
    if (!spawner_choose(cl, cl.job.spawner, error) || !spawner_check(cl, error) ||
        !program_resolve(cl.job.program, cl.job.program_path, error)) {
        std::fprintf(stderr, "sluicerun: %s\n", error.c_str());
        return usage_error;
    }
    cl.job.job_id = local::job_id_choose();
    if (cl.job.verbose)
        std::fprintf(stderr, "sluicerun: spawner %s (%s), job %s\n", cl.job.spawner.c_str(),
                     cl.spawner_source.c_str(),
                     cl.job.job_id.c_str());
    if (cl.job.verbose) {
        // What the ranks will choose if their hosts are like this one (each
        // rank says its own choice under SLUICE_VERBOSE=1).
        using namespace sluice::conduit;
        const auto &registry = transport_registry();
        std::fprintf(stderr, "sluicerun: same-host conduit here: %s\nsluicerun: network conduit here: %s\n",
                     conduit_choice_text(conduit_choose(registry, false, "", "the same-host conduit")).c_str(),
                     conduit_choice_text(conduit_choose(registry, true, base::knob_string(base::Knob::NETWORK),
                                                        "SLUICE_NETWORK")).c_str());
    }
    wait_mode_choose(cl);
    if (cl.job.spawner == "ssh") return spawner::ssh::run(cl.job);
    if (cl.job.spawner == "pmi") return spawner::pmi::run(cl.job);
    if (cl.job.spawner == "mpi") return spawner::mpi::run(cl.job);
    return local_run(cl);
}
