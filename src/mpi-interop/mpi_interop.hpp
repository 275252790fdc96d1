// src/mpi-interop/mpi_interop.hpp - libsluice-mpi's internals: the mpi
// bootstrap backend and what the MPIX_ calls tell it.
#pragma once

#include "spawners/bootstrap.hpp"

#include <mpi.h>

namespace sluice::mpi_interop {

// Adds the "mpi" backend to the bootstrap table (once; also done when the
// library is loaded).
void register_backend();
// The communicator the next sluice_init bootstraps over (a duplicate of it).
void parent_set(MPI_Comm comm);
// The running Sluice job's private communicator (Sluice rank = rank in it),
// or MPI_COMM_NULL when Sluice does not run over the mpi bootstrap.
MPI_Comm job_comm();

} // namespace sluice::mpi_interop
