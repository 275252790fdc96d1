// tests/rcv_thread_check.cpp - sluice-rcv-thread-check CASE [args]: the
// receive thread of the network conduits that have one (SLUICE_RCV_THREAD:
// ofi, ibv), run by their tests (ofi-rcv-thread.sh, ibv-softnic.sh).
//
//   rcv-thread SPIN_MS TRIPS [thread|none]
//       two ranks over the network conduit (SLUICE_ROUTE=network).  After a barrier rank 1
//       computes for SPIN_MS without calling Sluice while rank 0 makes TRIPS
//       Short round trips to it; then rank 1 tells rank 0 when it stopped
//       (CLOCK_MONOTONIC, one clock for every process of the machine).
//       `thread` (run with SLUICE_RCV_THREAD=1): rank 1's receive thread
//       answers, so the last pong arrives before rank 1 stopped; `none` (no
//       receive thread): nothing answers until rank 1 polls again (but a
//       ping that reached it still in the barrier), so the last pong
//       arrives after it stopped (the check above would fail without the
//       thread).  Both judge order, not speed: a loaded machine that slows
//       the receive thread does not fail them.
//
// A failed check prints one FAIL line and ends the job with code 1; rank 0
// prints "PASS CASE ..." when every check passed.
#include "tests/rank_util.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace sluice_test;

namespace {

sluice_rank_t me = 0;
enum : sluice_handler_t { h_ping = 40, h_pong, h_stopped };
std::atomic<unsigned> pongs{0};
std::atomic<std::int64_t> first_pong_ns{0}, last_pong_ns{0}, stopped_ns{0};

void on_ping(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    std::uint32_t arg = args[0];
    TOK(sluice_am_reply_short(token, h_pong, &arg, 1));
}
void on_pong(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) {
    const std::int64_t t = monotonic_ns();
    if (pongs.fetch_add(1) == 0) first_pong_ns.store(t);
    last_pong_ns.store(t);
}
// Rank 1's time when it stopped computing, in two words.
void on_stopped(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
    stopped_ns.store(static_cast<std::int64_t>((std::uint64_t{args[0]} << 32) | args[1]));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int case_rcv_thread(int argc, char **argv) {
    const double spin = (argc > 2 ? std::atof(argv[2]) : 2000) / 1000.0;
    const unsigned trips = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 100;
    const std::string expect = argc > 4 ? argv[4] : "thread";
    TCHECK(sluice_size() == 2, "run on 2 ranks, not %u", sluice_size());
    TCHECK(expect == "thread" || expect == "none", "expect thread or none, not %s", expect.c_str());
    TOK(sluice_handler_register(h_ping, on_ping, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_pong, on_pong, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_stopped, on_stopped, SLUICE_AM_SHORT, 2));
    TOK(sluice_barrier());
    const auto start = std::chrono::steady_clock::now();
    if (me == 1) {
        // Computing: no Sluice call at all.
        volatile std::uint64_t sink = 0;
        while (seconds_since(start) < spin) sink = sink + 1;
        const auto stopped = static_cast<std::uint64_t>(monotonic_ns());
        const std::uint32_t words[2] = {static_cast<std::uint32_t>(stopped >> 32), static_cast<std::uint32_t>(stopped)};
        TOK(sluice_am_request_short(0, h_stopped, words, 2));
    } else {
        for (unsigned i = 0; i < trips; ++i) {
            TOK(sluice_am_request_short(1, h_ping, &i, 1));
            // A wait: under SLUICE_WAIT=block rank 0 sleeps here and leaves
            // the CPUs to rank 1 and its receive thread.
            while (pongs.load() <= i) TOK(sluice_poll_wait());
        }
        const double took = seconds_since(start);
        while (stopped_ns.load() == 0) TOK(sluice_poll_wait());
        const double last = static_cast<double>(last_pong_ns.load() - stopped_ns.load()) / 1e9;
        const double first = static_cast<double>(first_pong_ns.load() - stopped_ns.load()) / 1e9;
        std::printf("rank 0: %u round trips in %.3f s while rank 1 computed for %.3f s (%s); first pong %+.3f s, "
                    "last %+.3f s from its stop\n",
                    trips, took, spin, expect.c_str(), first, last);
        if (expect == "thread")
            TCHECK(last < 0, "the last of %u round trips ended %.3f s after rank 1 stopped computing: its receive "
                   "thread did not answer while it computed", trips, last);
        else
            TCHECK(last > 0, "all %u round trips ended before rank 1 stopped computing, without a receive thread",
                   trips);
    }
    TOK(sluice_barrier());
    if (me == 0) std::printf("PASS rcv-thread %s\n", expect.c_str());
    TOK(sluice_finalize());
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    record_pid();
    if (argc < 2 || std::strcmp(argv[1], "rcv-thread") != 0) {
        std::fprintf(stderr, "usage: sluicerun -n 2 sluice-rcv-thread-check rcv-thread [SPIN_MS] [TRIPS] [thread|none]\n");
        return 2;
    }
    g_case = argv[1];
    TOK(sluice_init(&argc, &argv));
    me = sluice_rank();
    return case_rcv_thread(argc, argv);
}
