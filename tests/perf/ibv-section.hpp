// tests/perf/ibv-section.hpp - the worker kind ibv: one rank of a 2-rank job
// over the ibv conduit (the driver sets SLUICE_NETWORK=ibv and
// SLUICE_ROUTE=network), measuring Sluice beside bare verbs on the same
// device between the same two processes (verbs-reference.hpp), in
// alternating chunks as the ofi kind does.  Rank 0 measures; rank 1 serves
// Sluice from its poll loop and, when asked, the bare reference.  On the
// software NIC the figures say what the conduit adds to verbs, not what
// InfiniBand does.
//
// Written against the Suite of sluice-bench.cpp (a template, like
// ofi-section.hpp): phase, ask, timed, nbi_count.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/reference-section.hpp"
#include "tests/perf/verbs-reference.hpp"
#include "tests/perf/worker.hpp"

#include <sluice.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace sluice::perf {

// What rank 1 serves of the bare reference (after OfiServe's numbers).
enum IbvServe : std::uint32_t {
    serve_verbs_send = 32, // ping-pong of inline sends
    serve_verbs_rma,       // target of rank 0's RDMA until it finishes
};

[[noreturn]] inline void verbs_fail(const VerbsReference &v, const char *what) {
    std::fprintf(stderr, "sluice-bench worker rank %u: bare verbs %s failed: %s\n", sluice_rank(), what,
                 v.error().c_str());
    sluice_exit(3);
}

inline void verbs_serve(VerbsReference &v, std::uint32_t what, std::uint32_t n) {
    if (!(what == serve_verbs_rma ? v.serve() : v.pong(n)))
        verbs_fail(v, what == serve_verbs_rma ? "RMA target" : "ping-pong answer");
}

template <class Suite> class IbvSection {
public:
    explicit IbvSection(Suite &s) : s_(s), v_(s.verbs) {}

    int run() {
        std::size_t peer_size = 0;
        if (!s_.start(peer_size))
            return 2;
        // Sluice's side moves bytes from and to this rank's segment, which
        // is registered, as the bare reference's region is; from memory
        // outside it a Put goes through firehose (its own row).
        inside_ = section_segment(s_.me);
        open_reference();
        latency_phase();
        bandwidth_phase();
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }

private:
    Suite &s_;
    VerbsReference &v_;
    void *inside_ = nullptr;  // this rank's segment

    bool wanted(const char *what, std::size_t size = 0) const {
        return s_.options.wanted(std::string("ibv_") + what, size);
    }
    void add(const char *what, std::size_t size, double ns) {
        s_.results.add(std::string("ibv_") + what, size, ns);
    }

    // Both open the first device's port 1 (the port the conduit takes when
    // SLUICE_IBV_PORTS is unset), exchange cards through the job, connect.
    void open_reference() {
        reference_connect(s_, v_, v_.open("", largest_rma), [&](const char *what) { verbs_fail(v_, what); });
    }

    // ns of the last n - lead round trips, all together (ping() gives
    // their mean).
    double ping_chunk(std::uint32_t n, std::uint32_t lead) {
        s_.ask(serve_verbs_send, n);
        const double ns = v_.ping(n, lead);
        if (std::isnan(ns))
            verbs_fail(v_, "ping-pong");
        return ns * (n - lead);
    }
    double rma_chunk(VerbsRma op, std::size_t bytes, std::uint32_t warm, std::uint32_t n, std::uint32_t window) {
        return reference_rma_chunk(s_, v_, serve_verbs_rma, op, bytes, warm, n, window, [&](const char *) {
            verbs_fail(v_, op == VerbsRma::write ? "RDMA write" : "RDMA read");
        });
    }

    // AM Short round trip beside the send ping-pong, 8 B blocking Put and
    // Get beside one RDMA write or read and its completion: five chunks
    // alternating all six.
    void latency_phase() {
        if (!wanted("am_short_rtt") && !wanted("put_lat", 8) && !wanted("get_lat", 8))
            return;
        s_.phase([&] {
            const long iters = rtt_iterations(0, s_.options.scale);
            constexpr int chunks = 5;
            const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, 200));
            const std::uint32_t lead = per / 10;
            const sluice_rank_t peer = s_.peer;
            void *remote = s_.peer_base;
            auto am = [&] { s_.am_short_round_trip(); };
            auto put8 = [&] { check(sluice_put(peer, remote, inside_, 8), "sluice_put"); };
            auto get8 = [&] { check(sluice_get(inside_, peer, remote, 8), "sluice_get"); };
            (void)Suite::timed(per, am);
            (void)Suite::timed(lead, put8);
            (void)Suite::timed(lead, get8);
            (void)ping_chunk(per, lead);
            double r[6] = {};
            for (int c = 0; c < chunks; ++c) {
                r[0] += ping_chunk(per + lead, lead);
                r[1] += Suite::timed(per, am);
                r[2] += rma_chunk(VerbsRma::write, 8, lead, per, 1);
                r[3] += Suite::timed(per, put8);
                r[4] += rma_chunk(VerbsRma::read, 8, lead, per, 1);
                r[5] += Suite::timed(per, get8);
            }
            const double n = static_cast<double>(per) * chunks;
            add("verbs_send_rtt", 0, r[0] / n);
            add("am_short_rtt", 0, r[1] / n);
            add("verbs_write_lat", 8, r[2] / n);
            add("put_lat", 8, r[3] / n);
            add("verbs_read_lat", 8, r[4] / n);
            add("get_lat", 8, r[5] / n);
        });
    }

    // 4 MiB Put and Get beside RDMA writes and reads, and the Put from
    // outside the segment (firehose's victim pool, warm): bandwidth_beside.
    void bandwidth_phase() {
        if (!wanted("put_bw", largest_rma) && !wanted("get_bw", largest_rma) &&
            !wanted("put_outside_bw", largest_rma))
            return;
        s_.phase([&] {
            const BandwidthBeside b = bandwidth_beside(s_, inside_, [&](bool write, std::uint32_t warm, std::uint32_t n,
                                                                        std::uint32_t window) {
                return rma_chunk(write ? VerbsRma::write : VerbsRma::read, largest_rma, warm, n, window);
            });
            add("verbs_write_bw", largest_rma, b.bare_write);
            add("put_bw", largest_rma, b.put);
            add("verbs_read_bw", largest_rma, b.bare_read);
            add("get_bw", largest_rma, b.get);
            add("put_outside_bw", largest_rma, b.put_outside);
        });
    }
};

} // namespace sluice::perf
