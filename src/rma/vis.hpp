// src/rma/vis.hpp - VIS: vector, indexed and strided Put and Get (stub).
#pragma once

#include "rma/rma.hpp"

namespace sluice::rma {

// Called by src/core at init, after the RMA engine is configured.
void vis_init(am::AmEngine &am, RmaEngine &rma);

} // namespace sluice::rma
