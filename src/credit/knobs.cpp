// src/credit/knobs.cpp - SLUICE_CREDIT_* knobs (src/base/knobs.def) to Config.
#include "credit/knobs.hpp"

#include "base/knobs.hpp"

#include <algorithm>
#include <cmath>

namespace sluice::credit {

Flow flow_from_knobs(const Preferences *prefs) {
    if (prefs && prefs->set && !base::knob_is_set(base::Knob::CREDIT_FLOW)) return prefs->flow ? Flow::automatic : Flow::disabled;
    if (base::knob_auto(base::Knob::CREDIT_FLOW)) return Flow::automatic;
    return base::knob_switch(base::Knob::CREDIT_FLOW, true) ? Flow::forced : Flow::disabled;
}

// SLUICE_CREDIT_MEMORY: the defaults by job size brought within `bytes` of
// request buffers.  The shares and the bank not set by a knob shrink by
// the same factor, a share not below a full-size request; when even those
// shares do not fit and the table chose the policy, demand, with the whole
// bound as its bank.
namespace {

void fit_memory(Config &c, std::size_t bytes, bool policy_chosen, bool per_peer_set, bool banked_set, bool space_set,
                std::vector<std::string> &notes) {
    // Under demand the shares are none (normalize clears a table's).
    const auto credits = [&]() -> std::uint64_t { return c.policy == Policy::demand ? c.banked : c.total_credits(); };
    if (bytes == 0 || space_set || c.policy == Policy::off || credits() * c.credit_bytes <= bytes) return;
    const std::uint64_t budget = std::max<std::uint64_t>(bytes / c.credit_bytes, max_request_credits);
    const auto clip = [](std::uint64_t v) { return static_cast<unsigned>(std::min<std::uint64_t>(v, 1u << 30)); };
    if (c.policy == Policy::demand) {
        if (!banked_set) c.banked = clip(budget);
        return;
    }
    const std::uint64_t peers = c.nodes > 0 ? c.nodes - 1 : 0;
    const double scale = static_cast<double>(budget) / static_cast<double>(credits());
    if (!per_peer_set) c.per_peer = std::max(c.min_credits, static_cast<unsigned>(std::floor(c.per_peer * scale)));
    const std::uint64_t shares = peers * c.per_peer;
    // dynamic lends from its bank: an eighth of the bound at least is left to it.
    const std::uint64_t bank_least =
        c.policy == Policy::dynamic ? std::max<std::uint64_t>(budget / 8, max_request_credits) : 0;
    if (shares + bank_least <= budget) {
        if (!banked_set)
            c.banked = clip(std::clamp<std::uint64_t>(static_cast<std::uint64_t>(c.banked * scale), bank_least,
                                                      budget - shares));
        return;
    }
    if (!policy_chosen && !per_peer_set && c.policy == Policy::dynamic) {
        c.policy = Policy::demand;
        c.per_peer = 0;
        if (!banked_set) c.banked = clip(budget);
        return;
    }
    if (!banked_set && c.policy == Policy::dynamic) c.banked = clip(bank_least);
    // A conduit's own choice of policy (Preferences) keeps the least shares without a word.
    if (!base::knob_is_set(base::Knob::CREDIT_POLICY) && !per_peer_set) return;
    notes.push_back("SLUICE_CREDIT_MEMORY=" + std::to_string(bytes) + " is less than the " + policy_name(c.policy) +
                    " policy's shares need (" + std::to_string(peers) + " peers x " + std::to_string(c.per_peer) +
                    " credits of " + std::to_string(c.credit_bytes) + " bytes); they take " +
                    std::to_string(c.receive_bytes()) + " bytes");
}

} // namespace

Config config_from_knobs(Peer nodes, Peer me, std::size_t largest_request, std::vector<std::string> &notes,
                         const Preferences *prefs) {
    using base::Knob;
    Config c = Config::defaults(nodes, me);
    // The policy is the table's unless the user or the conduit chose it.
    bool policy_chosen = base::knob_is_set(Knob::CREDIT_POLICY) && base::knob_string(Knob::CREDIT_POLICY) != "auto";
    if (prefs && prefs->set) {
        if (!base::knob_is_set(Knob::CREDIT_POLICY)) {
            c.policy = prefs->policy;
            policy_chosen = true;
        }
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
    take0(Knob::CREDIT_RETURN_BATCH, c.return_batch);
    take0(Knob::CREDIT_RECLAIM_AFTER, c.reclaim_after);
    // The portals conduit (the one that states preferences) frees a
    // request's send buffer when its reply comes: replies held back would
    // leave its senders without buffers to send the request that brings
    // them (a 2-rank flood with 8 send chunks hung).
    if (prefs && prefs->set && c.return_batch != 0) {
        if (base::knob_is_set(Knob::CREDIT_RETURN_BATCH))
            notes.push_back("SLUICE_CREDIT_RETURN_BATCH is ignored by the portals conduit (its send buffers are "
                            "freed by replies)");
        c.return_batch = 0;
    }
    if (base::knob_is_set(Knob::CREDIT_SEND_TOTAL) && base::knob_int(Knob::CREDIT_SEND_TOTAL) > 0)
        c.send_total = static_cast<unsigned>(std::min<std::int64_t>(base::knob_int(Knob::CREDIT_SEND_TOTAL), 1 << 30));
    if (c.policy == Policy::demand && per_peer_set)
        notes.push_back("SLUICE_CREDIT_PER_PEER is ignored by the demand policy (peers start with no credits)");
    c.min_credits = std::clamp(c.min_credits, 1u, max_request_credits);
    c.credit_bytes = std::max<std::size_t>(1, (largest_request + c.min_credits - 1) / c.min_credits);
    fit_memory(c, base::knob_size(Knob::CREDIT_MEMORY), policy_chosen, per_peer_set,
               base::knob_is_set(Knob::CREDIT_BANKED) && base::knob_int(Knob::CREDIT_BANKED) > 0,
               base::knob_is_set(Knob::CREDIT_RECV_SPACE), notes);
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
