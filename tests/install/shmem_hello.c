/* tests/install/shmem_hello.c - the smallest OpenSHMEM program, built from
 * an install prefix with oshcc (tests/install/prefix.sh): each PE puts its
 * number into its right neighbour's symmetric variable and checks what its
 * left neighbour put. */
#include <shmem.h>
#include <stdio.h>

static int from_left = -1;

int main(void) {
    shmem_init();
    const int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_p(&from_left, me, (me + 1) % npes);
    shmem_barrier_all();
    const int ok = from_left == (me + npes - 1) % npes;
    int *all_ok = shmem_malloc(sizeof(int));
    *all_ok = 1;
    shmem_barrier_all();
    if (!ok) shmem_int_atomic_set(all_ok, 0, 0);
    shmem_barrier_all();
    if (me == 0) printf("shmem hello: %d PEs %s\n", npes, *all_ok ? "OK" : "FAILED");
    const int result = *all_ok ? 0 : 1;
    shmem_free(all_ok);
    shmem_finalize();
    return result;
}
