// tests/harness.hpp - runs one Sluice job under a hard time limit, for the
// GoogleTest drivers of tests/mp and tests/exit.
//
// A job is `sluicerun -n N -- prog args` (or `prog args` alone for a
// singleton), forked into its own process group with stdout and stderr
// captured.  The driver is a child subreaper, so a rank the launcher leaves
// behind becomes our child and is seen.  At the deadline every rank gets
// SIGABRT (SLUICE_BACKTRACE=1 is set for the job unless given, but for
// ThreadSanitizer builds: it prints where it waited), and abort_grace
// seconds later the whole group is killed.  After the launcher ends,
// run_job() reports:
//   - the job code (launcher exit status, or 128+signal if it died by one),
//   - the pid of every process that started the rank program (each rank
//     writes a file named by its pid into SLUICETEST_PIDDIR) and which of
//     them are still alive (zombies count as dead),
//   - every /dev/shm/sluice.<jobid>* object left behind (SLUICE_JOB_ID is set
//     to a name unique to this job).
// Survivors are then SIGKILLed and leftover shm objects unlinked, so a
// failing test never leaves anything behind for the next one.
//
// Paths come from the environment (set by AM_TESTS_ENVIRONMENT in
// tests/Makefile.inc) or, when a driver is run by hand, from the build
// directory compiled in as SLUICE_TEST_BUILDDIR.
#pragma once

#include "sluice_config.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <set>
#include <string>
#include <string_view>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

extern char **environ;

namespace sluice_test {

#ifndef SLUICE_TEST_BUILDDIR
#define SLUICE_TEST_BUILDDIR "."
#endif

inline std::string env_or(const char *name, const std::string &fallback) {
    const char *v = std::getenv(name);
    return v && *v ? std::string(v) : fallback;
}

inline std::string build_dir() { return env_or("SLUICETEST_BUILDDIR", SLUICE_TEST_BUILDDIR); }
inline std::string launcher_path() {
    return env_or("SLUICETEST_LAUNCHER", build_dir() + "/sluicerun");
}
// In a build tree, sluicerun is libtool's wrapper script: a bash that
// forks sed and ls, sets LD_LIBRARY_PATH to the tree's .libs and execs
// .libs/sluicerun (75 ms of processor time a job here).  run_job does the
// same itself: the real program, by the same path and with the same
// LD_LIBRARY_PATH the wrapper would give it.  "" when `launcher` is not
// such a wrapper.
inline std::string unwrapped_launcher(const std::string &launcher) {
    const std::string real = build_dir() + "/.libs/sluicerun";
    if (launcher != build_dir() + "/sluicerun" || ::access(real.c_str(), X_OK) != 0) return "";
    char head[2] = {};
    const int fd = ::open(launcher.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    const bool script = ::read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';
    ::close(fd);
    return script ? real : "";
}
inline std::string mp_program() { return build_dir() + "/tests/mp/sluice-mp-test"; }
inline std::string exit_program() { return build_dir() + "/tests/exit/sluice-exit-test"; }

// "" (full), "tsan" or "asan": smaller runs for sanitizer builds.
inline std::string subset() {
    std::string s = env_or("SLUICETEST_SUBSET", env_or("SLUICE_TEST_SUBSET", ""));
    return s == "full" ? std::string() : s;
}
inline bool reduced() { return !subset().empty(); }

// The network conduits of this build whose probe succeeds here, from
// `sluice-info --conduit-list=network` (so a new conduit needs no line in
// this file); the others are named on stderr with their probe's reason.
inline bool network_conduits_listed = false;  // sluice-info answered
// SLUICETEST_NETWORK_SKIP (make check sets it): network conduits, separated
// by spaces, that the shared suites leave to the conduit's own test, which
// runs them in the conditions it needs (portals: larger UDP receive
// buffers for the reference implementation).
inline bool network_skipped(const std::string &name) {
    const char *list = std::getenv("SLUICETEST_NETWORK_SKIP");
    if (!list) return false;
    const std::string padded = " " + std::string(list) + " ";
    return padded.find(" " + name + " ") != std::string::npos;
}

inline const std::vector<std::string> &network_conduits() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        // SLUICETEST_NETWORKS: these conduits instead, for a suite run under
        // another launcher (SLUICETEST_LAUNCHER; the mpi conduit, which
        // sluice-info cannot probe without MPI).
        if (const char *only = std::getenv("SLUICETEST_NETWORKS"); only && *only) {
            std::string list = only;
            for (std::size_t at = 0; at < list.size();) {
                const std::size_t space = std::min(list.find(' ', at), list.size());
                if (space > at) v.push_back(list.substr(at, space - at));
                at = space + 1;
            }
            network_conduits_listed = true;
            return v;
        }
        const std::string command = build_dir() + "/sluice-info --conduit-list=network";
        std::FILE *p = ::popen(command.c_str(), "r");
        if (!p) return v;
        char line[1024];
        while (std::fgets(line, sizeof line, p)) {
            std::string l(line);
            if (!l.empty() && l.back() == '\n') l.pop_back();
            const std::size_t tab1 = l.find('\t'), tab2 = l.find('\t', tab1 + 1);
            if (tab2 == std::string::npos) continue;
            const std::string name = l.substr(0, tab1), probe = l.substr(tab2 + 1);
            if (probe == "ok" && network_skipped(name))
                std::fprintf(stderr, "tests: network conduit %s not run by this suite: its own test runs it "
                                     "(SLUICETEST_NETWORK_SKIP)\n", name.c_str());
            else if (probe == "ok") v.push_back(name);
            else std::fprintf(stderr, "tests: network conduit %s not run here: %s\n", name.c_str(), probe.c_str());
        }
        network_conduits_listed = ::pclose(p) == 0;
        return v;
    }();
    return names;
}
// The network conduits a shared suite (sluice-mp-gtest's and
// sluice-exit-gtest's Net instances) runs over: every one, or the first
// only under a sanitizer subset (asan, tsan; not the smaller counts a
// script asks for with another SLUICETEST_SUBSET), whose time goes to the
// runtime's layers above the conduit; each conduit's code runs under the
// sanitizers in its own script (udp's gtest, ofi-providers.sh,
// ibv-softnic.sh).
inline std::vector<std::string> suite_networks() {
    std::vector<std::string> v = network_conduits();
    const std::string s = subset();
    if ((s == "asan" || s == "tsan") && v.size() > 1) v.resize(1);
    return v;
}

