// tests/mp/mp_driver_prepare.cpp - GoogleTest suites of the negotiated-payload
// AM case (mp_prepare.cpp): smp at 1..8 ranks, with credits, and every
// network conduit.
#include "tests/mp/mp_driver.hpp"

using namespace sluice_test;

class AmPrepare : public MpTest {};
TEST_P(AmPrepare, SizesCancelsRepliesThreadsNbiLongAndBadInput) {
    const Config &c = GetParam();
    const unsigned iterations = c.network.empty() ? scaled(300, 100, 100) : scaled(100, 50, 50);
    JobResult r = run({"prepare", std::to_string(iterations)}, 240);
    expect_success(r);
    expect_one_error_line_each(r, c.ranks, false);
}
INSTANTIATE_TEST_SUITE_P(Mp, AmPrepare, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmPrepare, ::testing::ValuesIn(over_network()), config_name);
