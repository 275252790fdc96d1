// tests/mp/mp_driver_coll.cpp - teams (case "team") and collectives (case
// "coll") on smp at 1..8 ranks (the collectives at 19 too) and over every
// network conduit that probes here, and the collectives again under each
// forced algorithm family (SLUICE_COLL_ALGORITHM) with and without the
// single-copy broadcast (SLUICE_COLL_SINGLE_COPY).  Each job checks its
// results against a local reference and that every bad call printed
// exactly one line with the fix.
#include "tests/mp/mp_driver.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace sluice_test;

class CollTeams : public MpTest {};
TEST_P(CollTeams, BuiltInSplitsListsDestroyAndBadInput) {
    JobResult r = run({"team"}, 180);
    expect_success(r);
    expect_one_error_line_each(r, GetParam().ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, CollTeams, ::testing::ValuesIn(by_ranks()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, CollTeams, ::testing::ValuesIn(over_network()), config_name);

class CollCollectives : public MpTest {};
TEST_P(CollCollectives, RandomTeamsRootsAndSizesAgainstReference) {
    const Config &c = GetParam();
    const unsigned iterations = c.network.empty() ? scaled(12, 5, 4) : scaled(5, 3, 2);
    JobResult r = run({"coll", std::to_string(iterations)}, 300);
    expect_success(r);
    expect_one_error_line_each(r, c.ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, CollCollectives, ::testing::ValuesIn(by_ranks_and_rma()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, CollCollectives, ::testing::ValuesIn(over_network()), config_name);
// Above 16 members allgather takes Bruck's algorithm (docs/collectives.md):
// 19 ranks on smp, not a power of two, with teams on either side of 16.
INSTANTIATE_TEST_SUITE_P(Large, CollCollectives, ::testing::Values(Config{19, true, nullptr}), config_name);

// Each algorithm family forced, with the single-copy broadcast from the
// first byte and with none.
class CollAlgorithms : public MpTest {};
TEST_P(CollAlgorithms, EveryFamilyWithAndWithoutSingleCopy) {
    const Config &c = GetParam();
    const unsigned iterations = scaled(5, 3, 2);
    for (const char *family : {"flat", "hier"})
        for (const char *single : {"1", "0"}) {
            SCOPED_TRACE(std::string("SLUICE_COLL_ALGORITHM=") + family + " SLUICE_COLL_SINGLE_COPY=" + single);
            JobResult r = run({"coll", std::to_string(iterations)}, 300,
                              {{"SLUICE_COLL_ALGORITHM", family}, {"SLUICE_COLL_SINGLE_COPY", single}});
            expect_success(r);
            expect_one_error_line_each(r, c.ranks);
        }
}
INSTANTIATE_TEST_SUITE_P(Mp, CollAlgorithms, ::testing::ValuesIn(by_ranks()), config_name);

// Several hosts on one machine (host names "collhost<rank % 3>"): the auto
// family is then host-first.
class CollFakeHosts : public FakeHostsTest {};
TEST_P(CollFakeHosts, HostFirstAcrossThreeHostNames) {
    if (!fake_hosts_allowed()) GTEST_SKIP() << "unshare -u is not allowed here: no way to give ranks their own host names";
    const Config &c = GetParam();
    for (const char *c_case : {"team", "coll"}) {
        SCOPED_TRACE(c_case);
        const std::string args =
            std::string(c_case) + (std::string(c_case) == "coll" ? " " + std::to_string(scaled(4, 2, 2)) : "");
        JobResult r = run_on_hosts("collhost", 3, args, 300);
        expect_success(r);
        expect_one_error_line_each(r, c.ranks);
    }
}
INSTANTIATE_TEST_SUITE_P(Mp, CollFakeHosts, ::testing::Values(Config{4, true, nullptr}, Config{7, true, nullptr}),
                         config_name);
