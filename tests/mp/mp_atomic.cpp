// tests/mp/mp_atomic.cpp - (stub: the cases are written with the feature).
#include "tests/mp/mp_cases.hpp"

namespace sluice_test::mp {
int case_atomic(int, char **) { TCHECK(false, "case atomic is not written yet"); return 1; }
} // namespace sluice_test::mp
