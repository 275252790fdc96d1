// tests/perf/gni-section.hpp - the worker kind gni: one rank of a 2-rank
// job over the gni conduit (the driver sets SLUICE_NETWORK=gni and
// SLUICE_ROUTE=network, and runs the job under the software NIC's
// softnic-run when the conduit does not probe where it runs), measuring
// Sluice beside bare uGNI on the same NIC between the same two processes
// (gni-reference.hpp), in alternating chunks as the ibv kind does.  Rank
// 0 measures; rank 1 serves Sluice from its poll loop and, when asked, the
// bare reference.  On the software NIC the figures say what the conduit
// adds to uGNI, not what an Aries does.
//
// Written against the Suite of sluice-bench.cpp (a template, like
// ibv-section.hpp): phase, ask, timed, nbi_count.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/gni-reference.hpp"
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

// What rank 1 serves of the bare reference (after PortalsServe's numbers).
enum GniServe : std::uint32_t {
    serve_gni_ping = 64,  // SMSG ping-pong
    serve_gni_rma,        // target of rank 0's FMA and BTE transfers until it finishes
};

[[noreturn]] inline void gni_fail(const GniReference &g, const char *what) {
    std::fprintf(stderr, "sluice-bench worker rank %u: bare uGNI %s failed: %s\n", sluice_rank(), what,
                 g.error().c_str());
    sluice_exit(3);
}

inline void gni_serve(GniReference &g, std::uint32_t what, std::uint32_t n) {
    if (!(what == serve_gni_rma ? g.serve() : g.pong(n)))
        gni_fail(g, what == serve_gni_rma ? "transfer target" : "ping-pong answer");
}

// The library the conduit opens (SLUICE_GNI_LIBRARY; empty: libugni.so.0),
// so that the reference runs on the same one.
inline std::string gni_library() {
#ifdef SLUICE_CONDUIT_GNI
    return base::knob_string(conduit::knob(conduit::Knob::GNI_LIBRARY));
#else
    return "";
#endif
}

template <class Suite> class GniSection {
public:
    explicit GniSection(Suite &s) : s_(s), g_(s.gni) {}

    int run() {
        std::size_t peer_size = 0;
        if (!s_.start(peer_size))
            return 2;
        // Sluice's side moves bytes from and to this rank's segment, which
        // the conduit registered whole, as the bare reference's region is;
        // from memory outside it the conduit registers each transfer's
        // buffer for that transfer (its own row).
        inside_ = section_segment(s_.me);
        open_reference();
        latency_phase();
        bandwidth_phase();
        // The last phase ended at a barrier: nothing of the reference's is
        // in flight.
        g_.close();
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }

private:
    Suite &s_;
    GniReference &g_;
    void *inside_ = nullptr;  // this rank's segment

    bool wanted(const char *what, std::size_t size = 0) const {
        return s_.options.wanted(std::string("gni_") + what, size);
    }
    void add(const char *what, std::size_t size, double ns) {
        s_.results.add(std::string("gni_") + what, size, ns);
    }

    // Both attach a domain of their own (instance id inst_base + rank) to
    // the job's NIC, exchange cards through the job, bind and set up SMSG.
    void open_reference() {
        const bool opened = g_.open(gni_library(), GniReference::inst_base + s_.me, largest_rma);
        reference_connect(s_, g_, opened, [&](const char *what) { gni_fail(g_, what); });
    }

    // ns of the last n - lead round trips, all together (ping() gives
    // their mean).
    double ping_chunk(std::uint32_t n, std::uint32_t lead) {
        s_.ask(serve_gni_ping, n);
        const double ns = g_.ping(n, lead);
        if (std::isnan(ns))
            gni_fail(g_, "SMSG ping-pong");
        return ns * (n - lead);
    }
    double rma_chunk(GniRma op, std::size_t bytes, std::uint32_t warm, std::uint32_t n, std::uint32_t window) {
        return reference_rma_chunk(s_, g_, serve_gni_rma, op, bytes, warm, n, window, [&](const char *) {
            gni_fail(g_, op == GniRma::fma_put   ? "FMA put"
                         : op == GniRma::fma_get ? "FMA get"
                         : op == GniRma::bte_put ? "BTE put"
                                                 : "BTE get");
        });
    }

    // AM Short round trip beside the SMSG ping-pong, 8 B blocking Put and
    // Get beside one FMA put or get and its local completion
    // (latency_beside).
    void latency_phase() {
        if (!wanted("am_short_rtt") && !wanted("smsg_rtt") && !wanted("put_lat", 8) && !wanted("get_lat", 8))
            return;
        s_.phase([&] {
            const LatencyBeside f = latency_beside(
                s_, inside_, [&](std::uint32_t n, std::uint32_t lead) { return ping_chunk(n, lead); },
                [&](std::uint32_t warm, std::uint32_t n) { return rma_chunk(GniRma::fma_put, 8, warm, n, 1); },
                [&](std::uint32_t warm, std::uint32_t n) { return rma_chunk(GniRma::fma_get, 8, warm, n, 1); });
            add("smsg_rtt", 0, f.bare_rtt);
            add("am_short_rtt", 0, f.am_rtt);
            add("fma_put_lat", 8, f.bare_put);
            add("put_lat", 8, f.put);
            add("fma_get_lat", 8, f.bare_get);
            add("get_lat", 8, f.get);
            add("chunk_ops", 0, f.per);
        });
    }

    // 4 MiB Put and Get beside BTE transfers, and the Put from a buffer
    // outside the segment (registered by the conduit for each transfer):
    // bandwidth_beside.
    void bandwidth_phase() {
        if (!wanted("put_bw", largest_rma) && !wanted("get_bw", largest_rma) &&
            !wanted("put_outside_bw", largest_rma))
            return;
        s_.phase([&] {
            const BandwidthBeside b = bandwidth_beside(s_, inside_, [&](bool write, std::uint32_t warm, std::uint32_t n,
                                                                        std::uint32_t window) {
                return rma_chunk(write ? GniRma::bte_put : GniRma::bte_get, largest_rma, warm, n, window);
            });
            add("bte_put_bw", largest_rma, b.bare_write);
            add("put_bw", largest_rma, b.put);
            add("bte_get_bw", largest_rma, b.bare_read);
            add("get_bw", largest_rma, b.get);
            add("put_outside_bw", largest_rma, b.put_outside);
        });
    }
};

} // namespace sluice::perf
