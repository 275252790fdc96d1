// src/conduits/ofi/registration.cpp - the ofi conduit in the registry: what
// it is and whether a libfabric provider can carry it here.
#include "conduits/ofi/ofi.hpp"
#include "conduits/registry.hpp"

SLUICE_CONDUIT_REGISTER(ofi, {
    .name = "ofi",
    .description = "AMs and RDMA over a libfabric provider (SLUICE_OFI_PROVIDER)",
    .priority = 5,
    .network = true,
    .wakes = true,
    .capabilities = "AMs by fi_inject/fi_send into multi-receive buffers; Put/Get by fi_write/fi_read; two-part Long; "
                    "NIC atomics by fi_fetch_atomic/fi_compare_atomic where the provider has FI_ATOMIC; needs AM credits",
    .probe = sluice::conduit::ofi::probe,
    .create = sluice::conduit::ofi::make_ofi_transport,
    .limits = sluice::conduit::ofi::limits,
})
