// src/core/exit.cpp - the exit protocol.
//
// A graceful exit in the manner of GASNet-EX's ibv conduit
// (src/core/README.md, "Exit protocol"): head records the first exit and its
// code; body disables user handlers, tells the launcher the code, tries a
// reduce-with-timeout over all ranks (a collective exit ends there), else
// elects a leader through rank 0 (or itself, if rank 0 does not answer) that
// sends one exit request to every rank, O(N) in all; if that fails too, the
// bootstrap's abort ends the job.  An alarm bounds the whole body, so the
// process always ends with its code.  The bootstrap's last calls (finalize
// or abort) run on the main thread whenever it can be reached, as MPI wants.
#include "core/runtime.hpp"

#include "base/knobs.hpp"
#include "sluice_config.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sluice::core {
namespace {

long thread_id() { return ::syscall(SYS_gettid); }
bool on_main_thread() { return thread_id() == ::getpid(); }

std::atomic<int> alarm_code{1};
void on_alarm(int) { ::_exit(alarm_code.load()); }

constexpr int termination_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// A termination signal's exit runs on a thread of its own, never in the
// handler: it polls, takes locks and may call MPI_Abort, PMIx_Abort or
// PMI2_Abort, none of them async-signal-safe.  The handler only writes the
// signal's number into a pipe that the thread, started at init, reads.
int signal_pipe[2] = {-1, -1};
std::thread *signal_thread = nullptr;  // never destroyed: the process may end while it waits

// A second signal while exiting hurries the end.  The interrupted thread
// does not go on with the program's work: it waits here, unless it holds a
// conduit's lock, which the exit needs; then it leaves that section and
// parks at its next poll.
void on_termination_signal(int sig) {
    const int saved = errno;
    runtime().exit_signal_forward(sig);
    if (runtime().exit_signal_may_wait())
        for (;;) ::pause();
    errno = saved;
}

void signal_thread_main() {
    sigset_t block;
    sigemptyset(&block);
    for (int sig : termination_signals) sigaddset(&block, sig);
    ::pthread_sigmask(SIG_BLOCK, &block, nullptr);  // the handler runs on the application's threads
    for (;;) {
        unsigned char sig = 0;
        const ssize_t n = ::read(signal_pipe[0], &sig, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n != 1 || sig == 0) return;  // finalize stops the thread with a 0
        runtime().exit_from_signal(sig);
    }
}

// A child of fork() has no signal thread: its signals must not reach the
// parent's through the inherited pipe.
void signals_default_in_child() {
    for (int sig : termination_signals) std::signal(sig, SIG_DFL);
    for (int &fd : signal_pipe) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
}

#ifdef HAVE_ON_EXIT
void on_process_end(int code, void *) { runtime().exit_from_process_end(code); }
#else
void on_process_end_atexit() { runtime().exit_from_process_end(0); }
#endif

am::Send short_message(std::uint8_t handler, const std::uint32_t *args, unsigned nargs) {
    am::Send m;
    m.handler = handler;
    m.args = args;
    m.nargs = nargs;
    return m;
}

} // namespace

struct ExitHandlers {
    // rank 0: one rank has entered its exit with `code`
    static void arrive(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
        Runtime &rt = runtime();
        int code = static_cast<int>(args[0]);
        int seen = rt.exit_max_code_.load();
        while (code > seen && !rt.exit_max_code_.compare_exchange_weak(seen, code)) {
        }
        rt.exit_arrivals_.fetch_add(1);
    }
    // every rank has arrived: the exit is collective
    static void done(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
        Runtime &rt = runtime();
        rt.exit_max_code_.store(static_cast<int>(args[0]));
        rt.exit_done_.store(true);
    }
    // rank 0: the first candidate becomes the leader
    static void elect(sluice_token_t token, void *, std::size_t, const std::uint32_t *, unsigned) {
        Runtime &rt = runtime();
        int candidate = static_cast<int>(token->source);
        int expected = -1;
        rt.exit_leader_.compare_exchange_strong(expected, candidate);
        std::uint32_t is_leader = rt.exit_leader_.load() == candidate;
        (void)rt.am.system_reply(token, short_message(am::sys_exit_elect_reply, &is_leader, 1));
    }
    static void elect_reply(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
        Runtime &rt = runtime();
        int expected = 0;
        rt.exit_role_.compare_exchange_strong(expected, args[0] ? 1 : 2);
        rt.exit_elect_answered_.store(true);
    }
    // from the leader: the job is ending with args[0]
    static void request(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
        Runtime &rt = runtime();
        // With every ack in, the leader may leave, and its launcher kill us.
        rt.bootstrap_->exit_begin();
        (void)rt.am.system_reply(token, short_message(am::sys_exit_ack, nullptr, 0));
        rt.exit_leader_code_.store(static_cast<int>(args[0]));
        rt.exit_leader_heard_.store(true);
        int expected = 0;
        rt.exit_role_.compare_exchange_strong(expected, 2);
        if (rt.exit_role_.load() == 1) rt.exit_role_.store(2);  // two leaders: the other one wins here
        if (!rt.exit_started_.load()) rt.exit(static_cast<int>(args[0]));
    }
    static void ack(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) {
        runtime().exit_acks_.fetch_add(1);
    }
};

