// tests/sim/results.hpp - what one run measured, and the time series of the
// watched node's credits.
#pragma once

#include "tests/sim/ledger.hpp"
#include "tests/sim/params.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::sim {

// The watched node's view of one peer (or of its bank: peer == none) after
// a change.
struct SeriesRow {
    std::int64_t time_ns;
    std::uint32_t peer;
    std::uint32_t held;  // send_credits: what the watched node holds from the peer
    std::uint32_t lent;  // loan_credits: what it lends the peer (the bank when peer == none)
};

struct RunResult {
    RunParams params;
    std::string policy;       // what the engines run ("demand"), auto resolved
    credit::Config config;    // node 0's, after defaults, overrides and normalize()
    std::string notes;        // what Config::normalize() changed
    std::string workload;     // the pattern's shape
    bool ok = true;
    std::string failure;

    // Traffic
    std::uint64_t requests = 0, replies = 0, hidden_replies = 0, banked_answers = 0;
    std::uint64_t events = 0;
    std::int64_t makespan_ns = 0;
    std::int64_t steady_end_ns = 0;  // the first sender sent its last request
    // Engine totals, summed over nodes
    std::uint64_t stalls = 0, granted = 0, revoked = 0, reclaimed = 0, sys_sent = 0, sys_refused = 0, epochs = 0;
    // Memory per node: receive_bytes + state_bytes + system queue slots * 32
    double memory_max = 0, memory_mean = 0;
    double receive_max = 0, state_max = 0;
    // Credit movement (grants, gives, reclaims)
    std::uint64_t moved = 0;
    std::int64_t last_move_ns = -1;    // last movement before steady_end (-1: none)
    double moved_per_epoch_late = 0;   // over the second half of the steady phase, per epoch_length requests
    bool settled = true;               // no movement in that second half
    // Hot spot: requests node 0 handled per handler time, over its busy span
    double hot_rate = -1;
    // Filled by the driver from the Policy::off run of the same pattern.
    double throughput = -1;

    LedgerCounts checks;
    std::uint64_t watchdog_checks = 0;
    double wall_s = 0;
    std::size_t sim_bytes = 0;  // the simulator's own structures at the end

    std::vector<SeriesRow> series;
    bool series_truncated = false;

    double stall_fraction() const { return requests ? static_cast<double>(stalls) / static_cast<double>(requests) : 0; }
};

} // namespace sluice::sim
