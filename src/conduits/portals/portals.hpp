// src/conduits/portals/portals.hpp - the portals conduit: active messages and
// RDMA over the Portals 4 API (README.md).
#pragma once

#include "conduits/transport.hpp"

#include <memory>
#include <string>

namespace sluice::conduit::portals {

std::unique_ptr<Transport> make_portals_transport();

// "" when PtlInit succeeds here, else why not.
std::string probe();

} // namespace sluice::conduit::portals
