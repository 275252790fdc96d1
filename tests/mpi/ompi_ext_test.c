/* tests/mpi/ompi_ext_test.c - one rank of a job under an Open MPI built with
 * Sluice's MPI extension (src/mpi-interop/ompi-ext, run by
 * tests/mpi/ompi-ext.sh).  The program never calls sluice_init: MPI_Init
 * starts Sluice and MPI_Finalize stops it.  Exit code 0 means the rank saw
 * everything it expected; the mode is the first argument.
 *
 * Built with -DOMPI_EXT_TEST_NO_SLUICE (no Sluice headers or libraries) it is
 * a plain MPI program, which the extension must leave alone. */
#include <mpi.h>
#include <mpi-ext.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef OMPI_HAVE_MPI_EXT_SLUICE
#error "<mpi-ext.h> has no sluice extension: configure Open MPI with --enable-mpi-ext=sluice"
#endif

static int failures;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "ompi_ext_test: %s:%d: expected %s\n", __FILE__, __LINE__, #cond);     \
            ++failures;                                                                            \
        }                                                                                          \
    } while (0)

static int world_rank(void) {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}
static int world_size(void) {
    int n = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

#ifdef OMPI_EXT_TEST_NO_SLUICE

int main(int argc, char **argv) {
    /* A plain MPI program: the extension starts nothing, unless told to
     * (argument "always", run with mpiext_sluice_start=always): then it
     * loads libsluice-mpi and starts Sluice all the same. */
    const int always = argc > 1 && !strcmp(argv[1], "always");
    MPI_Init(&argc, &argv);
    EXPECT(MPIX_Query_sluice_support() == (always ? MPIX_SLUICE_EXT_STARTED | MPIX_SLUICE_EXT_PROGRESS : 0));
    int me = world_rank(), sum = 0;
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT(sum == world_size() * (world_size() - 1) / 2);
    MPI_Finalize();
    return failures ? 1 : 0;
}

#else

#ifndef MPIX_SLUICE_H
#error "<mpi-ext.h> did not declare Sluice's MPIX_ API: put Sluice's include directory on the include path"
#endif

/* The MPIX_ API as declared through <mpi-ext.h>: a changed signature fails
 * to compile. */
static sluice_status_t (*const mpix_init)(MPI_Comm, int *, char ***) = MPIX_Sluice_init;
static sluice_status_t (*const mpix_from)(MPI_Comm, int, sluice_rank_t *) = MPIX_Sluice_rank_from_comm;
static sluice_status_t (*const mpix_to)(MPI_Comm, sluice_rank_t, int *) = MPIX_Sluice_rank_to_comm;
static sluice_status_t (*const mpix_comm)(const sluice_rank_t *, int, MPI_Comm *) = MPIX_Sluice_comm_create;
static sluice_status_t (*const mpix_win)(MPI_Win *) = MPIX_Sluice_win_create;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { H_PING = 1, H_PONG = 2, H_PING_MPI = 3 };
static volatile int pongs;
static volatile int in_mpi_wait;       /* this rank sits in an MPI call */
static volatile int answered_in_mpi;   /* a ping was answered during it */
static volatile int handler_mpi_calls; /* MPI calls made from handlers */

static void on_ping(sluice_token_t t, void *p, size_t n, const uint32_t *args, unsigned nargs) {
    (void)p, (void)n, (void)nargs;
    if (in_mpi_wait) answered_in_mpi = 1;
    uint32_t back = args[0] + 1;
    EXPECT(sluice_am_reply_short(t, H_PONG, &back, 1) == SLUICE_OK);
}
/* A handler that calls MPI (not waiting): MPI's progress then runs inside a
 * Sluice handler, where the extension must not poll Sluice (the job runs
 * with SLUICE_ERRORS_FATAL=1: a poll there would end it with code 1). */
static void on_ping_mpi(sluice_token_t t, void *p, size_t n, const uint32_t *args, unsigned nargs) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, &st);
    ++handler_mpi_calls;
    on_ping(t, p, n, args, nargs);
}
static void on_pong(sluice_token_t t, void *p, size_t n, const uint32_t *args, unsigned nargs) {
    (void)t, (void)p, (void)n, (void)nargs;
    if (args[0] == sluice_rank() + 1) ++pongs;
}

static void handlers_register(void) {
    EXPECT(sluice_handler_register(H_PING, on_ping, SLUICE_AM_SHORT, 1) == SLUICE_OK);
    EXPECT(sluice_handler_register(H_PONG, on_pong, SLUICE_AM_SHORT, 1) == SLUICE_OK);
    EXPECT(sluice_handler_register(H_PING_MPI, on_ping_mpi, SLUICE_AM_SHORT, 1) == SLUICE_OK);
    EXPECT(sluice_barrier() == SLUICE_OK); /* registered everywhere before anyone sends */
}

