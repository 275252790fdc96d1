// tests/perf/portals-section.hpp - the worker kind portals: one rank of a
// 2-rank job over the portals conduit (the driver sets
// SLUICE_NETWORK=portals and SLUICE_ROUTE=network), measuring Sluice beside
// bare Portals 4 between the same two processes (portals-reference.hpp), on
// the NI the conduit opened, in alternating chunks as the ibv kind does.
// Rank 0 measures; rank 1 serves Sluice from its poll loop and, when
// asked, the bare reference.  Over the reference implementation's UDP
// transport the figures say what the conduit adds to that library, not
// what Portals hardware does.
//
// Written against the Suite of sluice-bench.cpp (a template, like
// ibv-section.hpp): phase, ask, timed, nbi_count.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/portals-reference.hpp"
#include "tests/perf/reference-section.hpp"
#include "tests/perf/worker.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"

#include <sluice.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace sluice::perf {

// What rank 1 serves of the bare reference (after IbvServe's numbers).
enum PortalsServe : std::uint32_t {
    serve_portals_ping = 48,  // ping-pong of 8 B Puts, spinning on PtlEQGet
    serve_portals_ping_yield, // the same, waiting in PtlEQPoll
    serve_portals_rma,        // target of rank 0's Puts and Gets until it finishes
};

[[noreturn]] inline void portals_fail(const PortalsReference &p, const char *what) {
    std::fprintf(stderr, "sluice-bench worker rank %u: bare Portals %s failed: %s\n", sluice_rank(), what,
                 p.error().c_str());
    sluice_exit(3);
}

inline void portals_serve(PortalsReference &p, std::uint32_t what, std::uint32_t n) {
    const bool ok = what == serve_portals_rma
                        ? p.serve()
                        : p.pong(n, what == serve_portals_ping ? PortalsWait::spin : PortalsWait::yield);
    if (!ok)
        portals_fail(p, what == serve_portals_rma ? "RMA target" : "ping-pong answer");
}

// How the bare reference cuts a 4 MiB Put or Get: as the conduit does, in
// pieces of SLUICE_PORTALS_RMA_PIECE with at most SLUICE_PORTALS_MSG_LIMIT
// in flight, read from the conduit's knob table.  The piece's default,
// 880 B, is the reference implementation's inline limit: over its UDP
// transport a larger transfer moves wrong bytes, or never completes when
// its burst of datagrams overflows the receiver's socket buffer.
inline std::size_t portals_rma_piece() {
#ifdef SLUICE_CONDUIT_PORTALS
    const std::size_t piece = base::knob_size(conduit::knob(conduit::Knob::PORTALS_RMA_PIECE));
    return piece == 0 ? ~std::size_t{0} : piece;  // 0: whole
#else
    return ~std::size_t{0};
#endif
}
inline std::uint32_t portals_in_flight() {
#ifdef SLUICE_CONDUIT_PORTALS
    return static_cast<std::uint32_t>(
        std::min<std::int64_t>(base::knob_int(conduit::knob(conduit::Knob::PORTALS_MSG_LIMIT)), PortalsReference::largest_window));
#else
    return rma_window;
#endif
}

