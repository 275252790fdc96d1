// src/conduits/smp/smp.hpp - the shared-memory conduit (ranks on one host).
#pragma once

#include "conduits/transport.hpp"

#include <memory>

namespace sluice::conduit::smp {

std::unique_ptr<Transport> make_smp_transport();

// Bytes of shared memory one rank accounts for outside its segment, for a
// host of `local_ranks` ranks with the current knobs (reported by the
// benchmark; grows linearly in `local_ranks`).
std::size_t shared_bytes_per_rank(std::size_t local_ranks);

} // namespace sluice::conduit::smp