/* What MPI_Init did: Sluice runs over MPI_COMM_WORLD, ranks equal. */
static void started_checks(int want_bits) {
    EXPECT(MPIX_Query_sluice_support() == want_bits);
    EXPECT(sluice_initialized());
    EXPECT((int)sluice_rank() == world_rank());
    EXPECT((int)sluice_size() == world_size());
    sluice_rank_t s = 99;
    int c = -1;
    EXPECT(mpix_from(MPI_COMM_WORLD, world_rank(), &s) == SLUICE_OK && (int)s == world_rank());
    EXPECT(mpix_to(MPI_COMM_WORLD, sluice_rank(), &c) == SLUICE_OK && c == world_rank());
}

/* An AM round trip with every rank (handlers calling MPI), Put and Get
 * into every segment, MPI beside them. */
static void traffic(void) {
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    EXPECT(sluice_segment_attach(4096) == SLUICE_OK);
    handlers_register();
    pongs = 0;
    for (sluice_rank_t r = 0; r < n; ++r) {
        uint32_t arg = me;
        EXPECT(sluice_am_request_short(r, H_PING_MPI, &arg, 1) == SLUICE_OK);
        void *base = NULL;
        size_t size = 0;
        EXPECT(sluice_segment_info(r, &base, &size) == SLUICE_OK);
        uint32_t value = 1000 + me, back = 0;
        EXPECT(sluice_put(r, (char *)base + 4 * me, &value, 4) == SLUICE_OK);
        EXPECT(sluice_get(&back, r, (char *)base + 4 * me, 4) == SLUICE_OK);
        EXPECT(back == 1000 + me);
    }
    const double deadline = now() + 20;
    while (pongs < (int)n && now() < deadline) EXPECT(sluice_poll() == SLUICE_OK);
    EXPECT(pongs == (int)n);
    EXPECT(sluice_barrier() == SLUICE_OK);
    EXPECT(handler_mpi_calls == (int)n);
    void *mine = NULL;
    size_t size = 0;
    EXPECT(sluice_segment_info(me, &mine, &size) == SLUICE_OK);
    for (sluice_rank_t r = 0; r < n; ++r) {
        uint32_t v;
        memcpy(&v, (char *)mine + 4 * r, 4);
        EXPECT(v == 1000 + r);
    }
    int sum = 0, wr = world_rank();
    MPI_Allreduce(&wr, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    EXPECT(sum == world_size() * (world_size() - 1) / 2);
    EXPECT(sluice_barrier() == SLUICE_OK);
}

/* Rank 0 pings every other rank while they sit in MPI_Barrier: only Sluice's
 * poll inside MPI's progress answers.  Exit code 3 when no answer came
 * within `wait` seconds (the check without the hook expects that).  With
 * `handler` H_PING_MPI the handler, run by the hook inside MPI_Barrier,
 * calls MPI itself (the hook must not recurse into Sluice). */
static int progress_check(double wait, sluice_handler_t handler) {
    handlers_register();
    const int me = world_rank(), n = world_size();
    int code = 0;
    if (me == 0) {
        /* The others go straight from the barrier above into MPI_Barrier:
         * give them time to get there, so no ping is answered before. */
        struct timespec t = {0, 300 * 1000 * 1000};
        nanosleep(&t, NULL);
        pongs = 0;
        for (int r = 1; r < n; ++r) {
            uint32_t arg = 0;
            EXPECT(sluice_am_request_short((sluice_rank_t)r, handler, &arg, 1) == SLUICE_OK);
        }
        const double start = now(), deadline = start + wait;
        while (pongs < n - 1 && now() < deadline) EXPECT(sluice_poll() == SLUICE_OK);
        if (pongs < n - 1) {
            fprintf(stderr, "ompi_ext_test: %d of %d ranks waiting in MPI_Barrier answered within %.0f s\n", pongs,
                    n - 1, wait);
            code = 3;
        } else {
            printf("ompi_ext_test: %d ranks in MPI_Barrier answered in %.1f us\n", n - 1, 1e6 * (now() - start));
        }
    }
    in_mpi_wait = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    in_mpi_wait = 0;
    if (me != 0 && !answered_in_mpi) code = 3;
    EXPECT(sluice_barrier() == SLUICE_OK); /* every pong delivered before finalize */
    return code;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int code = 0;
    if (!strcmp(mode, "basic")) {
        /* MPI_Init started Sluice; MPI_Finalize stops it. */
        MPI_Init(&argc, &argv);
        started_checks(MPIX_SLUICE_EXT_STARTED | MPIX_SLUICE_EXT_PROGRESS);
        traffic();
        MPI_Finalize();
        EXPECT(!sluice_initialized());
    } else if (!strcmp(mode, "progress") || !strcmp(mode, "progress-handler-mpi") || !strcmp(mode, "no-progress")) {
        /* With the hook (progress): every rank in MPI_Barrier answers.
         * Without it (mpiext_sluice_progress=0): none does, code 3. */
        MPI_Init(&argc, &argv);
        const int hook = strcmp(mode, "no-progress") != 0;
        started_checks(MPIX_SLUICE_EXT_STARTED | (hook ? MPIX_SLUICE_EXT_PROGRESS : 0));
        code = progress_check(hook ? 20 : 2, !strcmp(mode, "progress-handler-mpi") ? H_PING_MPI : H_PING);
        MPI_Finalize();
    } else if (!strcmp(mode, "manual")) {
        /* mpiext_sluice_start=never: the program starts Sluice itself (here
         * over MPI_COMM_WORLD); the progress hook works all the same. */
        MPI_Init(&argc, &argv);
        EXPECT(MPIX_Query_sluice_support() == MPIX_SLUICE_EXT_PROGRESS);
        EXPECT(!sluice_initialized());
        EXPECT(mpix_init(MPI_COMM_WORLD, &argc, &argv) == SLUICE_OK);
        started_checks(MPIX_SLUICE_EXT_PROGRESS);
        code = progress_check(20, H_PING);
        EXPECT(sluice_finalize() == SLUICE_OK);
        MPI_Finalize();
    } else if (!strcmp(mode, "window")) {
        /* The MPIX_ window and communicator calls on the Sluice job MPI_Init
         * started. */
        MPI_Init(&argc, &argv);
        started_checks(MPIX_SLUICE_EXT_STARTED | MPIX_SLUICE_EXT_PROGRESS);
        const sluice_rank_t n = sluice_size(), me = sluice_rank();
        sluice_rank_t *list = malloc(n * sizeof *list);
        for (sluice_rank_t s = 0; s < n; ++s) list[s] = n - 1 - s;
        MPI_Comm rev = MPI_COMM_NULL;
        EXPECT(mpix_comm(list, (int)n, &rev) == SLUICE_OK);
        int rr = -1;
        MPI_Comm_rank(rev, &rr);
        EXPECT(rr == (int)(n - 1 - me));
        MPI_Comm_free(&rev);
        free(list);
        EXPECT(sluice_segment_attach(4096) == SLUICE_OK);
        MPI_Win win;
        EXPECT(mpix_win(&win) == SLUICE_OK);
        const sluice_rank_t next = (me + 1) % n;
        uint32_t value = 7000 + me, back = 0;
        MPI_Win_lock_all(0, win);
        MPI_Put(&value, 4, MPI_BYTE, (int)next, 64, 4, MPI_BYTE, win);
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        void *base = NULL;
        size_t size = 0;
        EXPECT(sluice_segment_info(next, &base, &size) == SLUICE_OK);
        EXPECT(sluice_get(&back, next, (char *)base + 64, 4) == SLUICE_OK);
        EXPECT(back == 7000 + me);
        MPI_Win_free(&win);
        MPI_Finalize();
    } else if (!strcmp(mode, "return-from-main")) {
        /* Return from main with MPI and Sluice running: Sluice's exit
         * finalizes MPI, job code 0. */
        MPI_Init(&argc, &argv);
        started_checks(MPIX_SLUICE_EXT_STARTED | MPIX_SLUICE_EXT_PROGRESS);
        traffic();
        return failures ? 1 : 0;
    } else if (!strcmp(mode, "exit-in-mpi")) {
        /* sluice_exit(5) on the last rank while the others sit in
         * MPI_Barrier: the exit reaches them through MPI's progress. */
        MPI_Init(&argc, &argv);
        started_checks(MPIX_SLUICE_EXT_STARTED | MPIX_SLUICE_EXT_PROGRESS);
        EXPECT(sluice_barrier() == SLUICE_OK);
        if (sluice_rank() == sluice_size() - 1) {
            struct timespec t = {0, 200 * 1000 * 1000};
            nanosleep(&t, NULL); /* let the others reach MPI_Barrier */
            sluice_exit(5);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        return 1; /* not reached */
    } else {
        fprintf(stderr,
                "usage: %s basic|progress|progress-handler-mpi|no-progress|manual|window|return-from-main|"
                "exit-in-mpi\n",
                argv[0]);
        return 2;
    }
    return failures ? 1 : code;
}

#endif
