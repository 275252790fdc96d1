/* tests/shmem/bad_input.c - OpenSHMEM calls with bad arguments: each mode
 * makes one mistake on every PE (or on PE 0 where said) and must end the
 * job with one line naming the call and the fix (tests/shmem/bad-input.sh
 * checks the lines and the exit code).  Mode "ok" makes none, and checks
 * a global 8 bytes past a 16-byte boundary both ways. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long global_word;
/* A global 8 bytes past a 16-byte boundary: translated by its exact offset
 * (an implementation that rounds static data to 16 bytes puts it 8 low). */
static struct {
    long first, second;
} __attribute__((aligned(16))) pair;

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "ok";
    if (!strcmp(mode, "before-init")) return shmem_my_pe();
    shmem_init();
    const int me = shmem_my_pe(), npes = shmem_n_pes();
    long *heap = shmem_malloc(4 * sizeof(long));
    long local = 0;
    if (!strcmp(mode, "not-symmetric")) {
        shmem_long_p(&local, 1, (me + 1) % npes);
    } else if (!strcmp(mode, "bad-pe")) {
        shmem_long_p(heap, 1, npes);
    } else if (!strcmp(mode, "negative-pe")) {
        (void)shmem_long_g(&global_word, -1);
    } else if (!strcmp(mode, "ctx-destroyed")) {
        shmem_ctx_t ctx;
        if (shmem_ctx_create(0, &ctx) != 0) return 2;
        shmem_ctx_destroy(ctx);
        shmem_ctx_long_p(ctx, heap, 1, 0);
    } else if (!strcmp(mode, "team-destroyed")) {
        shmem_team_t team;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &team);
        shmem_team_destroy(team);
        shmem_team_sync(team);
    } else if (!strcmp(mode, "heap-too-big")) {
        (void)shmem_malloc((size_t)1 << 50);
    } else if (!strcmp(mode, "after-finalize")) {
        shmem_finalize();
        return shmem_n_pes();
    } else if (!strcmp(mode, "bad-compare")) {
        shmem_long_wait_until(heap, 99, 0);
    } else if (!strcmp(mode, "misaligned-atomic")) {
        (void)shmem_long_atomic_fetch_add((long *)((char *)heap + 4), 1, (me + 1) % npes);
    } else if (!strcmp(mode, "bad-free")) {
        shmem_free(heap + 1);
    } else if (!strcmp(mode, "ok")) {
        /* Static data at 8 mod 16, both ways: the neighbour's second word only. */
        if (((unsigned long)&pair.second & 15) != 8) return 3;
        shmem_long_p(&pair.second, 100 + me, (me + 1) % npes);
        shmem_barrier_all();
        const long left = (me + npes - 1) % npes;
        if (pair.first != 0 || pair.second != 100 + left) {
            fprintf(stderr, "bad_input: PE %d: static pair holds %ld, %ld; expected 0, %ld\n", me, pair.first,
                    pair.second, 100 + left);
            return 4;
        }
        if (shmem_long_g(&pair.second, (me + 1) % npes) != 100 + me) return 5;
    } else {
        fprintf(stderr, "bad_input: unknown mode %s\n", mode);
        return 2;
    }
    shmem_free(heap);
    shmem_finalize();
    return 0;
}
