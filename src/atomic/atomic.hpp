// src/atomic/atomic.hpp - atomic domains (stub: filled in by the atomics work).
#pragma once

#include "coll/env.hpp"

namespace sluice::atomic {

using base::Status;

// Called by src/core: at init, after src/coll's init; at finalize.
Status init(const coll::ClientEnv &env);
void fini();

} // namespace sluice::atomic
