// tests/perf/reference-section.hpp - what the sections that measure a
// conduit beside its bare network library (ofi-section.hpp, ibv-section.hpp,
// portals-section.hpp) do alike with that library's reference: connect
// both ranks' references through the job, and run one RMA chunk with
// rank 1 serving.  `Ref` is OfiReference, VerbsReference or
// PortalsReference; `fail(what)` reports and ends the job.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/worker.hpp"

#include <sluice.h>

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

} // namespace sluice::perf
