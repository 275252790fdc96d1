// tests/perf/reference-section.hpp - what the sections that measure a
// conduit beside its bare network library (ofi-section.hpp, ibv-section.hpp,
// portals-section.hpp, gni-section.hpp, lapi-section.hpp) do alike with
// that library's reference: connect both ranks' references through the
// job, run one RMA chunk with rank 1 serving, and size the chunks on a
// software NIC, its latency phase and its bandwidth phase.  `Ref` is OfiReference, VerbsReference, PortalsReference,
// GniReference or LapiReference; `fail(what)` reports and ends the job.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/worker.hpp"

#include <sluice.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace sluice::perf {

// This rank's segment, which Sluice's side of a section moves bytes from
// and to (as the bare reference moves them from and to its region); the
// job ends if it holds less than the largest transfer.
inline void *section_segment(sluice_rank_t me) {
    void *base = nullptr;
    std::size_t size = 0;
    check(sluice_segment_info(me, &base, &size), "sluice_segment_info");
    if (size < largest_rma) {
        std::fprintf(stderr, "sluice-bench worker: the segment (%zu bytes) is smaller than 4 MiB\n", size);
        sluice_exit(3);
    }
    return base;
}

// Both ranks opened their reference (`opened`): exchange the cards through
// the job and connect to the peer's.
template <class Suite, class Ref, class Fail>
void reference_connect(Suite &s, Ref &ref, bool opened, Fail fail) {
    struct Card {
        decltype(ref.card()) card;
        std::uint32_t ok;
        std::uint32_t pad;
    };
    Card mine{};
    mine.ok = opened ? 1 : 0;
    if (opened)
        mine.card = ref.card();
    Card all[2] = {};
    check(sluice_allgather(&mine, all, sizeof mine), "sluice_allgather");
    if (!mine.ok)
        fail("open");
    if (!all[s.peer].ok) // the peer reports its own failure
        sluice_exit(3);
    if (!ref.connect(all[s.peer].card))
        fail("connect");
    if (s.me == 0)
        std::fprintf(stderr, "sluice-bench: bare reference: %s\n", ref.describe().c_str());
    check(sluice_barrier(), "sluice_barrier");
}

// `warm` unmeasured operations, then `n` measured, with rank 1 serving
// (asked with `serve`); ns of the measured ones.  `extra` goes to each
// rma() call after the window.
template <class Suite, class Ref, class Op, class Fail, class... Extra>
double reference_rma_chunk(Suite &s, Ref &ref, std::uint32_t serve, Op op, std::size_t bytes, std::uint32_t warm,
                           std::uint32_t n, std::uint32_t window, Fail fail, Extra... extra) {
    s.ask(serve, 0);
    double ns = warm ? ref.rma(op, bytes, warm, window, extra...) : 0;
    if (!std::isnan(ns))
        ns = ref.rma(op, bytes, n, window, extra...);
    if (std::isnan(ns) || !ref.finish())
        fail("RMA");
    return ns;
}

// Operations per chunk of a section on a software NIC (gni-section.hpp,
// lapi-section.hpp): an operation that finds work takes the NIC's one
// lock, which both processes contend for, so its time depends on how busy
// the machine is (microseconds when quiet, up to milliseconds when other
// work shares the CPUs).  As many operations of the slowest loop, at
// `ns_each`, as fit in half a second (scaled as the iteration counts
// are), at least `least`, at most `most`.
inline std::uint32_t chunk_operations(const Scale &scale, double ns_each, std::uint32_t least, std::uint32_t most) {
    constexpr double chunk_ns = 0.5e9;
    const double budget = chunk_ns * static_cast<double>(scale.multiplier) / static_cast<double>(scale.divisor);
    const double n = std::isfinite(ns_each) && ns_each > 0 ? budget / ns_each : most;
    return static_cast<std::uint32_t>(std::clamp<double>(n, least, std::max(least, most)));
}

