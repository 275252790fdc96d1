// src/coll/env.hpp - what the client layers above src/rma (teams and
// collectives, atomic domains, VIS) are given by src/core at init.
#pragma once

#include "am/am.hpp"
#include "rma/rma.hpp"

#include <cstdint>
#include <vector>

namespace sluice::coll {

using am::Rank;
using base::Status;

struct ClientEnv {
    am::AmEngine *am = nullptr;
    rma::RmaEngine *rma = nullptr;
    const am::SegmentTable *segments = nullptr;
    Rank rank = 0, size = 1;
    std::vector<std::uint32_t> host_of;  // host index of every rank
    std::uint32_t host_count = 1;
    // The runtime's poll: AM progress, the progress hooks, and parking a
    // thread while the job exits.  What every wait loop of these layers runs.
    void (*poll)() = nullptr;
};

} // namespace sluice::coll
