// spawners/local/launcher.cpp - the job behind sluicerun: fork the ranks, serve
// their control sockets, forward signals, decide the job's code, leave no
// process and no shared memory behind.
//
// One thread and one poll(2) loop over a signalfd and every rank's socket; the
// launcher's sockets are non-blocking and buffered both ways, so a slow, dead
// or hostile rank never stalls the others.  With a JobRelay (ssh spawner)
// the ranks are one host's block of a bigger job: allgather parts, codes and
// signals go through the relay.
#include "sluice_config.h"

#include "spawners/local/launcher.hpp"

#include "base/knobs.hpp"
#include "spawners/local/protocol.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace sluice::spawner::local {
namespace {

using Clock = std::chrono::steady_clock;
using base::Knob;

std::string say_prefix = "sluicerun";
long long say_origin_ns = 0;

std::string signal_name(int sig) {
#ifdef HAVE_SIGABBREV_NP
    if (const char *abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
    return "signal " + std::to_string(sig);
}

// Whether `path` is an ELF program that the dynamic loader starts (it has
// an interpreter): only such a program can fail with "cannot open shared
// object file", and only such a program lists its libraries, rather than
// running, under LD_TRACE_LOADED_OBJECTS.
bool dynamically_linked(const std::string &path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    UniqueFd file(fd);
    Elf64_Ehdr header;
    if (::pread(fd, &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
        std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
        header.e_phentsize != sizeof(Elf64_Phdr))
        return false;
    for (unsigned i = 0; i < header.e_phnum; ++i) {
        Elf64_Phdr ph;
        if (::pread(fd, &ph, sizeof ph, static_cast<off_t>(header.e_phoff + i * sizeof ph)) != static_cast<ssize_t>(sizeof ph))
            return false;
        if (ph.p_type == PT_INTERP) return true;
    }
    return false;
}

// The libraries the dynamic loader cannot find for `program` in this
// environment, as ldd shows them ("libsluice.so.0 => not found"): with
// LD_TRACE_LOADED_OBJECTS the loader lists them and stops before the
// program's own code runs.  Bounded to a few seconds.
std::vector<std::string> libraries_missing(const std::string &program) {
    std::vector<std::string> missing;
    if (!dynamically_linked(program)) return missing;
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return missing;
    UniqueFd reader(out[0]), writer(out[1]);
    const pid_t pid = ::fork();
    if (pid < 0) return missing;
    if (pid == 0) {
        ::dup2(out[1], 1);
        const int null = ::open("/dev/null", O_WRONLY);
        if (null >= 0) ::dup2(null, 2);
        ::setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
        ::execl(program.c_str(), program.c_str(), static_cast<char *>(nullptr));
        ::_exit(127);
    }
    writer = UniqueFd();
    std::string text;
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{reader.get(), POLLIN, 0};
        if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
        char buf[4096];
        const ssize_t n = ::read(reader.get(), buf, sizeof buf);
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    std::size_t at = 0;
    while ((at = text.find(" => not found", at)) != std::string::npos) {
        std::size_t begin = text.rfind('\n', at);
        begin = begin == std::string::npos ? 0 : begin + 1;
        std::string name = text.substr(begin, at - begin);
        name.erase(0, name.find_first_not_of(" \t"));
        if (!name.empty()) missing.push_back(name);
        at += 1;
    }
    return missing;
}

// The directory of the libsluice this launcher runs with: where a missing
// libsluice*.so.0 most likely is.
std::string own_library_dir() {
    Dl_info info{};
    if (!::dladdr(reinterpret_cast<void *>(&base::knobs_load), &info) || !info.dli_fname) return {};
    std::string path = info.dli_fname;
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos || path.find("libsluice", slash) == std::string::npos) return {};
    return path.substr(0, slash);
}

// What to tell the user about a rank that exited with 127: the libraries the
// loader could not find and how to make them found; "" when none is missing.
std::string start_failure_explain(const std::string &program) {
    const std::vector<std::string> missing = libraries_missing(program);
    if (missing.empty()) return {};
    std::string names;
    for (const std::string &m : missing) names += (names.empty() ? "" : ", ") + m;
    std::string dir = own_library_dir();
    if (dir.empty() || ::access((dir + "/" + missing[0]).c_str(), F_OK) != 0) dir = "DIR";
    return "the dynamic loader finds no " + names + " for " + program +
           "; fix: run with LD_LIBRARY_PATH=" + dir +
           (dir == "DIR" ? " (the directory that holds it)" : "") +
           ", or link the program with -Wl,-rpath," + dir +
           " (`pkg-config --libs sluice` and CMake's Sluice::sluice add it for a prefix outside the system "
           "directories)";
}

// An exit status as the shell will see it: 0..255, and never 0 for a code
// that was not 0 (exit(256) must not look like success).
int exit_code_of(int code) {
    if (code >= 0 && code <= 255) return code;
    int low = code & 0xff;
    return low ? low : 1;
}

struct Rank {
    pid_t pid = -1;
    MessageStream stream;                // launcher end of the control socket; closed at EOF
    std::deque<std::string> contributions;  // allgather payloads not yet used
    bool reaped = false;
    bool finalized = false;  // sent fini
    bool notified = false;   // sent exit_notify
    bool aborted = false;    // sent abort
    std::uint64_t signals_sent = 0;  // bit per signal the launcher (or the tty) sent it

    bool live() const { return !reaped; }
    // Ranks that owe every allgather round a contribution.  A rank whose
    // socket closed still counts until it is reaped: either it exits cleanly,
    // or abnormally and the job stops; no round completes on a guess.
    bool participates() const { return !finalized && !reaped; }
    bool was_sent(int sig) const { return sig > 0 && sig < 64 && (signals_sent & (std::uint64_t{1} << sig)); }
};

class Job final : public RankControl {
public:
    Job(const LaunchOptions &options, const Binder &binder, JobRelay *relay)
        : options_(options), binder_(binder), relay_(relay), ranks_(options.ranks) {}
    int run();

    // RankControl: orders from the relay.
    void allgather_deliver(Frames result) override;
    void signal_forward(int sig) override { on_signal(sig, 0, true); }
    void stop() override { stop_now(); }
    void deadline(double seconds, const std::string &reason) override { deadline_set(seconds, reason); }
    void event_merge(JobEvent event, int code) override;

private:
    bool signals_open();
    void start();
    bool start_rank(unsigned r);
    std::vector<std::string> environment(unsigned r, int fd) const;
    [[noreturn]] void child_run(unsigned r, int fd, char *const argv[], char *const envp[]) const;
    void loop_once();
    void signals_read();
    void on_signal(int sig, int code, bool from_relay = false);
    void socket_read(unsigned r, bool drain);
    void socket_write(unsigned r);
    void messages_parse(unsigned r);
    void relay_event(JobEvent event, int code) {
        if (relay_) relay_->event(event, code);
    }
    void message_handle(unsigned r, MessageType type, std::string &&payload);
    void protocol_error(unsigned r, const std::string &what);
    void reap();
    void rank_ended(unsigned r, int wstatus);
    void allgather_try();
    void signal_live(int sig, unsigned except);
    void stop_now() { signal_live(SIGKILL, UINT_MAX); }
    void deadline_set(double seconds, const std::string &reason);
    void deadline_check();
    int poll_timeout() const;
    void shm_cleanup() const;
    int job_code() const;
    unsigned live_count() const;
    std::string who(unsigned r) const {
        return "rank " + std::to_string(options_.first_rank + r) + " (pid " + std::to_string(ranks_[r].pid) + ")";
    }

    const LaunchOptions &options_;
    const Binder &binder_;
    JobRelay *relay_;
    std::vector<Rank> ranks_;
    std::unordered_map<pid_t, unsigned> by_pid_;
    UniqueFd signal_fd_;
    bool hup_ignored_ = false;  // started under nohup: keep SIGHUP ignored
    pid_t self_ = ::getpid();
    double kill_grace_ = std::max(0.0, base::knob_double(Knob::KILL_GRACE));

    std::optional<int> notify_code_;   // first exit_notify (or abort) code
    bool any_message_ = false;         // some rank spoke: this is a Sluice job
    bool start_failure_explained_ = false;  // a missing library was named
    std::optional<int> failure_code_;  // first abnormal rank, or 128 + signal
    std::optional<int> nonzero_code_;  // first non-zero exit status
    bool sigint_seen_ = false;
    bool stopping_ = false;  // every live rank was sent SIGKILL (or must be)
    std::optional<Clock::time_point> deadline_;
    std::string deadline_reason_;
    Clock::time_point deadline_from_;
    std::set<std::string> shm_names_;
    unsigned reaped_count_ = 0;
    unsigned round_ = 0;
    bool quiet_told_ = false;        // the relay knows no local rank takes part any more
    bool ended_told_ = false;        // the relay knows every local rank was reaped
    bool poll_failed_ = false;
};

// Signals reach the loop through a signalfd: no handler runs inside the
// loop's bookkeeping, and a SIGCHLD that lands before poll() is not lost.
bool Job::signals_open() {
    struct sigaction old{};
    ::sigaction(SIGHUP, nullptr, &old);
    hup_ignored_ = old.sa_handler == SIG_IGN;
    // An inherited SIG_IGN for SIGCHLD would make the kernel reap the ranks
    // for us and waitpid() would never see their status.
    ::signal(SIGCHLD, SIG_DFL);

    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&set, sig);
    if (!hup_ignored_) sigaddset(&set, SIGHUP);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) < 0) return false;
    signal_fd_ = UniqueFd(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    if (!signal_fd_) say("cannot watch signals (signalfd): %s", std::strerror(errno));
    return static_cast<bool>(signal_fd_);
}

