// tests/perf/reference-test.hpp - what the two-process tests of the bare
// references on a software NIC (gni-reference-test.cpp,
// lapi-reference-test.cpp) do alike: swap cards over a socket pair, move
// a pattern into the peer's region by small and large puts and bring it
// back by small and large gets, and check the peer's region.  `Ref` is
// GniReference or LapiReference, `Op` its transfer kinds.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstring>

namespace sluice::perf {

template <class Card> bool swap_cards(int fd, const Card &mine, Card &theirs) {
    return ::write(fd, &mine, sizeof mine) == static_cast<ssize_t>(sizeof mine) &&
           ::read(fd, &theirs, sizeof theirs) == static_cast<ssize_t>(sizeof theirs);
}

// The pattern the parent's puts leave in the child's region.
constexpr char transfer_pattern = 'w';

// The child's check: every page of its region, and its last byte, hold the
// pattern.
inline bool region_holds_pattern(const char *region, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; i += 4096)
        if (region[i] != transfer_pattern)
            return false;
    return region[bytes - 1] == transfer_pattern;
}

// ns of each kind of transfer, for the test's line.
struct TransferTimes {
    double put_small, put_large, get_small, get_large;
};

// 200 puts of 8 B one at a time and 8 of the whole region 4 in flight
// (the peer's region becomes the pattern), then into a cleared region
// 200 gets of 8 B and 2 of the whole region, checking what came back.
template <class Ref, class Op>
TransferTimes transfers_check(Ref &r, std::size_t bytes, Op put_small, Op put_large, Op get_small, Op get_large) {
    std::memset(r.region(), transfer_pattern, bytes);
    TransferTimes t{};
    t.put_small = r.rma(put_small, 8, 200, 1);
    t.put_large = r.rma(put_large, bytes, 8, 4);
    std::memset(r.region(), 0, bytes);
    t.get_small = r.rma(get_small, 8, 200, 1);
    EXPECT_EQ(r.region()[0], transfer_pattern);
    EXPECT_EQ(r.region()[8], 0) << "an 8 B get moved more than 8 bytes";
    t.get_large = r.rma(get_large, bytes, 2, 1);
    EXPECT_TRUE(std::isfinite(t.put_small) && std::isfinite(t.put_large) && std::isfinite(t.get_small) &&
                std::isfinite(t.get_large))
        << r.error();
    EXPECT_EQ(r.region()[bytes / 2], transfer_pattern);
    EXPECT_EQ(r.region()[bytes - 1], transfer_pattern);
    return t;
}

} // namespace sluice::perf
