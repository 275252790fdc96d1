// tests/mpi/coll_mpi_test.cpp - one rank of a hybrid job under mpirun
// (tests/mpi/coll-mpi.sh): Sluice's collectives against MPI's on the same
// random data, with random roots and team splits (the same colours and
// keys give MPI_Comm_split and sluice_team_split the same members in the
// same order).  Exit code 0 when every result matched.
//
//   coll_mpi_test check [iterations]
//   coll_mpi_test bench: reduce-to-all of 8 bytes and broadcast of 1 MiB,
//     Sluice and MPI timed in the same run, one line each on rank 0.
#include <mpi.h>
#include <sluice.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int failures = 0;
int world_rank = 0, world_size = 1;
#define EXPECT(cond, ...)                                                                       \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            std::fprintf(stderr, "coll_mpi_test rank %d: %s:%d: expected %s: ", world_rank,     \
                         __FILE__, __LINE__, #cond);                                            \
            std::fprintf(stderr, __VA_ARGS__);                                                  \
            std::fprintf(stderr, "\n");                                                         \
            ++failures;                                                                         \
        }                                                                                       \
    } while (0)
#define OK(call) EXPECT((call) == SLUICE_OK, "%s", sluice_last_error())

struct Rng {
    std::uint64_t s;
    explicit Rng(std::uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 7) {}
    std::uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    std::uint32_t below(std::uint32_t n) { return n ? static_cast<std::uint32_t>(next() % n) : 0; }
};

struct TypePair {
    sluice_dt_t dt;
    MPI_Datatype mpi;
    std::size_t size;
    bool integer;
};
const TypePair types[] = {
    {SLUICE_DT_I32, MPI_INT32_T, 4, true},  {SLUICE_DT_U32, MPI_UINT32_T, 4, true},
    {SLUICE_DT_I64, MPI_INT64_T, 8, true},  {SLUICE_DT_U64, MPI_UINT64_T, 8, true},
    {SLUICE_DT_FLT, MPI_FLOAT, 4, false},   {SLUICE_DT_DBL, MPI_DOUBLE, 8, false},
};
struct OpPair {
    sluice_reduce_op_t op;
    MPI_Op mpi;
    bool integer_only;
};
const OpPair ops[] = {
    {SLUICE_REDUCE_SUM, MPI_SUM, false}, {SLUICE_REDUCE_PROD, MPI_PROD, false}, {SLUICE_REDUCE_MIN, MPI_MIN, false},
    {SLUICE_REDUCE_MAX, MPI_MAX, false}, {SLUICE_REDUCE_AND, MPI_BAND, true},   {SLUICE_REDUCE_OR, MPI_BOR, true},
    {SLUICE_REDUCE_XOR, MPI_BXOR, true},
};

// Random elements of `t`: integers anywhere in range; floats small whole
// numbers (products of 1s and 2s) so every order of combination is exact.
void fill(std::vector<char> &buf, const TypePair &t, sluice_reduce_op_t op, std::size_t count, Rng &rng) {
    buf.resize(count * t.size);
    for (std::size_t i = 0; i < count; ++i) {
        char *e = buf.data() + i * t.size;
        if (t.integer) {
            std::uint64_t v = op == SLUICE_REDUCE_PROD ? 1 + rng.below(3) : rng.next();
            std::memcpy(e, &v, t.size);
        } else if (t.dt == SLUICE_DT_FLT) {
            float v = op == SLUICE_REDUCE_PROD ? static_cast<float>(1 + rng.below(2)) : static_cast<float>(rng.below(2001)) - 1000;
            std::memcpy(e, &v, 4);
        } else {
            double v = op == SLUICE_REDUCE_PROD ? 1 + rng.below(2) : static_cast<double>(rng.below(200001)) - 100000;
            std::memcpy(e, &v, 8);
        }
    }
}

