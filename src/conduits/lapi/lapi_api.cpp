// src/conduits/lapi/lapi_api.cpp - opening liblapi at run time (lapi_api.hpp
// says why).
#include "conduits/lapi/lapi_api.hpp"

#include "base/knobs.hpp"
#include "conduits/common/run_time_library.hpp"
#include "conduits/knobs.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace sluice::conduit::lapi {

namespace {

using Loaded = common::RunTimeLibrary<Api>;
using common::dl_bind;

Loaded load() {
    Loaded l;
    const std::string &chosen = base::knob_string(knob(Knob::LAPI_LIBRARY));
    const std::string path = chosen.empty() ? "liblapi.so.1" : chosen;
    void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char *e = ::dlerror();
        l.why = "cannot open the LAPI library (" + (e != nullptr ? std::string(e) : path) +
                (chosen.empty() ? "; set SLUICE_LAPI_LIBRARY or LD_LIBRARY_PATH)" : ")");
        return l;
    }
    Api &a = l.api;
    l.ok = dl_bind(lib, "LAPI_Init", a.Init, l.why) & dl_bind(lib, "LAPI_Term", a.Term, l.why) &
           dl_bind(lib, "LAPI_Msg_string", a.Msg_string, l.why) & dl_bind(lib, "LAPI_Qenv", a.Qenv, l.why) &
           dl_bind(lib, "LAPI_Senv", a.Senv, l.why) & dl_bind(lib, "LAPI_Addr_set", a.Addr_set, l.why) &
           dl_bind(lib, "LAPI_Addr_get", a.Addr_get, l.why) & dl_bind(lib, "LAPI_Amsend", a.Amsend, l.why) &
           dl_bind(lib, "LAPI_Put", a.Put, l.why) & dl_bind(lib, "LAPI_Get", a.Get, l.why) &
           dl_bind(lib, "LAPI_Setcntr", a.Setcntr, l.why) & dl_bind(lib, "LAPI_Getcntr", a.Getcntr, l.why) &
           dl_bind(lib, "LAPI_Probe", a.Probe, l.why);
    if (!l.ok) l.why = path + " is not a LAPI library: " + l.why;
    return l;
}

} // namespace

const Api *api(std::string *why) { return common::run_time_api<Api, load>(why); }

const Api &calls() {
    const Api *a = api();
    if (a == nullptr) std::abort();  // the conduit opened only after api() succeeded
    return *a;
}

std::string error_text(int rc) {
    char text[LAPI_MAX_ERR_STRING + 1] = {};
    const Api *a = api();
    if (a == nullptr || a->Msg_string(rc, text) != LAPI_SUCCESS || text[0] == '\0')
        return "LAPI return code " + std::to_string(rc);
    return text;
}

} // namespace sluice::conduit::lapi
