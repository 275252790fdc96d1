// tests/perf/jobs.cpp - finding the programs and running a job under a hard
// time limit, in its own process group.
#include "tests/perf/bench_common.hpp"
#include "tests/perf/driver.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::perf {
namespace {

bool executable(const std::string &p) {
    struct stat st;
    return !p.empty() && stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           access(p.c_str(), X_OK) == 0;
}
std::string dir_of(const std::string &p) {
    auto slash = p.rfind('/');
    return slash == std::string::npos ? std::string(".") : p.substr(0, slash);
}
std::string search_path(const std::string &name) {
    if (name.find('/') != std::string::npos)
        return executable(name) ? name : std::string();
    const char *path = std::getenv("PATH");
    std::stringstream s(path ? path : "/usr/bin:/bin");
    std::string d;
    while (std::getline(s, d, ':'))
        if (executable(d + "/" + name))
            return d + "/" + name;
    return {};
}

void remove_tree(const std::string &p) {
    if (DIR *d = opendir(p.c_str())) {
        while (dirent *e = readdir(d)) {
            std::string n = e->d_name;
            if (n == "." || n == "..")
                continue;
            std::string full = p + "/" + n;
            if (e->d_type == DT_DIR)
                remove_tree(full);
            else
                unlink(full.c_str());
        }
        closedir(d);
    }
    rmdir(p.c_str());
}

// Share of all CPUs busy over `ms` milliseconds (from /proc/stat), to tell a
// quiet machine from one where other work would distort the figures.
double cpu_busy_fraction(int ms) {
    auto sample = [](double &busy, double &total) {
        std::ifstream f("/proc/stat");
        std::string cpu;
        double v[8] = {};
        f >> cpu;
        for (double &x : v)
            f >> x;
        total = 0;
        for (double x : v)
            total += x;
        busy = total - v[3] - v[4]; // minus idle and iowait
    };
    double b0, t0, b1, t1;
    sample(b0, t0);
    usleep(static_cast<useconds_t>(ms) * 1000);
    sample(b1, t1);
    return t1 > t0 ? (b1 - b0) / (t1 - t0) : 0.0;
}

// ---- what a fatal signal leaves behind (remove_at_signal) ----
// Only async-signal-safe calls in the handler: kill, waitpid, nanosleep,
// unlink, fork and execv (a folder goes by `rm -rf`).

constexpr int leftover_slots = 8;
constexpr std::size_t leftover_max = 512;
struct Leftover {
    char path[leftover_max];
    bool folder;
    volatile sig_atomic_t used;
};
Leftover leftovers[leftover_slots];
volatile sig_atomic_t job_group = 0;  // the running job's, 0 between jobs

bool group_gone(pid_t group, double seconds) {
    const timespec nap{0, 10'000'000};
    for (double waited = 0; waited < seconds; waited += 0.01) {
        if (kill(-group, 0) != 0)
            return true;
        while (waitpid(-group, nullptr, WNOHANG) > 0) {
        }
        nanosleep(&nap, nullptr);
    }
    return false;
}

extern "C" void on_fatal_signal(int sig) {
    const int saved = errno;
    if (const pid_t group = job_group; group > 0) {
        kill(-group, SIGTERM);
        if (!group_gone(group, 3))
            kill(-group, SIGKILL);
    }
    for (Leftover &l : leftovers) {
        if (!l.used)
            continue;
        if (!l.folder) {
            unlink(l.path);
            continue;
        }
        if (const pid_t rm = fork(); rm == 0) {
            char name[] = "rm", flags[] = "-rf";
            char *argv[] = {name, flags, l.path, nullptr};
            execv("/bin/rm", argv);
            _exit(127);
        } else if (rm > 0) {
            waitpid(rm, nullptr, 0);
        }
    }
    errno = saved;
    signal(sig, SIG_DFL);
    raise(sig);
}

void catch_fatal_signals() {
    static bool done = false;
    if (done)
        return;
    done = true;
    struct sigaction a {};
    a.sa_handler = on_fatal_signal;
    sigemptyset(&a.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
        sigaddset(&a.sa_mask, sig);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
        sigaction(sig, &a, nullptr);
}

} // namespace

bool remove_at_signal(const std::string &path, bool folder) {
    if (path.empty() || path.size() >= leftover_max)
        return false;
    catch_fatal_signals();
    for (Leftover &l : leftovers)
        if (!l.used) {
            std::memcpy(l.path, path.c_str(), path.size() + 1);
            l.folder = folder;
            std::atomic_signal_fence(std::memory_order_release);  // the path before its slot shows
            l.used = 1;
            return true;
        }
    return false;
}

void forget_at_signal(const std::string &path) {
    for (Leftover &l : leftovers)
        if (l.used && path == l.path)
            l.used = 0;
}

std::string self_path() {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return {};
    buf[n] = '\0';
    return buf;
}
// The folder of the program as built: libtool's wrapper runs the real binary
// from .libs/ (as lt-NAME or NAME).
std::string build_dir_of_self() {
    std::string d = dir_of(self_path());
    if (d.size() >= 6 && d.compare(d.size() - 6, 6, "/.libs") == 0)
        d.resize(d.size() - 6);
    return d;
}
std::string first_executable(const std::vector<std::string> &candidates) {
    for (const auto &c : candidates) {
        if (c.empty())
            continue;
        std::string p = search_path(c);
        if (!p.empty())
            return p;
    }
    return {};
}

// In a build tree an installable program is libtool's wrapper script, which
// costs a shell per launch: run the binary it wraps, as an install would.
std::string unwrap_libtool(const std::string &program) {
    std::ifstream f(program);
    std::string first, second;
    std::getline(f, first);
    std::getline(f, second);
    if (first.rfind("#!", 0) != 0 ||
        second.find("temporary wrapper script for .libs/") == std::string::npos)
        return program;
    const std::string libs = dir_of(program) + "/.libs";
    const std::string real = libs + "/" + program.substr(program.rfind('/') + 1);
    if (!executable(real))
        return program;
    const char *old = std::getenv("LD_LIBRARY_PATH");
    setenv("LD_LIBRARY_PATH", (libs + (old && *old ? ":" + std::string(old) : "")).c_str(), 1);
    return real;
}

std::string describe(const std::vector<std::string> &argv) {
    std::string s;
    for (const auto &a : argv)
        s += (s.empty() ? "" : " ") + a;
    return s;
}

JobResult run_job(const std::vector<std::string> &argv, const std::string &log,
                  double timeout, const std::vector<std::string> &env) {
    JobResult r;
    std::vector<char *> args;
    for (const auto &a : argv)
        args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    const double t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        std::perror("sluice-bench: fork");
        return r;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int in = open("/dev/null", O_RDONLY);
        int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in >= 0)
            dup2(in, 0);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        for (const auto &e : env) {
            const auto eq = e.find('=');
            if (eq != std::string::npos)
                setenv(e.substr(0, eq).c_str(), e.c_str() + eq + 1, 1);
        }
        execv(args[0], args.data());
        std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    job_group = pid;
    int status = 0;
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    auto wait_for = [&](double seconds) {
        const double end = now_ns() + seconds * 1e9;
        for (;;) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid)
                return true;
            const double left_ms = (end - now_ns()) / 1e6;
            if (left_ms <= 0)
                return false;
            if (pidfd >= 0) {
                pollfd p{pidfd, POLLIN, 0};
                poll(&p, 1, static_cast<int>(std::min(left_ms + 1, 1e9)));
            } else {
                usleep(200);
            }
        }
    };
    bool done = wait_for(timeout);
    if (!done) {
        r.timed_out = true;
        kill(-pid, SIGTERM);
        if (!wait_for(3)) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
    }
    job_group = 0;
    r.seconds = (now_ns() - t0) / 1e9;
    if (pidfd >= 0)
        close(pidfd);
    if (WIFEXITED(status))
        r.code = WEXITSTATUS(status);
    r.ok = done && WIFEXITED(status) && r.code == 0;
    return r;
}

