// src/base/status.cpp - error reporting, fatal errors and backtraces.
#include "base/status.hpp"
#include "base/backtrace.hpp"

#include "base/knobs.hpp"

#include <atomic>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <execinfo.h>
#include <sched.h>
#include <unistd.h>

namespace sluice::base {
namespace {

std::atomic<int> current_rank{-1};
std::atomic<void (*)(int)> fatal_hook{nullptr};
thread_local char last_message[512];

int prefix(char *buf, std::size_t n) {
    int r = current_rank.load(std::memory_order_relaxed);
    if (r < 0) return std::snprintf(buf, n, "sluice[rank ?]");
    return std::snprintf(buf, n, "sluice[rank %d]", r);
}

void write_all(int fd, const char *s, std::size_t n) {
    while (n) {
        ssize_t w = ::write(fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= static_cast<std::size_t>(w);
    }
}

void format_message(char *buf, std::size_t n, const char *operation, const char *fix,
                    const char *format, va_list ap) {
    int used = prefix(buf, n);
    used += std::snprintf(buf + used, n - used, " %s: ", operation);
    if (used < static_cast<int>(n)) used += std::vsnprintf(buf + used, n - used, format, ap);
    if (fix && used < static_cast<int>(n)) std::snprintf(buf + used, n - used, "; fix: %s", fix);
}

void fatal_signal_handler(int sig) {
    char buf[160];
    int used = prefix(buf, sizeof buf);
    const char *name = sigabbrev_np(sig);
    used += std::snprintf(buf + used, sizeof buf - used, " fatal signal SIG%s (%s)%s\n",
                          name ? name : "?", strsignal(sig),
                          knob_bool(Knob::BACKTRACE) ? "" : "; set SLUICE_BACKTRACE=1 for a backtrace");
    write_all(2, buf, static_cast<std::size_t>(used));
    if (knob_bool(Knob::BACKTRACE)) backtrace_print();
    std::signal(sig, SIG_DFL);
    ::raise(sig);
}

// Prints a formatted report as fatal and ends the job with code 1.
[[noreturn]] void fatal_end(const char *message) {
    write_all(2, message, std::strlen(message));
    const char tail[] = " (fatal)\n";
    write_all(2, tail, sizeof tail - 1);
    if (knob_bool(Knob::BACKTRACE)) backtrace_print();
    if (auto hook = fatal_hook.exchange(nullptr)) hook(1);
    ::_exit(1);
}

} // namespace

const char *status_string(Status s) {
    switch (s) {
    case Status::ok: return "success";
    case Status::not_ready: return "not complete yet";
    case Status::argument: return "bad argument";
    case Status::rank: return "rank out of range";
    case Status::handler: return "bad handler";
    case Status::segment: return "address outside the segment";
    case Status::too_large: return "payload too large";
    case Status::context: return "not allowed in this context";
    case Status::state: return "wrong runtime state";
    case Status::resource: return "out of resources";
    case Status::bootstrap: return "bootstrap failure";
    case Status::transport: return "transport failure";
    }
    return "unknown status";
}

void log_rank_set(int rank) { current_rank.store(rank); }
int log_rank() { return current_rank.load(); }

Status report(Status s, const char *operation, const char *fix, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    format_message(last_message, sizeof last_message, operation, fix, format, ap);
    va_end(ap);
    if (knob_bool(Knob::ERRORS_FATAL)) fatal_end(last_message);  // already "rank op: what; fix: how"
    if (!knob_bool(Knob::QUIET_ERRORS)) {
        std::size_t n = std::strlen(last_message);
        char line[sizeof last_message + 1];
        std::memcpy(line, last_message, n);
        line[n] = '\n';
        write_all(2, line, n + 1);
    }
    return s;
}

const char *last_error() { return last_message; }

void fatal(const char *operation, const char *fix, const char *format, ...) {
    char buf[640];
    va_list ap;
    va_start(ap, format);
    format_message(buf, sizeof buf, operation, fix, format, ap);
    va_end(ap);
    fatal_end(buf);
}

void fatal_hook_set(void (*hook)(int)) { fatal_hook.store(hook); }

void say(const char *format, ...) {
    if (!knob_bool(Knob::VERBOSE)) return;
    char buf[512];
    int used = prefix(buf, sizeof buf);
    buf[used++] = ' ';
    va_list ap;
    va_start(ap, format);
    used += std::vsnprintf(buf + used, sizeof buf - used - 1, format, ap);
    va_end(ap);
    if (used > static_cast<int>(sizeof buf) - 2) used = sizeof buf - 2;
    buf[used++] = '\n';
    write_all(2, buf, static_cast<std::size_t>(used));
}

void backtrace_print() {
    void *frames[64];
    int n = ::backtrace(frames, 64);
    if (backtrace_print_symbolized(frames, n)) return;
    const char header[] = "backtrace:\n";
    write_all(2, header, sizeof header - 1);
    ::backtrace_symbols_fd(frames, n, 2);
}

void fatal_signals_install() {
    // Load libgcc's unwinder now: backtrace() may not allocate in a handler.
    void *warm[1];
    (void)::backtrace(warm, 1);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
        struct sigaction sa {};
        sa.sa_handler = fatal_signal_handler;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        ::sigaction(sig, &sa, nullptr);
    }
}

IdleAction idle_action = IdleAction::spin;
bool idle_yields = false;
std::uint32_t idle_check_polls = UINT32_MAX;
constinit thread_local std::uint32_t idle_empty_polls = 0;
std::uint64_t idle_spin_ns = 20'000;
constinit thread_local std::uint64_t idle_since_ns = 0;
constinit thread_local bool idle_nap_only = false;
constinit thread_local bool idle_no_sleep = false;
namespace {
void (*idle_block_hook)(void *) = nullptr;
void *idle_block_context = nullptr;
} // namespace

void idle_block_hook_set(void (*hook)(void *), void *context) {
    idle_block_hook = hook;
    idle_block_context = context;
}

void idle_spin_policy_set() {
    idle_spin_ns = static_cast<std::uint64_t>(knob_double(Knob::WAIT_SPIN) * 1000);
    idle_check_polls = knob_auto(Knob::POLL_YIELD) ? 16 : UINT32_MAX;
}

void idle_slow() {
    if (idle_action == IdleAction::spin) {
        // idle_check_polls empty polls: past SLUICE_WAIT_SPIN of them,
        // yield now and at each further one (the count stays at the
        // limit), unless this is the program's own poll, not a wait (which
        // never yields, so reads no clock).
        if (idle_no_sleep) {
            idle_empty_polls = 0;
            return;
        }
        const std::uint64_t now = now_ns();
        if (idle_since_ns == 0) idle_since_ns = now;
        if (now - idle_since_ns < idle_spin_ns) {
            idle_empty_polls = 0;
            return;
        }
        idle_empty_polls = idle_check_polls;
        ::sched_yield();
        return;
    }
    if (idle_action == IdleAction::block && idle_block_hook && !idle_no_sleep) {
        const std::uint64_t now = now_ns();
        if (idle_since_ns == 0) {
            idle_since_ns = now;
        } else if (now - idle_since_ns >= idle_spin_ns) {
            idle_block_hook(idle_block_context);
            idle_since_ns = 0;
            return;
        }
    }
    if (idle_yields) ::sched_yield();
}

std::uint64_t now_ns() {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

} // namespace sluice::base
