// src/conduits/ofi/fabric_api.cpp - opening libfabric at run time
// (fabric_api.hpp says why).
#include "conduits/ofi/fabric_api.hpp"

#include "base/knobs.hpp"
#include "conduits/common/run_time_library.hpp"
#include "conduits/knobs.hpp"
#include "sluice_config.h"

namespace sluice::conduit::ofi {

namespace {

using Loaded = common::RunTimeLibrary<Api>;
using common::dl_bind;

bool bind(void *lib, Api &a, std::string &why) {
    return dl_bind(lib, "fi_getinfo", a.getinfo, why) & dl_bind(lib, "fi_freeinfo", a.freeinfo, why) &
           dl_bind(lib, "fi_dupinfo", a.dupinfo, why) & dl_bind(lib, "fi_fabric", a.fabric, why) &
           dl_bind(lib, "fi_strerror", a.strerror, why) & dl_bind(lib, "fi_tostr", a.tostr, why);
}

Loaded load() {
#ifdef SLUICE_FABRIC_LIBRARY
    const char *configured = SLUICE_FABRIC_LIBRARY;
#else
    const char *configured = nullptr;
#endif
    return common::load_library<Api>(base::knob_string(knob(Knob::OFI_LIBRARY)), {configured, "libfabric.so.1"},
                                     "libfabric", "SLUICE_OFI_LIBRARY", "libfabric", bind);
}

} // namespace

const Api *api(std::string *why) { return common::run_time_api<Api, load>(why); }

const Api &fab() { return common::opened_api<Api, load>(); }

} // namespace sluice::conduit::ofi