void show_failure(const char *what, const std::vector<std::string> &argv,
                  const JobResult &r, const std::string &log) {
    std::fprintf(stderr, "sluice-bench: %s failed (%s, %.1f s): %s\n", what,
                 r.timed_out ? "timed out" : ("exit " + std::to_string(r.code)).c_str(),
                 r.seconds, describe(argv).c_str());
    std::ifstream f(log);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (text.size() > 2000)
        text = "..." + text.substr(text.size() - 2000);
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line))
        std::fprintf(stderr, "  | %s\n", line.c_str());
}

TempDir::TempDir() {
    const char *under = std::getenv("TMPDIR");
    std::string tmpl = std::string(under && *under ? under : "/tmp") + "/sluice-bench.XXXXXX";
    if (mkdtemp(tmpl.data())) {
        path = tmpl;
        remove_at_signal(path, true);
    }
}
TempDir::~TempDir() {
    if (path.empty())
        return;
    forget_at_signal(path);
    if (!keep_)
        remove_tree(path);
}
void TempDir::keep_it(bool keep) {
    keep_ = keep;
    if (keep)
        forget_at_signal(path);
}

double wait_quiet(double seconds) {
    const double end = now_ns() + seconds * 1e9;
    double busy = cpu_busy_fraction(100);
    while (busy > 0.15 && now_ns() < end)
        busy = cpu_busy_fraction(250);
    return busy;
}

std::string cpu_model() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0)
            return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

} // namespace sluice::perf
