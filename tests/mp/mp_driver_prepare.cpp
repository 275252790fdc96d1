// tests/mp/mp_driver_prepare.cpp - (stub: the driver's suites come with the feature).
#include "tests/mp/mp_driver.hpp"
