// tests/mp/mp_driver_coll.cpp - (stub: the driver's suites come with the feature).
#include "tests/mp/mp_driver.hpp"
