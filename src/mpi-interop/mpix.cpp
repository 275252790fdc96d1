// src/mpi-interop/mpix.cpp - the MPIX_Sluice_* calls of include/mpix_sluice.h.
#include "mpi-interop/mpi_interop.hpp"

#include "base/status.hpp"

#include <mpix_sluice.h>

#include <cstdlib>

using sluice::base::Status;

extern "C" sluice_status_t MPIX_Sluice_init(MPI_Comm comm, int *argc, char ***argv) {
    const char *op = "MPIX_Sluice_init";
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        return static_cast<int>(sluice::base::report(Status::state, op, "call MPI_Init (or MPI_Init_thread) first",
                                                     "MPI is not initialized"));
    if (comm == MPI_COMM_NULL)
        return static_cast<int>(sluice::base::report(Status::argument, op, "pass a valid communicator",
                                                     "the communicator is MPI_COMM_NULL"));
    sluice::mpi_interop::register_backend();
    sluice::mpi_interop::parent_set(comm);
    ::setenv("SLUICE_SPAWNER", "mpi", 1);
    return sluice_init(argc, argv);
}
