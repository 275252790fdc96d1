/* tests/spawn/slurm/hybrid.c - an MPI program that also uses Sluice, linked
 * with libsluice only (no libsluice-mpi), so Sluice bootstraps over the PMI
 * srun offers while the MPI uses the same PMI (tests/spawn/slurm.sh builds
 * it with each MPI's mpicc).
 *
 *   hybrid [sluice-first]   MPI_Init then sluice_init (default), or the
 *                           other way round; finalizes Sluice first
 * Each rank puts its rank into its right neighbour's segment, then prints
 * "mpi R of N sluice R of N". */
#include <mpi.h>
#include <sluice.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sluice_start(int *argc, char ***argv) {
    int mpi_up = 0;
    if (sluice_init(argc, argv) == SLUICE_OK) return;
    fprintf(stderr, "hybrid: sluice_init failed: %s\n", sluice_last_error());
    MPI_Initialized(&mpi_up);
    if (mpi_up) MPI_Abort(MPI_COMM_WORLD, 5);
    exit(5);
}

/* Each rank puts its rank into its right neighbour's segment: data over
 * whichever conduit reaches it (SLUICE_NETWORK=mpi: MPI RMA, or AMs). */
static void ring(void) {
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    const sluice_rank_t right = (me + 1) % n, left = (me + n - 1) % n;
    void *mine = NULL, *theirs = NULL;
    size_t size = 0;
    uint64_t value = me;
    if (sluice_segment_attach(4096) != SLUICE_OK || sluice_segment_info(me, &mine, &size) != SLUICE_OK ||
        sluice_segment_info(right, &theirs, &size) != SLUICE_OK ||
        sluice_put(right, theirs, &value, sizeof value) != SLUICE_OK || sluice_barrier() != SLUICE_OK) {
        fprintf(stderr, "hybrid: ring on rank %u: %s\n", me, sluice_last_error());
        MPI_Abort(MPI_COMM_WORLD, 7);
    }
    if (*(volatile uint64_t *)mine != left) {
        fprintf(stderr, "hybrid: rank %u found %llu from rank %u\n", me, (unsigned long long)*(uint64_t *)mine, left);
        MPI_Abort(MPI_COMM_WORLD, 8);
    }
}

int main(int argc, char **argv) {
    const int sluice_first = argc > 1 && strcmp(argv[1], "sluice-first") == 0;
    int rank = 0, size = 0;
    if (sluice_first) sluice_start(&argc, &argv);
    MPI_Init(&argc, &argv);
    if (!sluice_first) sluice_start(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ring();
    printf("mpi %d of %d sluice %u of %u\n", rank, size, sluice_rank(), sluice_size());
    fflush(stdout);
    if (sluice_finalize() != SLUICE_OK) MPI_Abort(MPI_COMM_WORLD, 6);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