std::vector<std::string> Job::environment(unsigned r, int fd) const {
    auto set = rank_variables(options_, r, fd);
    std::vector<std::string> env;
    for (char **e = environ; e && *e; ++e) {
        std::string entry(*e);
        bool replaced = std::any_of(set.begin(), set.end(), [&](const auto &kv) {
            return entry.size() > kv.first.size() && entry.compare(0, kv.first.size(), kv.first) == 0 &&
                   entry[kv.first.size()] == '=';
        });
        if (!replaced) env.push_back(std::move(entry));
    }
    for (auto &[name, value] : set) env.push_back(name + "=" + value);
    return env;
}

// Between fork and exec: the launcher is single-threaded, so this runs on a
// consistent copy; everything it needs was built before the fork.
void Job::child_run(unsigned r, int fd, char *const argv[], char *const envp[]) const {
    // The rank must not outlive the launcher; if the launcher died before
    // prctl took effect, the parent is already someone else.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != self_) ::_exit(1);

    for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);
    ::signal(SIGHUP, hup_ignored_ ? SIG_IGN : SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    fd_limit_restore();

    // The rank's own end is the one launcher descriptor that survives exec.
    ::fcntl(fd, F_SETFD, 0);
    if (options_.stdin_null) {
        int null = ::open("/dev/null", O_RDONLY);
        if (null > 0) {
            ::dup2(null, 0);
            ::close(null);
        }
    }
    std::string error;
    if (!binder_.apply(r, error)) {
        ::dprintf(2, "%s: rank %u: %s\n", say_prefix.c_str(), options_.first_rank + r, error.c_str());
        ::_exit(1);
    }
    ::execvpe(options_.program_path.c_str(), argv, envp);
    ::dprintf(2, "%s: rank %u: cannot run %s: %s\n", say_prefix.c_str(), options_.first_rank + r,
              options_.program_path.c_str(), std::strerror(errno));
    ::_exit(127);
}

