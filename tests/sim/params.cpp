// tests/sim/params.cpp - pattern names and Config overrides (params.hpp).
#include "tests/sim/params.hpp"

namespace sluice::sim {

const char *pattern_name(Pattern p) {
    switch (p) {
    case Pattern::uniform: return "uniform";
    case Pattern::hotspot: return "hotspot";
    case Pattern::stencil: return "stencil";
    case Pattern::tree: return "tree";
    case Pattern::shifting: return "shifting";
    }
    return "?";
}

bool pattern_parse(const std::string &text, Pattern &out) {
    for (Pattern p : all_patterns) {
        if (text == pattern_name(p)) {
            out = p;
            return true;
        }
    }
    return false;
}

credit::Config ConfigOverrides::apply(credit::Config c, std::optional<credit::Policy> policy, std::string *notes) const {
    if (policy) c.policy = *policy;
    auto set = [](unsigned &field, const std::optional<unsigned> &v) {
        if (v) field = *v;
    };
    set(c.per_peer, per_peer);
    set(c.min_credits, min_credits);
    set(c.max_per_peer, max_per_peer);
    set(c.banked, banked);
    set(c.epoch_length, epoch_length);
    set(c.revoke_limit, revoke_limit);
    set(c.lender_limit, lender_limit);
    set(c.scavenge_targets, scavenge_targets);
    set(c.low_water, low_water);
    set(c.slack, slack);
    set(c.sys_outstanding, sys_outstanding);
    set(c.ask_extra, ask_extra);
    if (credit_bytes) c.credit_bytes = *credit_bytes;
    const std::vector<std::string> changed = c.normalize();
    if (notes) {
        for (const std::string &s : changed) *notes += (notes->empty() ? "" : "; ") + s;
    }
    return c;
}

std::string ConfigOverrides::describe() const {
    std::string out;
    auto add = [&](const char *name, const auto &v) {
        if (v) out += (out.empty() ? "" : " ") + std::string(name) + "=" + std::to_string(*v);
    };
    add("per_peer", per_peer);
    add("min_credits", min_credits);
    add("max_per_peer", max_per_peer);
    add("banked", banked);
    add("epoch_length", epoch_length);
    add("revoke_limit", revoke_limit);
    add("lender_limit", lender_limit);
    add("scavenge_targets", scavenge_targets);
    add("low_water", low_water);
    add("slack", slack);
    add("sys_outstanding", sys_outstanding);
    add("ask_extra", ask_extra);
    add("credit_bytes", credit_bytes);
    return out;
}

std::string RunParams::policy_label() const { return policy ? credit::policy_name(*policy) : "auto"; }

std::string RunParams::label() const { return std::string(pattern_name(pattern)) + "/" + policy_label(); }

} // namespace sluice::sim
