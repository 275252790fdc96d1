// src/conduits/portals/registration.cpp - the portals conduit in the
// registry: what it is and whether a Portals 4 library can run here.
#include "conduits/portals/portals.hpp"
#include "conduits/registry.hpp"

SLUICE_CONDUIT_REGISTER(portals, {
    .name = "portals",
    .description = "AMs and RDMA over the Portals 4 API (GASNet's Portals conduit design)",
    .priority = 2,
    .network = true,
    .capabilities = "AMs by PtlPut into locally managed request buffers, replies into the request's chunk; "
                    "Put/Get by PtlPut/PtlGet on the segment; two-part Long with the notification in match bits; "
                    "NIC atomics by PtlAtomic/PtlFetchAtomic/PtlSwap where max_atomic_size allows; "
                    "needs AM credits (dynamic redistribution)",
    .probe = sluice::conduit::portals::probe,
    .create = sluice::conduit::portals::make_portals_transport,
    .limits = nullptr,
})
