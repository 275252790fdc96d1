// src/conduits/gni/gni_api.hpp - libugni, opened at run time.  libsluice
// does not link it: the conduit opens it with dlopen (RTLD_LOCAL) the
// first time a job asks for it, as the portals conduit opens libportals
// (portals_api.hpp), so a Sluice built with the gni conduit runs where no
// uGNI library is installed (a Cray's login node, a test machine).
#pragma once

#include <gni_pub.h>

#include <string>

namespace sluice::conduit::gni {

// The entry points the conduit calls, each with its uGNI signature.
struct Api {
    decltype(&::GNI_CdmCreate) CdmCreate;
    decltype(&::GNI_CdmAttach) CdmAttach;
    decltype(&::GNI_CdmDestroy) CdmDestroy;
    decltype(&::GNI_CqCreate) CqCreate;
    decltype(&::GNI_CqDestroy) CqDestroy;
    decltype(&::GNI_CqGetEvent) CqGetEvent;
    decltype(&::GNI_EpCreate) EpCreate;
    decltype(&::GNI_EpBind) EpBind;
    decltype(&::GNI_EpUnbind) EpUnbind;
    decltype(&::GNI_EpDestroy) EpDestroy;
    decltype(&::GNI_EpSetEventData) EpSetEventData;
    decltype(&::GNI_EpPostDataWId) EpPostDataWId;
    decltype(&::GNI_EpPostDataTestById) EpPostDataTestById;
    decltype(&::GNI_EpPostDataCancelById) EpPostDataCancelById;
    decltype(&::GNI_PostDataProbeById) PostDataProbeById;
    decltype(&::GNI_MemRegister) MemRegister;
    decltype(&::GNI_MemDeregister) MemDeregister;
    decltype(&::GNI_SmsgBufferSizeNeeded) SmsgBufferSizeNeeded;
    decltype(&::GNI_SmsgInit) SmsgInit;
    decltype(&::GNI_SmsgSendWTag) SmsgSendWTag;
    decltype(&::GNI_SmsgGetNextWTag) SmsgGetNextWTag;
    decltype(&::GNI_SmsgRelease) SmsgRelease;
    decltype(&::GNI_PostFma) PostFma;
    decltype(&::GNI_PostRdma) PostRdma;
    decltype(&::GNI_GetCompleted) GetCompleted;
};

// Opens the library once per process (SLUICE_GNI_LIBRARY, else
// libugni.so.0 on the loader's path) and returns its entry points, or
// nullptr with *why saying what failed.  Never closed.
const Api *api(std::string *why = nullptr);

// api() for code that runs only after the conduit opened: never nullptr.
const Api &ugni();

// The name of a return code as the documentation spells it
// ("GNI_RC_NOT_DONE"); libugni's own string function differs between
// Cray's library and others, so the conduit keeps its own.
const char *rc_name(gni_return_t rc);

} // namespace sluice::conduit::gni
