// src/credit/knobs.cpp - SLUICE_CREDIT_* knobs (src/base/knobs.def) to Config.
#include "credit/knobs.hpp"

#include "base/knobs.hpp"

#include <algorithm>

namespace sluice::credit {

Flow flow_from_knobs(const Preferences *prefs) {
    if (prefs && prefs->set && !base::knob_is_set(base::Knob::CREDIT_FLOW)) return prefs->flow ? Flow::automatic : Flow::disabled;
    if (base::knob_auto(base::Knob::CREDIT_FLOW)) return Flow::automatic;
    return base::knob_switch(base::Knob::CREDIT_FLOW, true) ? Flow::forced : Flow::disabled;
}

Config config_from_knobs(Peer nodes, Peer me, std::size_t largest_request, std::vector<std::string> &notes,
                         const Preferences *prefs) {
    using base::Knob;
    Config c = Config::defaults(nodes, me);
    if (prefs && prefs->set) {
        if (!base::knob_is_set(Knob::CREDIT_POLICY)) c.policy = prefs->policy;
        if (prefs->max_per_peer && !base::knob_is_set(Knob::CREDIT_MAX_PER_PEER)) c.max_per_peer = prefs->max_per_peer;
        if (prefs->epoch_length && !base::knob_is_set(Knob::CREDIT_EPOCH)) c.epoch_length = prefs->epoch_length;
    }
    const std::string &policy = base::knob_string(Knob::CREDIT_POLICY);
    if (!policy.empty() && policy != "auto" && !policy_parse(policy, c.policy))
        notes.push_back("SLUICE_CREDIT_POLICY=" + policy + " is not one of auto, static, dynamic, demand; using " +
                        policy_name(c.policy));
    auto take = [&](Knob k, unsigned &field) {
        if (!base::knob_is_set(k)) return;
        const std::int64_t v = base::knob_int(k);
        if (v > 0) field = static_cast<unsigned>(std::min<std::int64_t>(v, 1 << 30));
    };
    const bool per_peer_set = base::knob_is_set(Knob::CREDIT_PER_PEER) && base::knob_int(Knob::CREDIT_PER_PEER) > 0;
    take(Knob::CREDIT_PER_PEER, c.per_peer);
    take(Knob::CREDIT_BANKED, c.banked);
    take(Knob::CREDIT_MIN, c.min_credits);
    take(Knob::CREDIT_MAX_PER_PEER, c.max_per_peer);
    take(Knob::CREDIT_EPOCH, c.epoch_length);
    take(Knob::CREDIT_REVOKE_LIMIT, c.revoke_limit);
    take(Knob::CREDIT_LENDER_LIMIT, c.lender_limit);
    // Knobs for which 0 means something (none), unlike the ones above.
    auto take0 = [&](Knob k, unsigned &field) {
        if (base::knob_is_set(k) && base::knob_int(k) >= 0)
            field = static_cast<unsigned>(std::min<std::int64_t>(base::knob_int(k), 1 << 16));
    };
    take0(Knob::CREDIT_SLACK, c.slack);
    take0(Knob::CREDIT_ASK_EXTRA, c.ask_extra);
    if (c.policy == Policy::demand && per_peer_set)
        notes.push_back("SLUICE_CREDIT_PER_PEER is ignored by the demand policy (peers start with no credits)");
    c.min_credits = std::clamp(c.min_credits, 1u, max_request_credits);
    c.credit_bytes = std::max<std::size_t>(1, (largest_request + c.min_credits - 1) / c.min_credits);
    // GASNet's Portals conduit, AMRECV_SPACE: a fixed receive space; the bank is what remains
    // once every peer has its share.
    if (const std::size_t space = base::knob_size(Knob::CREDIT_RECV_SPACE); space > 0 && c.policy != Policy::fixed) {
        const std::uint64_t credits = space / c.credit_bytes;
        const std::uint64_t shares = std::uint64_t{c.per_peer} * (c.nodes > 0 ? c.nodes - 1 : 0);
        if (credits < shares + max_request_credits)
            notes.push_back("SLUICE_CREDIT_RECV_SPACE=" + std::to_string(space) + " holds " + std::to_string(credits) +
                            " credits, fewer than the per-peer shares need (" + std::to_string(shares) +
                            ") plus one full request; the bank keeps the minimum");
        c.banked = static_cast<unsigned>(std::min<std::uint64_t>(credits > shares ? credits - shares : 0, 1u << 30));
    }
    for (std::string &line : c.normalize()) notes.push_back("credit configuration: " + line);
    return c;
}

} // namespace sluice::credit
