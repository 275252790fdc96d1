// src/core/c_api_atomic.cpp - the C API of one client family (stub).
#include "core/runtime.hpp"

#include <sluice.h>
