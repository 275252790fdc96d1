// src/conduits/lapi/lapi.hpp - the lapi conduit: active messages and RDMA
// over IBM's LAPI (README.md).
#pragma once

#include "conduits/transport.hpp"

#include <memory>
#include <string>

namespace sluice::conduit::lapi {

std::unique_ptr<Transport> make_lapi_transport();

// "" when the job has a LAPI job key (POE's MP_PARTITION) and liblapi
// opens, else why not.
std::string probe();

// Lines for sluice-info: the library and POE's variables.
std::string limits();

} // namespace sluice::conduit::lapi