void exit_handlers_register(am::AmEngine &am) {
    am.system_register(am::sys_exit_arrive, ExitHandlers::arrive);
    am.system_register(am::sys_exit_done, ExitHandlers::done);
    am.system_register(am::sys_exit_elect, ExitHandlers::elect);
    am.system_register(am::sys_exit_elect_reply, ExitHandlers::elect_reply);
    am.system_register(am::sys_exit_request, ExitHandlers::request);
    am.system_register(am::sys_exit_ack, ExitHandlers::ack);

    if (signal_pipe[0] < 0 && ::pipe2(signal_pipe, O_CLOEXEC) == 0) {
        static bool atfork = false;
        if (!atfork) atfork = ::pthread_atfork(nullptr, nullptr, signals_default_in_child) == 0;
        signal_thread = new std::thread(signal_thread_main);
    }
    for (int sig : termination_signals) {
        struct sigaction sa {};
        sa.sa_handler = on_termination_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART | SA_NODEFER;  // a second signal reaches a thread waiting in the handler
        ::sigaction(sig, &sa, nullptr);
    }
    static bool hooked = false;
    if (!hooked) {
        hooked = true;
#ifdef HAVE_ON_EXIT
        ::on_exit(on_process_end, nullptr);
#else
        std::atexit(on_process_end_atexit);
#endif
    }
}

// After finalize the process is the application's again.
void exit_handlers_release() {
    for (int sig : termination_signals) std::signal(sig, SIG_DFL);
    if (signal_thread) {
        const unsigned char stop = 0;
        if (::write(signal_pipe[1], &stop, 1) != 1) return;  // keep the pipe for the thread that reads it
        signal_thread->join();
        delete signal_thread;
        signal_thread = nullptr;
    }
    for (int &fd : signal_pipe) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
}

bool Runtime::exit_head(int code) {
    bool expected = false;
    if (!exit_started_.compare_exchange_strong(expected, true)) return false;
    exit_code_.store(code);
    alarm_code.store(code);
    exit_thread_.store(thread_id());
    return true;
}

void Runtime::exit_park() {
    if (exit_thread_.load() == thread_id()) return;  // the exit itself polls
    if (on_main_thread()) {
        // The exiting thread hands the bootstrap's last calls to the main
        // thread when it is here: MPI wants MPI_Finalize from it.
        main_parked_.store(true);
        main_parked_.notify_all();
        exit_handoff_.wait(false);
        exit_finish();
        exit_tail();
    }
    for (;;) ::pause();
}

void Runtime::exit(int code) {
    if (!exit_head(code)) {
        if (exit_thread_.load() != thread_id()) exit_park();
        exit_tail();  // exit called again while exiting (e.g. from a handler)
    }
    if (running()) exit_body(exit_code_.load());
    exit_tail();
}

void Runtime::exit_from_process_end(int code) {
    if (!running() || !exit_head(code)) return;
    if (bootstrap_calls > 0) {
        // exit() from inside a bootstrap collective: the bootstrap's library
        // is ending the process (MPICH's abort path does, from its progress
        // loop) and must not be entered again.
        bootstrap_->exit_notify(code, true);
        return;
    }
    exit_body(code);
}

void Runtime::exit_signal_forward(int sig) {
    if (exit_started_.load() || signal_pipe[1] < 0) ::_exit(exit_started_.load() ? exit_code_.load() : 128 + sig);
    const unsigned char s = static_cast<unsigned char>(sig);
    if (::write(signal_pipe[1], &s, 1) != 1) ::_exit(128 + sig);
}

bool Runtime::exit_signal_may_wait() const {
    for (auto &t : transports_)
        if (!t->signal_exit_safe()) return false;
    return true;
}

void Runtime::exit_from_signal(int sig) {
    if (running()) exit(128 + sig);
}

void Runtime::exit_tail() {
    std::fflush(nullptr);
    if (state_.load() == State::running)
        for (auto &t : transports_) t->exit_release();
    ::_exit(exit_code_.load());
}

bool Runtime::exit_wait(std::uint64_t deadline, bool (Runtime::*done)() const) {
    while (!(this->*done)()) {
        if (base::now_ns() > deadline) return false;
        am.poll();
    }
    return true;
}

bool Runtime::exit_reduced() const {
    if (exit_leader_heard_.load()) return true;  // a leader reached us: as good as done
    return rank_ == 0 ? exit_arrivals_.load() >= static_cast<int>(size_) : exit_done_.load();
}
bool Runtime::exit_elected() const { return exit_elect_answered_.load() || exit_role_.load() != 0; }
bool Runtime::exit_acked() const { return exit_acks_.load() >= static_cast<int>(size_) - 1; }
bool Runtime::exit_leader_known() const { return exit_leader_heard_.load(); }

