// tests/mpi/interpose_test.cpp - an MPI program that never calls Sluice's
// init or finalize, linked with libsluice-mpi-interpose: Sluice must be up
// right after MPI_Init (Sluice rank = world rank) and move data, and gone
// after MPI_Finalize.  Exit code 0 means all of that held.
#include <mpi.h>
#include <sluice.h>

#include <cstdio>

int main(int argc, char **argv) {
    int failures = 0;
    auto expect = [&](bool ok, const char *what) {
        if (!ok) {
            std::fprintf(stderr, "interpose_test: expected %s\n", what);
            ++failures;
        }
    };
    MPI_Init(&argc, &argv);
    int me = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    expect(sluice_initialized(), "Sluice running after MPI_Init");
    expect(static_cast<int>(sluice_rank()) == me && static_cast<int>(sluice_size()) == n, "Sluice rank = world rank");
    expect(sluice_segment_attach(4096) == SLUICE_OK, "a segment");
    const sluice_rank_t next = (sluice_rank() + 1) % sluice_size();
    void *base = nullptr;
    size_t size = 0;
    expect(sluice_segment_info(next, &base, &size) == SLUICE_OK, "the neighbour's segment");
    int value = 100 + me;
    expect(sluice_put(next, base, &value, sizeof value) == SLUICE_OK, "a Put");
    expect(sluice_barrier() == SLUICE_OK, "a barrier");
    void *mine = nullptr;
    expect(sluice_segment_info(sluice_rank(), &mine, &size) == SLUICE_OK, "my segment");
    expect(*static_cast<int *>(mine) == 100 + (me + n - 1) % n, "the neighbour's value");
    MPI_Finalize();
    expect(!sluice_initialized(), "Sluice gone after MPI_Finalize");
    return failures ? 1 : 0;
}
