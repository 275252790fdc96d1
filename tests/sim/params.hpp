// tests/sim/params.hpp - what one simulated run is: the job, the traffic
// pattern, the machine's costs and the credit policy with its overrides.
#pragma once

#include "credit/credit.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace sluice::sim {

enum class Pattern : std::uint8_t { uniform, hotspot, stencil, tree, shifting };
inline constexpr Pattern all_patterns[] = {Pattern::uniform, Pattern::hotspot, Pattern::stencil, Pattern::tree,
                                           Pattern::shifting};
const char *pattern_name(Pattern p);
inline const char *sys_order_name(int order) {
    static const char *const names[] = {"fifo", "first", "alternate"};
    return names[order & 3];
}
bool pattern_parse(const std::string &text, Pattern &out);

// Config fields the user set; the rest come from Config::defaults(N, me).
struct ConfigOverrides {
    std::optional<unsigned> per_peer, min_credits, max_per_peer, banked, epoch_length, revoke_limit, lender_limit,
        scavenge_targets, low_water, slack, sys_outstanding, ask_extra;
    std::optional<std::size_t> credit_bytes;
    // Applies the policy (none: the defaults' own) and the overrides, then
    // normalizes.  `notes` gets what normalize() changed.
    credit::Config apply(credit::Config c, std::optional<credit::Policy> policy, std::string *notes) const;
    std::string describe() const;  // "banked=1024 epoch_length=256", "" if none
};

struct RunParams {
    credit::Peer nodes = 64;
    Pattern pattern = Pattern::uniform;
    std::optional<credit::Policy> policy;  // none: "auto", Config::defaults
    ConfigOverrides overrides;

    std::int64_t latency_ns = 1000;  // one way, every message
    std::int64_t handler_ns = 200;   // a request handler
    std::int64_t reply_ns = 50;      // processing a reply
    std::int64_t sys_ns = 50;        // processing a system message (or a refusal)
    unsigned sys_slots = 256;        // system receive queue per node
    // The order in which a node's CPU serves its queues: fifo, all in arrival
    // order (system messages ride as AM system requests); first, the system
    // queue before requests and replies; alternate, one from each in turn.
    enum class SysOrder : std::uint8_t { fifo, first, alternate } sys_order = SysOrder::fifo;

    std::uint64_t messages = 1000;  // requests per sending node
    unsigned credits_min = 1;       // credits per request, drawn uniformly
    unsigned credits_max = 1;
    unsigned window = 64;           // requests awaiting a reply per sender
    double no_reply = 0;            // fraction of handlers that send no reply
    std::uint64_t shift_every = 2000;
    bool stencil_random = false;    // stencil: a random neighbour per request instead of each in turn
    std::uint64_t seed = 1;

    std::int64_t stall_bound_ns = 0;      // 0: derived from N and the costs
    std::uint64_t full_check_every = 0;   // events between full ledger sweeps (0: at the end only)
    std::uint64_t accounted_every = 1024; // events between credits_accounted() spot checks
    credit::Peer watch = 0;               // node whose credits per peer are recorded
    std::size_t series_max = 200000;      // rows of that series kept
    bool series = false;
    std::uint64_t inject_fault = 0;       // the n-th reply arrives with XXX off by one (tests the checks)

    std::string label() const;  // "stencil/dynamic" etc.
    std::string policy_label() const;
};

} // namespace sluice::sim
