// tests/perf/shmem-bench.cpp - sluice-bench-shmem, the worker of the
// client section's OpenSHMEM rows (client-section.cpp starts it under
// sluicerun on smp at 2, 4 and 8 ranks).  Each figure beside Sluice's own
// call of the same run, in chunks alternating:
//   2 ranks, rank 0 measuring, rank 1 in shmem_barrier_all:
//     shmem_putmem / shmem_getmem of 8 B       vs sluice_put / sluice_get
//     shmem_putmem (+ shmem_quiet) / shmem_getmem of 4 MiB   vs the same
//     shmem_long_atomic_fetch_add on rank 1     vs sluice_ad_op_u64 FADD
//   every rank at once: shmem_barrier_all and shmem_long_sum_reduce of one
//     long (their MPI references run in mpi-reference --client).
// Writes "metric size value" lines (ns per operation) to --out.
#include "tests/perf/bench_common.hpp"

#include <shmem.h>
#include <sluice.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace sluice::perf {
namespace {

constexpr std::size_t big = std::size_t{4} << 20;

// ns per call of `body`, `n` calls.
template <class F>
double timed(long n, F body) {
    const double t0 = now_ns();
    for (long i = 0; i < n; ++i) body();
    return (now_ns() - t0) / static_cast<double>(n);
}

void fail(const char *what) {
    std::fprintf(stderr, "sluice-bench-shmem: %s: %s\n", what, sluice_last_error());
    shmem_global_exit(1);
}

int run(int argc, char **argv) {
    const CommonOptions o = parse_common(argc, argv);
    ResultFile results(o.out);
    long reduce_iters = 0;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--client-reduce-iters") == 0) reduce_iters = std::atol(argv[i + 1]);
    shmem_init();
    const int me = shmem_my_pe(), n = shmem_n_pes();
    const auto ranks = static_cast<std::size_t>(n);
    char *buf = static_cast<char *>(shmem_malloc(big));
    long *word = static_cast<long *>(shmem_malloc(64));
    std::vector<char> local(big, 1);
    std::memset(buf, 0, big);
    *word = 0;
    // The same symmetric memory as Sluice addresses it on each rank.
    std::vector<std::uintptr_t> bufs(ranks), words(ranks);
    const std::uintptr_t mine[2] = {reinterpret_cast<std::uintptr_t>(buf), reinterpret_cast<std::uintptr_t>(word)};
    std::vector<std::uintptr_t> both(2 * ranks);
    if (sluice_allgather(mine, both.data(), sizeof mine) != SLUICE_OK) fail("sluice_allgather");
    for (std::size_t r = 0; r < ranks; ++r) {
        bufs[r] = both[2 * r];
        words[r] = both[2 * r + 1];
    }
    sluice_ad_t ad = nullptr;
    if (sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, SLUICE_AOP_BIT(SLUICE_OP_FADD), 0, &ad) != SLUICE_OK)
        fail("sluice_ad_create");
    shmem_barrier_all();

    auto add = [&](const char *what, std::size_t size, double v) {
        if (me == 0 && o.wanted(std::string("client_smp_") + what, size)) results.add(std::string("client_smp_") + what, size, v);
    };
    if (n == 2) {
        if (me == 0) {
            char *peer_buf = reinterpret_cast<char *>(bufs[1]);
            void *peer_word = reinterpret_cast<void *>(words[1] + 8);
            const long k = rma_iterations(8, o.scale), kb = std::max(8L, rma_iterations(big, o.scale) / 4);
            const long ka = rtt_iterations(8, o.scale) * 10;
            double sp = 0, up = 0, sg = 0, ug = 0, spb = 0, upb = 0, sgb = 0, ugb = 0, sa = 0, ua = 0;
            long old = 0;
            std::uint64_t uold = 0;
            // Chunk 0 warms up; the two sides swap places every chunk, so
            // that neither always finds the lines the other left in its cache.
            for (int c = 0; c < 5; ++c) {
                const double w = c ? 1 : 0;
                auto both = [&](double &a, double &b, long n, auto fa, auto fb) {
                    if (c % 2) {
                        b += w * timed(n, fb);
                        a += w * timed(n, fa);
                    } else {
                        a += w * timed(n, fa);
                        b += w * timed(n, fb);
                    }
                };
                both(sp, up, k, [&] { shmem_putmem(buf, local.data(), 8, 1); },
                     [&] { (void)sluice_put(1, peer_buf, local.data(), 8); });
                both(sg, ug, k, [&] { shmem_getmem(local.data(), buf, 8, 1); },
                     [&] { (void)sluice_get(local.data(), 1, peer_buf, 8); });
                both(spb, upb, kb,
                     [&] {
                         shmem_putmem(buf, local.data(), big, 1);
                         shmem_quiet();
                     },
                     [&] { (void)sluice_put(1, peer_buf, local.data(), big); });
                both(sgb, ugb, kb, [&] { shmem_getmem(local.data(), buf, big, 1); },
                     [&] { (void)sluice_get(local.data(), 1, peer_buf, big); });
                both(sa, ua, ka, [&] { old = shmem_long_atomic_fetch_add(word, 1, 1); },
                     [&] { (void)sluice_ad_op_u64(ad, &uold, 1, peer_word, SLUICE_OP_FADD, 1, 0, 0); });
            }
            clobber_memory();
            add("shmem_put8", 8, sp / 4);
            add("shmem_sluice_put8", 8, up / 4);
            add("shmem_get8", 8, sg / 4);
            add("shmem_sluice_get8", 8, ug / 4);
            add("shmem_put4M", big, spb / 4);
            add("shmem_sluice_put4M", big, upb / 4);
            add("shmem_get4M", big, sgb / 4);
            add("shmem_sluice_get4M", big, ugb / 4);
            add("shmem_fadd", 8, sa / 4);
            add("shmem_sluice_fadd", 8, ua / 4);
            (void)old;
        }
        shmem_barrier_all();
    }
    // Every rank at once: the barrier and the 8 B sum.
    const long kb = std::max(50L, reduce_iters);
    for (long i = 0; i < kb / 10 + 2; ++i) shmem_barrier_all();
    shmem_barrier_all();
    double t0 = now_ns();
    for (long i = 0; i < kb; ++i) shmem_barrier_all();
    const double barrier = (now_ns() - t0) / static_cast<double>(kb);
    static long in, out;
    in = me + 1;
    for (long i = 0; i < kb / 10 + 2; ++i) shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &out, &in, 1);
    shmem_barrier_all();
    t0 = now_ns();
    for (long i = 0; i < kb; ++i) shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &out, &in, 1);
    const double reduce = (now_ns() - t0) / static_cast<double>(kb);
    shmem_barrier_all();
    if (out != static_cast<long>(ranks * (ranks + 1) / 2)) {
        std::fprintf(stderr, "sluice-bench-shmem: sum_reduce gave %ld, expected %zu\n", out, ranks * (ranks + 1) / 2);
        shmem_global_exit(1);
    }
    add("shmem_barrier_all", ranks, barrier);
    add("shmem_sum_reduce_8", ranks, reduce);
    if (sluice_ad_destroy(ad) != SLUICE_OK) fail("sluice_ad_destroy");
    shmem_free(word);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}

} // namespace
} // namespace sluice::perf

int main(int argc, char **argv) { return sluice::perf::run(argc, argv); }
