// src/conduits/common/run_time_library.hpp - a NIC library that libsluice
// opens with dlopen the first time a job asks for its conduit (portals,
// gni), rather than links: libsluice then loads where that library is not
// installed, and the conduit's probe says why it cannot run there.
#pragma once

#include <dlfcn.h>

#include <string>

namespace sluice::conduit::common {

// The library's entry points (`Api`, a struct of function pointers) and,
// when it could not be opened or lacks one, why.
template <class Api> struct RunTimeLibrary {
    Api api{};
    bool ok = false;
    std::string why;
};

// Points `slot` at `name` in `lib`; a missing one is the first thing `why`
// names ("it has no NAME").  Chain with & (not &&) so every slot is tried.
template <typename F> bool dl_bind(void *lib, const char *name, F &slot, std::string &why) {
    void *p = ::dlsym(lib, name);
    if (p == nullptr) {
        if (why.empty()) why = std::string("it has no ") + name;
        return false;
    }
    slot = reinterpret_cast<F>(p);
    return true;
}

// The table `Load` fills, loaded once for the process; null (and `why`
// set, when given) if the library is not usable.
template <class Api, RunTimeLibrary<Api> (*Load)()> const Api *run_time_api(std::string *why) {
    static const RunTimeLibrary<Api> loaded = Load();
    if (!loaded.ok) {
        if (why != nullptr) *why = loaded.why;
        return nullptr;
    }
    return &loaded.api;
}

} // namespace sluice::conduit::common
