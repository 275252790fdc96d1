// src/conduits/registry.cpp - the conduits linked into this program and the
// choice among them.  It names no conduit: the ones configure built into
// libsluice come from src/conduits/conduits.def, which autogen.sh writes
// from the folders of src/conduits (registry.hpp says why it is needed).
#include "conduits/registry.hpp"

#include "base/knobs.hpp"
#include "sluice_config.h"

#include <algorithm>
#include <cstring>

#define SLUICE_CONDUIT_IN_LIBRARY(name) \
    namespace sluice::conduit::registered { const TransportInfo &conduit_##name(); }
#define SLUICE_CONDUIT_IN_TESTS(name)
#define SLUICE_CONDUIT_ELSEWHERE(name, library)
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_ELSEWHERE

namespace sluice::conduit {
namespace {

std::vector<TransportInfo> &registrations() {
    static std::vector<TransportInfo> all;
    return all;
}

std::vector<std::string> split_names(const std::string &list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        std::size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        std::string name = list.substr(start, comma - start);
        name.erase(0, name.find_first_not_of(" \t"));
        name.erase(name.find_last_not_of(" \t") + 1);
        if (!name.empty()) out.push_back(name);
        start = comma + 1;
    }
    return out;
}

std::string names_of(const std::vector<const TransportInfo *> &list) {
    std::string out;
    for (const TransportInfo *t : list) out += (out.empty() ? "" : ", ") + std::string(t->name);
    return out.empty() ? "none" : out;
}

} // namespace

bool transport_register(const TransportInfo &info) {
    auto &all = registrations();
    for (const TransportInfo &t : all)
        if (std::strcmp(t.name, info.name) == 0) return true;
    all.push_back(info);
    return true;
}

const std::vector<TransportInfo> &transport_registry() {
    static const std::vector<TransportInfo> sorted = [] {
        // Calling each library conduit's registration links it in (static
        // libsluice.a) and registers it (if its static object has not yet).
#define SLUICE_CONDUIT_IN_LIBRARY(name) (void)transport_register(registered::conduit_##name());
#define SLUICE_CONDUIT_ELSEWHERE(name, library)
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_ELSEWHERE
        std::vector<TransportInfo> v = registrations();
        std::stable_sort(v.begin(), v.end(), [](const TransportInfo &a, const TransportInfo &b) {
            return a.priority != b.priority ? a.priority > b.priority : std::strcmp(a.name, b.name) < 0;
        });
        return v;
    }();
    return sorted;
}

ConduitChoice conduit_choose(const std::vector<TransportInfo> &registry, bool network, const std::string &wanted,
                             const char *knob) {
    ConduitChoice c;
    std::vector<const TransportInfo *> kind;  // in priority order
    for (const TransportInfo &t : registry)
        if (t.network == network) kind.push_back(&t);
    auto find = [&](const std::string &name) -> const TransportInfo * {
        for (const TransportInfo *t : kind)
            if (name == t->name) return t;
        return nullptr;
    };

    // The order to try them in: the listed ones, or all by priority.
    std::vector<const TransportInfo *> order;
    const std::vector<std::string> names = split_names(wanted);
    for (const std::string &n : names) {
        const TransportInfo *t = find(n);
        // A conduit this build put into another library, which this
        // program has not loaded.
        const char *elsewhere = nullptr;
#define SLUICE_CONDUIT_IN_LIBRARY(name)
#define SLUICE_CONDUIT_IN_TESTS(name)
#define SLUICE_CONDUIT_ELSEWHERE(name, library) \
    if (n == #name) elsewhere = library;
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_IN_TESTS
#undef SLUICE_CONDUIT_ELSEWHERE
        if (!t && elsewhere) {
            c.error = std::string(knob) + "=" + wanted + ": the " + conduit_kind(network) + " conduit '" + n +
                      "' is in " + elsewhere + ", which this program has not loaded";
            c.fix = std::string("link the program with ") + elsewhere +
                    ", or start it with mpirun or srun and SLUICE_SPAWNER=mpi (which loads it)";
            c.unknown_name = true;
            return c;
        }
        if (!t) {
            const TransportInfo *closest = nullptr;
            std::size_t best = SIZE_MAX;
            for (const TransportInfo *k : kind) {
                const std::size_t d = base::edit_distance(n, k->name);
                if (d < best) best = d, closest = k;
            }
            c.error = std::string(knob) + "=" + wanted + ": this build has no " + conduit_kind(network) +
                      " conduit '" + n + "'";
            if (closest && best <= std::max<std::size_t>(2, n.size() / 3))
                c.error += "; did you mean '" + std::string(closest->name) + "'?";
            c.error += " (" + std::string(conduit_kind(network)) + " conduits built: " + names_of(kind) + ")";
            c.fix = std::string("set ") + knob + " to conduits of that list, or unset it";
            c.unknown_name = true;
            return c;
        }
        if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
    }
    const bool listed = !names.empty();
    if (!listed) order = kind;
    if (order.empty()) {
        c.error = std::string("this build has no ") + conduit_kind(network) + " conduit";
        c.fix = "configure with one (./configure --help lists the --enable-CONDUIT options)";
        return c;
    }

    std::string failures;
    for (const TransportInfo *t : order) {
        if (c.chosen) {
            c.others.emplace_back(t->name, listed ? std::string("listed after ") + c.chosen->name
                                                  : "lower priority than " + std::string(c.chosen->name));
            continue;
        }
        const std::string why_not = t->probe ? t->probe() : std::string();
        if (why_not.empty()) {
            c.chosen = t;
            c.how = listed ? "first of " + std::string(knob) + "=" + wanted + " whose probe succeeds"
                           : "highest priority whose probe succeeds";
            continue;
        }
        c.others.emplace_back(t->name, "probe failed: " + why_not);
        failures += (failures.empty() ? "" : "; ") + std::string(t->name) + ": " + why_not;
    }
    if (listed)
        for (const TransportInfo *t : kind)
            if (std::find(order.begin(), order.end(), t) == order.end())
                c.others.emplace_back(t->name, std::string("not listed in ") + knob);
    if (!c.chosen) {
        c.others.clear();
        c.error = std::string("no ") + conduit_kind(network) + " conduit can run here" +
                  (listed ? " (" + std::string(knob) + "=" + wanted + ")" : "") + ": " + failures;
        c.fix = listed ? std::string("list a conduit that probes here in ") + knob + ", or unset it; "
                                                                                    "`sluice-info --conduits` shows each probe"
                       : "`sluice-info --conduits` shows each probe; fix what it reports";
    }
    return c;
}

std::string conduit_choice_text(const ConduitChoice &c) {
    std::string out = c.chosen ? std::string(c.chosen->name) + " (" + c.how : "none (" + c.error;
    for (std::size_t i = 0; i < c.others.size(); ++i)
        out += (i ? "; " : "; not chosen: ") + c.others[i].first + ": " + c.others[i].second;
    return out + ")";
}

} // namespace sluice::conduit