bool Job::start_rank(unsigned r) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
        say("cannot create the control socket of rank %u: %s; stopping the job (raise `ulimit -n` or lower -n)",
            r, std::strerror(errno));
        return false;
    }
    UniqueFd mine(pair[0]), theirs(pair[1]);

    std::vector<std::string> env = environment(r, theirs.get());
    std::vector<char *> envp, argv;
    for (auto &e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string program = options_.program;
    std::vector<std::string> args = options_.arguments;
    argv.push_back(program.data());
    for (auto &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) {
        say("cannot fork rank %u: %s; stopping the job (lower -n or raise `ulimit -u`)", r, std::strerror(errno));
        return false;
    }
    if (pid == 0) child_run(r, theirs.get(), argv.data(), envp.data());
    ranks_[r].pid = pid;
    ranks_[r].stream = MessageStream(std::move(mine));
    by_pid_[pid] = r;
    const unsigned rank = options_.first_rank + r;
    if (options_.verbose) {
        if (binder_.binding() == Binding::none)
            say("forking rank %u (pid %d)", rank, pid);
        else
            say("forking rank %u (pid %d) bound to %s", rank, pid, binder_.describe(r).c_str());
    }
    return true;
}

void Job::start() {
    for (unsigned r = 0; r < ranks_.size(); ++r) {
        if (start_rank(r)) continue;
        // Ranks already running would wait forever for the missing one.
        ranks_.resize(r);
        if (!failure_code_) failure_code_ = 1;
        stop_now();
        return;
    }
}

