// tests/perf/exactly_once.cpp - the worker `exactly-once` (worker.hpp): every
// AM delivered once, none lost, none repeated, counted over --count AM Short
// requests in each direction at once.  The driver runs it over udp
// (SLUICE_ROUTE=network); udp-loss.sh runs it under 5 % datagram loss.
#include "tests/perf/sockets.hpp"
#include "tests/perf/worker.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace sluice::perf {
namespace {

constexpr sluice_handler_t h_numbered = 150;
constexpr double stall_ns = 30e9;  // no new message this long: the rest is lost
constexpr double linger_ns = 0.2e9; // polls on after the last one, for late repeats

// Written by the handler only (on the polling thread); the atomics let the
// main loop read the count while a progress thread runs handlers.
struct Received {
    std::vector<std::uint8_t> seen;
    std::atomic<std::uint64_t> distinct{0};
    std::atomic<std::uint64_t> repeated{0};
    std::atomic<std::uint64_t> outside{0}; // numbers never sent
};
Received received;

void bump(std::atomic<std::uint64_t> &c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
void on_numbered(sluice_token_t, void *, size_t, const uint32_t *args, unsigned) {
    const std::uint32_t n = args[0];
    if (n >= received.seen.size())
        bump(received.outside);
    else if (received.seen[n])
        bump(received.repeated);
    else {
        received.seen[n] = 1;
        bump(received.distinct);
    }
}

void poll_for(double ns) {
    const double end = now_ns() + ns;
    while (now_ns() < end)
        check(sluice_poll(), "sluice_poll");
}

} // namespace

int udp_transport_sockets(const CommonOptions &o) {
    const int sockets = udp_sockets_open();
    if (sockets == 0 && !o.any_transport) {
        std::fprintf(stderr,
                     "sluice-bench worker rank %u: no UDP socket open after sluice_init: "
                     "this job does not run over udp (is the udp conduit built in, and "
                     "SLUICE_ROUTE=network set?)\n",
                     sluice_rank());
        sluice_exit(3);
    }
    return sockets;
}

int exactly_once_main(const CommonOptions &o) {
    const sluice_rank_t me = sluice_rank();
    if (sluice_size() != 2) {
        if (me == 0)
            std::fprintf(stderr, "sluice-bench: exactly-once needs 2 ranks, got %u\n",
                         sluice_size());
        return 2;
    }
    const sluice_rank_t peer = 1 - me;
    const long count = o.count > 0 ? o.count : 1000000 / o.scale.divisor;
    (void)udp_transport_sockets(o);
    check(sluice_handler_register(h_numbered, on_numbered, SLUICE_AM_SHORT, 1),
          "sluice_handler_register");
    received.seen.assign(static_cast<std::size_t>(count), 0);
    check(sluice_barrier(), "sluice_barrier");

    const double t0 = now_ns();
    for (long i = 0; i < count; ++i) {
        const auto n = static_cast<std::uint32_t>(i);
        check(sluice_am_request_short(peer, h_numbered, &n, 1), "sluice_am_request_short");
        if ((i & 255) == 255) // keep taking the peer's messages while sending
            check(sluice_poll(), "sluice_poll");
    }
    const auto expected = static_cast<std::uint64_t>(count);
    std::uint64_t seen = received.distinct.load(std::memory_order_relaxed);
    double progress = now_ns();
    while (seen < expected) {
        check(sluice_poll(), "sluice_poll");
        const std::uint64_t now_seen = received.distinct.load(std::memory_order_relaxed);
        if (now_seen != seen) {
            seen = now_seen;
            progress = now_ns();
        } else if (now_ns() - progress > stall_ns) {
            std::fprintf(stderr,
                         "sluice-bench worker rank %u: no new message for %.0f s; %llu of "
                         "%ld arrived\n",
                         me, stall_ns / 1e9, static_cast<unsigned long long>(seen), count);
            break;
        }
    }
    const double seconds = (now_ns() - t0) / 1e9;
    poll_for(linger_ns);
    check(sluice_barrier(), "sluice_barrier");
    poll_for(linger_ns);

    struct Counts {
        double distinct, repeated, outside, seconds;
    } mine{static_cast<double>(received.distinct.load()),
           static_cast<double>(received.repeated.load()),
           static_cast<double>(received.outside.load()), seconds},
        all[2];
    check(sluice_allgather(&mine, all, sizeof mine), "sluice_allgather");
    if (me == 0) {
        double lost = 0, repeated = 0, slowest = 0;
        for (const Counts &c : all) {
            lost += static_cast<double>(count) - c.distinct;
            repeated += c.repeated + c.outside;
            slowest = std::max(slowest, c.seconds);
        }
        std::fprintf(stderr,
                     "exactly-once: %ld AM Short each way; rank 0 got %.0f (%.0f repeated, "
                     "%.0f never sent), rank 1 got %.0f (%.0f repeated, %.0f never sent); "
                     "%.2f s\n",
                     count, all[0].distinct, all[0].repeated, all[0].outside, all[1].distinct,
                     all[1].repeated, all[1].outside, slowest);
        ResultFile results(o.out);
        results.add("udp_once_count", 0, 2.0 * static_cast<double>(count));
        results.add("udp_once_lost", 0, lost);
        results.add("udp_once_repeated", 0, repeated);
        results.add("udp_once_ns", 0, slowest * 1e9 / (2.0 * static_cast<double>(count)));
    }
    check(sluice_finalize(), "sluice_finalize");
    return 0;
}

} // namespace sluice::perf
