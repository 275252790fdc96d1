// src/conduits/registry.cpp - the conduits compiled into this build.
// Each conduit's configure.m4 defines SLUICE_CONDUIT_<NAME>; this is the one
// place that names them.
#include "sluice_config.h"

#include "conduits/transport.hpp"
#ifdef SLUICE_CONDUIT_SMP
#include "conduits/smp/smp.hpp"
#endif
#ifdef SLUICE_CONDUIT_UDP
#include "conduits/udp/udp.hpp"
#endif
#ifdef SLUICE_CONDUIT_TEMPLATE
#include "conduits/template/template.hpp"
#endif

namespace sluice::conduit {

const std::vector<TransportInfo> &transport_registry() {
    static const std::vector<TransportInfo> registry = {
#ifdef SLUICE_CONDUIT_SMP
        {"smp", "shared memory between ranks of one host (AM rings, mapped segments)", false,
         smp::make_smp_transport},
#endif
#ifdef SLUICE_CONDUIT_UDP
        {"udp", "reliable AMs over UDP datagrams to other hosts (Put/Get over AM)", true,
         udp::make_udp_transport},
#endif
#ifdef SLUICE_CONDUIT_TEMPLATE
        {"template", "documented skeleton for new conduits (loopback only, never selected)", false,
         template_::make_template_transport},
#endif
    };
    return registry;
}

} // namespace sluice::conduit
