// src/conduits/ofi/fabric_api.hpp - libfabric, opened at run time.
// libsluice does not link libfabric: the conduit opens it with dlopen
// (RTLD_LOCAL) the first time a job probes or opens ofi.  Debian's
// libfabric links the PSM libraries, whose constructors calibrate a clock
// for 200 ms in every process that loads them; linked, that was every
// Sluice process (each rank, sluicerun, sluice-info), ofi or not.  It also
// lets a Sluice built with the ofi conduit run where libfabric is not
// installed, the probe saying why ofi cannot.
//
// Only libfabric's exported functions go through this table; its other
// calls (fi_domain, fi_endpoint, fi_send, fi_close, ...) are inline in its
// headers and go through the objects' operation tables.
#pragma once

#include <rdma/fabric.h>

#include <string>

namespace sluice::conduit::ofi {

// The entry points the conduit calls, each with its libfabric signature.
struct Api {
    decltype(&::fi_getinfo) getinfo;
    decltype(&::fi_freeinfo) freeinfo;
    decltype(&::fi_dupinfo) dupinfo;
    decltype(&::fi_fabric) fabric;
    decltype(&::fi_strerror) strerror;
    decltype(&::fi_tostr) tostr;
};

// Opens libfabric once per process (SLUICE_OFI_LIBRARY, else the one
// configure found, else libfabric.so.1 on the loader's path) and returns
// its entry points, or nullptr with *why saying what failed.  Never closed:
// providers keep threads and registrations for the life of the process.
const Api *api(std::string *why = nullptr);

// api() for code that runs only after the conduit opened: never nullptr.
const Api &fab();

} // namespace sluice::conduit::ofi
