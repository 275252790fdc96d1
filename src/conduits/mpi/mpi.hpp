// src/conduits/mpi/mpi.hpp - the mpi conduit: active messages as MPI
// point-to-point messages and Put/Get as MPI RMA, for networks Sluice has
// no native conduit for (README.md).  Built into libsluice-mpi, never into
// libsluice: it is the one conduit that needs MPI.
#pragma once

#include "conduits/transport.hpp"

#include <memory>
#include <string>

namespace sluice::conduit::mpi {

std::unique_ptr<Transport> make_mpi_transport();

// "" when MPI is initialized (by the program or by Sluice's mpi
// bootstrap) and not finalized, else why not.
std::string probe();

// Lines for sluice-info: the MPI library and its thread level.
std::string limits();

} // namespace sluice::conduit::mpi