template <class Suite> class PortalsSection {
public:
    explicit PortalsSection(Suite &s) : s_(s), p_(s.portals) {}

    int run() {
        std::size_t peer_size = 0;
        if (!s_.start(peer_size))
            return 2;
        // Sluice's side moves bytes from and to this rank's segment, as the
        // bare reference moves them from and to its region.
        inside_ = section_segment(s_.me);
        open_reference();
        latency_phase();
        bandwidth_phase();
        // The reference's entries go before sluice_finalize closes the NI
        // they live on (the last phase ended at a barrier: nothing in flight).
        p_.close();
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }

private:
    Suite &s_;
    PortalsReference &p_;
    void *inside_ = nullptr;  // this rank's segment

    bool wanted(const char *what, std::size_t size = 0) const {
        return s_.options.wanted(std::string("portals_") + what, size);
    }
    void add(const char *what, std::size_t size, double ns) {
        s_.results.add(std::string("portals_") + what, size, ns);
    }

    // Both open the conduit's NI (the reference implementation hands this
    // process the one the conduit opened), exchange cards through the job.
    void open_reference() {
        reference_connect(s_, p_, p_.open(largest_rma, s_.me), [&](const char *what) { portals_fail(p_, what); });
    }

    // Over the reference implementation a round trip takes milliseconds
    // (the library's progress thread and the caller's share a CPU), on
    // Portals hardware microseconds: a chunk holds as many operations of
    // its slowest loop as fit in chunk_ns (scaled as the iteration counts
    // are), at least `least`, at most `most` (the ibv section's count).
    static constexpr double chunk_ns = 0.5e9;
    std::uint32_t fit(double ns_each, std::uint32_t least, std::uint32_t most) const {
        const Scale &scale = s_.options.scale;
        const double budget = chunk_ns * static_cast<double>(scale.multiplier) / static_cast<double>(scale.divisor);
        const double n = std::isfinite(ns_each) && ns_each > 0 ? budget / ns_each : most;
        return static_cast<std::uint32_t>(std::clamp<double>(n, least, std::max(least, most)));
    }

    // ns of the last n - lead round trips, all together (ping() gives
    // their mean).
    double ping_chunk(std::uint32_t n, std::uint32_t lead, PortalsWait wait) {
        s_.ask(wait == PortalsWait::spin ? serve_portals_ping : serve_portals_ping_yield, n);
        const double ns = p_.ping(n, lead, wait);
        if (std::isnan(ns))
            portals_fail(p_, "ping-pong");
        return ns * (n - lead);
    }
    double rma_chunk(PortalsRma op, std::size_t bytes, std::uint32_t warm, std::uint32_t n, std::uint32_t window) {
        const auto fail = [&](const char *) { portals_fail(p_, op == PortalsRma::put ? "PtlPut" : "PtlGet"); };
        return reference_rma_chunk(s_, p_, serve_portals_rma, op, bytes, warm, n, window, fail, portals_rma_piece());
    }

    // AM Short round trip beside the Put ping-pong (spinning on PtlEQGet
    // as sluice_poll does; and waiting in PtlEQPoll, information), 8 B
    // blocking Put and Get beside one PtlPut and its ACK or one PtlGet and
    // its REPLY: five chunks alternating all seven.
    void latency_phase() {
        if (!wanted("am_short_rtt") && !wanted("ptl_ping") && !wanted("ptl_poll") &&
            !wanted("put_lat", 8) && !wanted("get_lat", 8))
            return;
        s_.phase([&] {
            constexpr int chunks = 5;
            constexpr std::uint32_t probe = 5;
            const auto most = static_cast<std::uint32_t>(
                std::max<long>(rtt_iterations(0, s_.options.scale) / chunks, 200));
            const sluice_rank_t peer = s_.peer;
            void *remote = s_.peer_base;
            auto am = [&] { s_.am_short_round_trip(); };
            auto put8 = [&] { check(sluice_put(peer, remote, inside_, 8), "sluice_put"); };
            auto get8 = [&] { check(sluice_get(inside_, peer, remote, 8), "sluice_get"); };
            // A few of each: the warm-up of every path, and the chunk size.
            const double am_ns = Suite::timed(probe, am) / probe;
            const double put_ns = Suite::timed(probe, put8) / probe;
            const double get_ns = Suite::timed(probe, get8) / probe;
            const double ping_ns = ping_chunk(probe + 1, 1, PortalsWait::spin) / probe;
            (void)ping_chunk(probe + 1, 1, PortalsWait::yield);
            const std::uint32_t per = fit(std::max({am_ns, put_ns, get_ns, ping_ns}), 10, most);
            const std::uint32_t lead = std::max<std::uint32_t>(per / 10, 2);
            double r[7] = {};
            for (int c = 0; c < chunks; ++c) {
                r[0] += ping_chunk(per + lead, lead, PortalsWait::spin);
                r[1] += ping_chunk(per + lead, lead, PortalsWait::yield);
                r[2] += Suite::timed(per, am);
                r[3] += rma_chunk(PortalsRma::put, 8, lead, per, 1);
                r[4] += Suite::timed(per, put8);
                r[5] += rma_chunk(PortalsRma::get, 8, lead, per, 1);
                r[6] += Suite::timed(per, get8);
            }
            const double n = static_cast<double>(per) * chunks;
            add("ptl_ping_rtt", 0, r[0] / n);
            add("ptl_poll_rtt", 0, r[1] / n);
            add("am_short_rtt", 0, r[2] / n);
            add("ptl_put_lat", 8, r[3] / n);
            add("put_lat", 8, r[4] / n);
            add("ptl_get_lat", 8, r[5] / n);
            add("get_lat", 8, r[6] / n);
            add("chunk_ops", 0, per);
        });
    }

    // 4 MiB Put and Get: nbi (rma_window per sync) beside the bare
    // reference's pieces (portals_rma_piece, portals_in_flight): three
    // chunks alternating all four.
    void bandwidth_phase() {
        if (!wanted("put_bw", largest_rma) && !wanted("get_bw", largest_rma))
            return;
        s_.phase([&] {
            constexpr int chunks = 3;
            const auto most = static_cast<std::uint32_t>(
                std::max<long>(rma_iterations(largest_rma, s_.options.scale) / chunks, 4));
            const sluice_rank_t peer = s_.peer;
            void *remote = s_.peer_base;
            auto put_nbi = [&] { check(sluice_put_nbi(peer, remote, inside_, largest_rma), "sluice_put_nbi"); };
            auto get_nbi = [&] { check(sluice_get_nbi(inside_, peer, remote, largest_rma), "sluice_get_nbi"); };
            const std::uint32_t in_flight = portals_in_flight();
            // One of each: the warm-up, and the chunk size.
            const double probe[4] = {
                rma_chunk(PortalsRma::put, largest_rma, 0, 1, in_flight), s_.nbi_count(1, put_nbi),
                rma_chunk(PortalsRma::get, largest_rma, 0, 1, in_flight), s_.nbi_count(1, get_nbi)};
            const std::uint32_t per = fit(*std::max_element(probe, probe + 4), 1, most);
            double r[4] = {};
            for (int c = 0; c < chunks; ++c) {
                r[0] += rma_chunk(PortalsRma::put, largest_rma, 0, per, in_flight);
                r[1] += s_.nbi_count(per, put_nbi);
                r[2] += rma_chunk(PortalsRma::get, largest_rma, 0, per, in_flight);
                r[3] += s_.nbi_count(per, get_nbi);
            }
            const double n = static_cast<double>(per) * chunks;
            add("ptl_put_bw", largest_rma, r[0] / n);
            add("put_bw", largest_rma, r[1] / n);
            add("ptl_get_bw", largest_rma, r[2] / n);
            add("get_bw", largest_rma, r[3] / n);
        });
    }
};

} // namespace sluice::perf
