// tests/perf/gni-reference.hpp - the bare uGNI reference for the gni
// section of sluice-bench: what the same uGNI NIC does without Sluice,
// between two processes.  One communication domain per process on the
// job's credentials (PMI_GNI_PTAG, _COOKIE, _DEV_ID), a local CQ (post and
// SMSG send completions) and an rx CQ (SMSG arrivals), one endpoint bound
// to the peer's domain with SMSG between one mailbox on each side, one
// registered region that is the target of the peer's transfers and the
// source or sink of this side's.  Here the NIC is the software one
// (tests/softnic/gni), so the figures measure memory and the NIC's lock,
// not an Aries.
//
// libugni is opened with dlopen, as the gni conduit opens it
// (src/conduits/gni/gni_api.hpp): the same library, by the same name, so a
// process holds one copy of it whichever opens it first.  Built with the
// header only (SLUICE_BENCH_GNI, set in tests/perf/Makefile.inc when
// configure found gni_pub.h); otherwise open() fails with the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#if defined(SLUICE_BENCH_GNI) && __has_include(<gni_pub.h>)
#define SLUICE_BENCH_HAVE_GNI 1
#else
#define SLUICE_BENCH_HAVE_GNI 0
#endif

namespace sluice::perf {

// What one process tells the other to bind an endpoint to it, send into
// its mailbox and reach its region.  A memory handle is gni_mem_handle_t's
// two words.
struct GniCard {
    std::uint32_t nic_address = 0;
    std::uint32_t inst_id = 0;
    std::uint64_t mailbox = 0;  // its mailbox for this side's messages
    std::uint64_t mailbox_handle[2] = {};
    std::uint32_t mailbox_bytes = 0;
    std::uint32_t pad = 0;
    std::uint64_t region = 0;
    std::uint64_t region_handle[2] = {};
};

// FMA (GNI_PostFma: carried out by the CPU) or the BTE (GNI_PostRdma).
enum class GniRma { fma_put, fma_get, bte_put, bte_get };

class GniReference {
public:
    // The instance ids of the reference's domains are this plus the rank,
    // clear of the conduit's (the rank) in the same job.
    static constexpr std::uint32_t inst_base = 1u << 24;
    // Descriptors in flight at most (rma's window).
    static constexpr std::uint32_t largest_window = 256;
    // A peer silent this long has stopped: the loops give up.  The serving
    // rank waits out a whole measured phase, tens of seconds on a loaded
    // machine.
    static constexpr double stall_ns = 60e9;

    GniReference();
    ~GniReference();
    GniReference(const GniReference &) = delete;
    GniReference &operator=(const GniReference &) = delete;

    // Opens `library` ("": libugni.so.0 on the loader's path, as the
    // conduit does without SLUICE_GNI_LIBRARY), creates and attaches a
    // domain with instance id `inst_id`, its CQs and mailbox, and
    // registers a region of `region_bytes`.
    bool open(const std::string &library, std::uint32_t inst_id, std::size_t region_bytes);
    GniCard card() const;
    // Binds the endpoint to `peer` and sets up SMSG with its mailbox.
    bool connect(const GniCard &peer);
    // Everything in reverse order of creation (the destructor calls it).
    void close();
    const std::string &error() const { return error_; }
    // "uGNI device 0, NIC address 1, ptag 90, cookie 0x5a510000, instance 16777216"
    std::string describe() const;

    // Pinger: `n` 8 B round trips (GNI_SmsgSendWTag, its local event
    // reaped, then the peer's message taken from the rx CQ's event,
    // GNI_SmsgGetNextWTag and GNI_SmsgRelease); ns per round trip of the
    // last `n - lead`, NaN on failure or a peer silent for stall_ns.
    double ping(std::uint32_t n, std::uint32_t lead);
    // Ponger: answers the next `n` pings.
    bool pong(std::uint32_t n);
    // `count` transfers of `bytes` between the start of the local region
    // and the start of the peer's, `window` posted then all their local
    // completions reaped (GNI_CqGetEvent, GNI_GetCompleted); window 1:
    // each waits for its own.  ns for all, NaN on failure.
    double rma(GniRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window);
    // The transfers' target: waits for the peer's finish() (its memory
    // needs nothing of it meanwhile).  finish(): tells it this side is done.
    bool serve();
    bool finish();

    char *region() const;

private:
    struct State;
    std::unique_ptr<State> state_;
    std::string error_;
};

} // namespace sluice::perf
