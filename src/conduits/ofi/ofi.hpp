// src/conduits/ofi/ofi.hpp - the ofi conduit: active messages and RDMA over
// a libfabric provider (README.md).
#pragma once

#include "conduits/transport.hpp"

#include <memory>
#include <string>

namespace sluice::conduit::ofi {

std::unique_ptr<Transport> make_ofi_transport();

// "" when a provider of SLUICE_OFI_PROVIDER (else of the default order)
// offers reliable datagram endpoints with messages and RMA, else why not.
std::string probe();

// Lines for sluice-info: the provider that would be chosen and the knobs.
std::string limits();

} // namespace sluice::conduit::ofi
