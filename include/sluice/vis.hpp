// sluice/vis.hpp - C++ API (stub: written with the feature). Included by <sluice/sluice.hpp>.
#pragma once
#include <sluice.h>
