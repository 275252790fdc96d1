// src/conduits/ibv/tests/unit_physmem.cpp - SLUICE_PHYSMEM_MAX's syntax
// (src/conduits/ibv/physmem.hpp): fractions, sizes, and what is refused.
#include "conduits/ibv/physmem.hpp"

#include <gtest/gtest.h>

namespace ibv = sluice::conduit::ibv;

namespace {

constexpr std::uint64_t gib = 1ull << 30;

std::uint64_t bytes_of(const std::string &text, std::uint64_t physical = 24 * gib) {
    std::uint64_t b = 0;
    std::string why;
    EXPECT_TRUE(ibv::physmem_parse(text, physical, b, why)) << text << ": " << why;
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
        EXPECT_FALSE(ibv::physmem_parse(bad, 24 * gib, b, why)) << bad;
        EXPECT_NE(why.find(std::string("'") + bad + "'"), std::string::npos) << why;
    }
}

} // namespace
