// src/mpi-interop/interpose.cpp - libsluice-mpi-interpose: Sluice started
// and stopped by MPI itself, for programs whose source cannot change (a
// legacy MPI program linked with a library built on Sluice).
//
// It defines MPI_Init, MPI_Init_thread and MPI_Finalize through the PMPI
// profiling interface: after MPI is up, Sluice starts over MPI_COMM_WORLD;
// before MPI goes down, Sluice finalizes.  MPI_Abort needs nothing: Sluice's
// shared-memory names are gone once start-up ends, and MPI kills the job.
// Being a PMPI tool itself, it cannot be combined with another PMPI tool
// (profilers, tracers) in the same program; docs/mpi-hybrid.md says so.
#include <mpix_sluice.h>

#include <cstdio>

namespace {

void sluice_start(int *argc, char ***argv) {
    if (sluice_initialized()) return;
    if (MPIX_Sluice_init(MPI_COMM_WORLD, argc, argv) != SLUICE_OK)
        std::fprintf(stderr, "sluice-mpi-interpose: Sluice did not start (%s); the program runs without it\n",
                     sluice_last_error());
}

} // namespace

extern "C" {

int MPI_Init(int *argc, char ***argv) {
    const int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) sluice_start(argc, argv);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    const int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) sluice_start(argc, argv);
    return rc;
}

int MPI_Finalize(void) {
    if (sluice_initialized()) (void)sluice_finalize();
    return PMPI_Finalize();
}

} // extern "C"
