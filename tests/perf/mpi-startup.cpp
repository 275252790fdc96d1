// tests/perf/mpi-startup.cpp - what Sluice's start-up over MPI adds to
// MPI_Init (issue 3: at most 20 ms on 8 ranks).  One run prints the slowest
// rank's MPI_Init time, the slowest rank's MPIX_Sluice_init time (the mpi
// bootstrap: communicator duplicate, host and segment-name exchange, shared
// memory set-up) and a CSV line.  Take medians over several runs:
//   for i in 1 2 3 4 5; do mpirun --oversubscribe -n 8 tests/perf/mpi-startup; done
#include <mpix_sluice.h>

#include <cstdio>
#include <ctime>

namespace {
double now() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
} // namespace

int main(int argc, char **argv) {
    const double t0 = now();
    MPI_Init(&argc, &argv);
    const double t1 = now();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t2 = now();
    if (MPIX_Sluice_init(MPI_COMM_WORLD, &argc, &argv) != SLUICE_OK) {
        std::fprintf(stderr, "mpi-startup: MPIX_Sluice_init failed: %s\n", sluice_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const double t3 = now();
    double mine[2] = {t1 - t0, t3 - t2}, slowest[2];
    MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (me == 0) {
        std::printf("%d ranks: MPI_Init %.1f ms, MPIX_Sluice_init %.1f ms (slowest rank; target <= 20 ms)\n", n,
                    slowest[0] * 1e3, slowest[1] * 1e3);
        std::printf("CSV: ranks,mpi_init_ms,sluice_init_ms\nCSV: %d,%.2f,%.2f\n", n, slowest[0] * 1e3, slowest[1] * 1e3);
    }
    sluice_finalize();
    MPI_Finalize();
    return 0;
}