unsigned Job::live_count() const {
    return static_cast<unsigned>(std::count_if(ranks_.begin(), ranks_.end(), [](const Rank &k) { return k.live(); }));
}

void Job::signal_live(int sig, unsigned except) {
    for (unsigned r = 0; r < ranks_.size(); ++r) {
        Rank &k = ranks_[r];
        if (!k.live() || r == except) continue;
        k.signals_sent |= std::uint64_t{1} << sig;
        ::kill(k.pid, sig);
    }
    if (sig == SIGKILL) stopping_ = true;
}

void Job::deadline_set(double seconds, const std::string &reason) {
    seconds = std::clamp(seconds, 0.0, 1e9);  // an "inf" knob must not overflow the clock
    auto now = Clock::now();
    auto at = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    if (deadline_ && *deadline_ <= at) return;
    deadline_ = at;
    deadline_from_ = now;
    deadline_reason_ = reason;
    if (options_.verbose) say("ranks still running in %.1f s (after %s) will be killed", seconds, reason.c_str());
}

void Job::deadline_check() {
    if (!deadline_ || Clock::now() < *deadline_) return;
    deadline_.reset();
    if (unsigned live = live_count()) {
        double waited = std::chrono::duration<double>(Clock::now() - deadline_from_).count();
        say("%u rank(s) still running %.1f s after %s; killing them (SLUICE_KILL_GRACE, SLUICE_EXIT_TIMEOUT)",
            live, waited, deadline_reason_.c_str());
        stop_now();
    }
}

int Job::poll_timeout() const {
    int timeout = relay_ ? relay_->poll_timeout() : -1;
    if (!deadline_) return timeout;
    double ms = std::chrono::duration<double, std::milli>(*deadline_ - Clock::now()).count();
    int until = static_cast<int>(std::clamp(std::ceil(ms), 0.0, static_cast<double>(INT_MAX)));
    return timeout < 0 ? until : std::min(timeout, until);
}

void Job::on_signal(int sig, int code, bool from_relay) {
    if (relay_ && !from_relay) relay_->signal_received(sig, sig == SIGINT && sigint_seen_);
    if (sig == SIGINT && sigint_seen_) {
        say("second SIGINT: killing every rank now");
        stop_now();
        return;
    }
    sigint_seen_ |= sig == SIGINT;
    if (!failure_code_) failure_code_ = 128 + sig;
    if (stopping_) return;
    // A Ctrl-C from the terminal (SI_KERNEL) already reached every rank: they
    // share our foreground process group.  Sending it again would look like
    // a second Ctrl-C to them.
    if (sig == SIGINT && code == SI_KERNEL && !relay_) {
        for (Rank &k : ranks_) k.signals_sent |= std::uint64_t{1} << sig;
        if (options_.verbose) say("SIGINT from the terminal reached every rank directly");
    } else {
        if (options_.verbose) say("forwarding %s to %u rank(s)", signal_name(sig).c_str(), live_count());
        signal_live(sig, UINT_MAX);
    }
    deadline_set(kill_grace_, signal_name(sig));
}

