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

std::uint64_t now_ns();

// What a wait loop does when a poll found nothing (Runtime sets it at init,
// from SLUICE_WAIT and SLUICE_POLL_YIELD): nothing, the next poll follows at
// once (spin); give the core away, so that the rank we wait for can run
// when this host has more busy ranks than cores (yield); or, once the polls
// have found nothing for SLUICE_WAIT_SPIN microseconds, sleep in the kernel
// on the conduits' wake-up descriptors until something arrives (block: the
// hook idle_block_hook_set installs).  Spinning costs the wait loop a load
// of idle_action and a count of its empty polls: a PAUSE here costs more
// than a poll and delays noticing the very message we wait for.  A spin may
// also yield once its polls have found nothing for SLUICE_WAIT_SPIN (the
// clock read every idle_check_polls empty polls, then at each): the host
// may be crowded by processes Sluice cannot count (other jobs, a loaded
// build machine), and a rank that waits for a descheduled peer would
// otherwise burn its whole time slice on every handoff.
enum class IdleAction : std::uint8_t { spin = 0, yield = 1, block = 2 };
extern IdleAction idle_action;
extern bool idle_yields;                 // block mode yields while it spins, too
extern std::uint32_t idle_check_polls;   // spin mode: empty polls between clock reads (UINT32_MAX: it never yields)
[[gnu::tls_model("initial-exec")]] extern constinit thread_local std::uint32_t idle_empty_polls;  // spin mode: empty polls since the last clock read
extern std::uint64_t idle_spin_ns;       // empty polls this long before block mode sleeps, spin mode yields
[[gnu::tls_model("initial-exec")]] extern constinit thread_local std::uint64_t idle_since_ns;  // when this thread's empty polls began (0: they did not)
void idle_block_hook_set(void (*hook)(void *), void *context);
void idle_slow();
// SLUICE_WAIT_SPIN into idle_spin_ns, and under SLUICE_POLL_YIELD=auto a
// spin that yields once it has spun that long (idle_check_polls 16; else
// it never does): what every rank's waits do, set by the runtime, and by
// the conduit tests' worlds, which run a transport without one.
void idle_spin_policy_set();

// A wait whose end may come without waking this rank: memory a peer
// changes without a message (an OpenSHMEM wait on a Put or atomic), or room
// in a conduit's send queue (a provider may free it only as it makes
// progress, which no descriptor announces).  Block mode sleeps at most
// SLUICE_WAIT_NAP at a time while one lasts on this thread.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local bool idle_nap_only;
struct IdleNap {
    IdleNap() : outer(idle_nap_only) { idle_nap_only = true; }
    ~IdleNap() { idle_nap_only = outer; }
    IdleNap(const IdleNap &) = delete;
    IdleNap &operator=(const IdleNap &) = delete;
    bool outer;
};

// A poll the program makes (sluice_poll) never sleeps, even in block mode:
// it is progress between the program's own work, not a wait.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local bool idle_no_sleep;

// Called by wait loops when a poll found nothing.
inline void idle() {
    if (idle_action != IdleAction::spin || ++idle_empty_polls >= idle_check_polls) idle_slow();
}
// Called by wait loops when a poll made progress: a wait spins again for
// SLUICE_WAIT_SPIN before it sleeps (block) or yields (spin).
inline void idle_reset() {
    idle_empty_polls = 0;
    idle_since_ns = 0;
}

} // namespace sluice::base
