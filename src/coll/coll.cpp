// src/coll/coll.cpp - teams and collectives (stub).
#include "coll/coll.hpp"

namespace sluice::coll {

Status init(const ClientEnv &) { return Status::ok; }
void fini() {}

} // namespace sluice::coll
