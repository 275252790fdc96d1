// tests/perf/worker.hpp - what the worker kinds (one rank of a Sluice job
// the driver starts) share: failing a call, the transport check of the udp
// kinds, and the kinds that live in their own file.
#pragma once

#include "tests/perf/bench_common.hpp"

#include <sluice.h>

#include <cstdio>

namespace sluice::perf {

[[noreturn]] inline void fail(const char *what, sluice_status_t status) {
    std::fprintf(stderr, "sluice-bench worker rank %u: %s failed: %s: %s\n", sluice_rank(),
                 what, sluice_status_string(status), sluice_last_error());
    sluice_exit(3);
}
inline void check(sluice_status_t status, const char *what) {
    if (__builtin_expect(status != SLUICE_OK, 0))
        fail(what, status);
}

// The udp kinds run with SLUICE_ROUTE=network; a rank without a UDP socket
// after sluice_init is not on the udp conduit (a build without it, or a
// routing knob it ignores), and its figures would be smp's under udp names.
// Returns the count (0 allowed with --any-transport, the benchmark's own test).
int udp_transport_sockets(const CommonOptions &o);

// Worker exactly-once (exactly_once.cpp): each of 2 ranks sends --count AM
// Short requests numbered 0..count-1 to the other; the handler marks a
// bitmap; lost and repeated messages are counted.
int exactly_once_main(const CommonOptions &o);

// Worker ofi-large (large_segment.cpp): random 64 KiB Puts over a 1 GiB
// segment, under SLUICE_SEGMENT as the driver sets it.
int large_segment_main(const CommonOptions &o);

} // namespace sluice::perf
