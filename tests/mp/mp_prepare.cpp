// tests/mp/mp_prepare.cpp - (stub: the cases are written with the feature).
#include "tests/mp/mp_cases.hpp"

namespace sluice_test::mp {
int case_prepare(int, char **) { TCHECK(false, "case prepare is not written yet"); return 1; }
} // namespace sluice_test::mp
