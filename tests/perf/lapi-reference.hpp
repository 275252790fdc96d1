// tests/perf/lapi-reference.hpp - the bare LAPI reference for the lapi
// section of sluice-bench: what the same LAPI does without Sluice, between
// two processes, in the mode the conduit runs (LAPI_Senv INTERRUPT_SET).
// A ping is an 8 B LAPI_Amsend to a header handler that takes nothing,
// whose target counter (tgt_cntr, at the peer) the peer waits for before
// it answers the same way; an RMA is LAPI_Put (its completion counter) or
// LAPI_Get (its origin counter) between one region on each side, waited
// for.  A wait polls LAPI_Getcntr (which runs LAPI's dispatcher), as the
// conduit's poll does, not LAPI_Waitcntr, which on the software LAPI
// sleeps between dispatches (lapi-reference.cpp).  Here LAPI is the software
// one (tests/softnic/lapi), so the figures measure its fabric and
// dispatcher, not an SP switch.
//
// LAPI allows one handle per process.  Beside the conduit the reference
// takes the process's live handle (the conduit's: the one LAPI_Qenv
// answers for), with a header handler at an index of its own; alone (the
// check program) it opens and ends its own with LAPI_Init, which reads
// POE's variables (the conduit restores the environment after its own).  liblapi is opened with dlopen, by the name the
// conduit opens (src/conduits/lapi/lapi_api.hpp), so a process holds one
// copy of it.  Built with lapi.h only (SLUICE_BENCH_LAPI, set in
// tests/perf/Makefile.inc when configure found it); otherwise open() fails
// with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#if defined(SLUICE_BENCH_LAPI) && __has_include(<lapi.h>)
#define SLUICE_BENCH_HAVE_LAPI 1
#else
#define SLUICE_BENCH_HAVE_LAPI 0
#endif

namespace sluice::perf {

// What one process tells the other to send to it and reach its region:
// its task and the addresses of its counters and region.
struct LapiCard {
    std::uint32_t task = 0;
    std::uint32_t pad = 0;
    std::uint64_t ping_counter = 0;    // moved by each of this side's pings (and pongs)
    std::uint64_t finish_counter = 0;  // moved by finish()
    std::uint64_t region = 0;
};

enum class LapiRma { put, get };

class LapiReference {
public:
    // The reference's header handler's LAPI_Addr_set index, clear of the
    // conduit's (1 and 2, src/conduits/lapi/lapi_transport.hpp).
    static constexpr int handler_index = 64;
    // Transfers in flight at most (rma's window).
    static constexpr std::uint32_t largest_window = 256;

    LapiReference();
    ~LapiReference();
    LapiReference(const LapiReference &) = delete;
    LapiReference &operator=(const LapiReference &) = delete;

    // Opens `library` ("": liblapi.so.1 on the loader's path, as the
    // conduit does without SLUICE_LAPI_LIBRARY), takes the process's LAPI
    // handle or opens one (POE's MP_CHILD, MP_PROCS, MP_PARTITION), sets
    // polling (INTERRUPT_SET 0) or interrupt mode (1), its header handler,
    // and a region of `region_bytes`.
    bool open(const std::string &library, bool polling, std::size_t region_bytes);
    LapiCard card() const;
    // Remembers `peer`'s task, counters and region.
    bool connect(const LapiCard &peer);
    // Everything in reverse order of creation; LAPI_Term only for a handle
    // of its own (the destructor calls it).
    void close();
    const std::string &error() const { return error_; }
    // "LAPI task 0 of 2, interrupt mode, the process's live handle 1 (liblapi.so.1)"
    std::string describe() const;

    // Pinger: `n` round trips; ns per round trip of the last `n - lead`,
    // NaN on failure (a silent peer is the job's time limit's).
    double ping(std::uint32_t n, std::uint32_t lead);
    // Ponger: answers the next `n` pings.
    bool pong(std::uint32_t n);
    // `count` transfers of `bytes` between the start of the local region
    // and the start of the peer's, `window` issued then all waited for
    // together on one counter; window 1: each waits for its own.  ns for
    // all, NaN on failure.
    double rma(LapiRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window);
    // The transfers' target: waits in LAPI (which in polling mode is what
    // lands them) for the peer's finish().  finish(): tells it this side
    // is done.
    bool serve();
    bool finish();

    char *region() const;

private:
    struct State;
    std::unique_ptr<State> state_;
    std::string error_;
};

} // namespace sluice::perf
