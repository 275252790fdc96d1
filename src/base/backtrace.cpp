// src/base/backtrace.cpp - symbolized backtraces through libdw (elfutils).
#include "base/backtrace.hpp"

#include "sluice_config.h"

#include <atomic>

#ifdef SLUICE_HAVE_LIBDW
#include <elfutils/libdwfl.h>

#include <cxxabi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#endif

namespace sluice::base {

#ifdef SLUICE_HAVE_LIBDW
namespace {

std::atomic<bool> entered{false};

void write_all(const char *text, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(2, text, n);
        if (w <= 0) return;
        text += w;
        n -= static_cast<std::size_t>(w);
    }
}

// The module's file name without its directory.
const char *base_name(const char *path) {
    const char *slash = path ? std::strrchr(path, '/') : nullptr;
    return slash ? slash + 1 : (path ? path : "?");
}

} // namespace

bool backtrace_print_symbolized(void *const *frames, int count) {
    if (entered.exchange(true)) return false;
    char *debuginfo_path = nullptr;
    const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = nullptr,
        .debuginfo_path = &debuginfo_path,
    };
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl) return false;
    if (dwfl_linux_proc_report(dwfl, ::getpid()) != 0 || dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
        dwfl_end(dwfl);
        return false;
    }
    const char header[] = "backtrace:\n";
    write_all(header, sizeof header - 1);
    for (int i = 0; i < count; ++i) {
        // A return address points after the call: look up the call itself.
        const Dwarf_Addr pc = reinterpret_cast<Dwarf_Addr>(frames[i]);
        const Dwarf_Addr addr = i > 0 && pc > 0 ? pc - 1 : pc;
        Dwfl_Module *module = dwfl_addrmodule(dwfl, addr);
        const char *symbol = module ? dwfl_module_addrname(module, addr) : nullptr;
        Dwarf_Addr start = 0;
        const char *module_name =
            module ? dwfl_module_info(module, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr) : nullptr;
        int status = -1;
        char *demangled = symbol ? abi::__cxa_demangle(symbol, nullptr, nullptr, &status) : nullptr;
        const char *function = status == 0 && demangled ? demangled : (symbol ? symbol : "??");
        const char *file = nullptr;
        int line = 0;
        if (Dwfl_Line *l = module ? dwfl_module_getsrc(module, addr) : nullptr)
            file = dwfl_lineinfo(l, nullptr, &line, nullptr, nullptr, nullptr);
        char text[1024];
        int n;
        if (file)
            n = std::snprintf(text, sizeof text, "  #%-2d %s at %s:%d (%s)\n", i, function, file, line,
                              base_name(module_name));
        else
            n = std::snprintf(text, sizeof text, "  #%-2d %s (%s+%#llx)\n", i, function, base_name(module_name),
                              static_cast<unsigned long long>(pc - start));
        std::free(demangled);
        if (n > 0) write_all(text, static_cast<std::size_t>(n) < sizeof text ? static_cast<std::size_t>(n) : sizeof text - 1);
    }
    dwfl_end(dwfl);
    return true;
}

#else

bool backtrace_print_symbolized(void *const *, int) { return false; }

#endif

} // namespace sluice::base
