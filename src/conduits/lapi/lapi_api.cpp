// src/conduits/lapi/lapi_api.cpp - opening liblapi at run time (lapi_api.hpp
// says why).
#include "conduits/lapi/lapi_api.hpp"

#include "base/knobs.hpp"
#include "conduits/common/run_time_library.hpp"
#include "conduits/knobs.hpp"

namespace sluice::conduit::lapi {

namespace {

using Loaded = common::RunTimeLibrary<Api>;
using common::dl_bind;

bool bind(void *lib, Api &a, std::string &why) {
    return dl_bind(lib, "LAPI_Init", a.Init, why) & dl_bind(lib, "LAPI_Term", a.Term, why) &
           dl_bind(lib, "LAPI_Msg_string", a.Msg_string, why) & dl_bind(lib, "LAPI_Qenv", a.Qenv, why) &
           dl_bind(lib, "LAPI_Senv", a.Senv, why) & dl_bind(lib, "LAPI_Addr_set", a.Addr_set, why) &
           dl_bind(lib, "LAPI_Addr_get", a.Addr_get, why) & dl_bind(lib, "LAPI_Amsend", a.Amsend, why) &
           dl_bind(lib, "LAPI_Put", a.Put, why) & dl_bind(lib, "LAPI_Get", a.Get, why) &
           dl_bind(lib, "LAPI_Setcntr", a.Setcntr, why) & dl_bind(lib, "LAPI_Getcntr", a.Getcntr, why) &
           dl_bind(lib, "LAPI_Probe", a.Probe, why);
}

Loaded load() {
    return common::load_library<Api>(base::knob_string(knob(Knob::LAPI_LIBRARY)), {"liblapi.so.1"}, "LAPI",
                                     "SLUICE_LAPI_LIBRARY", "a LAPI library", bind);
}

} // namespace

const Api *api(std::string *why) { return common::run_time_api<Api, load>(why); }

const Api &calls() { return common::opened_api<Api, load>(); }

std::string error_text(int rc) {
    char text[LAPI_MAX_ERR_STRING + 1] = {};
    const Api *a = api();
    if (a == nullptr || a->Msg_string(rc, text) != LAPI_SUCCESS || text[0] == '\0')
        return "LAPI return code " + std::to_string(rc);
    return text;
}

} // namespace sluice::conduit::lapi
