// src/coll/coll.hpp - teams and collectives (stub: filled in by the teams work).
#pragma once

#include "coll/env.hpp"

namespace sluice::coll {

// Called by src/core: at init, after the AM engine is configured; at
// finalize, before the last barrier.
Status init(const ClientEnv &env);
void fini();

} // namespace sluice::coll
