/*
 * shmem_halo.c - a hybrid MPI + OpenSHMEM program: Jacobi iterations of a
 * 1-D heat equation.  Each PE owns CELLS cells in the symmetric heap with a
 * ghost cell at each end; the halo exchange is OpenSHMEM (a shmem_double_put
 * into each neighbour's ghost cell, then a barrier), the residual an
 * MPI_Allreduce.  MPI ranks are OpenSHMEM PEs.
 *
 *   mpicc shmem_halo.c $(pkg-config --cflags --libs sluice-shmem sluice-mpi) -o shmem_halo
 *   mpirun -n 4 ./shmem_halo               # MPI_Init first
 *   mpirun -n 4 ./shmem_halo shmem-first   # shmem_init first
 *
 * The ends of the rod are held at 1 (left) and 0 (right); after enough
 * iterations the profile is the straight line between them.  Prints the
 * residual and the largest distance from that line; exits 1 if that is
 * above 0.01, or if the ranks disagree on their numbering.
 */
#include <math.h>
#include <mpi.h>
#include <shmem.h>
#include <stdio.h>
#include <string.h>

#define CELLS 16
#define ITERATIONS 5000

int main(int argc, char **argv) {
    const int shmem_first = argc > 1 && strcmp(argv[1], "shmem-first") == 0;
    int rank = -1, size = 0;
    int mpi_up = 0;
    if (shmem_first) {
        shmem_init(); /* under mpirun, Sluice initializes MPI (docs/mpi-hybrid.md) */
        MPI_Initialized(&mpi_up);
        if (!mpi_up) MPI_Init(&argc, &argv);
    } else {
        MPI_Init(&argc, &argv);
        shmem_init();
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int me = shmem_my_pe(), npes = shmem_n_pes();
    if (me != rank || npes != size) {
        fprintf(stderr, "PE %d of %d is MPI rank %d of %d\n", me, npes, rank, size);
        shmem_global_exit(1);
    }

    /* u[0] and u[CELLS + 1] are the ghost cells. */
    double *u = shmem_calloc(CELLS + 2, sizeof(double));
    double next[CELLS + 2];
    const int left = me - 1, right = me + 1;
    if (me == 0) u[0] = 1.0; /* the left end of the rod */
    double residual = 0;
    for (int it = 0; it < ITERATIONS; ++it) {
        /* Halo: my first cell into my left neighbour's right ghost, my last into my right's left ghost. */
        if (left >= 0) shmem_double_put(&u[CELLS + 1], &u[1], 1, left);
        if (right < npes) shmem_double_put(&u[0], &u[CELLS], 1, right);
        shmem_barrier_all();
        double local = 0;
        for (int i = 1; i <= CELLS; ++i) {
            next[i] = 0.5 * (u[i - 1] + u[i + 1]);
            local += (next[i] - u[i]) * (next[i] - u[i]);
        }
        shmem_barrier_all(); /* every neighbour has read my cells */
        memcpy(&u[1], &next[1], CELLS * sizeof(double));
        if (it % 1000 == 999 || it == ITERATIONS - 1) {
            MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            residual = sqrt(residual);
            if (residual < 1e-12) break;
        }
    }
    /* The steady state: u(x) = 1 - x / L over the rod's npes * CELLS + 1 gaps. */
    double worst = 0;
    const double gaps = (double)npes * CELLS + 1;
    for (int i = 1; i <= CELLS; ++i) {
        const double x = (double)me * CELLS + i;
        const double d = fabs(u[i] - (1.0 - x / gaps));
        if (d > worst) worst = d;
    }
    double worst_all = 0;
    MPI_Allreduce(&worst, &worst_all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (me == 0) printf("shmem_halo: %d PEs, residual %.3g, largest error %.3g\n", npes, residual, worst_all);
    const int ok = worst_all < 0.01;
    shmem_free(u);
    shmem_finalize(); /* shmem first: this finalizes MPI too (Sluice started it) */
    int mpi_down = 0;
    MPI_Finalized(&mpi_down);
    if (!mpi_down) MPI_Finalize();
    return ok ? 0 : 1;
}
