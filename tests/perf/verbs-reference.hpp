// tests/perf/verbs-reference.hpp - the bare verbs reference for the ibv
// section of sluice-bench: what the same verbs device does without
// Sluice, between two processes.  One RC queue pair per process, one CQ read
// in a spin loop, one registered region that is the target of the peer's
// RDMA and the source of this side's, and a ring of receive buffers for the
// ping-pong.  Here the device is the software NIC (tests/softnic/verbs), so
// the figures measure memory and the NIC's lock, not InfiniBand.
//
// Built with libibverbs when configure found it (SLUICE_BENCH_VERBS, set in
// tests/perf/Makefile.inc); otherwise open() fails with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#if defined(SLUICE_BENCH_VERBS) && __has_include(<infiniband/verbs.h>)
#define SLUICE_BENCH_HAVE_VERBS 1
#else
#define SLUICE_BENCH_HAVE_VERBS 0
#endif

namespace sluice::perf {

// What one process tells the other to connect and to reach its region.
struct VerbsCard {
    std::uint64_t addr = 0;  // the region's base
    std::uint32_t rkey = 0;
    std::uint32_t qpn = 0;
    std::uint16_t lid = 0;
    std::uint8_t global = 0;  // Ethernet ports: the GID addresses the port
    std::uint8_t pad = 0;
    std::uint8_t gid[16] = {};
};

enum class VerbsRma { write, read };

class VerbsReference {
public:
    VerbsReference();
    ~VerbsReference();
    VerbsReference(const VerbsReference &) = delete;
    VerbsReference &operator=(const VerbsReference &) = delete;

    // Opens `device` ("" the first), port 1, and registers a region of
    // `region_bytes`.
    bool open(const std::string &device, std::size_t region_bytes);
    VerbsCard card() const;
    // Takes the QP through INIT, RTR and RTS towards `peer`.
    bool connect(const VerbsCard &peer);
    const std::string &error() const { return error_; }
    std::string describe() const;  // "softnic0 port 1, InfiniBand, LID 1"

    // Pinger: `n` 8 B round trips (an inline SEND, its completion reaped,
    // then the peer's SEND received); ns of the last `n - lead`, NaN on
    // failure or a peer silent for stall_ns.
    double ping(std::uint32_t n, std::uint32_t lead);
    // Ponger: answers the next `n` pings.
    bool pong(std::uint32_t n);
    // `count` RDMA operations of `bytes` between the start of the local
    // region and the start of the peer's, at most `window` outstanding
    // (window 1: each waits for its own completion).  ns for all, NaN on
    // failure.
    double rma(VerbsRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window);
    // The RMA target: waits for the peer's finish() (RDMA needs nothing of
    // it meanwhile).  finish(): tells it this side is done.
    bool serve();
    bool finish();

    char *region() const;

    static constexpr double stall_ns = 60e9;

private:
    struct State;
    std::unique_ptr<State> state_;
    std::string error_;
};

} // namespace sluice::perf