void Runtime::exit_body(int code) {
    const double timeout = base::exit_timeout_seconds(size_);
    const std::uint64_t start = base::now_ns();
    const auto at = [&](double fraction) { return start + static_cast<std::uint64_t>(timeout * fraction * 1e9); };

    struct sigaction sa {};
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGALRM, &sa, nullptr);
    ::alarm(static_cast<unsigned>(std::ceil(timeout)) + 2);

    for (auto &t : transports_) {
        t->dispatch_abandon();  // we may be inside a handler that never returns
        t->send_deadline_set(at(1.0));
    }
    am.user_handlers_disable();
    progress_stop_.store(true);
    bootstrap_->exit_begin();
    base::say("exit with code %d", code);
    am.credit_stats_write();
    for (auto &t : transports_) t->stats_report();

    bool graceful = size_ == 1;
    if (!graceful) {
        // Reduce with timeout: everybody reports to rank 0, which answers
        // when all have.
        std::uint32_t c = static_cast<std::uint32_t>(code);
        if (rank_ == 0) {
            ExitHandlers::arrive(nullptr, nullptr, 0, &c, 1);
        } else {
            (void)am.system_request(0, short_message(am::sys_exit_arrive, &c, 1));
        }
        graceful = exit_wait(at(0.25), &Runtime::exit_reduced);
        if (graceful && rank_ == 0 && exit_role_.load() != 2) {
            std::uint32_t job = static_cast<std::uint32_t>(exit_max_code_.load());
            for (Rank r = 1; r < size_; ++r) (void)am.system_request(r, short_message(am::sys_exit_done, &job, 1));
        }
    }
    // The job's code: the leader's if one reached us, the largest of a
    // collective exit, else ours.
    int job_code = code;
    if (exit_leader_heard_.load()) job_code = exit_leader_code_.load();
    else if (graceful && size_ > 1) job_code = exit_max_code_.load();
    if (!graceful && exit_leader_heard_.load()) graceful = true;  // a leader reached us
    if (!graceful) {
        if (rank_ == 0) {
            int expected = -1;
            exit_leader_.compare_exchange_strong(expected, 0);
            int role = exit_leader_.load() == 0 ? 1 : 2;
            expected = 0;
            exit_role_.compare_exchange_strong(expected, role);
        } else {
            (void)am.system_request(0, short_message(am::sys_exit_elect, nullptr, 0));
            if (!exit_wait(at(0.5), &Runtime::exit_elected)) {
                int expected = 0;  // rank 0 is wedged: lead ourselves
                exit_role_.compare_exchange_strong(expected, 1);
            }
        }
        if (exit_role_.load() == 1) {
            std::uint32_t c = static_cast<std::uint32_t>(code);
            for (Rank r = 0; r < size_; ++r)
                if (r != rank_) (void)am.system_request(r, short_message(am::sys_exit_request, &c, 1));
            graceful = exit_wait(at(0.95), &Runtime::exit_acked);
        } else {
            // A member (the election said so): the leader's request carries
            // the job's code, and this rank must not report a code before it
            // has it.  The leader reaches everyone or aborts.
            graceful = exit_wait(at(0.95), &Runtime::exit_leader_known);
        }
    }
    if (exit_leader_heard_.load()) job_code = exit_leader_code_.load();
    exit_code_.store(job_code);
    alarm_code.store(job_code);
    std::fflush(nullptr);
    if (!graceful) base::say("exit coordination timed out; aborting the job");
    exit_graceful_.store(graceful);
    if (!on_main_thread() && exit_main_parks()) {
        exit_handoff_.store(true);
        exit_handoff_.notify_all();
        for (;;) ::pause();  // the main thread ends the process
    }
    exit_finish();
    ::alarm(0);
}

// The main thread parks as soon as it polls after the exit started; one that
// has not by now runs the program's own code and cannot be reached.
bool Runtime::exit_main_parks() const {
    const std::uint64_t deadline = base::now_ns() + 100 * 1000 * 1000;
    while (!main_parked_.load()) {
        if (base::now_ns() > deadline) return false;
        ::usleep(1000);
    }
    return true;
}

void Runtime::exit_finish() {
    const int code = exit_code_.load();
    if (!exit_graceful_.load()) bootstrap_->abort(code);
    // A conduit over MPI (mpi) is stopped first: another thread of this
    // process may be inside MPI through it.
    const std::uint64_t deadline = base::now_ns() + 2ull * 1000 * 1000 * 1000;
    bool quiet = true;
    for (auto &t : transports_) quiet &= t->exit_quiet(deadline);
    bootstrap_->exit_notify(code, !quiet);
    bootstrap_->fini();
}

} // namespace sluice::core
