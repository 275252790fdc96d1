// src/conduits/lapi/tests/progress_check.cpp - sluice-lapi-progress-check
// SPIN_MS OPS interrupt|polling: what LAPI's two modes mean for a rank
// that computes (run by lapi-softnic.sh, two ranks, every peer over lapi).
//
// After a barrier rank 1 computes for SPIN_MS without calling Sluice while
// rank 0 makes OPS blocking Gets and Puts of 64 bytes in rank 1's segment.
// `interrupt` (SLUICE_LAPI_MODE=INTERRUPT): LAPI's notification thread at
// rank 1 serves them (a Get's reply, a Put's acknowledgement) while rank 1
// computes, so they end before rank 1 stops computing; `polling`: the
// first cannot end before rank 1 calls Sluice again, so they end after it.
// The two ranks share a host and its monotonic clock: rank 1 leaves the
// time it stopped in its segment and rank 0 reads it after the barrier,
// which no load on the host can blur (a threshold on rank 0's time alone
// could).  The Gets must read what rank 1 wrote before the barrier, and
// rank 1 must find every Put's bytes after the second barrier.
//
// A failed check prints one FAIL line and ends the job with code 1; rank 0
// prints "PASS progress MODE" when every check passed.
#include "tests/rank_util.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace sluice_test;

namespace {

constexpr std::size_t piece = 64;

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}


std::uint8_t pattern(unsigned op, std::size_t i) { return static_cast<std::uint8_t>(op * 31 + i * 7 + 1); }

} // namespace

int main(int argc, char **argv) {
    record_pid();
    g_case = "progress";
    if (argc < 4) {
        std::fprintf(stderr, "usage: sluicerun -n 2 sluice-lapi-progress-check SPIN_MS OPS interrupt|polling\n");
        return 2;
    }
    const double spin = std::atof(argv[1]) / 1000.0;
    const unsigned ops = static_cast<unsigned>(std::atoi(argv[2]));
    const std::string mode = argv[3];
    TOK(sluice_init(&argc, &argv));
    const sluice_rank_t me = sluice_rank();
    TCHECK(sluice_size() == 2, "run on 2 ranks, not %u", sluice_size());
    TCHECK(mode == "interrupt" || mode == "polling", "mode interrupt or polling, not %s", mode.c_str());
    const std::size_t bytes = 2 * piece * ops;  // Gets read the first half, Puts write the second
    TOK(sluice_segment_attach(bytes + sizeof(std::int64_t)));  // then when rank 1 stopped computing
    void *base = nullptr;
    std::size_t size = 0;
    TOK(sluice_segment_info(1, &base, &size));
    auto *remote = static_cast<std::uint8_t *>(base);
    if (me == 1)
        for (unsigned op = 0; op < ops; ++op)
            for (std::size_t i = 0; i < piece; ++i) remote[op * piece + i] = pattern(op, i);
    TOK(sluice_barrier());
    const auto start = std::chrono::steady_clock::now();
    std::int64_t done = 0;  // rank 0: when its Gets and Puts ended
    if (me == 1) {
        volatile std::uint64_t sink = 0;  // computing: no Sluice call at all
        while (seconds_since(start) < spin) sink = sink + 1;
        const std::int64_t stopped = monotonic_ns();
        std::memcpy(remote + bytes, &stopped, sizeof stopped);
    } else {
        std::uint8_t buffer[piece];
        for (unsigned op = 0; op < ops; ++op) {
            TOK(sluice_get(buffer, 1, remote + op * piece, piece));
            for (std::size_t i = 0; i < piece; ++i)
                TCHECK(buffer[i] == pattern(op, i), "Get %u: byte %zu is %u, not %u", op, i, buffer[i], pattern(op, i));
            for (std::size_t i = 0; i < piece; ++i) buffer[i] = static_cast<std::uint8_t>(~pattern(op, i));
            TOK(sluice_put(1, remote + (ops + op) * piece, buffer, piece));
        }
        done = monotonic_ns();
        std::printf("rank 0: %u Gets and %u Puts in %.3f s while rank 1 computed for %.3f s (%s mode)\n", ops, ops,
                    seconds_since(start), spin, mode.c_str());
    }
    TOK(sluice_barrier());
    if (me == 0) {
        std::int64_t stopped = 0;
        TOK(sluice_get(&stopped, 1, remote + bytes, sizeof stopped));
        const double before = static_cast<double>(stopped - done) / 1e9;  // > 0: ended while rank 1 computed
        std::printf("rank 0: they ended %.3f s %s rank 1 stopped computing\n", before < 0 ? -before : before,
                    before < 0 ? "after" : "before");
        if (mode == "interrupt")
            TCHECK(before > 0, "%u Gets and Puts ended %.3f s after rank 1 stopped computing: LAPI did not serve them "
                   "while it computed", ops, -before);
        else
            TCHECK(before < 0, "%u Gets and Puts ended %.3f s before rank 1 stopped computing: rank 1 served them "
                   "without polling", ops, before);
    }
    TOK(sluice_barrier());
    if (me == 1)
        for (unsigned op = 0; op < ops; ++op)
            for (std::size_t i = 0; i < piece; ++i)
                TCHECK(remote[(ops + op) * piece + i] == static_cast<std::uint8_t>(~pattern(op, i)),
                       "Put %u: byte %zu is wrong", op, i);
    TOK(sluice_barrier());
    if (me == 0) std::printf("PASS progress %s\n", mode.c_str());
    TOK(sluice_finalize());
    return 0;
}
