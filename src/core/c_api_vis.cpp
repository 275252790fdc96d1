// src/core/c_api_vis.cpp - the C API of one client family (stub).
#include "core/runtime.hpp"

#include <sluice.h>
