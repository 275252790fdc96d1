// src/conduits/portals/portals_api.hpp - the Portals 4 library, opened at
// run time.  libsluice does not link libportals: the conduit opens it with
// dlopen (RTLD_LOCAL) the first time a job asks for it, so a Sluice built
// with the portals conduit runs where no Portals library is installed, and
// whatever libportals itself links stays out of the process's global
// symbols (the reference implementation links libev, whose libevent
// compatibility names would otherwise take the place of the libevent that
// PMIx and Open MPI use).
#pragma once

#include <portals4.h>

#include <string>

namespace sluice::conduit::portals {

// The entry points the conduit calls, each with its Portals 4 signature.
struct Api {
    decltype(&::PtlInit) Init;
    decltype(&::PtlFini) Fini;
    decltype(&::PtlNIInit) NIInit;
    decltype(&::PtlNIFini) NIFini;
    decltype(&::PtlGetPhysId) GetPhysId;
    decltype(&::PtlSetMap) SetMap;
    decltype(&::PtlEQAlloc) EQAlloc;
    decltype(&::PtlEQFree) EQFree;
    decltype(&::PtlEQGet) EQGet;
    decltype(&::PtlPTAlloc) PTAlloc;
    decltype(&::PtlPTFree) PTFree;
    decltype(&::PtlMDBind) MDBind;
    decltype(&::PtlMDRelease) MDRelease;
    decltype(&::PtlMEAppend) MEAppend;
    decltype(&::PtlMEUnlink) MEUnlink;
    decltype(&::PtlPut) Put;
    decltype(&::PtlGet) Get;
    decltype(&::PtlAtomic) Atomic;
    decltype(&::PtlFetchAtomic) FetchAtomic;
    decltype(&::PtlSwap) Swap;
};

// Opens the library once per process (SLUICE_PORTALS_LIBRARY, else the one
// configure found, else libportals.so.4 on the loader's path) and returns
// its entry points, or nullptr with *why saying what failed.  It is never
// closed: the library's threads live as long as the process.
const Api *api(std::string *why = nullptr);

// api() for code that runs only after the conduit opened: never nullptr.
const Api &ptl();

} // namespace sluice::conduit::portals
