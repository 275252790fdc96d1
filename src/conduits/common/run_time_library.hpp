// src/conduits/common/run_time_library.hpp - a NIC library that libsluice
// opens with dlopen the first time a job asks for its conduit (ofi,
// portals, gni, lapi), rather than links: libsluice then loads where that
// library is not installed, the conduit's probe says why it cannot run
// there, and a process that never uses the conduit never pays for loading
// it (libfabric's start-up calibrates PSM's clocks for 200 ms).
#pragma once

#include <dlfcn.h>
#include <signal.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

namespace sluice::conduit::common {

// dlopen that leaves the process's signal dispositions as they were: a
// library's constructors may install handlers of their own (Debian's
// libfabric loads the PSM libraries, whose handlers print a backtrace and
// exit 1 on SIGSEGV, SIGABRT, SIGBUS, ...), which would take the place of
// Sluice's (a rank's death by a signal is its job's code, 128 + N) and the
// application's.  Linked, they ran before main and were replaced by
// whatever was installed after; opened mid-run, they are put back here.
inline void *dl_open_keeping_signals(const char *path, int flags) {
    struct sigaction before[NSIG];
    for (int s = 1; s < NSIG; ++s) (void)::sigaction(s, nullptr, &before[s]);
    void *lib = ::dlopen(path, flags);
    if (lib == nullptr) return nullptr;
    for (int s = 1; s < NSIG; ++s) {
        if (s == SIGKILL || s == SIGSTOP) continue;
        struct sigaction now;
        if (::sigaction(s, nullptr, &now) != 0) continue;
        const bool info = (now.sa_flags & SA_SIGINFO) != 0;
        const bool was_info = (before[s].sa_flags & SA_SIGINFO) != 0;
        const bool same = info == was_info && (info ? now.sa_sigaction == before[s].sa_sigaction
                                                    : now.sa_handler == before[s].sa_handler);
        if (!same) (void)::sigaction(s, &before[s], nullptr);
    }
    return lib;
}

// Opens (RTLD_NOW | RTLD_LOCAL) the library `knob_name` names when set
// (`chosen`), else the first of `defaults` that opens.  Null and `why`
// set ("cannot open the LIBRARY library (...)"), naming every attempt and
// the knob, when none does; `opened` is the path that did.
inline void *dl_open_first(const std::string &chosen, std::initializer_list<const char *> defaults,
                           const char *library, const char *knob_name, std::string &why, std::string &opened) {
    std::string tried;
    auto attempt = [&](const std::string &path) -> void * {
        if (path.empty()) return nullptr;
        void *lib = dl_open_keeping_signals(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib != nullptr) {
            opened = path;
        } else {
            const char *e = ::dlerror();
            tried += (tried.empty() ? "" : "; ") + (e != nullptr ? std::string(e) : path);
        }
        return lib;
    };
    void *lib = nullptr;
    if (!chosen.empty()) {
        lib = attempt(chosen);
    } else {
        for (const char *path : defaults)
            if (lib == nullptr && path != nullptr) lib = attempt(path);
    }
    if (lib == nullptr)
        why = std::string("cannot open the ") + library + " library (" + tried +
              (chosen.empty() ? std::string("; set ") + knob_name + " or LD_LIBRARY_PATH)" : std::string(")"));
    return lib;
}

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

// Opens the library (dl_open_first: the knob's choice, else the first of
// `defaults`) and lets `bind` point the table's entries into it (dl_bind
// chained with &).  Not ok, with why, when it does not open ("cannot open
// the LIBRARY library (...)") or lacks an entry ("PATH is not WHAT: it has
// no NAME").
template <class Api>
RunTimeLibrary<Api> load_library(const std::string &chosen, std::initializer_list<const char *> defaults,
                                 const char *library, const char *knob_name, const char *what,
                                 bool (*bind)(void *lib, Api &api, std::string &why)) {
    RunTimeLibrary<Api> l;
    std::string path;
    void *lib = dl_open_first(chosen, defaults, library, knob_name, l.why, path);
    if (lib == nullptr) return l;
    l.ok = bind(lib, l.api, l.why);
    if (!l.ok) l.why = path + " is not " + what + ": " + l.why;
    return l;
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

// run_time_api for code that runs only once the conduit opened, which it
// does only after the library loaded: never null.
template <class Api, RunTimeLibrary<Api> (*Load)()> const Api &opened_api() {
    const Api *a = run_time_api<Api, Load>(nullptr);
    if (a == nullptr) std::abort();
    return *a;
}

} // namespace sluice::conduit::common
