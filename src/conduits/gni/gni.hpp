// src/conduits/gni/gni.hpp - the gni conduit: active messages and RDMA over
// Cray's uGNI (README.md).
#pragma once

#include "conduits/transport.hpp"

#include <memory>
#include <string>

namespace sluice::conduit::gni {

std::unique_ptr<Transport> make_gni_transport();

// "" when the job's uGNI credentials (PMI_GNI_*) are set and libugni
// opens, else why not.
std::string probe();

// Lines for sluice-info: the library and the credentials.
std::string limits();

} // namespace sluice::conduit::gni
