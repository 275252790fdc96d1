// tests/perf/portals-reference.hpp - the bare Portals 4 reference for the
// portals section of sluice-bench: what the same Portals 4
// library does without Sluice, between two processes.  A matching,
// logically addressed NI, as the portals conduit opens; one event queue;
// two portal table entries of its own, each with one persistent match
// entry that takes any match bits from anyone: a 64 B slot with full
// events (the ping-pong) and a region without target events (the peer's
// Puts and Gets); one memory descriptor over this side's memory, its
// events (SEND, ACK, REPLY) on the same queue.  A ping is a Put of 8 B, its
// value in the header data; an RMA waits for its ACK or REPLY.
//
// The reference implementation hands every PtlNIInit of one process the
// same NI of a kind, without counting them, and one PtlNIFini ends it for
// all.  So beside the conduit the reference gets the conduit's NI (its
// progress thread, its map of the job's ranks) and leaves it open; an NI
// without a map is the reference's own: connect() maps the two processes
// and close() ends it.
//
// Here the library is the reference implementation over UDP
// (tests/portals/with-portals4): the figures measure that software NIC,
// not Portals hardware (portals-section.hpp says how it shapes them).
//
// Built with Portals 4 when the build has the portals conduit
// (SLUICE_BENCH_PORTALS, set in tests/perf/Makefile.inc); otherwise open()
// fails with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#if defined(SLUICE_BENCH_PORTALS) && __has_include(<portals4.h>)
#define SLUICE_BENCH_HAVE_PORTALS 1
#else
#define SLUICE_BENCH_HAVE_PORTALS 0
#endif

namespace sluice::perf {

// What one process tells the other: its rank in the NI's map, its physical
// id (for a map of the reference's own) and its two portal table entries.
struct PortalsCard {
    std::uint32_t rank = 0;
    std::uint32_t nid = 0;
    std::uint32_t pid = 0;
    std::uint32_t message_pt = 0;  // the ping-pong slot
    std::uint32_t rma_pt = 0;      // the region
};

enum class PortalsRma { put, get };

// How the loops wait for an event: spin on PtlEQGet, as a poll loop does
// (the conduit's sluice_poll), or call PtlEQPoll, which in the reference
// implementation yields the CPU between looks (to its progress thread when
// both share one).
enum class PortalsWait { spin, yield };

class PortalsReference {
public:
    PortalsReference();
    ~PortalsReference();
    PortalsReference(const PortalsReference &) = delete;
    PortalsReference &operator=(const PortalsReference &) = delete;

    // Opens the default interface's matching logical NI and the entries
    // above over a region of `region_bytes`.  `rank`: this process's rank
    // (0 or 1): beside the conduit its Sluice rank, which the conduit's map
    // must agree with.
    bool open(std::size_t region_bytes, std::uint32_t rank);
    PortalsCard card() const;
    // Maps the two processes on an NI of its own; on the conduit's, checks
    // that its map puts the peer at the peer's rank.
    bool connect(const PortalsCard &peer);
    const std::string &error() const { return error_; }
    std::string describe() const;  // "rank 0, nid 192.0.2.2 pid 49152, portal table entries 5 and 6, the conduit's NI"

    // Pinger: `n` 8 B round trips (a Put without ACK, then the peer's Put
    // awaited); ns of the last `n - lead`, NaN on failure or a peer silent
    // for stall_ns.
    double ping(std::uint32_t n, std::uint32_t lead, PortalsWait wait);
    // Ponger: answers the next `n` pings.
    bool pong(std::uint32_t n, PortalsWait wait);
    // `count` operations of `bytes` between the start of the local region
    // and the start of the peer's, each moved as Puts (PTL_ACK_REQ) or Gets
    // of at most `piece` bytes, at most `window` of them outstanding (one
    // more issued as each ACK or REPLY arrives; window 1: each waits for
    // its own).  Spins.  ns for all, NaN on failure.
    double rma(PortalsRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window,
               std::size_t piece = ~std::size_t{0});
    // The RMA target: spins until the peer's finish() (the region's entry
    // needs nothing of it meanwhile).  finish(): tells it this side is
    // done, and waits for the ACK.
    bool serve();
    bool finish();
    // Releases the entries, the descriptor and the queue (and the NI when
    // it is the reference's own), in reverse order; the destructor does it
    // too.  Beside the conduit, call it before sluice_finalize ends the NI.
    void close();

    char *region() const;

    static constexpr double stall_ns = 60e9;
    // The most operations rma() keeps outstanding (its event queue's room).
    static constexpr std::uint32_t largest_window = 1016;

private:
    struct State;
    std::unique_ptr<State> state_;
    std::string error_;
};

} // namespace sluice::perf
