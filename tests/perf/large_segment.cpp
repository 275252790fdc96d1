// tests/perf/large_segment.cpp - worker kind ofi-large (firehose's
// main pool): rank 0 Puts 64 KiB at random 64 KiB-aligned offsets of rank
// 1's 1 GiB segment, in windows of 16 non-blocking Puts, and reports ns per
// Put as ofi_<provider>_segment_<SLUICE_SEGMENT>_put.  The driver runs it with
// SLUICE_SEGMENT=large under a 64 MiB budget (SLUICE_FIREHOSE_M; regions
// pinned by move requests, nearly every Put a miss) and with
// SLUICE_SEGMENT=fast (the segment registered whole), the reference; it
// reads the main pool's peak of pinned bytes from the job's log.  The target
// touches its whole segment first, so page faults are not timed.
#include "tests/perf/ofi-reference.hpp"
#include "tests/perf/worker.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace sluice::perf {

int large_segment_main(const CommonOptions &o) {
    constexpr std::size_t segment = std::size_t{1} << 30, put = 64 << 10;
    constexpr int window = 16;
    const char *provider = std::getenv("SLUICE_OFI_PROVIDER");
    const char *mode = std::getenv("SLUICE_SEGMENT");
    if (sluice_size() != 2 || !provider || !mode) {
        std::fprintf(stderr, "sluice-bench: the ofi-large kind needs 2 ranks, SLUICE_OFI_PROVIDER "
                             "and SLUICE_SEGMENT\n");
        return 2;
    }
    const sluice_rank_t me = sluice_rank(), peer = 1 - me;
    check(sluice_segment_attach(segment), "sluice_segment_attach");
    void *mine = nullptr, *theirs = nullptr;
    std::size_t size = 0;
    check(sluice_segment_info(me, &mine, &size), "sluice_segment_info");
    check(sluice_segment_info(peer, &theirs, &size), "sluice_segment_info");
    std::memset(mine, 1, segment);
    check(sluice_barrier(), "sluice_barrier");
    if (me == 0) {
        const long puts = o.quick ? 2048 : 8192;
        std::vector<char> source(put, 7);
        std::mt19937_64 rng(29);
        const double t0 = now_ns();
        for (long i = 0; i < puts; i += window) {
            for (int k = 0; k < window; ++k) {
                const std::size_t at = (rng() % (segment / put)) * put;
                check(sluice_put_nbi(peer, static_cast<char *>(theirs) + at, source.data(), put),
                      "sluice_put_nbi");
            }
            check(sluice_nbi_sync(), "sluice_nbi_sync");
        }
        const double ns = (now_ns() - t0) / static_cast<double>(puts);
        ResultFile results(o.out);
        results.add("ofi_" + ofi_tag(provider) + "_segment_" + mode + "_put", put, ns);
        std::fprintf(stderr, "sluice-bench: %ld random 64 KiB Puts over a 1 GiB segment "
                             "(SLUICE_SEGMENT=%s): %.0f ns each\n", puts, mode, ns);
    }
    check(sluice_barrier(), "sluice_barrier");
    check(sluice_finalize(), "sluice_finalize");
    return 0;
}

} // namespace sluice::perf
