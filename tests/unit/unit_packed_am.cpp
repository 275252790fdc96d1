// tests/unit/unit_packed_am.cpp - src/conduits/common/packed_am.hpp, the
// wire format of the packed-message conduits (ofi, ibv, portals, gni,
// lapi, mpi): every category packed and unpacked again, the lengths a head
// announces, the Short latency path (packed_short_take) taking exactly
// the well-formed Shorts, and every malformed message refused and
// reported rather than read past its end or written outside the segment.
#include "base/status.hpp"
#include "conduits/common/packed_am.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace common = sluice::conduit::common;
using sluice::conduit::AmCategory;
using sluice::conduit::AmHeader;

namespace {

constexpr sluice::conduit::Rank ranks = 4;

AmHeader header(AmCategory c, unsigned nargs, std::size_t payload = 0, std::uint64_t dest = 0) {
    AmHeader h;
    h.handler = 200;
    h.category = c;
    h.nargs = static_cast<std::uint8_t>(nargs);
    h.flags = 3;
    h.credit = 0x91;
    h.source = 2;
    h.payload_length = c == AmCategory::short_ ? 0 : payload;
    h.dest_addr = dest;
    return h;
}

std::vector<std::uint32_t> arguments(unsigned n) {
    std::vector<std::uint32_t> a(n);
    for (unsigned i = 0; i < n; ++i) a[i] = 0x1000u + i;
    return a;
}

// A message packed into an 8-byte-aligned buffer of its length.
std::vector<std::uint64_t> pack(const AmHeader &h, const std::vector<std::uint32_t> &args, const void *payload) {
    std::vector<std::uint64_t> words((common::packed_length(h) + 7) / 8);
    EXPECT_EQ(common::packed_encode(h, args.data(), payload, reinterpret_cast<std::byte *>(words.data())),
              common::packed_length(h));
    return words;
}
const std::byte *bytes_of(const std::vector<std::uint64_t> &w) { return reinterpret_cast<const std::byte *>(w.data()); }
std::byte *bytes_of(std::vector<std::uint64_t> &w) { return reinterpret_cast<std::byte *>(w.data()); }

common::PackedHead head_of(const std::vector<std::uint64_t> &w) {
    common::PackedHead h;
    std::memcpy(&h, w.data(), sizeof h);
    return h;
}

} // namespace

TEST(PackedAm, EveryCategoryRoundTrips) {
    std::vector<std::uint8_t> segment(4096), payload(300);
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i * 7);
    const auto base = reinterpret_cast<std::uint64_t>(segment.data());
    for (AmCategory c : {AmCategory::short_, AmCategory::medium, AmCategory::long_})
        for (unsigned nargs : {0u, 1u, 5u, 16u}) {
            SCOPED_TRACE(std::to_string(static_cast<int>(c)) + " with " + std::to_string(nargs) + " arguments");
            const AmHeader h = header(c, nargs, payload.size(), base + 64);
            const auto args = arguments(nargs);
            auto words = pack(h, args, payload.data());
            EXPECT_EQ(common::packed_length(h) % 8, 0u);
            EXPECT_EQ(common::packed_wire_length(head_of(words)), common::packed_length(h));
            common::PackedMessage m;
            ASSERT_TRUE(common::packed_unpack("test", bytes_of(words), common::packed_length(h), ranks, base,
                                              segment.size(), m));
            EXPECT_EQ(m.header.handler, h.handler);
            EXPECT_EQ(m.header.category, c);
            EXPECT_EQ(m.header.nargs, nargs);
            EXPECT_EQ(m.header.flags, h.flags);
            EXPECT_EQ(m.header.credit, h.credit);
            EXPECT_EQ(m.header.source, h.source);
            EXPECT_EQ(m.header.payload_length, h.payload_length);
            for (unsigned i = 0; i < nargs; ++i) EXPECT_EQ(m.args[i], args[i]);
            if (c == AmCategory::medium) {
                EXPECT_EQ(std::memcmp(m.payload, payload.data(), payload.size()), 0);
            }
            if (c == AmCategory::long_) {
                EXPECT_EQ(m.payload, segment.data() + 64);
                EXPECT_EQ(std::memcmp(segment.data() + 64, payload.data(), payload.size()), 0);
            }
        }
}

TEST(PackedAm, ShortEncoderMatchesTheGeneralOne) {
    const auto args = arguments(3);
    const AmHeader h = header(AmCategory::short_, 3);
    const auto general = pack(h, args, nullptr);
    std::vector<std::uint64_t> fast(general.size());
    EXPECT_EQ(common::packed_encode_short(h.source, h.handler, h.flags, h.credit, args.data(), 3, bytes_of(fast)),
              common::packed_short_length(3));
    EXPECT_EQ(fast, general);
}

