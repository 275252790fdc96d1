// tests/mp/mp_cases.hpp - the cases of sluice-mp-test, one function each.
//
// sluice-mp-test <case> [args]: a plain Sluice program that the driver
// (mp_driver.cpp) runs under sluicerun.  A case returns 0 when every check
// passed; a failed check ends the job with code 1 and a FAIL line.
#pragma once

#include "tests/rank_util.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice_test::mp {

// Every rank's segment, learned after sluice_segment_attach.
struct SegmentView {
    std::uint8_t *base = nullptr;
    std::size_t size = 0;
};
extern std::vector<SegmentView> segments;
extern sluice_rank_t me, nranks;

// Attaches `bytes` and fills `segments`.
void attach(std::size_t bytes);
std::uint8_t *my_segment();

// Prints "EXPECTED-ERRORS rank R n" on stdout: the driver counts the error
// lines on stderr against it.
void report_expected_errors();

int case_basic(int argc, char **argv);
int case_host(int argc, char **argv);
int case_allgather(int argc, char **argv);
int case_barrier(int argc, char **argv);
int case_delivery(int argc, char **argv);
int case_am(int argc, char **argv);
int case_args(int argc, char **argv);
int case_chain(int argc, char **argv);
int case_hidden(int argc, char **argv);
int case_flood(int argc, char **argv);
int case_hotspot(int argc, char **argv);
int case_rma(int argc, char **argv);
int case_segment(int argc, char **argv);
int case_threads(int argc, char **argv);
int case_bad(int argc, char **argv);
int case_immediate(int argc, char **argv);
int case_atomic(int argc, char **argv);      // mp_atomic.cpp
int case_team(int argc, char **argv);        // mp_coll.cpp
int case_coll(int argc, char **argv);        // mp_coll.cpp
int case_vis(int argc, char **argv);         // mp_vis.cpp
int case_completion(int argc, char **argv);  // mp_vis.cpp
int case_prepare(int argc, char **argv);     // mp_prepare.cpp
void bad_before_init();

} // namespace sluice_test::mp
