// src/conduits/ibv/physmem.hpp - the pinnable-memory limit, as GASNet-EX's
// ibv conduit computes it
// (SLUICE_PHYSMEM_MAX): how much memory a rank may register, which bounds
// its segment.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::conduit::ibv {

// SLUICE_PHYSMEM_MAX's value in bytes for this host: a number below 1
// ("0.5") or a fraction ("2/3") of `physical`, or a size ("12G", "512M",
// "1T").  False, with `why`, when it is none of these.
bool physmem_parse(const std::string &text, std::uint64_t physical, std::uint64_t &bytes, std::string &why);

} // namespace sluice::conduit::ibv
