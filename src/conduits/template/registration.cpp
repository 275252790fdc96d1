// src/conduits/template/registration.cpp - the template conduit in the
// registry (src/conduits/registry.hpp): the one place that says what the
// conduit is.  A new conduit fills in each field:
//   name          what SLUICE_NETWORK and sluice-info call it (the folder's name)
//   description   one line for sluice-info
//   priority      among the conduits of its kind that probe, the highest is
//                 chosen when SLUICE_NETWORK is unset (smp 100, udp 10)
//   network       true if it reaches other hosts; false for a same-host conduit
//   capabilities  one line for sluice-info: what it does natively
//   probe         "" if it can run here, else why not: look for the device,
//                 the provider, the library (dlopen), cheaply and without
//                 side effects (every rank calls it at start-up)
//   create        the factory
//   limits        lines for sluice-info's limits (its knobs as set now), or null
#include "conduits/registry.hpp"
#include "conduits/template/template.hpp"

#include <string>

namespace sluice::conduit::template_ {
namespace {

// Fill in here: the template reaches only its own rank, so it must never be
// chosen for a job; a real conduit checks for what it needs and returns ""
// when it is there.
std::string probe() { return "a skeleton that reaches only its own rank (fill in probe() in registration.cpp)"; }

std::string limits() { return "  template max Medium      64K (65536 bytes), a constant\n"; }

} // namespace
} // namespace sluice::conduit::template_

SLUICE_CONDUIT_REGISTER(template, {
    .name = "template",
    .description = "documented skeleton for new conduits (loopback only, never chosen)",
    .priority = 0,
    .network = true,
    .capabilities = "loopback AM queues; Put/Get over AM",
    .probe = sluice::conduit::template_::probe,
    .create = sluice::conduit::template_::make_template_transport,
    .limits = sluice::conduit::template_::limits,
})
