// src/conduits/ibv/ibv.hpp - the ibv conduit: active messages and RDMA over
// InfiniBand verbs (README.md).
#pragma once

#include "conduits/transport.hpp"

#include <memory>
#include <string>

namespace sluice::conduit::ibv {

std::unique_ptr<Transport> make_ibv_transport();

// "" when a verbs device has an active port that SLUICE_IBV_PORTS selects,
// else why not.
std::string probe();

// Lines for sluice-info: the port that would be chosen.
std::string limits();

} // namespace sluice::conduit::ibv
