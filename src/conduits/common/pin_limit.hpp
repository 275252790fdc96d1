// src/conduits/common/pin_limit.hpp - the pinnable-memory limit, as
// GASNet-EX's ibv conduit computes it (SLUICE_PHYSMEM_MAX,
// SLUICE_PHYSMEM_NOPROBE), or as its Portals and gemini/aries conduits do
// (SLUICE_PHYSMEM_PINNABLE_RATIO): how much memory a rank may register,
// which bounds its segment, and the count of what it has registered.
#pragma once

#include "base/status.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace sluice::conduit::common {

// SLUICE_PHYSMEM_MAX's value in bytes for this host: a number below 1
// ("0.5") or a fraction ("2/3") of `physical`, or a size ("12G", "512M",
// "1T").  False, with `why`, when it is none of these.
bool physmem_parse(const std::string &text, std::uint64_t physical, std::uint64_t &bytes, std::string &why);

// SLUICE_PHYSMEM_PINNABLE_RATIO's value: `conduit_default` for "auto" (or
// empty), else a number above 0 and at most 1.  False, with `why`, when it
// is neither.
bool pinnable_ratio_parse(const std::string &text, double conduit_default, double &ratio, std::string &why);

// How a conduit's limit is reached, beyond SLUICE_PHYSMEM_MAX.
struct PinPolicy {
    // The conduit's SLUICE_PHYSMEM_PINNABLE_RATIO default (GASNet's: 0.75
    // Portals, 0.80 gemini/aries); 0: the conduit takes no ratio, and
    // SLUICE_PHYSMEM_MAX's own default (2/3) applies.
    double ratio = 0;
    // RLIMIT_MEMLOCK caps the limit (a NIC that pins through the kernel's
    // locked-memory accounting: verbs, uGNI).
    bool memlock = true;
};

class PinLimit {
public:
    // This rank's limit: the host's pinnable memory, an equal share for each
    // of its `local_ranks`.  The host's is SLUICE_PHYSMEM_MAX of its memory
    // or, with a `policy.ratio`, SLUICE_PHYSMEM_PINNABLE_RATIO of it
    // (SLUICE_PHYSMEM_MAX, when set, bounding it).  Capped by RLIMIT_MEMLOCK
    // (first raised to its hard limit) under `policy.memlock`, unless the
    // process may lock any amount; then, unless the user set the maximum or
    // SLUICE_PHYSMEM_NOPROBE=1, checked by `probe` (when there is one),
    // which registers the memory it is given once and says whether that
    // worked: the largest that does, found by halving (to 1 MiB) and then
    // bisecting, is the limit.  `name` ("ibv") starts its messages.
    base::Status init(const char *name, std::size_t local_ranks, const std::function<bool(void *, std::size_t)> &probe,
                      const PinPolicy &policy);
    base::Status init(const char *name, std::size_t local_ranks, const std::function<bool(void *, std::size_t)> &probe) {
        return init(name, local_ranks, probe, PinPolicy{});
    }
    // `size` bytes at `base` are about to be registered: refused
    // (Status::resource, reported) when they would pass the limit.
    base::Status take(const char *name, const void *base, std::size_t size);
    // A registration of `size` bytes is gone.
    void give(std::size_t size) { pinned_.fetch_sub(size); }
    std::uint64_t limit() const { return limit_; }

private:
    std::uint64_t limit_ = 0;
    std::string how_;  // where limit_ came from, for the refusal's message
    std::string fix_;  // what raises it, for the same
    std::atomic<std::uint64_t> pinned_{0};
};

} // namespace sluice::conduit::common
