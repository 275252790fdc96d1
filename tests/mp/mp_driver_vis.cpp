// tests/mp/mp_driver_vis.cpp - the VIS and completion-extras suites: the
// cases of mp_vis.cpp on smp at every rank count (native and reference
// RMA) and over every network conduit.
#include "tests/mp/mp_driver.hpp"

namespace sluice_test {
class Vis : public MpTest {};
TEST_P(Vis, RandomShapesMatchContiguousLoopsAndBadInputChangesNothing) {
    // Over a network conduit each shape's loop of blocking Puts is slow: fewer shapes.
    const unsigned shapes = GetParam().network.empty() ? scaled(300, 120, 60) : scaled(80, 80, 40);
    JobResult r = run({"vis", std::to_string(shapes)}, 240);
    expect_success(r);
    expect_one_error_line_each(r, GetParam().ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, Vis, ::testing::ValuesIn(by_ranks_and_rma()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, Vis, ::testing::ValuesIn(over_network()), config_name);

// A small SLUICE_VIS_RMA_MIN sends most runs as RMA rather than AMs.
class VisRmaMin : public MpTest {};
TEST_P(VisRmaMin, RunsAsRmaBelowTheKnob) {
    JobResult r = run({"vis", "30"}, 240, {{"SLUICE_VIS_RMA_MIN", "16"}});
    expect_success(r);
    expect_one_error_line_each(r, GetParam().ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, VisRmaMin, ::testing::Values(Config{3, false, nullptr}), config_name);
INSTANTIATE_TEST_SUITE_P(Net, VisRmaMin, ::testing::ValuesIn(over_network({2})), config_name);

class Completion : public MpTest {};
TEST_P(Completion, TestSomeCategoriesRegionsAndLocalCompletion) {
    JobResult r = run({"completion"}, 180);
    expect_success(r);
    expect_one_error_line_each(r, GetParam().ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, Completion, ::testing::ValuesIn(by_ranks_and_rma()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, Completion, ::testing::ValuesIn(over_network()), config_name);

} // namespace sluice_test
