// tests/mp/mp_driver_atomic.cpp - atomic domains (case "atomic"): on smp at
// 1..8 ranks with native RMA (the cpu path) and the reference RMA (the AM
// path), over every network conduit that probes here (the AM path, or the
// NIC atomics of ofi, ibv and portals), and over ofi's tcp;ofi_rxm with NIC
// atomics on and off.  Each job checks the path every member agreed on, the
// hot spot, the CAS lock, every (type, op) pair in every mode, a split team
// and bad input.
#include "tests/mp/mp_driver.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace sluice_test;

namespace {

// The path a domain of 64-bit integers (`wide`) or of 32-bit ones over the
// job team gets: ofi's default provider here (tcp;ofi_rxm) applies both
// itself; ibv's HCA (the software NIC here) only 64-bit ones.
std::string expected_path(const Config &c, bool nic, bool wide = true) {
    if (c.ranks == 1) return "cpu";
    const char *ibv_atomics = std::getenv("SLUICE_IBV_ATOMICS");
    if (c.network == "ibv" && nic && wide && !(ibv_atomics && std::string(ibv_atomics) == "0")) return "ibv";
    // gni's AMOs act on 64-bit words.
    if (c.network == "gni" && nic && wide) return "gni";
    // SLUICE_OFI_ATOMICS=auto leaves sockets and udp;ofi_rxd on the AM path
    // (tests/ofi-providers.sh runs this suite over them).
    const char *provider = std::getenv("SLUICE_OFI_PROVIDER");
    const bool nic_provider = !provider || std::string(provider) == "tcp;ofi_rxm" || std::string(provider) == "shm";
    if (c.network == "ofi" && nic && nic_provider) return "ofi";
    // portals (the reference implementation) applies every type itself
    // unless SLUICE_PORTALS_ATOMICS=0 (src/conduits/portals/tests/portals-reference.sh).
    const char *portals_atomics = std::getenv("SLUICE_PORTALS_ATOMICS");
    if (c.network == "portals" && nic && !(portals_atomics && std::string(portals_atomics) == "0")) return "portals";
    return c.native_rma && c.network.empty() ? "cpu" : "am";
}

bool ofi_here() {
    for (const std::string &n : network_conduits())
        if (n == "ofi") return true;
    return false;
}

} // namespace

class AtomicDomains : public MpTest {};
TEST_P(AtomicDomains, HotSpotLockEveryPairSplitTeamAndBadInput) {
    const Config &c = GetParam();
    const unsigned iterations = c.network.empty() ? scaled(2000, 500, 200) : scaled(300, 100, 100);
    JobResult r = run({"atomic", std::to_string(iterations), "--path=" + expected_path(c, true),
                       "--path32=" + expected_path(c, true, false)},
                      240);
    expect_success(r);
    expect_one_error_line_each(r, c.ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, AtomicDomains, ::testing::ValuesIn(by_ranks_and_rma()), config_name);
INSTANTIATE_TEST_SUITE_P(Net, AtomicDomains, ::testing::ValuesIn(over_network()), config_name);

// A domain whose members mix conduits: each rank in its own UTS namespace
// with the host name "atomhost<rank % 2>", so ranks of one name reach each
// other over smp and the others over udp.  Every member must report path
// cpu+am (CPU atomics on the members it maps, AMs applied by the owner's
// CPU for the others: one agent per word), and the hot spot, the lock and
// every (type, op) pair hold across the mix.
class AtomicFakeHosts : public FakeHostsTest {};
TEST_P(AtomicFakeHosts, CpuAndAmWithinOneDomain) {
    if (!fake_hosts_allowed()) GTEST_SKIP() << "unshare -u is not allowed here: no way to give ranks their own host names";
    const Config &c = GetParam();
    JobResult r = run_on_hosts("atomhost", 2, "atomic " + std::to_string(scaled(300, 100, 100)) + " --path=cpu+am", 240,
                               {{"SLUICE_NETWORK", "udp"}});
    expect_success(r);
    EXPECT_NE(r.out.find("cpu+am"), std::string::npos) << "no rank reported the mixed path\n" << r.describe();
    expect_one_error_line_each(r, c.ranks);
}
INSTANTIATE_TEST_SUITE_P(Mp, AtomicFakeHosts, ::testing::Values(Config{4, true, nullptr}), config_name);

// ofi on tcp;ofi_rxm, NIC atomics as SLUICE_OFI_ATOMICS=auto leaves them
// (path "ofi": every update by fi_fetch_atomic / fi_compare_atomic, the
// owner's own included) and off (SLUICE_OFI_ATOMICS=0: the AM path).
// sockets is left out: auto turns its atomics off (a fetching atomic
// sometimes never completed here), and its AM path takes minutes per job.
struct OfiCase {
    const char *provider;
    bool nic;        // SLUICE_OFI_ATOMICS=auto, else 0
    bool expect_nic; // the path auto gives
};
class AtomicOfi : public ::testing::TestWithParam<OfiCase> {};
TEST_P(AtomicOfi, EveryProviderNicAtomicsOnAndOff) {
    require_programs();
    if (!ofi_here()) GTEST_SKIP() << "the ofi conduit does not probe here";
    for (int ranks : reduced() ? std::vector<int>{2} : std::vector<int>{2, 3}) {
        const Config c{ranks, true, nullptr, "ofi"};
        JobSpec spec;
        spec.ranks = ranks;
        spec.program = {mp_program(), "atomic", "100", "--path=" + expected_path(c, GetParam().expect_nic),
                        "--path32=" + expected_path(c, GetParam().expect_nic, false)};
        spec.env = {{"SLUICE_ROUTE", "network"},
                    {"SLUICE_NETWORK", "ofi"},
                    {"SLUICE_OFI_PROVIDER", GetParam().provider},
                    {"SLUICE_OFI_ATOMICS", GetParam().nic ? "auto" : "0"}};
        spec.time_limit = 240;
        JobResult r = run_job(spec);
        if (r.err.find("offers no reliable datagram endpoint") != std::string::npos)
            GTEST_SKIP() << "provider " << GetParam().provider << " is not here";
        expect_success(r);
        expect_one_error_line_each(r, ranks);
    }
}
INSTANTIATE_TEST_SUITE_P(Net, AtomicOfi,
                         ::testing::Values(OfiCase{"tcp;ofi_rxm", true, true}, OfiCase{"tcp;ofi_rxm", false, false}),
                         [](const ::testing::TestParamInfo<OfiCase> &info) {
                             std::string n = info.param.provider;
                             for (char &ch : n)
                                 if (ch == ';') ch = '_';
                             return n + (info.param.nic ? "_auto" : "_off");
                         });