TEST(PackedAm, WireLengthOfControlHeadsIsNone) {
    common::PackedHead w{};
    w.category = common::category_ping;
    EXPECT_EQ(common::packed_wire_length(w), ~std::size_t{0});
    w.category = static_cast<std::uint8_t>(AmCategory::medium);
    w.nargs = common::packed_max_args + 1;
    EXPECT_EQ(common::packed_wire_length(w), ~std::size_t{0});
}

TEST(PackedAm, ShortTakeTakesWellFormedShorts) {
    const auto args = arguments(4);
    const auto words = pack(header(AmCategory::short_, 4), args, nullptr);
    common::PackedHead w;
    std::uint32_t out[common::packed_max_args] = {};
    ASSERT_TRUE(common::packed_short_take(bytes_of(words), common::packed_short_length(4), ranks, w, out));
    EXPECT_EQ(w.handler, 200);
    EXPECT_EQ(w.nargs, 4);
    EXPECT_EQ(w.source, 2u);
    EXPECT_EQ(w.credit, 0x91);
    for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(out[i], args[i]);
}

TEST(PackedAm, ShortTakeLeavesEverythingElse) {
    common::PackedHead w;
    std::uint32_t out[common::packed_max_args];
    // Not a Short.
    const auto medium = pack(header(AmCategory::medium, 1, 8), arguments(1), "payload!");
    EXPECT_FALSE(common::packed_short_take(bytes_of(medium), medium.size() * 8, ranks, w, out));
    // Shorter than its arguments, or than a head.
    const auto words = pack(header(AmCategory::short_, 4), arguments(4), nullptr);
    EXPECT_FALSE(common::packed_short_take(bytes_of(words), common::packed_short_length(4) - 8, ranks, w, out));
    EXPECT_FALSE(common::packed_short_take(bytes_of(words), sizeof(common::PackedHead) - 1, ranks, w, out));
    // From a rank outside the job.
    EXPECT_FALSE(common::packed_short_take(bytes_of(words), words.size() * 8, 2, w, out));
    // More arguments than any AM has.
    auto bad = words;
    reinterpret_cast<common::PackedHead *>(bad.data())->nargs = common::packed_max_args + 1;
    std::vector<std::uint64_t> room(64);
    std::memcpy(room.data(), bad.data(), bad.size() * 8);
    EXPECT_FALSE(common::packed_short_take(bytes_of(room), room.size() * 8, ranks, w, out));
}

TEST(PackedAm, MalformedMessagesAreReportedAndDropped) {
    std::vector<std::uint8_t> segment(256);
    const auto base = reinterpret_cast<std::uint64_t>(segment.data());
    common::PackedMessage m;
    auto refused = [&](const std::vector<std::uint64_t> &w, std::size_t length, const char *says) {
        EXPECT_FALSE(common::packed_unpack("poll (test)", bytes_of(w), length, ranks, base, segment.size(), m));
        EXPECT_NE(std::string(sluice::base::last_error()).find(says), std::string::npos) << sluice::base::last_error();
    };
    const auto medium = pack(header(AmCategory::medium, 2, 40), arguments(2), std::string(40, 'x').data());
    refused(medium, 8, "a message of 8 bytes dropped");
    // A payload longer than what arrived.
    refused(medium, common::packed_length(header(AmCategory::medium, 2, 40)) - 8, "malformed");
    // An unknown category, a source outside the job.
    auto odd = medium;
    reinterpret_cast<common::PackedHead *>(odd.data())->category = 9;
    refused(odd, odd.size() * 8, "malformed");
    odd = medium;
    reinterpret_cast<common::PackedHead *>(odd.data())->source = ranks;
    refused(odd, odd.size() * 8, "malformed");
    // A Long whose destination lies outside the segment, or runs past its end.
    std::vector<std::uint8_t> payload(64, 0xab);
    refused(pack(header(AmCategory::long_, 0, 64, base + 224), {}, payload.data()),
            common::packed_length(header(AmCategory::long_, 0, 64)), "outside this rank's segment");
    refused(pack(header(AmCategory::long_, 0, 64, base - 64), {}, payload.data()),
            common::packed_length(header(AmCategory::long_, 0, 64)), "outside this rank's segment");
    for (std::uint8_t b : segment) EXPECT_EQ(b, 0);  // nothing landed
}
