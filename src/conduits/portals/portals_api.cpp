// src/conduits/portals/portals_api.cpp - opening the Portals 4 library at
// run time (portals_api.hpp says why).
#include "conduits/portals/portals_api.hpp"

#include "base/knobs.hpp"
#include "conduits/common/run_time_library.hpp"
#include "conduits/knobs.hpp"
#include "sluice_config.h"

namespace sluice::conduit::portals {

namespace {

using Loaded = common::RunTimeLibrary<Api>;
using common::dl_bind;

bool bind(void *lib, Api &a, std::string &why) {
    return dl_bind(lib, "PtlInit", a.Init, why) & dl_bind(lib, "PtlFini", a.Fini, why) &
           dl_bind(lib, "PtlNIInit", a.NIInit, why) & dl_bind(lib, "PtlNIFini", a.NIFini, why) &
           dl_bind(lib, "PtlGetPhysId", a.GetPhysId, why) & dl_bind(lib, "PtlSetMap", a.SetMap, why) &
           dl_bind(lib, "PtlEQAlloc", a.EQAlloc, why) & dl_bind(lib, "PtlEQFree", a.EQFree, why) &
           dl_bind(lib, "PtlEQGet", a.EQGet, why) & dl_bind(lib, "PtlPTAlloc", a.PTAlloc, why) &
           dl_bind(lib, "PtlPTFree", a.PTFree, why) & dl_bind(lib, "PtlMDBind", a.MDBind, why) &
           dl_bind(lib, "PtlMDRelease", a.MDRelease, why) & dl_bind(lib, "PtlMEAppend", a.MEAppend, why) &
           dl_bind(lib, "PtlMEUnlink", a.MEUnlink, why) & dl_bind(lib, "PtlPut", a.Put, why) &
           dl_bind(lib, "PtlGet", a.Get, why) & dl_bind(lib, "PtlAtomic", a.Atomic, why) &
           dl_bind(lib, "PtlFetchAtomic", a.FetchAtomic, why) & dl_bind(lib, "PtlSwap", a.Swap, why);
}

Loaded load() {
#ifdef SLUICE_PORTALS4_LIBRARY
    const char *configured = SLUICE_PORTALS4_LIBRARY;
#else
    const char *configured = nullptr;
#endif
    return common::load_library<Api>(base::knob_string(knob(Knob::PORTALS_LIBRARY)),
                                     {configured, "libportals.so.4"}, "Portals 4", "SLUICE_PORTALS_LIBRARY", "a Portals 4 library", bind);
}

} // namespace

const Api *api(std::string *why) { return common::run_time_api<Api, load>(why); }

const Api &ptl() { return common::opened_api<Api, load>(); }

} // namespace sluice::conduit::portals
