// src/conduits/gni/registration.cpp - the gni conduit in the registry: what
// it is and whether uGNI can carry it here.
#include "conduits/gni/gni.hpp"
#include "conduits/registry.hpp"

SLUICE_CONDUIT_REGISTER(gni, {
    .name = "gni",
    .description = "AMs and RDMA over Cray uGNI (Gemini, Aries): SMSG mailboxes, FMA and the BTE",
    .priority = 15,  // above udp: a Cray XC's ranks have a NIC when ALPS gave them credentials
    .network = true,
    .capabilities = "AMs by SMSG into a mailbox per peer; Put/Get by FMA (small) or the BTE (large); two-part Long; "
                    "NIC atomics on 64-bit integers (AMOs); a barrier of FMA writes",
    .probe = sluice::conduit::gni::probe,
    .create = sluice::conduit::gni::make_gni_transport,
    .limits = sluice::conduit::gni::limits,
})
