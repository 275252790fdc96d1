// src/base/backtrace.hpp - symbolized backtraces for SLUICE_BACKTRACE=1.
#pragma once

namespace sluice::base {

// Prints the `count` return addresses in `frames` (from ::backtrace) on
// stderr, one line each: demangled function name, file:line from the DWARF
// line table, and the module, through elfutils' libdw.  Returns false,
// having printed nothing, when Sluice was built without libdw or libdw
// cannot read this process: the caller then prints its plain backtrace.
//
// For the fatal path only: libdw allocates and reads /proc/self/maps and the
// ELF files, so a crash inside malloc, or with its lock held, can deadlock
// here (the launcher's exit timeout still ends the job). It runs once per
// process; a second call (a crash while printing) returns false at once.
bool backtrace_print_symbolized(void *const *frames, int count);

} // namespace sluice::base
