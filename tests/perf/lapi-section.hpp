// tests/perf/lapi-section.hpp - the worker kind lapi: one rank of a 2-rank
// job over the lapi conduit (the driver sets SLUICE_NETWORK=lapi,
// SLUICE_ROUTE=network and SLUICE_LAPI_MODE, one job per mode, and runs
// the job under the software LAPI's softnic-run when the conduit does not
// probe where it runs), measuring Sluice beside bare LAPI in the same mode
// between the same two processes (lapi-reference.hpp), in alternating
// chunks as the gni kind does.  Rank 0 measures; rank 1 serves Sluice
// from its poll loop and, when asked, the bare reference.  On the software
// LAPI the figures say what the conduit adds to LAPI, not what an SP
// switch does.  The rows are named lapi_interrupt_* or lapi_polling_*.
//
// Written against the Suite of sluice-bench.cpp (a template, like
// gni-section.hpp): phase, ask, timed.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/lapi-reference.hpp"
#include "tests/perf/reference-section.hpp"
#include "tests/perf/worker.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"

#include <sluice.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace sluice::perf {

// What rank 1 serves of the bare reference (after GniServe's numbers).
enum LapiServe : std::uint32_t {
    serve_lapi_ping = 80,  // Amsend ping-pong
    serve_lapi_rma,        // target of rank 0's puts and gets until it finishes
};

[[noreturn]] inline void lapi_fail(const LapiReference &l, const char *what) {
    std::fprintf(stderr, "sluice-bench worker rank %u: bare LAPI %s failed: %s\n", sluice_rank(), what,
                 l.error().c_str());
    sluice_exit(3);
}

inline void lapi_serve(LapiReference &l, std::uint32_t what, std::uint32_t n) {
    if (!(what == serve_lapi_rma ? l.serve() : l.pong(n)))
        lapi_fail(l, what == serve_lapi_rma ? "transfer target" : "ping-pong answer");
}

// The library the conduit opens (SLUICE_LAPI_LIBRARY; empty: liblapi.so.1)
// and its mode (SLUICE_LAPI_MODE), so that the reference runs on the same.
inline std::string lapi_library() {
#ifdef SLUICE_CONDUIT_LAPI
    return base::knob_string(conduit::knob(conduit::Knob::LAPI_LIBRARY));
#else
    return "";
#endif
}
inline bool lapi_polling() {
#ifdef SLUICE_CONDUIT_LAPI
    return base::knob_string(conduit::knob(conduit::Knob::LAPI_MODE)) == "POLLING";
#else
    return false;
#endif
}

template <class Suite> class LapiSection {
public:
    explicit LapiSection(Suite &s) : s_(s), l_(s.lapi), prefix_(lapi_polling() ? "lapi_polling_" : "lapi_interrupt_") {}

    int run() {
        std::size_t peer_size = 0;
        if (!s_.start(peer_size))
            return 2;
        // Sluice's side moves bytes from and to this rank's segment, as
        // the bare reference does from and to its region (LAPI needs no
        // registration for either).
        inside_ = section_segment(s_.me);
        const bool opened = l_.open(lapi_library(), lapi_polling(), largest_rma);
        reference_connect(s_, l_, opened, [&](const char *what) { lapi_fail(l_, what); });
        latency_phase();
        // The phase ended at a barrier: nothing of the reference's is in
        // flight.  The handle is the conduit's: close() leaves it open.
        l_.close();
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }

private:
    Suite &s_;
    LapiReference &l_;
    const std::string prefix_;
    void *inside_ = nullptr;  // this rank's segment

    bool wanted(const char *what, std::size_t size = 0) const { return s_.options.wanted(prefix_ + what, size); }
    void add(const char *what, std::size_t size, double ns) { s_.results.add(prefix_ + what, size, ns); }

    // ns of the last n - lead round trips, all together (ping() gives
    // their mean).
    double ping_chunk(std::uint32_t n, std::uint32_t lead) {
        s_.ask(serve_lapi_ping, n);
        const double ns = l_.ping(n, lead);
        if (std::isnan(ns))
            lapi_fail(l_, "Amsend ping-pong");
        return ns * (n - lead);
    }
    double rma_chunk(LapiRma op, std::size_t bytes, std::uint32_t warm, std::uint32_t n) {
        return reference_rma_chunk(s_, l_, serve_lapi_rma, op, bytes, warm, n, 1, [&](const char *) {
            lapi_fail(l_, op == LapiRma::put ? "LAPI_Put" : "LAPI_Get");
        });
    }

    // AM Short round trip beside the Amsend ping-pong, 8 B blocking Put
    // and Get beside one LAPI_Put or LAPI_Get and the wait for its
    // counter (latency_beside).
    void latency_phase() {
        if (!wanted("am_short_rtt") && !wanted("amsend_rtt") && !wanted("put_lat", 8) && !wanted("get_lat", 8))
            return;
        s_.phase([&] {
            const LatencyBeside f = latency_beside(
                s_, inside_, [&](std::uint32_t n, std::uint32_t lead) { return ping_chunk(n, lead); },
                [&](std::uint32_t warm, std::uint32_t n) { return rma_chunk(LapiRma::put, 8, warm, n); },
                [&](std::uint32_t warm, std::uint32_t n) { return rma_chunk(LapiRma::get, 8, warm, n); });
            add("amsend_rtt", 0, f.bare_rtt);
            add("am_short_rtt", 0, f.am_rtt);
            add("bare_put_lat", 8, f.bare_put);
            add("put_lat", 8, f.put);
            add("bare_get_lat", 8, f.bare_get);
            add("get_lat", 8, f.get);
            add("chunk_ops", 0, f.per);
        });
    }
};

} // namespace sluice::perf
