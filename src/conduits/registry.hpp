// src/conduits/registry.hpp - the conduits linked into this program, and the
// choice of the one that carries each kind of traffic.
//
// A conduit registers itself once, in its own folder, with
// SLUICE_CONDUIT_REGISTER (below).  Nothing outside its folder names it:
// core asks the registry for "the network conduit" and "the same-host
// conduit", sluice-info lists what is here.
//
// Why two mechanisms in one macro: a static object registers the conduit
// when its object file is linked, which is all a test program that links a
// conduit built for the tests needs; but a static libsluice.a would leave
// a conduit's object out of a program that references nothing in it.  So
// the registration is also a function, conduit_<name>(), that registry.cpp
// calls for every conduit configure built into libsluice (the list
// src/conduits/conduits.def that autogen.sh writes), which pulls the
// object in under static linking too.
#pragma once

#include "conduits/transport.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sluice::conduit {

struct TransportInfo {
    const char *name;          // what SLUICE_NETWORK and sluice-info call it
    const char *description;   // one line
    int priority = 0;          // among conduits of a kind that probe, the highest is chosen
    bool network = false;      // reaches other hosts (else: ranks of one host only)
    // A waiting rank can sleep until something arrives (a wake-up
    // descriptor: Transport::wake_prepare); else block mode only naps.
    bool wakes = false;
    const char *capabilities = "";  // one line for sluice-info: what it does natively
    // Can this conduit run here (device, provider, library, kernel feature)?
    // "" when it can, else why not, in a few words.  Cheap and side-effect
    // free: sluice-info and every rank's start-up call it.
    std::string (*probe)() = nullptr;
    std::unique_ptr<Transport> (*create)() = nullptr;
    // Lines for sluice-info's limits (each "  name  value ..."), or null.
    std::string (*limits)() = nullptr;
};

// Every conduit linked in, highest priority first (then by name).  Built at
// the first call: conduits register during static initialization.
const std::vector<TransportInfo> &transport_registry();

// Adds `info` (SLUICE_CONDUIT_REGISTER does); a second registration under
// the same name is ignored.  Returns true.
bool transport_register(const TransportInfo &info);

// Which conduit of a kind (network or same-host) carries the traffic.
struct ConduitChoice {
    const TransportInfo *chosen = nullptr;
    std::string how;  // why it was chosen, e.g. "first of SLUICE_NETWORK=a,b that probes"
    // The other conduits of the kind and why each was not chosen.
    std::vector<std::pair<std::string, std::string>> others;
    std::string error, fix;  // when chosen is null
    bool unknown_name = false;  // the error is a name of `wanted` this build lacks
};

// `wanted`: the names listed in order of preference (SLUICE_NETWORK), or
// empty for the highest priority that probes.  An unknown name is an error
// (with the closest name and the list of conduits of the kind), as is a
// kind where nothing probes (with each conduit's reason).  `knob` names the
// setting in messages.
ConduitChoice conduit_choose(const std::vector<TransportInfo> &registry, bool network, const std::string &wanted,
                             const char *knob);

// One line: "a (highest priority whose probe succeeds; not chosen: b:
// probe failed: ...)", or "none (the error)".
std::string conduit_choice_text(const ConduitChoice &c);

// "network" or "same-host".
inline const char *conduit_kind(bool network) { return network ? "network" : "same-host"; }

} // namespace sluice::conduit

// In one .cpp file of the conduit's folder, at global scope:
//   SLUICE_CONDUIT_REGISTER(ofi, {.name = "ofi", .description = "...", .priority = 10,
//                                 .network = true, .capabilities = "...", .probe = probe,
//                                 .create = make_ofi_transport, .limits = nullptr})
// `ident` is the conduit's folder name.
#define SLUICE_CONDUIT_REGISTER(ident, ...)                                                       \
    namespace sluice::conduit::registered {                                                       \
    const ::sluice::conduit::TransportInfo &conduit_##ident() {                                    \
        static const ::sluice::conduit::TransportInfo info = __VA_ARGS__;                          \
        return info;                                                                               \
    }                                                                                              \
    [[maybe_unused]] static const bool conduit_##ident##_registered =                             \
        ::sluice::conduit::transport_register(conduit_##ident());                                  \
    }
