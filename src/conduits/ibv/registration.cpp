// src/conduits/ibv/registration.cpp - the ibv conduit in the registry: what
// it is and whether a verbs device can carry it here.
#include "conduits/ibv/ibv.hpp"
#include "conduits/registry.hpp"

SLUICE_CONDUIT_REGISTER(ibv, {
    .name = "ibv",
    .description = "AMs and RDMA over InfiniBand verbs, RC queue pairs (SLUICE_IBV_PORTS)",
    .priority = 20,  // above udp: a machine with an active HCA port wants it
    .network = true,
    .wakes = true,  // block mode sleeps on the CQs' completion channels
    .capabilities = "AMs by send/recv into an SRQ or per-peer buffers, inline sends; Put/Get by RDMA write/read; "
                    "two-part Long; NIC atomics on 64-bit integers by fetch-and-add/compare-and-swap where the HCA has "
                    "them; needs AM credits",
    .probe = sluice::conduit::ibv::probe,
    .create = sluice::conduit::ibv::make_ibv_transport,
    .limits = sluice::conduit::ibv::limits,
})
