/* tests/perf/srun-startup-mpi.c - the empty Open MPI program that
 * tests/perf/srun-startup.sh starts with srun --mpi=pmix, next to an empty
 * Sluice program (sluice-spawn-test empty). */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}
