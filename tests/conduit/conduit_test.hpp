// tests/conduit/conduit_test.hpp - the fixture of the suites that run over
// every conduit under test: skips, with the reason printed, a conduit that
// runs neither as two ranks nor in loopback here; run() runs a body on each
// rank of the conduit's world and fails with what a rank reported.
#pragma once

#include "conduit_world.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace conduit_test {

class ConduitTest : public ::testing::TestWithParam<Conduit> {
protected:
    void SetUp() override {
        // Errors the tests provoke on purpose are reported quietly.
        ::setenv("SLUICE_QUIET_ERRORS", "1", 1);
        std::string why;
        if (conduit_mode(GetParam(), why).empty()) GTEST_SKIP() << GetParam().name << ": " << why;
    }
    void run(const std::function<void(World &)> &body) {
        const std::string failed = run_world(GetParam(), body);
        if (failed.rfind(skipped_mark, 0) == 0) GTEST_SKIP() << GetParam().name << ": " << failed.substr(std::strlen(skipped_mark));
        EXPECT_EQ(failed, "") << GetParam().name;
    }
};

// The instantiation every such suite uses: one test per conduit, named by it.
#define CONDUIT_TEST_SUITE(suite)                                                       \
    INSTANTIATE_TEST_SUITE_P(Registry, suite, ::testing::ValuesIn(conduits_under_test()), \
                             [](const ::testing::TestParamInfo<Conduit> &info) { return info.param.name; })

} // namespace conduit_test
