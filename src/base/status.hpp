// src/base/status.hpp - the one status type, error reporting, fatal errors.
//
// The function that decides an error reports it once, through report(): one
// line naming the rank, the operation, what went wrong and the fix.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice::base {

// Same values as the SLUICE_* codes of <sluice.h>.
enum class Status : int {
    ok = 0,
    not_ready = 1,
    argument = -1,
    rank = -2,
    handler = -3,
    segment = -4,
    too_large = -5,
    context = -6,
    state = -7,
    resource = -8,
    bootstrap = -9,
    transport = -10,
};

const char *status_string(Status s);

// The rank printed in messages (-1 before it is known).
void log_rank_set(int rank);
int log_rank();

// Records "sluice[rank R] OPERATION: message; fix: FIX" as this thread's last
// error, prints it unless SLUICE_QUIET_ERRORS, makes it fatal under
// SLUICE_ERRORS_FATAL, and returns `s`.  `fix` may be null.
Status report(Status s, const char *operation, const char *fix, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
const char *last_error();

// Prints the message (and a backtrace under SLUICE_BACKTRACE) and ends the
// job with code 1 through the exit hook, or _exit(1) when none is set.
[[noreturn]] void fatal(const char *operation, const char *fix, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
// The runtime's job-wide exit; called by fatal().
void fatal_hook_set(void (*hook)(int code));

// Verbose start-up/exit narration (SLUICE_VERBOSE).
void say(const char *format, ...) __attribute__((format(printf, 1, 2)));

// Backtrace of the calling thread on stderr; async-signal-safe enough for a
// fatal signal handler.
void backtrace_print();
// Handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: print the rank and
// signal (and a backtrace under SLUICE_BACKTRACE), then die by the signal.
void fatal_signals_install();

// A termination signal that arrived while a conduit was in the middle of
// updating its state (Transport::signal_exit_safe): the exit it asks for
// runs when the conduit leaves that section (signal_deferred_run).
extern std::atomic<int> signal_deferred;
void signal_deferred_hook_set(void (*hook)(int sig));
void signal_deferred_run();

std::uint64_t now_ns();
void idle_yield();

// Called by wait loops when a poll found nothing.  With more busy ranks than
// cores (SLUICE_POLL_YIELD), it gives the core away so the rank we wait for
// can run.  Otherwise it does nothing: a PAUSE here costs more than a poll
// and delays noticing the very message we wait for.
extern bool idle_yields;
inline void idle() {
    if (idle_yields) idle_yield();
}

} // namespace sluice::base
