// tests/unit/unit_pin_limit.cpp - the pinnable-memory limit
// (src/conduits/common/pin_limit.hpp): SLUICE_PHYSMEM_MAX's syntax
// (fractions, sizes, what is refused), the probe's halving, and the count
// of what is registered against the limit.
#include "conduits/common/pin_limit.hpp"
#include "unit_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace common = sluice::conduit::common;
using sluice::base::Status;

namespace {

constexpr std::uint64_t gib = 1ull << 30;

std::uint64_t bytes_of(const std::string &text, std::uint64_t physical = 24 * gib) {
    std::uint64_t b = 0;
    std::string why;
    EXPECT_TRUE(common::physmem_parse(text, physical, b, why)) << text << ": " << why;
    return b;
}

TEST(Physmem, Fractions) {
    EXPECT_EQ(bytes_of("2/3"), 16 * gib);
    EXPECT_EQ(bytes_of("0.5"), 12 * gib);
    EXPECT_EQ(bytes_of(".25"), 6 * gib);
    EXPECT_EQ(bytes_of("5/8", 8 * gib), 5 * gib);
    EXPECT_EQ(bytes_of("1/1"), 24 * gib);
}

TEST(Physmem, Sizes) {
    EXPECT_EQ(bytes_of("12G"), 12 * gib);
    EXPECT_EQ(bytes_of("512M"), 512ull << 20);
    EXPECT_EQ(bytes_of("1T"), 1024 * gib);
    EXPECT_EQ(bytes_of("4096"), 4096u);
    // 1 and above is a size in bytes, not a fraction.
    EXPECT_EQ(bytes_of("1"), 1u);
}

TEST(Physmem, Refused) {
    for (const char *bad : {"", "x", "2/0", "3/2", "0", "0/3", "-1", "12Q", "1/x", "0.0"}) {
        std::uint64_t b = 0;
        std::string why;
        EXPECT_FALSE(common::physmem_parse(bad, 24 * gib, b, why)) << bad;
        EXPECT_NE(why.find(std::string("'") + bad + "'"), std::string::npos) << why;
    }
}

class PinLimitTest : public sluice_test::CleanEnvironment {};

// A NIC that registers at most `most` bytes at once: the probe halves
// until a registration works (at most one per halving from the host's
// share down to 1 MiB), then bisects up at most six times, and settles at
// or below `most`, within 1/32 of the range it bisects.  A small budget
// on a large host (40 MiB: halving alone never lands on it) is found too,
// where eight tries from the top once left a limit of 0.
TEST_F(PinLimitTest, ProbeFindsWhatRegisters) {
    common::PinLimit all;  // where the probe starts: the share, perhaps capped by RLIMIT_MEMLOCK
    ASSERT_EQ(all.init("test", 1, [](void *, std::size_t) { return true; }), Status::ok);
    for (const std::uint64_t most : {1ull << 30, 40ull << 20}) {
        std::size_t probes = 0;
        common::PinLimit pin;
        ASSERT_EQ(pin.init("test", 1, [&](void *, std::size_t n) { return ++probes, n <= most; }), Status::ok);
        const std::uint64_t want = std::min(most, all.limit());
        EXPECT_LE(pin.limit(), want);
        EXPECT_GE(pin.limit(), want - want / 32) << "for a NIC of " << (most >> 20) << " MiB";
        EXPECT_LE(probes, 15u + 6u);
    }
}

// A limit the user set is trusted: no probe; it is shared by the host's ranks.
TEST_F(PinLimitTest, SetLimitIsSharedAndNotProbed) {
    set("SLUICE_PHYSMEM_MAX", "1G");
    (void)sluice::base::knobs_load();
    common::PinLimit pin;
    ASSERT_EQ(pin.init("test", 4, [](void *, std::size_t) -> bool { ADD_FAILURE() << "probed"; return false; }),
              Status::ok);
    EXPECT_LE(pin.limit(), 256ull << 20);  // RLIMIT_MEMLOCK may cap it lower
}

TEST_F(PinLimitTest, TakeRefusesBeyondTheLimitAndGiveReturns) {
    set("SLUICE_PHYSMEM_MAX", "64M");
    set("SLUICE_QUIET_ERRORS", "1");
    (void)sluice::base::knobs_load();
    common::PinLimit pin;
    ASSERT_EQ(pin.init("test", 1, [](void *, std::size_t) { return true; }), Status::ok);
    const std::size_t limit = pin.limit();
    ASSERT_GT(limit, 4096u);
    EXPECT_EQ(pin.take("test", nullptr, limit - 4096), Status::ok);
    EXPECT_EQ(pin.take("test", nullptr, 8192), Status::resource);
    EXPECT_EQ(pin.take("test", nullptr, 4096), Status::ok);  // the refused one took nothing
    pin.give(limit);
    EXPECT_EQ(pin.take("test", nullptr, 8192), Status::ok);
}

TEST_F(PinLimitTest, MalformedMaximumIsAnArgumentError) {
    set("SLUICE_PHYSMEM_MAX", "3/2");
    set("SLUICE_QUIET_ERRORS", "1");
    (void)sluice::base::knobs_load();
    common::PinLimit pin;
    EXPECT_EQ(pin.init("test", 1, [](void *, std::size_t) { return true; }), Status::argument);
}

} // namespace
