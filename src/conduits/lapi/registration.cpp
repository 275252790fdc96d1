// src/conduits/lapi/registration.cpp - the lapi conduit in the registry:
// what it is and whether LAPI can carry it here.
#include "conduits/lapi/lapi.hpp"
#include "conduits/registry.hpp"

SLUICE_CONDUIT_REGISTER(lapi, {
    .name = "lapi",
    .description = "AMs and RDMA over IBM LAPI (SP switch, Federation): LAPI_Amsend, LAPI_Put and LAPI_Get",
    .priority = 15,  // above udp: a machine whose ranks have a LAPI job (POE's MP_PARTITION) wants it
    .network = true,
    .capabilities = "AMs by LAPI_Amsend, the AM in the user header (payload packed there when it fits, else as the "
                    "message's data into a buffer or the segment); Put/Get by LAPI_Put/LAPI_Get with completion "
                    "counters; two-part Long; interrupt or polling mode",
    .probe = sluice::conduit::lapi::probe,
    .create = sluice::conduit::lapi::make_lapi_transport,
    .limits = sluice::conduit::lapi::limits,
})
