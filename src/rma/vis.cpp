// src/rma/vis.cpp - VIS (stub).
#include "rma/vis.hpp"

namespace sluice::rma {

void vis_init(am::AmEngine &, RmaEngine &) {}

} // namespace sluice::rma
