// tests/unit/unit_reassembly.cpp - src/conduits/common/reassembly.hpp: AMs
// put back together from in-order fragments, and every rule a fragment can
// break refused before a byte of it is written: past the announced length,
// a Long outside the segment, duplicates, overlaps, gaps, continuations
// without a start, a new message cutting into an open one.  Also the FIFO
// and the buffer pool of the same folder.
#include "conduits/common/buffer_pool.hpp"
#include "conduits/common/fifo.hpp"
#include "conduits/common/reassembly.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace common = sluice::conduit::common;
using sluice::conduit::AmCategory;
using common::Verdict;

namespace {

const std::uint32_t args3[3] = {7, 8, 9};

common::Fragment first(AmCategory c, std::uint32_t total, const std::uint8_t *bytes, std::size_t n,
                       std::uint64_t dest = 0) {
    common::Fragment f;
    f.first = true;
    f.header.handler = 42;
    f.header.category = c;
    f.header.nargs = 3;
    f.header.source = 5;
    f.header.dest_addr = dest;
    f.args = args3;
    f.message_length = total;
    f.bytes = bytes;
    f.length = n;
    return f;
}
common::Fragment next(std::uint32_t total, std::uint32_t offset, const std::uint8_t *bytes, std::size_t n) {
    return {.first = false, .header = {}, .args = nullptr, .message_length = total, .offset = offset, .bytes = bytes,
            .length = n};
}

std::vector<std::uint8_t> pattern(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
    return v;
}

TEST(Reassembly, MediumInThreeFragments) {
    const auto data = pattern(2500);
    common::Reassembly r;
    const common::SegmentBounds none;
    EXPECT_EQ(r.add(first(AmCategory::medium, 2500, data.data(), 1000), none), Verdict::more);
    EXPECT_TRUE(r.open());
    EXPECT_EQ(r.add(next(2500, 1000, data.data() + 1000, 1000), none), Verdict::more);
    EXPECT_EQ(r.add(next(2500, 2000, data.data() + 2000, 500), none), Verdict::whole);
    EXPECT_FALSE(r.open());
    EXPECT_EQ(r.header().handler, 42);
    EXPECT_EQ(r.header().source, 5u);
    EXPECT_EQ(r.header().payload_length, 2500u);
    EXPECT_EQ(r.args()[2], 9u);
    EXPECT_NE(r.payload(), static_cast<const void *>(data.data()));
    EXPECT_EQ(std::memcmp(r.payload(), data.data(), 2500), 0);
}

TEST(Reassembly, MediumInOneFragmentIsNotCopied) {
    const auto data = pattern(100);
    common::Reassembly r;
    EXPECT_EQ(r.add(first(AmCategory::medium, 100, data.data(), 100), {}), Verdict::whole);
    EXPECT_EQ(r.payload(), static_cast<const void *>(data.data()));
    EXPECT_EQ(r.add(first(AmCategory::medium, 0, data.data(), 0), {}), Verdict::whole);
    EXPECT_EQ(r.header().payload_length, 0u);
}

TEST(Reassembly, LongLandsInTheSegment) {
    const auto data = pattern(300);
    std::vector<std::uint8_t> seg(1000, 0xEE);
    const common::SegmentBounds bounds{reinterpret_cast<std::uint64_t>(seg.data()), seg.size()};
    const auto at = reinterpret_cast<std::uint64_t>(seg.data() + 700);
    common::Reassembly r;
    EXPECT_EQ(r.add(first(AmCategory::long_, 300, data.data(), 200, at), bounds), Verdict::more);
    EXPECT_EQ(r.add(next(300, 200, data.data() + 200, 100), bounds), Verdict::whole);
    EXPECT_EQ(r.payload(), static_cast<void *>(seg.data() + 700));
    EXPECT_EQ(std::memcmp(seg.data() + 700, data.data(), 300), 0);
    EXPECT_EQ(seg[699], 0xEE);
    // A Long of 0 bytes at the segment's very end is inside it.
    EXPECT_EQ(r.add(first(AmCategory::long_, 0, nullptr, 0, bounds.base + bounds.bytes), bounds), Verdict::whole);
}

TEST(Reassembly, LongOutsideTheSegmentWritesNothing) {
    const auto data = pattern(300);
    std::vector<std::uint8_t> seg(1000, 0xEE);
    const common::SegmentBounds bounds{reinterpret_cast<std::uint64_t>(seg.data()) + 100, 800};
    common::Reassembly r;
    // Past the end by one byte, before the start, and a length whose sum wraps.
    EXPECT_EQ(r.add(first(AmCategory::long_, 300, data.data(), 100, bounds.base + 501), bounds),
              Verdict::outside_segment);
    EXPECT_EQ(r.add(first(AmCategory::long_, 300, data.data(), 100, bounds.base - 1), bounds), Verdict::outside_segment);
    EXPECT_EQ(r.add(first(AmCategory::long_, 300, data.data(), 100, ~std::uint64_t{0} - 10), bounds),
              Verdict::outside_segment);
    EXPECT_EQ(r.add(first(AmCategory::long_, 300, data.data(), 100), common::SegmentBounds{}), Verdict::outside_segment);
    EXPECT_FALSE(r.open());
    for (std::uint8_t b : seg) ASSERT_EQ(b, 0xEE);
    // Exactly at the end fits.
    EXPECT_EQ(r.add(first(AmCategory::long_, 300, data.data(), 300, bounds.base + 500), bounds), Verdict::whole);
}

TEST(Reassembly, FragmentBeyondTheAnnouncedLength) {
    const auto data = pattern(3000);
    common::Reassembly r;
    EXPECT_EQ(r.add(first(AmCategory::medium, 100, data.data(), 101), {}), Verdict::beyond_length);
    EXPECT_FALSE(r.open());
    EXPECT_EQ(r.add(first(AmCategory::medium, 2000, data.data(), 1000), {}), Verdict::more);
    EXPECT_EQ(r.add(next(2000, 1000, data.data(), 1001), {}), Verdict::beyond_length);
    EXPECT_EQ(r.received(), 1000u);  // nothing taken: the right fragment still completes it
    EXPECT_EQ(r.add(next(2000, 1000, data.data() + 1000, 1000), {}), Verdict::whole);
    EXPECT_EQ(std::memcmp(r.payload(), data.data(), 2000), 0);
}

TEST(Reassembly, DuplicateOverlappingAndMissingFragments) {
    const auto data = pattern(3000);
    common::Reassembly r;
    EXPECT_EQ(r.add(first(AmCategory::medium, 3000, data.data(), 1000), {}), Verdict::more);
    EXPECT_EQ(r.add(next(3000, 1000, data.data() + 1000, 1000), {}), Verdict::more);
    EXPECT_EQ(r.add(next(3000, 1000, data.data() + 1000, 1000), {}), Verdict::out_of_order);  // duplicate
    EXPECT_EQ(r.add(next(3000, 1500, data.data() + 1500, 1000), {}), Verdict::out_of_order);  // overlap
    EXPECT_EQ(r.add(next(3000, 2500, data.data() + 2500, 500), {}), Verdict::out_of_order);   // gap
    EXPECT_EQ(r.add(next(2999, 2000, data.data() + 2000, 999), {}), Verdict::length_changed);
    EXPECT_EQ(r.received(), 2000u);
    EXPECT_EQ(r.add(next(3000, 2000, data.data() + 2000, 1000), {}), Verdict::whole);
    EXPECT_EQ(std::memcmp(r.payload(), data.data(), 3000), 0);
}

TEST(Reassembly, ContinuationWithoutStartAndInterruptedMessage) {
    const auto data = pattern(100);
    common::Reassembly r;
    EXPECT_EQ(r.add(next(100, 0, data.data(), 50), {}), Verdict::not_started);
    EXPECT_EQ(r.add(first(AmCategory::medium, 100, data.data(), 50), {}), Verdict::more);
    EXPECT_EQ(r.add(first(AmCategory::medium, 100, data.data(), 50), {}), Verdict::interrupted);
    r.reset();
    EXPECT_EQ(r.add(next(100, 50, data.data() + 50, 50), {}), Verdict::not_started);
    common::Fragment f = first(AmCategory::medium, 100, data.data(), 50);
    f.offset = 10;
    EXPECT_EQ(r.add(f, {}), Verdict::out_of_order);
    f = first(AmCategory::medium, 100, data.data(), 50);
    f.header.nargs = common::max_args + 1;
    EXPECT_EQ(r.add(f, {}), Verdict::too_many_args);
    EXPECT_FALSE(r.open());
    for (int v = 0; v <= static_cast<int>(Verdict::too_many_args); ++v)
        EXPECT_STRNE(common::verdict_name(static_cast<Verdict>(v)), "?");
}

TEST(Fifo, WrapsAndGrowsInOrder) {
    common::Fifo<int> q;
    EXPECT_TRUE(q.empty());
    int in = 0, out = 0;
    for (int round = 0; round < 50; ++round) {
        for (int k = 0; k < round % 7 + 3; ++k) q.push_back(in++);
        for (int k = 0; k < round % 5 + 1 && !q.empty(); ++k) EXPECT_EQ(q.pop_front(), out++);
        ASSERT_EQ(q.size(), static_cast<std::size_t>(in - out));
        if (!q.empty()) {
            EXPECT_EQ(q.front(), out);
            EXPECT_EQ(q.back(), in - 1);
            EXPECT_EQ(q[q.size() / 2], out + static_cast<int>(q.size() / 2));
        }
    }
    while (!q.empty()) EXPECT_EQ(q.pop_front(), out++);
    EXPECT_EQ(out, in);
    q.push_back(1);
    q.clear();
    EXPECT_TRUE(q.empty());
}

TEST(BufferPool, ReusesWhatIsGivenBack) {
    common::BufferPool pool;
    pool.configure(1500);
    std::uint8_t *a = pool.get(), *b = pool.get();
    EXPECT_NE(a, b);
    EXPECT_EQ(pool.allocated(), 2u);
    pool.put(a);
    EXPECT_EQ(pool.idle(), 1u);
    EXPECT_EQ(pool.get(), a);
    a[1499] = 1;  // the whole size is usable
    pool.put(a);
    pool.put(b);
    EXPECT_EQ(pool.allocated(), 2u);
    pool.clear();
    EXPECT_EQ(pool.allocated(), 0u);
    EXPECT_EQ(pool.idle(), 0u);
}

} // namespace
