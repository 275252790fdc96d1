// tests/mp/mp_segment.cpp - RMA spread over a whole (large) segment: what
// SLUICE_SEGMENT=large must get right when the segment is far larger than
// what a rank may keep pinned (firehose's main pool, src/conduits/firehose).
//
// segment [MiB] [rounds]: every segment is cut in 64 KiB blocks; block b of
// rank t is written by rank (t + 1 + b % (N - 1)) % N, so neighbouring
// blocks (one firehose region) have different writers and a region is held
// by several peers at once.  Each rank Puts its blocks in a random order,
// from its own segment or from private memory, blocking, non-blocking and
// implicit, some in pieces that cross region boundaries, `rounds` times
// (the last round's pattern wins); then every rank checks its own segment
// and Gets random ranges of every peer's, spanning blocks of other writers
// and region boundaries.
#include "tests/mp/mp_cases.hpp"

#include <sluice.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace sluice_test::mp {
namespace {

constexpr std::size_t block = 64 << 10;

sluice_rank_t writer_of(sluice_rank_t target, std::size_t b) {
    return static_cast<sluice_rank_t>((target + 1 + b % (nranks - 1)) % nranks);
}
std::uint32_t seed_of(sluice_rank_t target, std::size_t b, unsigned round) {
    return static_cast<std::uint32_t>(target * 1000003u + b * 7919u + round * 104729u + 17u);
}

} // namespace

int case_segment(int argc, char **argv) {
    const std::size_t mib = arg_number(argc, argv, 2, 32);
    const unsigned rounds = static_cast<unsigned>(arg_number(argc, argv, 3, 2));
    TCHECK(nranks >= 2, "segment needs 2 ranks or more, got %u", nranks);
    attach(mib << 20);
    const std::size_t blocks = segments[me].size / block;
    TCHECK(blocks >= 4 * nranks, "%zu blocks are too few", blocks);
    // The Puts' sources: half from my segment's last block, which nobody
    // writes (my staging block), half from private memory.
    std::vector<std::uint8_t> heap(block);
    std::mt19937 rng(1234 + me);
    struct Job {
        sluice_rank_t target;
        std::size_t b;
    };
    std::vector<Job> jobs;
    for (sluice_rank_t t = 0; t < nranks; ++t)
        if (t != me)
            for (std::size_t b = 0; b + 1 < blocks; ++b)  // the last block: each rank's staging area
                if (writer_of(t, b) == me) jobs.push_back({t, b});
    std::uint8_t *staging = my_segment() + (blocks - 1) * block;
    for (unsigned round = 0; round < rounds; ++round) {
        std::shuffle(jobs.begin(), jobs.end(), rng);
        for (std::size_t i = 0; i < jobs.size(); ++i) {
            const Job &j = jobs[i];
            std::uint8_t *src = (i % 2) ? staging : heap.data();
            pattern_fill(src, block, seed_of(j.target, j.b, round));
            std::uint8_t *dst = segments[j.target].base + j.b * block;
            switch (i % 4) {
            case 0: TOK(sluice_put(j.target, dst, src, block)); break;
            case 1: {
                sluice_event_t ev;
                TOK(sluice_put_nb(j.target, dst, src, block, &ev));
                TOK(sluice_event_wait(ev));
                break;
            }
            case 2:  // in three pieces, at odd offsets
                TOK(sluice_put_nbi(j.target, dst, src, 1000));
                TOK(sluice_put_nbi(j.target, dst + 1000, src + 1000, 40000));
                TOK(sluice_put_nbi(j.target, dst + 41000, src + 41000, block - 41000));
                TOK(sluice_nbi_sync());
                break;
            default: TOK(sluice_put(j.target, dst, src, block)); break;
            }
        }
    }
    TOK(sluice_barrier());
    for (std::size_t b = 0; b + 1 < blocks; ++b)
        TCHECK_PATTERN(my_segment() + b * block, block, seed_of(me, b, rounds - 1), "block %zu of my segment, from rank %u",
                       b, writer_of(me, b));
    // Gets of ranges that span three blocks (other writers' too) from a
    // random offset: region boundaries inside, unaligned ends.
    std::vector<std::uint8_t> in(3 * block);
    for (int k = 0; k < 64; ++k) {
        sluice_rank_t t = static_cast<sluice_rank_t>((me + 1 + rng() % (nranks - 1)) % nranks);
        // Into private memory, or (a block's worth at most) into my
        // staging block, which nobody reads.
        const std::size_t b = rng() % (blocks - 4), off = rng() % block;
        const std::size_t len = (k % 2) ? 2 * block + rng() % block : block / 2 + rng() % (block / 2);
        std::uint8_t *into = (k % 2) ? in.data() : staging;
        TOK(sluice_get(into, t, segments[t].base + b * block + off, len));
        for (std::size_t at = 0; at < len;) {
            const std::size_t abs = b * block + off + at, bb = abs / block, in_block = abs % block;
            const std::size_t n = std::min(len - at, block - in_block);
            for (std::size_t q = 0; q < n; ++q)
                TCHECK(into[at + q] == pattern_byte(seed_of(t, bb, rounds - 1), in_block + q),
                       "get %d from rank %u: byte %zu of block %zu (written by rank %u)", k, t, in_block + q, bb,
                       writer_of(t, bb));
            at += n;
        }
    }
    TOK(sluice_barrier());
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
