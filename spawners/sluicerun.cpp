// spawners/sluicerun.cpp - the local launcher: `sluicerun -n N prog args...`
// runs N ranks of prog on this host (spawner `local`).  This file reads the
// command line and checks everything that can be checked before a fork; the
// job itself is spawners/local/launcher.cpp.
#include "spawners/local/launcher.hpp"

#include "base/knobs.hpp"

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

namespace local = sluice::spawner::local;
namespace base = sluice::base;

namespace {

constexpr unsigned max_ranks = 1u << 20;
constexpr int usage_error = 2;

const char usage[] =
    "usage: sluicerun -n N [-v] [-t] [--bind=core|numa|none] [--] program [args...]\n"
    "Runs N ranks of program on this host (Sluice spawner `local`).\n"
    "  -n N, -np N        number of ranks, at least 1\n"
    "  -v, --verbose      narrate each step on stderr (also SLUICE_VERBOSE=1)\n"
    "  -t, --dry-run      print what would run, one line per rank, and exit\n"
    "  --bind=core        rank i on core (i mod cores)             [hwloc]\n"
    "  --bind=numa        rank i on NUMA node (i mod nodes)        [hwloc]\n"
    "  --bind=none        no binding (default)\n"
    "  -h, --help         this text\n"
    "Options end at the program name or at `--`.\n"
    "Exit code: the first code a rank reported (exit or abort), else 128+signal\n"
    "of the first rank that crashed (or of the signal that stopped sluicerun),\n"
    "else the first non-zero exit status, else 0.  Bad usage exits with 2.\n"
    "Knobs: SLUICE_KILL_GRACE, SLUICE_EXIT_TIMEOUT, SLUICE_JOB_ID, SLUICE_VERBOSE\n"
    "(`sluice-info` lists them all).\n";

struct CommandLine {
    local::LaunchOptions launch;
    local::Binding binding = local::Binding::none;
    bool dry_run = false;
    bool help = false;
};

// One line naming the problem and the fix; false so callers can return it.
bool fail(std::string &error, std::string message) {
    error = std::move(message);
    return false;
}

bool ranks_parse(const std::string &text, unsigned &out, std::string &error) {
    char *end = nullptr;
    errno = 0;
    unsigned long n = std::strtoul(text.c_str(), &end, 10);
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end || errno || n < 1 ||
        n > max_ranks)
        return fail(error, "-n needs a number of ranks from 1 to " + std::to_string(max_ranks) + ", not '" +
                               text + "'; e.g. sluicerun -n 4 ./prog");
    out = static_cast<unsigned>(n);
    return true;
}

bool binding_parse(const std::string &text, local::Binding &out, std::string &error) {
    if (text == "core") out = local::Binding::core;
    else if (text == "numa") out = local::Binding::numa;
    else if (text == "none") out = local::Binding::none;
    else return fail(error, "unknown binding '" + text + "'; use --bind=core, --bind=numa or --bind=none");
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
            cl.launch.verbose = true;
        } else if (arg == "-t" || arg == "--dry-run") {
            cl.dry_run = true;
        } else if (arg == "-np" || arg == "--np" || arg.rfind("--np=", 0) == 0 || arg == "-n" ||
                   (arg.rfind("-n", 0) == 0 && arg.size() > 2 && std::isdigit(static_cast<unsigned char>(arg[2])))) {
            std::string glued = arg.rfind("--np=", 0) == 0 ? long_value("--np")
                                : (arg == "-n" || arg == "-np" || arg == "--np") ? "" : arg.substr(2);
            if (!value_take(argc, argv, i, glued, "-n", value, error)) return false;
            if (!ranks_parse(value, cl.launch.ranks, error)) return false;
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
    cl.launch.program = argv[i++];
    cl.launch.arguments.assign(argv + i, argv + argc);
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

// Shell-style quoting so a dry-run line can be pasted back.
std::string quote(const std::string &word) {
    if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                "0123456789_-+=/.,:@%") == std::string::npos)
        return word;
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

void dry_run_print(const local::LaunchOptions &options, const local::Binder &binder) {
    for (unsigned r = 0; r < options.ranks; ++r) {
        std::string line = "rank " + std::to_string(r) + ": env";
        for (const auto &[name, value] : local::rank_variables(options, r, -1)) line += " " + name + "=" + value;
        line += "; bind " + binder.describe(r) + "; exec " + quote(options.program_path);
        if (options.program_path != options.program) line += " (argv[0] " + quote(options.program) + ")";
        for (const auto &a : options.arguments) line += " " + quote(a);
        std::printf("%s\n", line.c_str());
    }
    std::fflush(stdout);
}

// A launcher started with stdin, stdout or stderr closed would hand that
// number to a control socket, and a rank's printf would land in it.
void stdio_ensure() {
    for (int fd = 0; fd <= 2; ++fd)
        if (::fcntl(fd, F_GETFD) < 0 && ::open("/dev/null", O_RDWR) < 0) break;
}

} // namespace

int main(int argc, char **argv) {
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
    for (const std::string &warning : base::knobs_load()) std::fprintf(stderr, "sluicerun: %s\n", warning.c_str());
    cl.launch.verbose |= base::knob_bool(base::Knob::VERBOSE);

    local::Binder binder;
    if (!program_resolve(cl.launch.program, cl.launch.program_path, error) || !binder.load(cl.binding, error) ||
        (!cl.dry_run && !local::fd_limit_prepare(cl.launch.ranks, error))) {
        std::fprintf(stderr, "sluicerun: %s\n", error.c_str());
        return usage_error;
    }
    cl.launch.job_id = local::job_id_choose();
    if (cl.dry_run) {
        dry_run_print(cl.launch, binder);
        return 0;
    }
    return local::launch(cl.launch, binder);
}
