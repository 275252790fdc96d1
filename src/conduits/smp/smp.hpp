// src/conduits/smp/smp.hpp - the shared-memory conduit (ranks on one host).
#pragma once

#include "conduits/transport.hpp"

#include <memory>

namespace sluice::conduit::smp {

std::unique_ptr<Transport> make_smp_transport();

} // namespace sluice::conduit::smp
