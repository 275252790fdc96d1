// tests/unit/unit_registry.cpp - the conduit registry (src/conduits/registry.hpp):
// what is registered, and the choice of a conduit among made-up ones
// (priorities, probes, SLUICE_NETWORK order, unknown names).
#include "conduits/registry.hpp"
#include "sluice_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

// The conduits built for the tests only are linked in by this reference to
// each one's registration (a static archive keeps only what is referenced).
#define SLUICE_CONDUIT_IN_LIBRARY(name)
#define SLUICE_CONDUIT_IN_TESTS(name) \
    namespace sluice::conduit::registered { const TransportInfo &conduit_##name(); }
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_IN_TESTS

namespace {

using sluice::conduit::ConduitChoice;
using sluice::conduit::conduit_choose;
using sluice::conduit::TransportInfo;

// Every conduit of this build: in libsluice, or built for the tests.
std::vector<std::string> built_names() {
    std::vector<std::string> names;
#define SLUICE_CONDUIT_IN_LIBRARY(name) names.push_back(#name);
#define SLUICE_CONDUIT_IN_TESTS(id) names.push_back(sluice::conduit::registered::conduit_##id().name);
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_IN_LIBRARY
#undef SLUICE_CONDUIT_IN_TESTS
    return names;
}

std::string probe_ok() { return ""; }
std::string probe_no_device() { return "no device"; }
std::string probe_no_library() { return "libfoo.so.1 not found"; }

TransportInfo fake(const char *name, int priority, bool network, std::string (*probe)()) {
    return {.name = name, .description = "made up", .priority = priority, .network = network, .capabilities = "",
            .probe = probe, .create = nullptr, .limits = nullptr};
}

// Sorted by priority, as transport_registry() gives them.
const std::vector<TransportInfo> fakes = {
    fake("shm", 100, false, probe_ok),    fake("verbs", 50, true, probe_no_device),
    fake("ofi", 40, true, probe_ok),      fake("portals", 30, true, probe_no_library),
    fake("dgram", 10, true, probe_ok),
};

std::string others_text(const ConduitChoice &c) {
    std::string out;
    for (const auto &[name, why] : c.others) out += name + ": " + why + "\n";
    return out;
}

} // namespace

TEST(Registry, HoldsEveryBuiltConduitByPriorityComplete) {
    const auto &registry = sluice::conduit::transport_registry();
    for (const std::string &name : built_names())
        EXPECT_TRUE(std::any_of(registry.begin(), registry.end(), [&](const TransportInfo &t) { return name == t.name; }))
            << name << " is built but not registered";
    EXPECT_EQ(registry.size(), built_names().size());
    for (std::size_t i = 0; i + 1 < registry.size(); ++i)
        EXPECT_GE(registry[i].priority, registry[i + 1].priority) << registry[i].name << " before " << registry[i + 1].name;
    for (const TransportInfo &t : registry) {
        EXPECT_TRUE(t.name && *t.name && t.description && *t.description && t.capabilities && *t.capabilities) << t.name;
        EXPECT_TRUE(t.probe != nullptr && t.create != nullptr) << t.name;
        EXPECT_EQ(std::strchr(t.description, '\n'), nullptr) << t.name << ": a description is one line";
    }
}

TEST(Registry, SecondRegistrationOfANameIsIgnored) {
    const auto &registry = sluice::conduit::transport_registry();
    ASSERT_FALSE(registry.empty());
    TransportInfo copy = registry[0];
    copy.description = "an impostor";
    EXPECT_TRUE(sluice::conduit::transport_register(copy));
    for (const TransportInfo &t : sluice::conduit::transport_registry())
        EXPECT_STRNE(t.description, "an impostor");
}

// The template is built for the tests only, registers, and never probes.
TEST(Registry, TemplateIsLinkedForTestsAndNeverChosen) {
    const auto &registry = sluice::conduit::transport_registry();
    auto it = std::find_if(registry.begin(), registry.end(), [](const TransportInfo &t) { return std::strcmp(t.name, "template") == 0; });
    ASSERT_NE(it, registry.end());
    EXPECT_NE(it->probe(), "");
    ConduitChoice c = conduit_choose(registry, it->network, "template", "SLUICE_NETWORK");
    EXPECT_EQ(c.chosen, nullptr);
    EXPECT_NE(c.error.find("template: a skeleton"), std::string::npos) << c.error;
    // Unset: the template is never the default.  A build with no other
    // network conduit (--disable-udp) has nothing to choose, and says why
    // the template was not taken.
    c = conduit_choose(registry, it->network, "", "SLUICE_NETWORK");
    const bool other_network = std::any_of(registry.begin(), registry.end(), [](const TransportInfo &t) {
        return t.network && std::strcmp(t.name, "template") != 0 && t.probe().empty();
    });
    if (other_network) {
        ASSERT_NE(c.chosen, nullptr) << c.error;
        EXPECT_STRNE(c.chosen->name, "template");
    } else {
        EXPECT_EQ(c.chosen, nullptr);
        EXPECT_NE(c.error.find("template: a skeleton"), std::string::npos) << c.error;
    }
}

// The network choice for SLUICE_NETWORK=`wanted` is `name`, chosen `how`,
// with `others` (one "name: why not" line each).
void expect_network_choice(const std::string &wanted, const char *name, const std::string &how,
                           const std::string &others) {
    const ConduitChoice c = conduit_choose(fakes, true, wanted, "SLUICE_NETWORK");
    ASSERT_NE(c.chosen, nullptr) << c.error;
    EXPECT_STREQ(c.chosen->name, name);
    EXPECT_EQ(c.how, how);
    EXPECT_EQ(others_text(c), others);
}

TEST(ConduitChoice, UnsetTakesTheHighestPriorityThatProbes) {
    expect_network_choice("", "ofi", "highest priority whose probe succeeds",
                          "verbs: probe failed: no device\n"
                          "portals: lower priority than ofi\n"
                          "dgram: lower priority than ofi\n");
    const ConduitChoice c = conduit_choose(fakes, false, "", "the same-host conduit");
    ASSERT_NE(c.chosen, nullptr);
    EXPECT_STREQ(c.chosen->name, "shm");
}

TEST(ConduitChoice, ListedOrderBeatsPriority) {
    expect_network_choice("dgram,ofi", "dgram", "first of SLUICE_NETWORK=dgram,ofi whose probe succeeds",
                          "ofi: listed after dgram\n"
                          "verbs: not listed in SLUICE_NETWORK\n"
                          "portals: not listed in SLUICE_NETWORK\n");
}

TEST(ConduitChoice, ListedConduitThatFailsItsProbeIsPassedOver) {
    ConduitChoice c = conduit_choose(fakes, true, " verbs , portals,dgram,", "SLUICE_NETWORK");
    ASSERT_NE(c.chosen, nullptr) << c.error;
    EXPECT_STREQ(c.chosen->name, "dgram");
    EXPECT_NE(others_text(c).find("verbs: probe failed: no device\nportals: probe failed: libfoo.so.1 not found\n"),
              std::string::npos)
        << others_text(c);
}

TEST(ConduitChoice, NoneProbesNamesEachAndItsReason) {
    ConduitChoice c = conduit_choose(fakes, true, "verbs,portals", "SLUICE_NETWORK");
    EXPECT_EQ(c.chosen, nullptr);
    EXPECT_EQ(c.error, "no network conduit can run here (SLUICE_NETWORK=verbs,portals): verbs: no device; "
                       "portals: libfoo.so.1 not found");
    EXPECT_NE(c.fix.find("sluice-info --conduits"), std::string::npos);
    const std::vector<TransportInfo> broken = {fake("verbs", 50, true, probe_no_device)};
    c = conduit_choose(broken, true, "", "SLUICE_NETWORK");
    EXPECT_EQ(c.chosen, nullptr);
    EXPECT_EQ(c.error, "no network conduit can run here: verbs: no device");
    EXPECT_FALSE(c.unknown_name);
}

TEST(ConduitChoice, UnknownNameSaysDidYouMeanAndListsTheBuiltOnes) {
    ConduitChoice c = conduit_choose(fakes, true, "ofi,verb", "SLUICE_NETWORK");
    EXPECT_EQ(c.chosen, nullptr) << "a typo is refused even when an earlier name would do";
    EXPECT_TRUE(c.unknown_name);
    EXPECT_EQ(c.error, "SLUICE_NETWORK=ofi,verb: this build has no network conduit 'verb'; did you mean 'verbs'? "
                       "(network conduits built: verbs, ofi, portals, dgram)");
    c = conduit_choose(fakes, true, "infiniband", "SLUICE_NETWORK");
    EXPECT_EQ(c.error.find("did you mean"), std::string::npos) << c.error;
    EXPECT_NE(c.error.find("(network conduits built: verbs, ofi, portals, dgram)"), std::string::npos) << c.error;
    // A same-host conduit is not a network conduit.
    c = conduit_choose(fakes, true, "shm", "SLUICE_NETWORK");
    EXPECT_EQ(c.chosen, nullptr);
    EXPECT_NE(c.error.find("no network conduit 'shm'"), std::string::npos) << c.error;
}

TEST(ConduitChoice, ABuildWithoutTheKindSaysSo) {
    const std::vector<TransportInfo> only_local = {fake("shm", 100, false, probe_ok)};
    ConduitChoice c = conduit_choose(only_local, true, "", "SLUICE_NETWORK");
    EXPECT_EQ(c.chosen, nullptr);
    EXPECT_EQ(c.error, "this build has no network conduit");
    c = conduit_choose(only_local, true, "dgram", "SLUICE_NETWORK");
    EXPECT_EQ(c.error, "SLUICE_NETWORK=dgram: this build has no network conduit 'dgram' (network conduits built: none)");
}