// Sanitized builds run several times slower: stretch every time limit.
inline double time_scale() {
    std::string s = subset();
    if (s == "tsan") return 6.0;
    if (!s.empty()) return 3.0;
    return 1.0;
}

inline bool executable(const std::string &path) { return ::access(path.c_str(), X_OK) == 0; }

struct JobSpec {
    int ranks = 2;                    // 0: run the program alone, no launcher
    std::vector<std::string> launcher_options;  // e.g. {"--bind=core"}
    std::vector<std::string> program; // program path and its arguments
    std::vector<std::pair<std::string, std::string>> env;  // added or replaced
    double time_limit = 120;          // seconds, before time_scale()
    // When a line equal to ready_line appears on stdout, send ready_signal to
    // the launcher (or to its whole process group if signal_group).
    std::string ready_line;
    int ready_signal = 0;
    bool signal_group = false;
};

// Seconds a timed-out job's ranks have, after their SIGABRT, to print
// where they waited and end, before SIGKILL.
constexpr double abort_grace = 5;
// Whether jobs get SLUICE_BACKTRACE=1 unless they set it: not under
// ThreadSanitizer, which reports the backtrace's allocations in a signal
// handler as signal-unsafe and changes the code of every crashing rank.
// (The drivers build without sanitizers: the library's configuration says.)
#ifdef SLUICE_SANITIZERS
constexpr bool backtrace_by_default = std::string_view(SLUICE_SANITIZERS).find("thread") == std::string_view::npos;
#else
constexpr bool backtrace_by_default = true;
#endif

struct JobResult {
    int code = -1;            // launcher exit status, or 128+signal
    bool launcher_signaled = false;
    bool timed_out = false;
    bool signal_sent = false;
    double seconds = 0;
    std::string out, err;
    std::string job_id;
    std::string command;
    std::vector<pid_t> rank_pids;
    std::vector<pid_t> survivors;       // rank processes alive after the job
    std::vector<std::string> shm_left;  // /dev/shm names of this job left behind

