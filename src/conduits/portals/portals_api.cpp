// src/conduits/portals/portals_api.cpp - opening the Portals 4 library at
// run time (portals_api.hpp says why).
#include "conduits/portals/portals_api.hpp"

#include "base/knobs.hpp"
#include "conduits/common/run_time_library.hpp"
#include "conduits/knobs.hpp"
#include "sluice_config.h"

#include <dlfcn.h>

#include <cstdlib>

namespace sluice::conduit::portals {

namespace {

using Loaded = common::RunTimeLibrary<Api>;
using common::dl_bind;

void *open_library(std::string &why, std::string &opened) {
    std::string tried;
    auto attempt = [&](const std::string &path) -> void * {
        void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib != nullptr) {
            opened = path;
        } else {
            const char *e = ::dlerror();
            tried += (tried.empty() ? "" : "; ") + (e != nullptr ? std::string(e) : path);
        }
        return lib;
    };
    const std::string &chosen = base::knob_string(knob(Knob::PORTALS_LIBRARY));
    void *lib = nullptr;
    if (!chosen.empty()) {
        lib = attempt(chosen);
    } else {
#ifdef SLUICE_PORTALS4_LIBRARY
        lib = attempt(SLUICE_PORTALS4_LIBRARY);
#endif
        if (lib == nullptr) lib = attempt("libportals.so.4");
    }
    if (lib == nullptr) why = "cannot open the Portals 4 library (" + tried + ")";
    return lib;
}

Loaded load() {
    Loaded l;
    std::string path;
    void *lib = open_library(l.why, path);
    if (lib == nullptr) return l;
    Api &a = l.api;
    l.ok = dl_bind(lib, "PtlInit", a.Init, l.why) & dl_bind(lib, "PtlFini", a.Fini, l.why) &
           dl_bind(lib, "PtlNIInit", a.NIInit, l.why) & dl_bind(lib, "PtlNIFini", a.NIFini, l.why) &
           dl_bind(lib, "PtlGetPhysId", a.GetPhysId, l.why) & dl_bind(lib, "PtlSetMap", a.SetMap, l.why) &
           dl_bind(lib, "PtlEQAlloc", a.EQAlloc, l.why) & dl_bind(lib, "PtlEQFree", a.EQFree, l.why) &
           dl_bind(lib, "PtlEQGet", a.EQGet, l.why) & dl_bind(lib, "PtlPTAlloc", a.PTAlloc, l.why) &
           dl_bind(lib, "PtlPTFree", a.PTFree, l.why) & dl_bind(lib, "PtlMDBind", a.MDBind, l.why) &
           dl_bind(lib, "PtlMDRelease", a.MDRelease, l.why) & dl_bind(lib, "PtlMEAppend", a.MEAppend, l.why) &
           dl_bind(lib, "PtlMEUnlink", a.MEUnlink, l.why) & dl_bind(lib, "PtlPut", a.Put, l.why) &
           dl_bind(lib, "PtlGet", a.Get, l.why) & dl_bind(lib, "PtlAtomic", a.Atomic, l.why) &
           dl_bind(lib, "PtlFetchAtomic", a.FetchAtomic, l.why) & dl_bind(lib, "PtlSwap", a.Swap, l.why);
    if (!l.ok) l.why = path + " is not a Portals 4 library: " + l.why;
    return l;
}

} // namespace

const Api *api(std::string *why) { return common::run_time_api<Api, load>(why); }

const Api &ptl() {
    const Api *a = api();
    if (a == nullptr) std::abort();  // the conduit opened only after api() succeeded
    return *a;
}

} // namespace sluice::conduit::portals
