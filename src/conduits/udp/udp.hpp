// src/conduits/udp/udp.hpp - the udp conduit: reliable active messages over
// UDP datagrams, for peers on other hosts (README.md).
#pragma once

#include "conduits/transport.hpp"

#include <memory>

namespace sluice::conduit::udp {

std::unique_ptr<Transport> make_udp_transport();

} // namespace sluice::conduit::udp
