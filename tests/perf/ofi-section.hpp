// tests/perf/ofi-section.hpp - the worker kind ofi: one rank of a 2-rank job
// over the ofi conduit (the driver sets SLUICE_NETWORK=ofi,
// SLUICE_OFI_PROVIDER and SLUICE_ROUTE=network), measuring Sluice beside
// the bare libfabric reference of the same provider between the same two
// processes (ofi-reference.hpp), in alternating chunks as the udp kind
// alternates with its bare UDP ping-pong.  Rank 0 measures; rank 1 serves
// Sluice from its poll loop and, when asked, the bare reference.
//
// Written against the Suite of sluice-bench.cpp (a template, so the Suite's
// helpers stay where they are): phase, ask, request, timed, nbi_count.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/ofi-reference.hpp"
#include "tests/perf/reference-section.hpp"
#include "tests/perf/worker.hpp"

#include <sluice.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/mman.h>
#include <vector>

namespace sluice::perf {

// What rank 1 serves of the bare reference when rank 0 asks (the Suite's
// serve() hands these to ofi_serve).
enum OfiServe : std::uint32_t {
    serve_ofi_send = 16, // ping-pong with fi_send
    serve_ofi_inject,    // ping-pong with fi_inject
    serve_ofi_rma,       // target of rank 0's fi_write/fi_read until it finishes
};

[[noreturn]] inline void ofi_fail(const OfiReference &ofi, const char *what) {
    std::fprintf(stderr, "sluice-bench worker rank %u: bare libfabric %s failed: %s\n",
                 sluice_rank(), what, ofi.error().c_str());
    sluice_exit(3);
}

inline void ofi_serve(OfiReference &ofi, std::uint32_t what, std::uint32_t n) {
    const bool ok = what == serve_ofi_rma ? ofi.serve() : ofi.pong(n, what == serve_ofi_inject);
    if (!ok)
        ofi_fail(ofi, what == serve_ofi_rma ? "RMA target" : "ping-pong answer");
}

template <class Suite> class OfiSection {
public:
    explicit OfiSection(Suite &s) : s_(s), ofi_(s.ofi) {}

    int run() {
        std::size_t peer_size = 0;
        if (!s_.start(peer_size))
            return 2;
        const char *provider = std::getenv("SLUICE_OFI_PROVIDER");
        if (!provider || !*provider) {
            std::fprintf(stderr, "sluice-bench: the ofi kind needs SLUICE_OFI_PROVIDER\n");
            return 2;
        }
        name_ = "ofi_" + ofi_tag(provider) + "_";
        open_reference(provider, ofi_delivery_complete(provider));
        latency_phase();
        for (std::size_t z : {rma_target_size, largest_rma})
            bandwidth_phase(z);
        firehose_phase();
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }

private:
    Suite &s_;
    OfiReference &ofi_;
    std::string name_; // "ofi_<tag>_"

    std::string metric(const char *what) const { return name_ + what; }
    bool wanted(const char *what, std::size_t size = 0) const {
        return s_.options.wanted(metric(what), size);
    }
    void add(const char *what, std::size_t size, double ns) {
        s_.results.add(metric(what), size, ns);
    }

    // Both open the provider, exchange cards through the job, connect.
    void open_reference(const char *provider, bool delivery) {
        reference_connect(s_, ofi_, ofi_.open(provider, largest_rma, delivery),
                          [&](const char *what) { ofi_fail(ofi_, what); });
    }

    // Rank 0's side of a bare chunk.
    double ping_chunk(std::uint32_t n, std::uint32_t lead, bool inject) {
        s_.ask(inject ? serve_ofi_inject : serve_ofi_send, n);
        const double ns = ofi_.ping(n, lead, inject);
        if (std::isnan(ns))
            ofi_fail(ofi_, "ping-pong");
        return ns;
    }
    // `warm` unmeasured operations, then `n` measured, with rank 1 serving.
    double rma_chunk(OfiRma op, std::size_t bytes, std::uint32_t warm, std::uint32_t n,
                     std::uint32_t window) {
        return reference_rma_chunk(s_, ofi_, serve_ofi_rma, op, bytes, warm, n, window, [&](const char *) {
            ofi_fail(ofi_, op == OfiRma::write ? "fi_write" : "fi_read");
        });
    }

    // AM Short round trip, 8 B blocking Put and Get, each beside its bare
    // reference, in five chunks alternating all of them.
    void latency_phase() {
        if (!wanted("am_short_rtt") && !wanted("fi_send_rtt") && !wanted("fi_inject_rtt") &&
            !wanted("put_lat", 8) && !wanted("get_lat", 8) && !wanted("fi_write_lat", 8) &&
            !wanted("fi_read_lat", 8))
            return;
        s_.phase([&] {
            const long iters = rtt_iterations(0, s_.options.scale);
            constexpr int chunks = 5;
            const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, 200));
            const std::uint32_t lead = per / 10;
            auto am = [&] { s_.am_short_round_trip(); };
            auto put8 = [&] { s_.put8(); };
            auto get8 = [&] { s_.get8(); };
            (void)Suite::timed(per, am); // warm-up of every path
            (void)Suite::timed(lead, put8);
            (void)Suite::timed(lead, get8);
            (void)ping_chunk(per, lead, false);
            (void)ping_chunk(per, lead, true);
            (void)rma_chunk(OfiRma::write, 8, lead, lead, 1);
            (void)rma_chunk(OfiRma::read, 8, lead, lead, 1);
            double r[7] = {};
            for (int c = 0; c < chunks; ++c) {
                r[0] += ping_chunk(per + lead, lead, false);
                r[1] += ping_chunk(per + lead, lead, true);
                r[2] += Suite::timed(per, am);
                r[3] += rma_chunk(OfiRma::write, 8, lead, per, 1);
                r[4] += Suite::timed(per, put8);
                r[5] += rma_chunk(OfiRma::read, 8, lead, per, 1);
                r[6] += Suite::timed(per, get8);
            }
            const double n = static_cast<double>(per) * chunks;
            add("fi_send_rtt", 0, r[0] / n);
            add("fi_inject_rtt", 0, r[1] / n);
            add("am_short_rtt", 0, r[2] / n);
            add("fi_write_lat", 8, r[3] / n);
            add("put_lat", 8, r[4] / n);
            add("fi_read_lat", 8, r[5] / n);
            add("get_lat", 8, r[6] / n);
        });
    }

    // Put/Get of `bytes`: nbi (rma_window per sync) beside fi_write/fi_read
    // with the same window, blocking beside one operation at a time; three
    // chunks alternating all eight.
    void bandwidth_phase(std::size_t bytes) {
        const char *names[8] = {"fi_write_bw", "put_bw",  "fi_write_lat", "put_lat",
                                "fi_read_bw",  "get_bw",  "fi_read_lat",  "get_lat"};
        if (std::none_of(std::begin(names), std::end(names),
                         [&](const char *m) { return wanted(m, bytes); }))
            return;
        s_.phase([&] {
            const long iters = rma_iterations(bytes, s_.options.scale);
            constexpr int chunks = 3;
            const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, 4));
            const std::uint32_t warm = per / 4 + 1;
            const auto window = static_cast<std::uint32_t>(rma_window);
            const sluice_rank_t peer = s_.peer;
            void *remote = s_.peer_base;
            void *local = s_.local.data();
            auto put_nbi = [&] {
                check(sluice_put_nbi(peer, remote, local, bytes), "sluice_put_nbi");
            };
            auto get_nbi = [&] {
                check(sluice_get_nbi(local, peer, remote, bytes), "sluice_get_nbi");
            };
            auto put = [&] { check(sluice_put(peer, remote, local, bytes), "sluice_put"); };
            auto get = [&] { check(sluice_get(local, peer, remote, bytes), "sluice_get"); };
            (void)s_.nbi_count(warm, put_nbi);
            (void)s_.nbi_count(warm, get_nbi);
            (void)Suite::timed(warm, put);
            (void)Suite::timed(warm, get);
            double r[8] = {};
            for (int c = 0; c < chunks; ++c) {
                r[0] += rma_chunk(OfiRma::write, bytes, warm, per, window);
                r[1] += s_.nbi_count(per, put_nbi);
                r[2] += rma_chunk(OfiRma::write, bytes, warm, per, 1);
                r[3] += Suite::timed(per, put);
                r[4] += rma_chunk(OfiRma::read, bytes, warm, per, window);
                r[5] += s_.nbi_count(per, get_nbi);
                r[6] += rma_chunk(OfiRma::read, bytes, warm, per, 1);
                r[7] += Suite::timed(per, get);
            }
            const double n = static_cast<double>(per) * chunks;
            for (int k = 0; k < 8; ++k)
                add(names[k], bytes, r[k] / n);
        });
    }

    // Firehose: a 4 MiB blocking Put from this rank's own
    // segment, from a buffer outside it that earlier Puts used (warm), and
    // from buffers outside it never used before (cold: the first Put from
    // each pays its registration).  All buffers are mapped and touched
    // before the clock starts, so a page fault is never what is timed.
    void firehose_phase() {
        if (!wanted("put_inseg", largest_rma) && !wanted("put_outside_warm", largest_rma) &&
            !wanted("put_outside_cold", largest_rma))
            return;
        s_.phase([&] {
            constexpr int chunks = 3, cold_per_chunk = 2;
            const long iters = rma_iterations(largest_rma, s_.options.scale);
            const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks / 4, 4));
            void *inside = nullptr;
            std::size_t inside_size = 0;
            check(sluice_segment_info(s_.me, &inside, &inside_size), "sluice_segment_info");
            std::vector<void *> maps;
            for (int i = 0; i < 1 + chunks * cold_per_chunk; ++i) {
                void *p = mmap(nullptr, largest_rma, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED) {
                    std::fprintf(stderr, "sluice-bench worker: mmap of 4 MiB failed\n");
                    sluice_exit(3);
                }
                std::fill_n(static_cast<char *>(p), largest_rma, char(2 + i));
                maps.push_back(p);
            }
            const sluice_rank_t peer = s_.peer;
            void *remote = s_.peer_base;
            auto put_from = [&](void *from) {
                return [=] {
                    check(sluice_put(peer, remote, from, largest_rma), "sluice_put");
                };
            };
            (void)Suite::timed(per, put_from(inside));
            (void)Suite::timed(per, put_from(maps[0]));
            double in = 0, warm = 0, cold = 0;
            for (int c = 0; c < chunks; ++c) {
                in += Suite::timed(per, put_from(inside));
                warm += Suite::timed(per, put_from(maps[0]));
                for (int k = 0; k < cold_per_chunk; ++k)
                    cold += Suite::timed(1, put_from(maps[1 + c * cold_per_chunk + k]));
            }
            for (void *p : maps)
                munmap(p, largest_rma);
            const double n = static_cast<double>(per) * chunks;
            add("put_inseg", largest_rma, in / n);
            add("put_outside_warm", largest_rma, warm / n);
            add("put_outside_cold", largest_rma, cold / (chunks * cold_per_chunk));
        });
    }
};

} // namespace sluice::perf