void check_round(std::uint64_t round) {
    // The split every rank agrees on.
    Rng shared(round + 1);
    const int ncolors = 1 + static_cast<int>(shared.below(3));
    std::vector<int> colors(world_size), keys(world_size);
    for (int r = 0; r < world_size; ++r) {
        colors[r] = static_cast<int>(shared.below(static_cast<std::uint32_t>(ncolors)));
        keys[r] = static_cast<int>(shared.below(4));
    }
    sluice_team_t team = SLUICE_TEAM_NULL;
    OK(sluice_team_split(sluice_team_job(), colors[world_rank], keys[world_rank], &team));
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, colors[world_rank], keys[world_rank], &comm);
    int crank = 0, csize = 0;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    EXPECT(sluice_team_rank(team) == static_cast<sluice_rank_t>(crank) &&
               sluice_team_size(team) == static_cast<sluice_rank_t>(csize),
           "team rank %u size %u, communicator rank %d size %d", sluice_team_rank(team), sluice_team_size(team), crank,
           csize);
    // Per team, every member draws the same roots and sizes; per rank, its own data.
    Rng team_rng(round * 1000 + static_cast<std::uint64_t>(colors[world_rank]));
    Rng mine(round * 7919 + static_cast<std::uint64_t>(world_rank) * 104729 + 3);

    for (const TypePair &t : types)
        for (const OpPair &o : ops) {
            if (o.integer_only && !t.integer) continue;
            const std::size_t count = team_rng.below(4) == 0 ? 1 + team_rng.below(20000) : 1 + team_rng.below(16);
            std::vector<char> src, got(count * t.size), want(count * t.size);
            fill(src, t, o.op, count, mine);
            OK(sluice_coll_reduce_all(team, got.data(), src.data(), t.dt, 0, count, o.op, nullptr, nullptr));
            MPI_Allreduce(src.data(), want.data(), static_cast<int>(count), t.mpi, o.mpi, comm);
            EXPECT(got == want, "reduce_all type %d op %d count %zu differs from MPI_Allreduce", t.dt, o.op, count);
            const int root = static_cast<int>(team_rng.below(static_cast<std::uint32_t>(csize)));
            std::fill(got.begin(), got.end(), 0);
            OK(sluice_coll_reduce(team, static_cast<sluice_rank_t>(root), got.data(), src.data(), t.dt, 0, count, o.op,
                                  nullptr, nullptr));
            MPI_Reduce(src.data(), want.data(), static_cast<int>(count), t.mpi, o.mpi, root, comm);
            if (crank == root)
                EXPECT(got == want, "reduce to %d type %d op %d count %zu differs from MPI_Reduce", root, t.dt, o.op,
                       count);
        }

    for (int k = 0; k < 4; ++k) {
        const std::size_t sizes[] = {0, 1 + team_rng.below(100), 1 + team_rng.below(100000),
                                     (std::size_t{1} << 20) + team_rng.below(1000)};
        const std::size_t n = sizes[k];
        const int root = static_cast<int>(team_rng.below(static_cast<std::uint32_t>(csize)));
        std::vector<char> a(n), b(n);
        for (auto &c : a) c = static_cast<char>(mine.next());
        b = a;
        OK(sluice_coll_broadcast(team, static_cast<sluice_rank_t>(root), a.data(), a.data(), n));
        MPI_Bcast(b.data(), static_cast<int>(n), MPI_BYTE, root, comm);
        EXPECT(a == b, "broadcast of %zu bytes from %d differs from MPI_Bcast", n, root);
    }

    for (int k = 0; k < 3; ++k) {
        const std::size_t n = k == 0 ? 1 : 1 + team_rng.below(k == 1 ? 64 : 30000);
        std::vector<char> src(n * static_cast<std::size_t>(csize)), got(src.size()), want(src.size());
        for (auto &c : src) c = static_cast<char>(mine.next());
        OK(sluice_coll_alltoall(team, got.data(), src.data(), n));
        MPI_Alltoall(src.data(), static_cast<int>(n), MPI_BYTE, want.data(), static_cast<int>(n), MPI_BYTE, comm);
        EXPECT(got == want, "alltoall of %zu bytes per pair differs from MPI_Alltoall", n);
        OK(sluice_coll_allgather(team, got.data(), src.data(), n));
        MPI_Allgather(src.data(), static_cast<int>(n), MPI_BYTE, want.data(), static_cast<int>(n), MPI_BYTE, comm);
        EXPECT(got == want, "allgather of %zu bytes differs from MPI_Allgather", n);
    }
    MPI_Comm_free(&comm);
    OK(sluice_team_destroy(team));
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best of several batches: the least disturbed by the other processes of a
// small shared machine.
template <class F>
double best_per_call(int calls, F f) {
    double best = 1e30;
    for (int batch = 0; batch < 7; ++batch) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now();
        for (int i = 0; i < calls; ++i) f();
        double t = (now() - t0) / calls;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = std::min(best, t);
    }
    return best;
}

void bench() {
    sluice_team_t job = sluice_team_job();
    std::int64_t in = world_rank, out = 0;
    const int small = 2000;
    const double s_red = best_per_call(small, [&] {
        (void)sluice_coll_reduce_all(job, &out, &in, SLUICE_DT_I64, 0, 1, SLUICE_REDUCE_SUM, nullptr, nullptr);
    });
    const double m_red = best_per_call(small, [&] { MPI_Allreduce(&in, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); });
    const std::size_t big = std::size_t{1} << 20;
    std::vector<char> buf(big, 1);
    const int bigs = 200;
    const double s_bc = best_per_call(bigs, [&] { (void)sluice_coll_broadcast(job, 0, buf.data(), buf.data(), big); });
    const double m_bc = best_per_call(bigs, [&] { MPI_Bcast(buf.data(), static_cast<int>(big), MPI_BYTE, 0, MPI_COMM_WORLD); });
    if (world_rank == 0) {
        std::printf("reduce_all 8 B, %d ranks: sluice %.2f us, MPI_Allreduce %.2f us, ratio %.2f (target <= 1)\n",
                    world_size, s_red * 1e6, m_red * 1e6, s_red / m_red);
        std::printf("broadcast 1 MiB, %d ranks: sluice %.0f MB/s, MPI_Bcast %.0f MB/s, ratio %.2f (target >= 0.9)\n",
                    world_size, big / s_bc / 1e6, big / m_bc / 1e6, m_bc / s_bc);
        std::fflush(stdout);
    }
}

} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "check";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (sluice_init(&argc, &argv) != SLUICE_OK) {
        std::fprintf(stderr, "coll_mpi_test rank %d: sluice_init: %s\n", world_rank, sluice_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    EXPECT(static_cast<int>(sluice_rank()) == world_rank, "Sluice rank %u, MPI rank %d", sluice_rank(), world_rank);
    if (mode == "bench") {
        bench();
    } else {
        const unsigned long rounds = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 6;
        for (unsigned long r = 0; r < rounds; ++r) check_round(r);
    }
    OK(sluice_finalize());
    int all = failures;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0 && mode != "bench") std::printf("%s: %d mismatches on %d ranks\n", all ? "FAIL" : "PASS", all, world_size);
    MPI_Finalize();
    return failures ? 1 : 0;
}