void Job::signals_read() {
    signalfd_siginfo info;
    while (::read(signal_fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        // SIGCHLD needs nothing here: every loop turn reaps.
        if (info.ssi_signo != SIGCHLD) on_signal(static_cast<int>(info.ssi_signo), info.ssi_code);
    }
}

void Job::protocol_error(unsigned r, const std::string &what) {
    say("%s %s; stopping the job", who(r).c_str(), what.c_str());
    if (!failure_code_) failure_code_ = 1;
    ranks_[r].stream.close(true);
    stop_now();
    relay_event(JobEvent::failure, 1);
}

void Job::message_handle(unsigned r, MessageType type, std::string &&payload) {
    Rank &k = ranks_[r];
    any_message_ = true;
    std::int32_t code = 0;
    if (type == MessageType::exit_notify || type == MessageType::abort) {
        if (payload.size() != sizeof code)
            return protocol_error(r, "sent an exit code of " + std::to_string(payload.size()) + " bytes (4 expected)");
        std::memcpy(&code, payload.data(), sizeof code);
    }
    switch (type) {
    case MessageType::allgather:
        k.contributions.push_back(std::move(payload));
        return;
    case MessageType::exit_notify:
        k.notified = true;
        if (!notify_code_) notify_code_ = code;
        if (options_.verbose) say("%s is exiting with code %d", who(r).c_str(), code);
        relay_event(JobEvent::notify, code);
        return;
    case MessageType::abort:
        k.aborted = true;
        if (!notify_code_) notify_code_ = code;
        say("%s aborted the job with code %d; killing the other ranks", who(r).c_str(), code);
        // The aborting rank ends itself; it gets the grace period to do so.
        signal_live(SIGKILL, r);
        stopping_ = true;
        deadline_set(kill_grace_, who(r) + "'s abort");
        relay_event(JobEvent::abort, code);
        return;
    case MessageType::fini:
        k.finalized = true;
        if (options_.verbose) say("%s finalized", who(r).c_str());
        return;
    case MessageType::cleanup:
        // A POSIX shm name: one leading slash and no other.
        if (payload.size() < 2 || payload[0] != '/' || payload.find('/', 1) != std::string::npos ||
            payload.find('\0') != std::string::npos)
            return protocol_error(r, "registered an invalid shared-memory name");
        if (options_.verbose) say("%s registered shared memory %s", who(r).c_str(), payload.c_str());
        shm_names_.insert(std::move(payload));
        return;
    default:
        return protocol_error(r, "sent an unknown control message (type " +
                                     std::to_string(static_cast<std::uint32_t>(type)) + ")");
    }
}

void Job::messages_parse(unsigned r) {
    Rank &k = ranks_[r];
    MessageHeader header;
    std::string payload;
    for (;;) {
        switch (k.stream.next(header, payload)) {
        case MessageStream::Parse::none:
            return;
        case MessageStream::Parse::oversize:
            return protocol_error(r, "sent a control message of " + std::to_string(header.length) +
                                         " bytes (the limit is " + std::to_string(max_message) + ")");
        case MessageStream::Parse::message:
            message_handle(r, static_cast<MessageType>(header.type), std::move(payload));
            break;
        }
    }
}

// `drain`: the rank is gone, so read what it left (bounded, in case a child
// of it still writes); otherwise take at most a slice per turn so one chatty
// rank cannot starve the rest.
void Job::socket_read(unsigned r, bool drain) {
    Rank &k = ranks_[r];
    if (!k.stream.is_open()) return;
    const bool open = k.stream.read_some(drain ? 2 * std::size_t{max_message} : std::size_t{1} << 20);
    messages_parse(r);  // what arrived before the end still counts
    // A protocol error dropped the input: that rank was already reported.
    if (!open && options_.verbose && !k.finalized && !k.notified && !stopping_)
        say("%s closed its control socket without finalizing", who(r).c_str());
}

// A failed write means the rank is gone; its exit status will say how.
void Job::socket_write(unsigned r) { (void)ranks_[r].stream.write_some(); }

// A round completes when every live, unfinalized rank has contributed; a rank
// that already ended cleanly contributes nothing (length 0).  A rank that
// ends abnormally stops the job when it is reaped, so nobody waits on it.
void Job::allgather_try() {
    if (stopping_) return;
    bool any = false;
    for (const Rank &k : ranks_) {
        if (!k.participates()) continue;
        if (k.contributions.empty()) return;
        any = true;
    }
    if (!any) {
        // For good: ranks that finalized or ended never take part again.
        if (relay_ && !quiet_told_) {
            quiet_told_ = true;
            relay_->ranks_quiet();
        }
        return;
    }
    std::size_t total = 0;
    for (const Rank &k : ranks_)
        total += sizeof(std::uint32_t) + (k.contributions.empty() ? 0 : k.contributions.front().size());
    if (total > max_message) {
        say("allgather %u needs %zu bytes, more than the control protocol's %u; stopping the job", round_, total,
            max_message);
        if (!failure_code_) failure_code_ = 1;
        stop_now();
        return;
    }
    std::string block;
    block.reserve(total);
    for (Rank &k : ranks_) {
        std::uint32_t len = k.contributions.empty() ? 0 : static_cast<std::uint32_t>(k.contributions.front().size());
        block.append(reinterpret_cast<const char *>(&len), sizeof len);
        if (k.contributions.empty()) continue;
        block.append(k.contributions.front());
        k.contributions.pop_front();
    }
    if (relay_) {
        // The rest of the job gives the other ranks' parts; the relay
        // delivers the round through allgather_deliver().
        if (options_.verbose) say("allgather %u: this host's part is ready (%zu bytes)", round_, total);
        relay_->allgather_block(std::move(block));
    } else {
        allgather_deliver(frame_make(static_cast<std::uint32_t>(MessageType::allgather_result), block));
        if (options_.verbose) say("allgather %u complete (%zu bytes)", round_, total);
    }
    ++round_;
}

void Job::allgather_deliver(Frames result) {
    for (unsigned r = 0; r < ranks_.size(); ++r) {
        if (!ranks_[r].participates() || !ranks_[r].stream.is_open()) continue;
        ranks_[r].stream.send(result);
        socket_write(r);
    }
}

// Codes from elsewhere in the job (the ssh spawner's root hears them from
// every host) count as this launcher's own.
void Job::event_merge(JobEvent event, int code) {
    switch (event) {
    case JobEvent::notify:
    case JobEvent::abort:
        any_message_ = true;
        if (!notify_code_) notify_code_ = code;
        break;
    case JobEvent::failure:
        if (!failure_code_) failure_code_ = code;
        break;
    case JobEvent::nonzero:
        if (!nonzero_code_) nonzero_code_ = code;
        break;
    case JobEvent::exiting:
        break;
    }
}

void Job::rank_ended(unsigned r, int wstatus) {
    Rank &k = ranks_[r];
    k.reaped = true;
    ++reaped_count_;
    socket_read(r, true);  // an exit_notify or fini sent just before exit counts
    k.stream.close();

    bool by_signal = WIFSIGNALED(wstatus);
    int sig = by_signal ? WTERMSIG(wstatus) : 0;
    int status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 0;
    std::string how = by_signal ? "killed by signal " + signal_name(sig) + (WCOREDUMP(wstatus) ? " (core dumped)" : "")
                                : "exited with status " + std::to_string(status);
    // A program that never speaks the protocol (sluicerun -n 2 hostname) is
    // judged by its status alone, as mpirun would.
    bool clean = k.finalized || k.notified || (!any_message_ && !by_signal && status == 0);
    if (!by_signal && !clean) how += " without finalizing (no fini or exit_notify on its control socket)";
    // Deaths the launcher caused (or the terminal's Ctrl-C) are not news.
    bool expected = k.aborted || (k.signals_sent && (!by_signal || k.was_sent(sig)));
    if (!expected && (by_signal || !clean)) {
        const int code = by_signal ? 128 + sig : (status ? status : 1);
        if (!failure_code_) failure_code_ = code;
        // 127: the shell's "not found", here mostly the loader's missing
        // library; explained once per job, not once per rank.
        std::string explained;
        if (!by_signal && status == 127 && !k.finalized && !k.notified && !start_failure_explained_) {
            explained = start_failure_explain(options_.program_path);
            start_failure_explained_ = !explained.empty();
        }
        if (!explained.empty())
            say("%s could not start (exit status 127): %s%s", who(r).c_str(), explained.c_str(),
                stopping_ ? "" : "; stopping the job");
        else
            say("%s %s%s", who(r).c_str(), how.c_str(), stopping_ ? "" : "; stopping the job");
        stop_now();
        relay_event(JobEvent::failure, code);
        return;
    }
    if (options_.verbose) say("%s %s", who(r).c_str(), how.c_str());
    if (status && !nonzero_code_) {
        nonzero_code_ = status;
        relay_event(JobEvent::nonzero, status);
    }
    if (k.notified && !stopping_) {
        if (live_count() > 0)
            deadline_set(base::exit_timeout_seconds(options_.size()) + kill_grace_, who(r) + " exited");
        relay_event(JobEvent::exiting, 0);
    }
}

void Job::reap() {
    for (;;) {
        int wstatus = 0;
        pid_t pid = ::waitpid(-1, &wstatus, WNOHANG);
        if (pid < 0 && errno == EINTR) continue;
        if (pid <= 0) return;
        auto it = by_pid_.find(pid);
        if (it != by_pid_.end())
            rank_ended(it->second, wstatus);
        else if (relay_)
            relay_->child_ended(pid, wstatus);
    }
}

void Job::loop_once() {
    std::vector<pollfd> fds{{signal_fd_.get(), POLLIN, 0}};
    std::vector<unsigned> owner{UINT_MAX};
    for (unsigned r = 0; r < ranks_.size(); ++r) {
        const Rank &k = ranks_[r];
        if (!k.stream.is_open()) continue;
        fds.push_back({k.stream.fd(), static_cast<short>(POLLIN | (k.stream.wants_write() ? POLLOUT : 0)), 0});
        owner.push_back(r);
    }
    const std::size_t relay_first = fds.size();
    if (relay_) relay_->poll_fill(fds);
    int n = ::poll(fds.data(), fds.size(), poll_timeout());
    if (n < 0 && errno != EINTR) {
        // Cannot watch the ranks any more: end them rather than hang.
        say("poll failed: %s; killing every rank", std::strerror(errno));
        if (!failure_code_) failure_code_ = 1;
        stop_now();
        while (reaped_count_ < ranks_.size()) {
            int wstatus = 0;
            pid_t pid = ::waitpid(-1, &wstatus, 0);
            if (pid < 0 && errno != EINTR) break;
            if (auto it = by_pid_.find(pid); pid > 0 && it != by_pid_.end()) rank_ended(it->second, wstatus);
        }
        reaped_count_ = static_cast<unsigned>(ranks_.size());
        poll_failed_ = true;
        return;
    }
    for (std::size_t i = 0; n > 0 && i < relay_first; ++i) {
        if (!fds[i].revents) continue;
        if (owner[i] == UINT_MAX) {
            signals_read();
            continue;
        }
        if (fds[i].revents & POLLOUT) socket_write(owner[i]);
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) socket_read(owner[i], false);
    }
    reap();
    if (relay_) relay_->poll_handle(fds.data() + relay_first, fds.size() - relay_first);
    allgather_try();
    if (relay_ && !ended_told_ && reaped_count_ == ranks_.size()) {
        ended_told_ = true;
        relay_->ranks_ended();
    }
    deadline_check();
}