    // A printable summary for assertion messages.
    // Long output keeps its beginning (the first report, e.g. a sanitizer's
    // header) and its end.
    std::string describe(std::size_t keep = 8000) const {
        auto cut = [keep](const std::string &s) {
            if (s.size() <= keep) return s;
            std::size_t head = keep / 2, tail = keep - head;
            return s.substr(0, head) + "\n[... " + std::to_string(s.size() - keep) + " bytes ...]\n" +
                   s.substr(s.size() - tail);
        };
        std::string d = "command: " + command + "\njob code " + std::to_string(code) +
                        (timed_out ? " (TIMED OUT: SIGABRT to the ranks, then killed)" : "") + " after " +
                        std::to_string(seconds) + " s, job id " + job_id + "\n";
        if (!survivors.empty()) {
            d += "surviving rank pids:";
            for (pid_t p : survivors) d += " " + std::to_string(p);
            d += "\n";
        }
        for (const auto &n : shm_left) d += "left in /dev/shm: " + n + "\n";
        d += "---- stdout ----\n" + cut(out) + "---- stderr ----\n" + cut(err) + "----------------\n";
        return d;
    }
};

namespace detail {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Process state letter from /proc/<pid>/stat, 0 if there is no such process.
inline char process_state(pid_t pid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "r");
    if (!f) return 0;
    char buf[512];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char *close = std::strrchr(buf, ')');
    return close && close[1] == ' ' ? close[2] : 0;
}

inline pid_t process_parent(pid_t pid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE *f = std::fopen(path, "r");
    if (!f) return -1;
    char buf[512];
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    const char *close = std::strrchr(buf, ')');
    if (!close) return -1;
    char state;
    int ppid;
    if (std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) return -1;
    return ppid;
}

// Alive and not a zombie.
inline bool alive(pid_t pid) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
    char s = process_state(pid);
    return s != 0 && s != 'Z' && s != 'X';
}

// Our own children other than the ones we know about: ranks a launcher left
// behind are re-parented to us (child subreaper).
inline std::vector<pid_t> adopted_children() {
    std::vector<pid_t> found;
    DIR *d = ::opendir("/proc");
    if (!d) return found;
    pid_t me = ::getpid();
    while (dirent *e = ::readdir(d)) {
        char *end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (!end || *end || pid <= 0) continue;
        if (process_parent(static_cast<pid_t>(pid)) == me) found.push_back(static_cast<pid_t>(pid));
    }
    ::closedir(d);
    return found;
}

inline void reap_zombies() {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
}

inline std::vector<pid_t> read_pid_dir(const std::string &dir) {
    std::vector<pid_t> pids;
    DIR *d = ::opendir(dir.c_str());
    if (!d) return pids;
    while (dirent *e = ::readdir(d)) {
        char *end = nullptr;
        long pid = std::strtol(e->d_name, &end, 10);
        if (end && !*end && pid > 0) pids.push_back(static_cast<pid_t>(pid));
    }
    ::closedir(d);
    return pids;
}

inline void remove_dir(const std::string &dir) {
    DIR *d = ::opendir(dir.c_str());
    if (d) {
        while (dirent *e = ::readdir(d)) {
            if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
                ::unlink((dir + "/" + e->d_name).c_str());
        }
        ::closedir(d);
    }
    ::rmdir(dir.c_str());
}

inline std::vector<std::string> shm_names(const std::string &job_id) {
    std::vector<std::string> names;
    std::string prefix = "sluice." + job_id;
    DIR *d = ::opendir("/dev/shm");
    if (!d) return names;
    while (dirent *e = ::readdir(d)) {
        if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.push_back(e->d_name);
    }
    ::closedir(d);
    return names;
}

inline bool is_harness_variable(const char *entry) {
    return std::strncmp(entry, "SLUICE_TEST_", 12) == 0 || std::strncmp(entry, "SLUICETEST_", 11) == 0 ||
           std::strncmp(entry, "SLUICE_JOB_ID=", 14) == 0;
}

inline void drain(int fd, std::string &into) {
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            into.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return;  // EOF, EAGAIN or error
    }
}

} // namespace detail

inline int job_counter() {
    static int counter = 0;
    return ++counter;
}

