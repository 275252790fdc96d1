// src/conduits/common/rdma_conduit.cpp - the non-template parts of the RDMA
// conduits' shared layer (rdma_conduit.hpp).
#include "conduits/common/rdma_conduit.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"
#include "spawners/bootstrap.hpp"

#include <cstdio>

namespace sluice::conduit::common {

constinit thread_local const void *delivering_conduit = nullptr;

void stats_line(Rank rank, const char *name, const std::string &path, const Counters &c, std::uint64_t wakeups,
                const std::string &extra) {
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::fprintf(stderr,
                 "sluice[rank %u] %s (%s): small sends %llu, buffered sends %llu, received %llu, packed Longs %llu, "
                 "writes %llu, reads %llu, NIC atomics %llu, completions %llu, network full %llu, held for order %llu, "
                 "deferred %llu, receive-thread wake-ups %llu%s%s\n",
                 rank, name, path.c_str(), u(c.small), u(c.sent), u(c.received), u(c.packed_longs), u(c.writes),
                 u(c.reads), u(c.atomics), u(c.completions), u(c.full), u(c.held), u(c.deferred), u(wakeups),
                 extra.empty() ? "" : ", ", extra.c_str());
}

Status allgather_records(const TransportSetup &setup, const char *name, const char *what, const void *mine,
                         std::size_t size, std::vector<std::string> &all, const char *fix) {
    const std::string op = std::string(name) + " conduit init";
    if (!setup.bootstrap->allgather(mine, size, all))
        return base::report(Status::bootstrap, op.c_str(), "check that every rank started", "allgather of %s failed",
                            what);
    for (Rank r = 0; r < setup.size; ++r)
        if (all[r].size() != size)
            return base::report(Status::state, op.c_str(), fix ? fix : "run the same Sluice build on every rank",
                                "%s: rank %u sent %s of %zu bytes, this rank %zu", name, r, what, all[r].size(), size);
    return Status::ok;
}

void receive_thread_started(const char *name, const std::string &sleeps_on) {
    base::say("%s: receive thread started (sleeps on %s, at most %lld wake-ups/s)", name, sleeps_on.c_str(),
              static_cast<long long>(base::knob_int(base::Knob::RCV_THREAD_RATE)));
}

} // namespace sluice::conduit::common
