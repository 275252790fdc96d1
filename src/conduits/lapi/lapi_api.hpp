// src/conduits/lapi/lapi_api.hpp - liblapi, opened at run time.  libsluice
// does not link it: the conduit opens it with dlopen (RTLD_LOCAL) the
// first time a job asks for it, as the gni conduit opens libugni
// (gni_api.hpp), so a Sluice built with the lapi conduit runs where no
// LAPI library is installed, and the conduit's probe says why it cannot
// run there.
#pragma once

#include <lapi.h>

#include <string>

namespace sluice::conduit::lapi {

// The entry points the conduit calls, each with its LAPI signature.
struct Api {
    decltype(&::LAPI_Init) Init;
    decltype(&::LAPI_Term) Term;
    decltype(&::LAPI_Msg_string) Msg_string;
    decltype(&::LAPI_Qenv) Qenv;
    decltype(&::LAPI_Senv) Senv;
    decltype(&::LAPI_Addr_set) Addr_set;
    decltype(&::LAPI_Addr_get) Addr_get;
    decltype(&::LAPI_Amsend) Amsend;
    decltype(&::LAPI_Put) Put;
    decltype(&::LAPI_Get) Get;
    decltype(&::LAPI_Setcntr) Setcntr;
    decltype(&::LAPI_Getcntr) Getcntr;
    decltype(&::LAPI_Probe) Probe;
};

// Opens the library once per process (SLUICE_LAPI_LIBRARY, else
// liblapi.so.1 on the loader's path) and returns its entry points, or
// nullptr with *why saying what failed.  Never closed.
const Api *api(std::string *why = nullptr);

// api() for code that runs only after the conduit opened: never nullptr.
const Api &calls();

// LAPI's own text for a return code (LAPI_Msg_string: its name, then what
// it means), or the number when LAPI has none.
std::string error_text(int rc);

} // namespace sluice::conduit::lapi
