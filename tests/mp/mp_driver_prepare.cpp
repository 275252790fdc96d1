// tests/mp/mp_driver_prepare.cpp - GoogleTest suites of the negotiated-payload
// AM case (mp_prepare.cpp): smp at 1..8 ranks, with credits, and every
// network conduit.
#include "tests/mp/mp_driver.hpp"

#include <regex>

using namespace sluice_test;

namespace {

// Sum of the "EXPECTED-ERRORS rank R n" lines the ranks printed.
int expected_error_lines(const JobResult &r) {
    int total = 0;
    std::regex line("EXPECTED-ERRORS rank [0-9]+ ([0-9]+)");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end; it != end; ++it)
        total += std::stoi((*it)[1]);
    return total;
}

// Each refused call printed exactly one line with the fix: no more, no less.
void expect_one_line_each(const JobResult &r, int ranks) {
    EXPECT_EQ(count_occurrences(r.out, "EXPECTED-ERRORS rank"), ranks) << r.describe();
    int with_fix = 0;
    for (const auto &l : lines_with(r.err, "sluice[rank"))
        if (l.find("; fix: ") != std::string::npos) ++with_fix;
    EXPECT_EQ(with_fix, expected_error_lines(r)) << "each refused call prints one line naming the rank and the fix\n"
                                                 << r.describe();
}

} // namespace

class AmPrepare : public MpTest {};
TEST_P(AmPrepare, SizesCancelsRepliesThreadsNbiLongAndBadInput) {
    const Config &c = GetParam();
    const unsigned iterations = c.network.empty() ? scaled(300, 100, 100) : scaled(100, 50, 50);
    JobResult r = run({"prepare", std::to_string(iterations)}, 240);
    expect_success(r);
    expect_one_line_each(r, c.ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, AmPrepare, ::testing::ValuesIn(by_ranks_and_credits()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AmPrepare, ::testing::ValuesIn(over_network()), config_name);