void Job::shm_cleanup() const {
    for (const std::string &name : shm_names_) {
        if (::shm_unlink(name.c_str()) == 0) {
            if (options_.verbose) say("removed shared memory %s", name.c_str());
        } else if (errno != ENOENT) {
            say("cannot remove shared memory %s: %s; remove /dev/shm%s by hand", name.c_str(), std::strerror(errno),
                name.c_str());
        }
    }
}

int Job::job_code() const {
    if (notify_code_) return exit_code_of(*notify_code_);
    if (failure_code_) return exit_code_of(*failure_code_);
    if (nonzero_code_) return exit_code_of(*nonzero_code_);
    return 0;
}

int Job::run() {
    if (!signals_open()) return 1;
    if (options_.verbose && !relay_)
        say("job %s: %u rank(s) of %s, binding %s, kill grace %.1f s, exit timeout %.1f s", options_.job_id.c_str(),
            options_.ranks, options_.program_path.c_str(), binding_name(binder_.binding()), kill_grace_,
            base::exit_timeout_seconds(options_.ranks));
    if (relay_) relay_->start(*this);
    start();
    while (!poll_failed_ && (reaped_count_ < ranks_.size() || (relay_ && !relay_->finished()))) loop_once();
    shm_cleanup();
    int code = job_code();
    if (options_.verbose && !relay_) say("job %s ended with code %d", options_.job_id.c_str(), code);
    return code;
}

} // namespace

int launch(const LaunchOptions &options, const Binder &binder, JobRelay *relay) {
    Job job(options, binder, relay);
    return job.run();
}

void say(const char *format, ...) {
    char line[1024];
    int used;
    if (say_origin_ns) {
        timespec now{};
        ::clock_gettime(CLOCK_REALTIME, &now);
        const long long ns = now.tv_sec * 1000000000LL + now.tv_nsec - say_origin_ns;
        used = std::snprintf(line, sizeof line, "%s +%.3fs: ", say_prefix.c_str(), static_cast<double>(ns) * 1e-9);
    } else {
        used = std::snprintf(line, sizeof line, "%s: ", say_prefix.c_str());
    }
    used = std::min<int>(used, sizeof line / 2);
    va_list ap;
    va_start(ap, format);
    used += std::vsnprintf(line + used, sizeof line - used - 1, format, ap);
    va_end(ap);
    used = std::min<int>(used, sizeof line - 2);
    line[used++] = '\n';
    ssize_t ignored = ::write(2, line, static_cast<std::size_t>(used));
    (void)ignored;
}

void say_prefix_set(std::string prefix, long long origin_ns) {
    say_prefix = std::move(prefix);
    say_origin_ns = origin_ns;
}

} // namespace sluice::spawner::local
