/* consumer_mpi.c - a hybrid MPI + Sluice user program built against the
 * installed files only (tests/install/install.sh): <mpix_sluice.h> and
 * libsluice-mpi (or libsluice-mpi-mpich) found by pkg-config or CMake.
 *
 * MPI_Init, then Sluice over MPI_COMM_WORLD with MPIX_Sluice_init; checks
 * that Sluice ranks are world ranks both ways, runs a Sluice barrier and an
 * MPI_Allreduce, then sluice_finalize and MPI_Finalize.  Rank 0 prints one
 * line naming the MPI library it ran with (install.sh checks it is the
 * expected one); a failure prints a line on stderr and aborts the job. */
#include <mpix_sluice.h>

#include <stdio.h>
#include <string.h>

static void fail(const char *what, sluice_status_t st) {
    fprintf(stderr, "consumer_mpi: %s failed: %s (%s)\n", what, sluice_status_string(st),
            sluice_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(call)                                \
    do {                                           \
        sluice_status_t st_ = (call);              \
        if (st_ != SLUICE_OK) fail(#call, st_);    \
    } while (0)

int main(int argc, char **argv) {
    int wrank, wsize, r, sum = 0, len = 0, comm_rank = -1;
    sluice_rank_t s;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];

    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    CHECK(MPIX_Sluice_init(MPI_COMM_WORLD, &argc, &argv));
    if ((int)sluice_rank() != wrank || (int)sluice_size() != wsize) {
        fprintf(stderr, "consumer_mpi: Sluice rank %u of %u, MPI rank %d of %d\n",
                (unsigned)sluice_rank(), (unsigned)sluice_size(), wrank, wsize);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (r = 0; r < wsize; ++r) {
        CHECK(MPIX_Sluice_rank_from_comm(MPI_COMM_WORLD, r, &s));
        CHECK(MPIX_Sluice_rank_to_comm(MPI_COMM_WORLD, (sluice_rank_t)r, &comm_rank));
        if ((int)s != r || comm_rank != r) {
            fprintf(stderr, "consumer_mpi: rank translation: world %d -> Sluice %u, Sluice %d -> world %d\n",
                    r, (unsigned)s, r, comm_rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    CHECK(sluice_barrier());
    MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != wsize * (wsize - 1) / 2) {
        fprintf(stderr, "consumer_mpi: MPI_Allreduce gave %d, expected %d\n", sum, wsize * (wsize - 1) / 2);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    CHECK(sluice_finalize());
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n,")] = '\0'; /* "Open MPI v4.1.4" or "MPICH Version: 4.0.2" */
    for (r = 0; version[r] != '\0'; ++r)
        if (version[r] == '\t') version[r] = ' ';
    if (wrank == 0) printf("consumer_mpi: OK on %d ranks (translation, barrier, allreduce) with %s\n", wsize, version);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
