// src/conduits/udp/tests/udp_check.hpp - what the cases of sluice-udp-check
// share across its files (udp_check.cpp has the others and main).
#pragma once

#include "tests/rank_util.hpp"

namespace sluice_test::udp_check {

// This rank and the job's size, set by main after sluice_init.
extern sluice_rank_t me, nranks;

// intruder.cpp: strangers' datagrams on the conduit's sockets.
int case_intruder(int argc, char **argv);

} // namespace sluice_test::udp_check
