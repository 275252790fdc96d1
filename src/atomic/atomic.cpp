// src/atomic/atomic.cpp - atomic domains (stub).
#include "atomic/atomic.hpp"

namespace sluice::atomic {

Status init(const coll::ClientEnv &) { return Status::ok; }
void fini() {}

} // namespace sluice::atomic
