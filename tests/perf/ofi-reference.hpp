// tests/perf/ofi-reference.hpp - the bare libfabric reference of the ofi
// section: what the same provider does without Sluice, between the same two
// rank processes.  One reliable-datagram endpoint (FI_EP_RDM, FI_MSG|FI_RMA)
// per process, from fi_getinfo with the ofi conduit's hints (so it gets the
// entry, the completion level and the domain the conduit gets), a completion queue read in a spin loop (manual progress: the
// loop drives it), and one registered region of its own as the RMA target
// and source.  The cards (address, MR key and base) travel through the
// Sluice job, the loops run on either side of it (sluice-bench.cpp, kind ofi).
//
// Built with libfabric when configure found it (SLUICE_BENCH_OFI, set in
// tests/perf/Makefile.inc) and the header is there; otherwise open() fails
// with the reason and the driver leaves the section out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#if defined(SLUICE_BENCH_OFI) && __has_include(<rdma/fabric.h>)
#define SLUICE_BENCH_HAVE_OFI 1
#else
#define SLUICE_BENCH_HAVE_OFI 0
#endif

namespace sluice::perf {

// What one process tells the other: its endpoint's name and its region's
// key and base (the virtual address under FI_MR_VIRT_ADDR, else 0: offsets).
struct OfiCard {
    std::uint64_t base = 0;
    std::uint64_t key = 0;
    std::uint32_t address_bytes = 0;
    unsigned char address[236] = {};
};
static_assert(sizeof(OfiCard) == 256);

// Row-name tag of a provider string: its first component, letters and
// digits only ("tcp;ofi_rxm" -> "tcp", "shm" -> "shm").
std::string ofi_tag(std::string_view provider);

// "" when fi_getinfo offers `provider` for FI_EP_RDM with FI_MSG|FI_RMA,
// else why not.  The driver's probe, before it starts a job.
std::string ofi_probe(const std::string &provider);

// Whether the ofi conduit's writes over `provider` ask for delivery
// completion (SLUICE_OFI_DELIVERY_COMPLETE, src/conduits/ofi/knobs.def):
// auto (the default) all but shm, 1/yes/on always, 0/no/off never.
bool ofi_delivery_complete(const std::string &provider);

enum class OfiRma { write, read };

class OfiReference {
public:
    OfiReference();
    ~OfiReference();
    OfiReference(const OfiReference &) = delete;
    OfiReference &operator=(const OfiReference &) = delete;

    // Opens `provider` and registers a region of `region_bytes` (target of
    // the peer's RMA) and one as large as the local side of this side's RMA.
    // `delivery_complete`: writes complete once their bytes are at the
    // target (FI_DELIVERY_COMPLETE), as the ofi conduit's Puts by default
    // except over shm (SLUICE_OFI_DELIVERY_COMPLETE); else the provider's
    // default, transmit complete.
    bool open(const std::string &provider, std::size_t region_bytes,
              bool delivery_complete = true);
    bool connect(const OfiCard &peer);
    OfiCard card() const;
    // Why the last call failed.
    const std::string &error() const { return error_; }
    // What the provider chose: its name, the FI_MR_* bits it asked for,
    // its progress model ("manual"/"auto").
    std::string describe() const;

    // Pinger: `n` 8 B round trips (fi_send, or fi_inject when `inject`,
    // each send's completion reaped before the next); ns of the last
    // `n - lead`, NaN on failure.
    double ping(std::uint32_t n, std::uint32_t lead, bool inject);
    // Ponger: answers the next `n` pings the same way.  False on failure.
    bool pong(std::uint32_t n, bool inject);
    // `count` RMA operations of `bytes` from the local region to the peer's
    // (write) or back (read), at most `window` outstanding: the window is
    // filled, then every completion is reaped, as sluice_nbi_sync does
    // (window 1: latency, each operation waits for its own completion).
    // ns for all of them, NaN on failure.
    double rma(OfiRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window);
    // Target of the peer's RMA: reads the completion queue (so a provider
    // with manual progress moves the data) until the peer's finish().
    bool serve();
    // Tells the serving peer that this side's RMA is done.
    bool finish();

    // The registered regions (null before open): the peer's RMA target,
    // and the source / destination of this side's RMA.
    char *target_region() const;
    char *local_region() const;

    // A peer silent this long has stopped: the loops give up.  The serving
    // rank waits out a whole measured phase, tens of seconds on a loaded
    // machine.
    static constexpr double stall_ns = 60e9;

private:
    struct State;
    std::unique_ptr<State> state_;
    std::string error_;
};

} // namespace sluice::perf
