// tests/exit/exit_test.cpp - sluice-exit-test <case> [rank] [code|signal]:
// one way for a job to end per case.  The driver (exit_driver.cpp) checks
// the job code, that no rank survives and that no shared memory is left.
//
// In the "one rank" cases the other ranks first tell the exiting rank, with a
// Short AM, that they are about to wait (in a barrier, a spin loop that never
// calls Sluice, or a poll loop), and the exiting rank waits for all of those
// notices: the exit then really reaches ranks that are waiting, not ranks
// that are still starting.
#include "tests/rank_util.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace sluice_test;

namespace {

enum : sluice_handler_t {
    h_notice = 1,
    h_exit_in_request = 2,
    h_ask_reply = 3,
    h_exit_in_reply = 4,
    h_late = 5,
    h_exit_in_medium = 6
};

std::atomic<unsigned> notices{0};
int exit_code = 3;
sluice_rank_t me = 0, nranks = 1;

std::atomic<std::uint64_t> noticed_by{0};  // senders of notices, a bit per rank (the first 64)
void on_notice(sluice_token_t token, void *, std::size_t, const std::uint32_t *, unsigned) {
    notices.fetch_add(1);
    sluice_rank_t src = 0;
    if (sluice_token_source(token, &src) == SLUICE_OK && src < 64) noticed_by.fetch_or(std::uint64_t{1} << src);
}
void on_exit_in_request(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
    sluice_exit(static_cast<int>(args[0]));
}
// A Medium of several lines: on smp its record sits in the queue's large
// ring behind a marker, which the exit must hand back with it.
constexpr std::size_t exit_medium_bytes = 1000;
void on_ask_reply(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    TOK(sluice_am_reply_short(token, h_exit_in_reply, args, 1));
}
void on_exit_in_reply(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
    sluice_exit(static_cast<int>(args[0]));
}

void setup(std::size_t segment = 65536) {
    TOK(sluice_handler_register(h_notice, on_notice, SLUICE_AM_SHORT, 0));
    TOK(sluice_handler_register(h_exit_in_request, on_exit_in_request, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_exit_in_medium, on_exit_in_request, SLUICE_AM_MEDIUM, 1));
    TOK(sluice_handler_register(h_ask_reply, on_ask_reply, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_exit_in_reply, on_exit_in_reply, SLUICE_AM_SHORT, 1));
    if (segment) TOK(sluice_segment_attach(segment));
    TOK(sluice_barrier());
}

// What a rank that is not the exiting one does while it waits to be ended.
enum class Wait { barrier, spin, poll };

[[noreturn]] void wait_forever(Wait how, sluice_rank_t exiter) {
    if (me != exiter) TOK(sluice_am_request_short(exiter, h_notice, nullptr, 0));
    switch (how) {
    case Wait::barrier: {
        sluice_status_t s = sluice_barrier();
        // The job must end before this barrier can complete.
        if (s == SLUICE_OK) fail_at(__FILE__, __LINE__, "barrier", "a barrier completed without the exiting rank");
        // An error return is acceptable only while the job is ending.
        for (;;) (void)sluice_poll();
    }
    case Wait::spin: {
        volatile std::uint64_t counter = 0;
        for (;;) counter = counter + 1;  // never calls Sluice again
    }
    case Wait::poll:
        for (;;) (void)sluice_poll();
    }
    for (;;) (void)sluice_poll();
}

void wait_for_notices(sluice_rank_t exiter) {
    if (me == exiter) WAIT_UNTIL(notices.load() == nranks - 1);
}

int signal_number(const std::string &name) {
    if (name == "INT") return SIGINT;
    if (name == "TERM") return SIGTERM;
    if (name == "SEGV") return SIGSEGV;
    if (name == "BUS") return SIGBUS;
    if (name == "FPE") return SIGFPE;
    if (name == "ABRT") return SIGABRT;
    if (name == "KILL") return SIGKILL;
    return std::atoi(name.c_str());
}

// Not inlined: the backtrace test looks for this function by name.
[[noreturn, gnu::noinline]] void die_by(const std::string &name) {
    std::fflush(nullptr);
    if (name == "ABRT") std::abort();
    if (name == "SEGV") {
        // A real invalid access, not raise(): the address is hidden from the
        // compiler so it cannot turn the store into a trap instruction.
        int *volatile address = nullptr;
        *address = 1;
    }
    ::raise(signal_number(name));
    fail_at(__FILE__, __LINE__, "raise", "still alive after raising SIG%s", name.c_str());
}

void usage() {
    std::fprintf(stderr,
                 "usage: sluicerun -n N sluice-exit-test CASE [RANK] [CODE|SIGNAL]\n"
                 "  collective CODE            every rank calls sluice_exit(CODE)\n"
                 "  return CODE                every rank returns CODE from main (no finalize)\n"
                 "  finalize-return CODE       finalize, then return CODE from main\n"
                 "  barrier RANK CODE          RANK calls sluice_exit(CODE), the others sit in a barrier\n"
                 "  spin RANK CODE             ... the others spin without calling Sluice\n"
                 "  poll RANK CODE             ... the others loop in sluice_poll\n"
                 "  libc-exit RANK CODE        RANK calls exit(CODE) from libc, the others sit in a barrier\n"
                 "  request-handler RANK CODE  RANK calls sluice_exit(CODE) in a request handler\n"
                 "  medium-handler RANK CODE   the same in the handler of a 1000-byte Medium (or the largest)\n"
                 "  reply-handler RANK CODE    RANK calls sluice_exit(CODE) in a reply handler\n"
                 "  rma RANK CODE              RANK exits with Puts and Gets in flight both ways\n"
                 "  signal RANK SIG            RANK dies by SIG (INT TERM SEGV BUS FPE ABRT KILL)\n"
                 "  before-attach RANK CODE    RANK exits between init and segment attach\n"
                 "  errors-fatal RANK          SLUICE_ERRORS_FATAL=1: RANK makes a bad call\n"
                 "  put-before-attach RANK     SLUICE_ERRORS_FATAL=1: RANK puts to its next rank before any attach\n"
                 "  unregistered RANK          the others send RANK a Short for a handler it never registered\n"
                 "  mismatched RANK            ... for a handler RANK registered with another argument count\n"
                 "  ready                      print READY, then every rank polls until killed\n"
                 "  stopped RANK               RANK stops itself (SIGSTOP); the others send it AMs until the\n"
                 "                             network conduit's peer timeout ends the job (SLUICE_ROUTE=network)\n");
}

} // namespace

