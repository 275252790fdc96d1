// src/conduits/gni/gni_api.cpp - opening libugni at run time (gni_api.hpp
// says why).
#include "conduits/gni/gni_api.hpp"

#include "base/knobs.hpp"
#include "conduits/common/run_time_library.hpp"
#include "conduits/knobs.hpp"

namespace sluice::conduit::gni {

namespace {

using Loaded = common::RunTimeLibrary<Api>;
using common::dl_bind;

bool bind(void *lib, Api &a, std::string &why) {
    return dl_bind(lib, "GNI_CdmCreate", a.CdmCreate, why) & dl_bind(lib, "GNI_CdmAttach", a.CdmAttach, why) &
           dl_bind(lib, "GNI_CdmDestroy", a.CdmDestroy, why) & dl_bind(lib, "GNI_CqCreate", a.CqCreate, why) &
           dl_bind(lib, "GNI_CqDestroy", a.CqDestroy, why) & dl_bind(lib, "GNI_CqGetEvent", a.CqGetEvent, why) &
           dl_bind(lib, "GNI_EpCreate", a.EpCreate, why) & dl_bind(lib, "GNI_EpBind", a.EpBind, why) &
           dl_bind(lib, "GNI_EpUnbind", a.EpUnbind, why) & dl_bind(lib, "GNI_EpDestroy", a.EpDestroy, why) &
           dl_bind(lib, "GNI_EpSetEventData", a.EpSetEventData, why) &
           dl_bind(lib, "GNI_EpPostDataWId", a.EpPostDataWId, why) &
           dl_bind(lib, "GNI_EpPostDataTestById", a.EpPostDataTestById, why) &
           dl_bind(lib, "GNI_EpPostDataCancelById", a.EpPostDataCancelById, why) &
           dl_bind(lib, "GNI_PostDataProbeById", a.PostDataProbeById, why) &
           dl_bind(lib, "GNI_MemRegister", a.MemRegister, why) &
           dl_bind(lib, "GNI_MemDeregister", a.MemDeregister, why) &
           dl_bind(lib, "GNI_SmsgBufferSizeNeeded", a.SmsgBufferSizeNeeded, why) &
           dl_bind(lib, "GNI_SmsgInit", a.SmsgInit, why) & dl_bind(lib, "GNI_SmsgSendWTag", a.SmsgSendWTag, why) &
           dl_bind(lib, "GNI_SmsgGetNextWTag", a.SmsgGetNextWTag, why) &
           dl_bind(lib, "GNI_SmsgRelease", a.SmsgRelease, why) & dl_bind(lib, "GNI_PostFma", a.PostFma, why) &
           dl_bind(lib, "GNI_PostRdma", a.PostRdma, why) & dl_bind(lib, "GNI_GetCompleted", a.GetCompleted, why);
}

Loaded load() {
    return common::load_library<Api>(base::knob_string(knob(Knob::GNI_LIBRARY)), {"libugni.so.0"}, "uGNI",
                                     "SLUICE_GNI_LIBRARY", "a uGNI library", bind);
}

} // namespace

const Api *api(std::string *why) { return common::run_time_api<Api, load>(why); }

const Api &ugni() { return common::opened_api<Api, load>(); }

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
