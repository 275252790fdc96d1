// src/core/c_api_common.hpp - what every C API file shares: the status as
// an int, and the check that Sluice is running, reported once.
#pragma once

#include "core/runtime.hpp"

namespace sluice::core {

inline int code(base::Status s) { return static_cast<int>(s); }

[[gnu::noinline]] inline int not_running(const char *op) {
    return code(base::report(base::Status::state, op, "call sluice_init first (and not after sluice_finalize)",
                             "Sluice is not running"));
}

} // namespace sluice::core

#define SLUICE_REQUIRE_RUNNING(op) \
    if (__builtin_expect(!::sluice::core::runtime().running(), 0)) return ::sluice::core::not_running(op)