int main(int argc, char **argv) {
    record_pid();
    if (argc < 2) {
        usage();
        return 2;
    }
    std::string which = argv[1];
    g_case = argv[1];
    TOK(sluice_init(&argc, &argv));
    me = sluice_rank();
    nranks = sluice_size();
    auto number = [&](int i, long fallback) { return i < argc ? std::strtol(argv[i], nullptr, 0) : fallback; };
    sluice_rank_t exiter = static_cast<sluice_rank_t>(number(2, 0)) % nranks;
    exit_code = static_cast<int>(number(3, 3));

    if (which == "collective") {
        setup();
        sluice_exit(static_cast<int>(number(2, 7)));
    }
    if (which == "return") {
        setup();
        return static_cast<int>(number(2, 0));
    }
    if (which == "affinity") {  // "affinity RANK CPU,CPU,..." from sched_getaffinity, then return 0
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) != 0) return 9;
        std::string cpus;
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
        std::printf("affinity %u %s\n", me, cpus.c_str());
        std::fflush(stdout);
        setup();
        return 0;
    }
    if (which == "finalize-return") {
        setup();
        TOK(sluice_finalize());
        return static_cast<int>(number(2, 0));
    }
    if (which == "barrier" || which == "spin" || which == "poll" || which == "libc-exit") {
        setup();
        Wait how = which == "spin" ? Wait::spin : which == "poll" ? Wait::poll : Wait::barrier;
        if (me != exiter) wait_forever(how, exiter);
        wait_for_notices(exiter);
        if (which == "libc-exit") std::exit(exit_code);
        sluice_exit(exit_code);
    }
    if (which == "request-handler" || which == "medium-handler") {
        setup();
        // The rank after the exiting one sends it the request whose handler
        // exits, once the exiting rank says everyone else is waiting.
        sluice_rank_t asker = (exiter + 1) % nranks;
        std::uint32_t code = static_cast<std::uint32_t>(exit_code);
        auto send_exit = [&](sluice_rank_t to) {
            static char payload[exit_medium_bytes];
            if (which == "medium-handler")
                TOK(sluice_am_request_medium(to, h_exit_in_medium, payload,
                                             std::min(sizeof payload, sluice_am_max_medium()), &code, 1));
            else
                TOK(sluice_am_request_short(to, h_exit_in_request, &code, 1));
        };
        if (me == exiter) {
            wait_for_notices(exiter);
            if (asker == me) send_exit(me);
            else TOK(sluice_am_request_short(asker, h_notice, nullptr, 0));  // "go"
            for (;;) (void)sluice_poll();
        }
        if (me == asker) {
            TOK(sluice_am_request_short(exiter, h_notice, nullptr, 0));
            WAIT_UNTIL(notices.load() >= 1);
            send_exit(exiter);
            for (;;) (void)sluice_poll();
        }
        wait_forever(Wait::poll, exiter);
    }
    if (which == "reply-handler") {
        setup();
        sluice_rank_t replier = (exiter + 1) % nranks;
        if (me == exiter) {
            wait_for_notices(exiter);
            std::uint32_t code = static_cast<std::uint32_t>(exit_code);
            TOK(sluice_am_request_short(replier, h_ask_reply, &code, 1));
            for (;;) (void)sluice_poll();
        }
        wait_forever(Wait::poll, exiter);
    }
    if (which == "rma") {
        // Transfers in flight both ways when RANK exits: the others keep
        // Gets from and Puts to its segment going (never synced), and RANK
        // starts its own with the next rank, then exits without syncing.
        constexpr std::size_t segment = std::size_t{1} << 20, piece = segment / 4;
        setup(segment);
        static char local[2][piece];
        const sluice_rank_t peer = me == exiter ? (exiter + 1) % nranks : exiter;
        void *remote = nullptr;
        std::size_t size = 0;
        TOK(sluice_segment_info(peer, &remote, &size));
        auto *at = static_cast<char *>(remote);
        if (me != exiter) {
            TOK(sluice_am_request_short(exiter, h_notice, nullptr, 0));
            // An error return is acceptable only while the job is ending.
            for (;;) {
                (void)sluice_get_nbi(local[0], peer, at, piece);
                (void)sluice_put_nbi(peer, at + piece, local[1], piece);
                for (int i = 0; i < 100; ++i) (void)sluice_poll();
            }
        }
        wait_for_notices(exiter);
        TOK(sluice_get_nbi(local[0], peer, at + 2 * piece, piece));
        TOK(sluice_put_nbi(peer, at + 3 * piece, local[1], piece));
        sluice_exit(exit_code);
    }
    if (which == "signal") {
        setup();
        std::string sig = argc > 3 ? argv[3] : "INT";
        if (me != exiter) wait_forever(Wait::barrier, exiter);
        wait_for_notices(exiter);
        die_by(sig);
    }
    if (which == "stopped") {
        setup();
        if (me == exiter) {
            // Stopped only once every other rank has left the barrier: a
            // rank stopped with its own barrier message still queued in
            // its (software) NIC would leave the others waiting in the
            // barrier, never sending to it, so never timing it out.
            const std::uint64_t others = ((nranks >= 64 ? 0 : std::uint64_t{1} << nranks) - 1) & ~(std::uint64_t{1} << me);
            WAIT_UNTIL((noticed_by.load() & others) == others);
            std::fflush(nullptr);
            ::raise(SIGSTOP);  // a hung peer: alive, but it never answers
            fail_at(__FILE__, __LINE__, "stopped", "rank %u was continued", me);
        }
        // Requests to the stopped rank are never acknowledged: the job must
        // end with an error naming it once SLUICE_UDP_PEER_TIMEOUT passes.
        for (;;) {
            (void)sluice_am_request_short(exiter, h_notice, nullptr, 0);
            for (int i = 0; i < 1000; ++i) (void)sluice_poll();
        }
    }
    if (which == "before-attach") {
        setup(0);  // handlers and a barrier, no segment
        if (me == exiter) sluice_exit(exit_code);
        sluice_status_t s = sluice_segment_attach(1 << 20);
        if (s == SLUICE_OK) fail_at(__FILE__, __LINE__, "attach", "a collective attach completed without a rank");
        for (;;) (void)sluice_poll();
    }
    if (which == "errors-fatal") {
        setup();
        if (me == exiter) {
            std::uint8_t b[8] = {};
            (void)sluice_put(nranks, b, b, sizeof b);  // rank out of range: fatal
            fail_at(__FILE__, __LINE__, "errors-fatal", "a failed call returned under SLUICE_ERRORS_FATAL=1");
        }
        wait_forever(Wait::poll, exiter);
    }
    if (which == "put-before-attach") {
        setup(0);
        if (me == exiter) {
            std::uint8_t b[8] = {};
            (void)sluice_put((me + 1) % nranks, b, b, sizeof b);
            fail_at(__FILE__, __LINE__, "put-before-attach", "a Put before attach returned under SLUICE_ERRORS_FATAL=1");
        }
        wait_forever(Wait::poll, exiter);
    }
    if (which == "unregistered" || which == "mismatched") {
        // Every rank but RANK registers h_late as a Short of 1 argument;
        // RANK has none, or one of 0 arguments.  The sender's own checks
        // pass, so RANK must refuse the message when it arrives and end the
        // job with an error naming the sender and the handler.
        if (nranks < 2) {
            std::fprintf(stderr, "sluice-exit-test: %s needs 2 ranks or more\n", which.c_str());
            sluice_exit(2);
        }
        setup();
        if (me != exiter) TOK(sluice_handler_register(h_late, on_notice, SLUICE_AM_SHORT, 1));
        else if (which == "mismatched") TOK(sluice_handler_register(h_late, on_notice, SLUICE_AM_SHORT, 0));
        TOK(sluice_barrier());
        if (me != exiter) {
            const std::uint32_t one = 1;
            TOK(sluice_am_request_short(exiter, h_late, &one, 1));
        }
        for (;;) (void)sluice_poll();
    }
    if (which == "ready") {
        setup();
        TOK(sluice_barrier());
        if (me == 0) {
            std::printf("READY\n");
            std::fflush(stdout);
        }
        for (;;) (void)sluice_poll();
    }
    std::fprintf(stderr, "sluice-exit-test: unknown case '%s'\n", which.c_str());
    usage();
    sluice_exit(2);
}