// The latency phase of a section on a software NIC (gni-section.hpp,
// lapi-section.hpp): the AM Short round trip, 8 B blocking Put and 8 B
// blocking Get, each beside its bare counterpart, in five chunks
// alternating all six, each chunk sized to the slowest
// (chunk_operations).  `ping(n, lead)` gives the ns of the last n - lead
// bare round trips; `bare_put(warm, n)`, `bare_get(warm, n)` the ns of n
// bare operations after `warm`.  Means in ns.
struct LatencyBeside {
    double bare_rtt, am_rtt, bare_put, put, bare_get, get;
    std::uint32_t per;  // operations of each kind per chunk
};
template <class Suite, class Ping, class BarePut, class BareGet>
LatencyBeside latency_beside(Suite &s, void *inside, Ping ping, BarePut bare_put, BareGet bare_get) {
    constexpr int chunks = 5;
    constexpr std::uint32_t probe = 20;
    const auto most = static_cast<std::uint32_t>(std::max<long>(rtt_iterations(0, s.options.scale) / chunks, 200));
    const sluice_rank_t peer = s.peer;
    void *remote = s.peer_base;
    auto am = [&] { s.am_short_round_trip(); };
    auto put8 = [&] { check(sluice_put(peer, remote, inside, 8), "sluice_put"); };
    auto get8 = [&] { check(sluice_get(inside, peer, remote, 8), "sluice_get"); };
    // A few of each: the warm-up of every path, and the chunk size.
    const double probes[6] = {Suite::timed(probe, am) / probe, Suite::timed(probe, put8) / probe,
                              Suite::timed(probe, get8) / probe, ping(probe + 1, 1) / probe,
                              bare_put(1, probe) / probe,    bare_get(1, probe) / probe};
    const std::uint32_t per = chunk_operations(s.options.scale, *std::max_element(probes, probes + 6), probe, most);
    const std::uint32_t lead = std::max<std::uint32_t>(per / 10, 2);
    double r[6] = {};
    for (int c = 0; c < chunks; ++c) {
        r[0] += ping(per + lead, lead);
        r[1] += Suite::timed(per, am);
        r[2] += bare_put(lead, per);
        r[3] += Suite::timed(per, put8);
        r[4] += bare_get(lead, per);
        r[5] += Suite::timed(per, get8);
    }
    const double n = static_cast<double>(per) * chunks;
    return {r[0] / n, r[1] / n, r[2] / n, r[3] / n, r[4] / n, r[5] / n, per};
}

// The bandwidth phase of a section beside its bare library (ibv-section.hpp,
// gni-section.hpp): 4 MiB Put and Get, nbi (rma_window per sync), beside
// as many bare writes and reads with the same window, and the Put from a
// buffer outside the segment (which the conduit registers, or firehose
// covers): three chunks alternating all five.  `bare(write, warm, n,
// window)` gives the ns of n bare transfers of 4 MiB after `warm`.  Means
// in ns per transfer.
struct BandwidthBeside {
    double bare_write, put, bare_read, get, put_outside;
};
template <class Suite, class Bare> BandwidthBeside bandwidth_beside(Suite &s, void *inside, Bare bare) {
    const long iters = rma_iterations(largest_rma, s.options.scale);
    constexpr int chunks = 3;
    const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, 4));
    const std::uint32_t warm = per / 4 + 1;
    const auto window = static_cast<std::uint32_t>(rma_window);
    const sluice_rank_t peer = s.peer;
    void *remote = s.peer_base;
    void *outside = s.local.data();
    auto put_nbi = [&] { check(sluice_put_nbi(peer, remote, inside, largest_rma), "sluice_put_nbi"); };
    auto get_nbi = [&] { check(sluice_get_nbi(inside, peer, remote, largest_rma), "sluice_get_nbi"); };
    auto put_outside = [&] { check(sluice_put_nbi(peer, remote, outside, largest_rma), "sluice_put_nbi"); };
    (void)s.nbi_count(warm, put_nbi);
    (void)s.nbi_count(warm, get_nbi);
    (void)s.nbi_count(warm, put_outside);
    double r[5] = {};
    for (int c = 0; c < chunks; ++c) {
        r[0] += bare(true, warm, per, window);
        r[1] += s.nbi_count(per, put_nbi);
        r[2] += bare(false, warm, per, window);
        r[3] += s.nbi_count(per, get_nbi);
        r[4] += s.nbi_count(per, put_outside);
    }
    const double n = static_cast<double>(per) * chunks;
    return {r[0] / n, r[1] / n, r[2] / n, r[3] / n, r[4] / n};
}

} // namespace sluice::perf
