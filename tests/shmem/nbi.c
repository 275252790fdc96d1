/* tests/shmem/nbi.c - _nbi Puts and Gets in flight and the quiets that
 * complete them, per context (tests/shmem/nbi.sh runs it on smp and on the
 * network conduits).  Each PE, on a private context of its own and on the
 * default one at once:
 *   - puts COUNT distinct words into its right neighbour's array with
 *     shmem_ctx_long_put_nbi (more than a context keeps before it reaps),
 *     gets COUNT words of its left neighbour's with shmem_ctx_getmem_nbi,
 *     and quiets only that context;
 *   - does the same on SHMEM_CTX_DEFAULT with shmem_putmem_nbi and
 *     shmem_quiet;
 *   - destroys a context with transfers still in flight (destroy completes
 *     them);
 * then checks every word after a barrier.  Prints "nbi: N PEs ok" on PE 0. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 5000

static void check(const long *a, long base, const char *what, int me) {
    for (long i = 0; i < COUNT; ++i)
        if (a[i] != base + i) {
            fprintf(stderr, "nbi: PE %d: %s[%ld] is %ld, expected %ld\n", me, what, i, a[i], base + i);
            exit(1);
        }
}

int main(void) {
    shmem_init();
    const int me = shmem_my_pe(), n = shmem_n_pes();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    long *by_ctx = shmem_calloc(COUNT, sizeof(long));
    long *by_default = shmem_calloc(COUNT, sizeof(long));
    long *by_destroyed = shmem_calloc(COUNT, sizeof(long));
    long *source = shmem_malloc(COUNT * sizeof(long));
    long *got = malloc(COUNT * sizeof(long));
    long *values = malloc(COUNT * sizeof(long));
    for (long i = 0; i < COUNT; ++i) source[i] = 1000000L * me + i;
    shmem_barrier_all();

    shmem_ctx_t ctx;
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) {
        fprintf(stderr, "nbi: PE %d: shmem_ctx_create failed\n", me);
        return 1;
    }
    for (long i = 0; i < COUNT; ++i) {
        values[i] = 1000000L * me + i;
        shmem_ctx_long_put_nbi(ctx, &by_ctx[i], &values[i], 1, right);
    }
    shmem_ctx_getmem_nbi(ctx, got, source, COUNT * sizeof(long), left);
    shmem_ctx_quiet(ctx);
    check(got, 1000000L * left, "got (context)", me);

    shmem_putmem_nbi(by_default, values, COUNT * sizeof(long), right);
    for (long i = 0; i < COUNT; ++i) got[i] = -1;
    for (long i = 0; i < COUNT; ++i) shmem_getmem_nbi(&got[i], &source[i], sizeof(long), left);
    shmem_quiet();
    check(got, 1000000L * left, "got (default)", me);

    shmem_ctx_t doomed;
    if (shmem_ctx_create(0, &doomed) != 0) return 1;
    for (long i = 0; i < COUNT; ++i) shmem_ctx_long_put_nbi(doomed, &by_destroyed[i], &values[i], 1, right);
    shmem_ctx_destroy(doomed);
    shmem_ctx_destroy(ctx);

    shmem_barrier_all();
    check(by_ctx, 1000000L * left, "by_ctx", me);
    check(by_default, 1000000L * left, "by_default", me);
    check(by_destroyed, 1000000L * left, "by_destroyed", me);
    shmem_barrier_all();
    if (me == 0) printf("nbi: %d PEs ok\n", n);
    free(values);
    free(got);
    shmem_free(source);
    shmem_free(by_destroyed);
    shmem_free(by_default);
    shmem_free(by_ctx);
    shmem_finalize();
    return 0;
}
