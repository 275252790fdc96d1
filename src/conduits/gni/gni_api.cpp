// src/conduits/gni/gni_api.cpp - opening libugni at run time (gni_api.hpp
// says why).
#include "conduits/gni/gni_api.hpp"

#include "base/knobs.hpp"
#include "conduits/common/run_time_library.hpp"
#include "conduits/knobs.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace sluice::conduit::gni {

namespace {

using Loaded = common::RunTimeLibrary<Api>;
using common::dl_bind;

Loaded load() {
    Loaded l;
    const std::string &chosen = base::knob_string(knob(Knob::GNI_LIBRARY));
    const std::string path = chosen.empty() ? "libugni.so.0" : chosen;
    void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char *e = ::dlerror();
        l.why = "cannot open the uGNI library (" + (e != nullptr ? std::string(e) : path) +
                (chosen.empty() ? "; set SLUICE_GNI_LIBRARY or LD_LIBRARY_PATH)" : ")");
        return l;
    }
    Api &a = l.api;
    l.ok = dl_bind(lib, "GNI_CdmCreate", a.CdmCreate, l.why) & dl_bind(lib, "GNI_CdmAttach", a.CdmAttach, l.why) &
           dl_bind(lib, "GNI_CdmDestroy", a.CdmDestroy, l.why) & dl_bind(lib, "GNI_CqCreate", a.CqCreate, l.why) &
           dl_bind(lib, "GNI_CqDestroy", a.CqDestroy, l.why) & dl_bind(lib, "GNI_CqGetEvent", a.CqGetEvent, l.why) &
           dl_bind(lib, "GNI_EpCreate", a.EpCreate, l.why) & dl_bind(lib, "GNI_EpBind", a.EpBind, l.why) &
           dl_bind(lib, "GNI_EpUnbind", a.EpUnbind, l.why) & dl_bind(lib, "GNI_EpDestroy", a.EpDestroy, l.why) &
           dl_bind(lib, "GNI_MemRegister", a.MemRegister, l.why) &
           dl_bind(lib, "GNI_MemDeregister", a.MemDeregister, l.why) &
           dl_bind(lib, "GNI_SmsgBufferSizeNeeded", a.SmsgBufferSizeNeeded, l.why) &
           dl_bind(lib, "GNI_SmsgInit", a.SmsgInit, l.why) & dl_bind(lib, "GNI_SmsgSendWTag", a.SmsgSendWTag, l.why) &
           dl_bind(lib, "GNI_SmsgGetNextWTag", a.SmsgGetNextWTag, l.why) &
           dl_bind(lib, "GNI_SmsgRelease", a.SmsgRelease, l.why) & dl_bind(lib, "GNI_PostFma", a.PostFma, l.why) &
           dl_bind(lib, "GNI_PostRdma", a.PostRdma, l.why) & dl_bind(lib, "GNI_GetCompleted", a.GetCompleted, l.why);
    if (!l.ok) l.why = path + " is not a uGNI library: " + l.why;
    return l;
}

} // namespace

const Api *api(std::string *why) { return common::run_time_api<Api, load>(why); }

const Api &ugni() {
    const Api *a = api();
    if (a == nullptr) std::abort();  // the conduit opened only after api() succeeded
    return *a;
}

const char *rc_name(gni_return_t rc) {
    switch (rc) {
    case GNI_RC_SUCCESS: return "GNI_RC_SUCCESS";
    case GNI_RC_NOT_DONE: return "GNI_RC_NOT_DONE";
    case GNI_RC_INVALID_PARAM: return "GNI_RC_INVALID_PARAM";
    case GNI_RC_ERROR_RESOURCE: return "GNI_RC_ERROR_RESOURCE";
    case GNI_RC_TIMEOUT: return "GNI_RC_TIMEOUT";
    case GNI_RC_PERMISSION_ERROR: return "GNI_RC_PERMISSION_ERROR";
    case GNI_RC_DESCRIPTOR_ERROR: return "GNI_RC_DESCRIPTOR_ERROR";
    case GNI_RC_ALIGNMENT_ERROR: return "GNI_RC_ALIGNMENT_ERROR";
    case GNI_RC_INVALID_STATE: return "GNI_RC_INVALID_STATE";
    case GNI_RC_NO_MATCH: return "GNI_RC_NO_MATCH";
    case GNI_RC_SIZE_ERROR: return "GNI_RC_SIZE_ERROR";
    case GNI_RC_TRANSACTION_ERROR: return "GNI_RC_TRANSACTION_ERROR";
    case GNI_RC_ILLEGAL_OP: return "GNI_RC_ILLEGAL_OP";
    case GNI_RC_ERROR_NOMEM: return "GNI_RC_ERROR_NOMEM";
    default: return "an unknown gni_return_t";
    }
}

} // namespace sluice::conduit::gni