// Runs one job to its end or its deadline.  Never leaves a process or a
// shared-memory object of the job behind.
inline JobResult run_job(const JobSpec &spec) {
    using namespace detail;
    JobResult r;
    static bool subreaper = (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
    (void)subreaper;
    reap_zombies();

    // Unique job id: ends in a letter so that no id is a prefix of another.
    r.job_id = "gt" + std::to_string(::getpid()) + "n" + std::to_string(job_counter()) + "j";
    char dir_template[] = "/tmp/sluicetest.XXXXXX";
    std::string pid_dir = ::mkdtemp(dir_template) ? dir_template : "";

    std::vector<std::string> args;
    const std::string unwrapped = spec.ranks > 0 ? unwrapped_launcher(launcher_path()) : "";
    if (spec.ranks > 0) {
        args.push_back(launcher_path());
        args.push_back("-n");
        args.push_back(std::to_string(spec.ranks));
        for (const auto &o : spec.launcher_options) args.push_back(o);
        args.push_back("--");
    }
    for (const auto &a : spec.program) args.push_back(a);
    for (const auto &a : args) r.command += (r.command.empty() ? "" : " ") + a;

    double limit = spec.time_limit * time_scale();
    std::vector<std::string> env_strings;
    for (char **e = environ; e && *e; ++e) {
        if (is_harness_variable(*e)) continue;
        std::string entry(*e);
        bool replaced = false;
        for (const auto &kv : spec.env)
            if (entry.compare(0, kv.first.size() + 1, kv.first + "=") == 0) replaced = true;
        if (!replaced) env_strings.push_back(entry);
    }
    // A rank that hangs shows where, when the time limit's SIGABRT comes.
    if (backtrace_by_default && !std::getenv("SLUICE_BACKTRACE") &&
        std::none_of(spec.env.begin(), spec.env.end(), [](const auto &kv) { return kv.first == "SLUICE_BACKTRACE"; }))
        env_strings.push_back("SLUICE_BACKTRACE=1");
    env_strings.push_back("SLUICE_JOB_ID=" + r.job_id);
    env_strings.push_back("SLUICETEST_PIDDIR=" + pid_dir);
    // Ranks give up by themselves a little before the hard limit, so a hang
    // shows which rank waited for what.
    env_strings.push_back("SLUICETEST_RANK_TIMEOUT=" + std::to_string(static_cast<int>(limit * 0.8) + 1));
    env_strings.push_back("SLUICETEST_SUBSET=" + subset());
    for (const auto &kv : spec.env) {
        env_strings.push_back(kv.first + "=" + kv.second);
        if (!r.command.empty()) r.command = kv.first + "=" + kv.second + " " + r.command;
    }

    if (!unwrapped.empty()) {
        args[0] = unwrapped;
        std::string path = build_dir() + "/.libs";
        for (auto &e : env_strings)
            if (e.compare(0, 16, "LD_LIBRARY_PATH=") == 0) {
                if (e.size() > 16) path += ":" + e.substr(16);
                e.clear();
            }
        while (!path.empty() && path.back() == ':') path.pop_back();
        std::erase(env_strings, std::string());
        env_strings.push_back("LD_LIBRARY_PATH=" + path);
    }

    std::vector<char *> argv_c, env_c;
    for (auto &a : args) argv_c.push_back(a.data());
    argv_c.push_back(nullptr);
    for (auto &e : env_strings) env_c.push_back(e.data());
    env_c.push_back(nullptr);

    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        r.err = std::string("harness: pipe: ") + std::strerror(errno);
        return r;
    }
    auto t0 = std::chrono::steady_clock::now();
    pid_t child = ::fork();
    if (child == 0) {
        ::setpgid(0, 0);
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
        ::execve(argv_c[0], argv_c.data(), env_c.data());
        std::fprintf(stderr, "harness: cannot execute %s: %s\n", argv_c[0], std::strerror(errno));
        ::_exit(127);
    }
    ::setpgid(child, child);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));

    bool out_open = true, err_open = true, exited = false;
    int status = 0;
    std::size_t ready_scan = 0;
    double deadline = limit;
    while (!exited) {
        double left = deadline - seconds_since(t0);
        if (left <= 0 && !r.timed_out) {
            // Out of time: each rank is asked where it waits (SIGABRT, a
            // backtrace under SLUICE_BACKTRACE=1), then killed below if it
            // has not ended within abort_grace seconds.
            r.timed_out = true;
            const std::vector<pid_t> ranks = read_pid_dir(pid_dir);
            for (pid_t p : ranks) ::kill(p, SIGABRT);
            if (ranks.empty()) break;
            deadline = seconds_since(t0) + abort_grace;
            continue;
        }
        if (left <= 0) break;
        pollfd fds[3];
        int n = 0;
        int out_i = -1, err_i = -1, pid_i = -1;
        if (out_open) { out_i = n; fds[n++] = {out_pipe[0], POLLIN, 0}; }
        if (err_open) { err_i = n; fds[n++] = {err_pipe[0], POLLIN, 0}; }
        if (pidfd >= 0) { pid_i = n; fds[n++] = {pidfd, POLLIN, 0}; }
        // Without a pidfd (old kernel), look at the child at least every 100 ms.
        int wait_ms = static_cast<int>(left * 1000) + 1;
        if (pidfd < 0 && wait_ms > 100) wait_ms = 100;
        int got = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
        if (got < 0 && errno != EINTR) break;
        char buf[65536];
        if (out_i >= 0 && (fds[out_i].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t k = ::read(out_pipe[0], buf, sizeof buf);
            if (k > 0) r.out.append(buf, static_cast<std::size_t>(k));
            else if (k == 0) out_open = false;
        }
        if (err_i >= 0 && (fds[err_i].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t k = ::read(err_pipe[0], buf, sizeof buf);
            if (k > 0) r.err.append(buf, static_cast<std::size_t>(k));
            else if (k == 0) err_open = false;
        }
        if (!spec.ready_line.empty() && !r.signal_sent) {
            std::size_t pos;
            while ((pos = r.out.find('\n', ready_scan)) != std::string::npos) {
                std::string line = r.out.substr(ready_scan, pos - ready_scan);
                ready_scan = pos + 1;
                if (line == spec.ready_line) {
                    ::kill(spec.signal_group ? -child : child, spec.ready_signal);
                    r.signal_sent = true;
                    break;
                }
            }
        }
        if (pid_i < 0 || (fds[pid_i].revents & POLLIN)) {
            pid_t w = ::waitpid(child, &status, WNOHANG);
            if (w == child) exited = true;
        }
    }
    if (!exited) {
        r.timed_out = true;
        ::kill(-child, SIGKILL);
        ::kill(child, SIGKILL);
        for (pid_t p : read_pid_dir(pid_dir)) ::kill(p, SIGKILL);
        ::waitpid(child, &status, 0);
    }
    r.seconds = seconds_since(t0);
    if (pidfd >= 0) ::close(pidfd);

    // Whatever the ranks wrote is in the pipes by now if they are dead; do
    // not wait for EOF, a survivor may hold the pipe open.
    ::fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    ::fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    drain(out_pipe[0], r.out);
    drain(err_pipe[0], r.err);

    if (WIFEXITED(status)) {
        r.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        r.code = 128 + WTERMSIG(status);
        r.launcher_signaled = true;
    }

    // Orphan check: every rank that started, and anything re-parented to us.
    // SLUICETEST_LAUNCHER_GRACE (seconds, default 0): ranks may take that
    // long to go after the launcher returned (an MPI's launcher that ends
    // a job whose last rank it was still starting; sluicerun gets none).
    r.rank_pids = read_pid_dir(pid_dir);
    if (const double grace = std::atof(env_or("SLUICETEST_LAUNCHER_GRACE", "0").c_str()); grace > 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
        auto any_alive = [&] {
            for (pid_t p : read_pid_dir(pid_dir))
                if (alive(p)) return true;
            for (pid_t p : adopted_children())
                if (alive(p)) return true;
            return false;
        };
        while (any_alive() && std::chrono::steady_clock::now() < until) {
            reap_zombies();
            ::usleep(50'000);
        }
        r.rank_pids = read_pid_dir(pid_dir);
    }
    std::set<pid_t> survivors;
    for (pid_t p : r.rank_pids)
        if (alive(p)) survivors.insert(p);
    for (pid_t p : adopted_children())
        if (alive(p)) survivors.insert(p);
    r.survivors.assign(survivors.begin(), survivors.end());
    for (pid_t p : r.survivors) ::kill(p, SIGKILL);
    for (pid_t p : r.survivors) {
        if (process_parent(p) == ::getpid()) ::waitpid(p, nullptr, 0);
    }
    reap_zombies();
    drain(out_pipe[0], r.out);
    drain(err_pipe[0], r.err);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);

    r.shm_left = shm_names(r.job_id);
    for (const auto &n : r.shm_left) ::unlink(("/dev/shm/" + n).c_str());
    if (!pid_dir.empty()) remove_dir(pid_dir);
    return r;
}

inline int count_occurrences(const std::string &text, const std::string &what) {
    int n = 0;
    for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

// Lines of `text` that contain `what`.
inline std::vector<std::string> lines_with(const std::string &text, const std::string &what) {
    std::vector<std::string> found;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        if (line.find(what) != std::string::npos) found.push_back(line);
        start = end + 1;
    }
    return found;
}

} // namespace sluice_test
