// src/conduits/mpi/registration.cpp - the mpi conduit in the registry: what
// it is and whether MPI can carry it here.  Linked into libsluice-mpi, it
// registers when that library is loaded (linked by the program, or opened
// by the mpi bootstrap: SLUICE_MPI_LIBRARY).
#include "conduits/mpi/mpi.hpp"
#include "conduits/registry.hpp"

SLUICE_CONDUIT_REGISTER(mpi, {
    .name = "mpi",
    .description = "AMs as MPI point-to-point messages and Put/Get as MPI RMA or messages, on a communicator of Sluice's own",
    .priority = 1,  // below every native conduit: chosen by SLUICE_NETWORK=mpi
    .network = true,
    .capabilities = "AMs by MPI_Isend into persistent receives (needs AM credits); Put/Get by MPI_Rput/MPI_Rget on "
                    "a window over the segment (passive target), by messages (the payload one MPI message between "
                    "the two buffers), Gets on the window and Puts by messages, or over AMs (SLUICE_MPI_RMA); "
                    "a barrier by MPI_Ibarrier",
    .probe = sluice::conduit::mpi::probe,
    .create = sluice::conduit::mpi::make_mpi_transport,
    .limits = sluice::conduit::mpi::limits,
})
