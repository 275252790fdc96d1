// tests/unit/unit_api.cpp - the public API without a running job: status
// codes and strings, C++ argument packing and wrappers, calls before init.
#include <sluice.h>
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {

const sluice_status_t all_codes[] = {SLUICE_OK,          SLUICE_NOT_READY,     SLUICE_ERR_ARGUMENT,
                                     SLUICE_ERR_RANK,    SLUICE_ERR_HANDLER,   SLUICE_ERR_SEGMENT,
                                     SLUICE_ERR_TOO_LARGE, SLUICE_ERR_CONTEXT, SLUICE_ERR_STATE,
                                     SLUICE_ERR_RESOURCE, SLUICE_ERR_BOOTSTRAP, SLUICE_ERR_TRANSPORT};

} // namespace

static_assert(static_cast<int>(sluice::Status::ok) == SLUICE_OK);
static_assert(static_cast<int>(sluice::Status::not_ready) == SLUICE_NOT_READY);
static_assert(static_cast<int>(sluice::Status::argument) == SLUICE_ERR_ARGUMENT);
static_assert(static_cast<int>(sluice::Status::rank) == SLUICE_ERR_RANK);
static_assert(static_cast<int>(sluice::Status::handler) == SLUICE_ERR_HANDLER);
static_assert(static_cast<int>(sluice::Status::segment) == SLUICE_ERR_SEGMENT);
static_assert(static_cast<int>(sluice::Status::too_large) == SLUICE_ERR_TOO_LARGE);
static_assert(static_cast<int>(sluice::Status::context) == SLUICE_ERR_CONTEXT);
static_assert(static_cast<int>(sluice::Status::state) == SLUICE_ERR_STATE);
static_assert(static_cast<int>(sluice::Status::resource) == SLUICE_ERR_RESOURCE);
static_assert(static_cast<int>(sluice::Status::bootstrap) == SLUICE_ERR_BOOTSTRAP);
static_assert(static_cast<int>(sluice::Status::transport) == SLUICE_ERR_TRANSPORT);
static_assert(static_cast<int>(sluice::Category::short_) == SLUICE_AM_SHORT);
static_assert(static_cast<int>(sluice::Category::medium) == SLUICE_AM_MEDIUM);
static_assert(static_cast<int>(sluice::Category::long_) == SLUICE_AM_LONG);
static_assert(sluice::max_am_args == 16 && SLUICE_AM_MAX_ARGS == 16);
static_assert(std::is_same_v<sluice::Rank, std::uint32_t>);

TEST(StatusStrings, EveryCodeHasItsOwnText) {
    std::set<std::string> seen;
    for (sluice_status_t s : all_codes) {
        const char *text = sluice_status_string(s);
        ASSERT_NE(text, nullptr) << s;
        EXPECT_GT(std::strlen(text), 3u) << s;
        EXPECT_TRUE(seen.insert(text).second) << "code " << s << " shares \"" << text << "\"";
        EXPECT_EQ(sluice::to_string(static_cast<sluice::Status>(s)), std::string_view(text));
    }
    const char *unknown = sluice_status_string(-1234);
    ASSERT_NE(unknown, nullptr);
    EXPECT_EQ(seen.count(unknown), 0u) << "an unknown code reads like a known one: " << unknown;
}

TEST(Pack, ConvertsEveryArgumentToUint32) {
    auto a = sluice::detail::pack(1, 2u, static_cast<std::uint8_t>(3), -1, static_cast<std::int64_t>(0x100000005),
                                  static_cast<std::uint16_t>(0xFFFF), 'A', true);
    static_assert(std::is_same_v<decltype(a), std::array<std::uint32_t, 8>>);
    EXPECT_EQ(a[0], 1u);
    EXPECT_EQ(a[1], 2u);
    EXPECT_EQ(a[2], 3u);
    EXPECT_EQ(a[3], 0xFFFFFFFFu);
    EXPECT_EQ(a[4], 5u);
    EXPECT_EQ(a[5], 0xFFFFu);
    EXPECT_EQ(a[6], static_cast<std::uint32_t>('A'));
    EXPECT_EQ(a[7], 1u);
}

TEST(Pack, ZeroAndSixteenArguments) {
    auto none = sluice::detail::pack();
    static_assert(none.size() == 0);
    auto all = sluice::detail::pack(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    static_assert(all.size() == 16);
    for (std::uint32_t i = 0; i < 16; ++i) EXPECT_EQ(all[i], i);
}

class BeforeInit : public ::testing::Test {
protected:
    void SetUp() override {
        // Errors are expected here; keep the log readable.
        ::setenv("SLUICE_QUIET_ERRORS", "1", 1);
    }
};

TEST_F(BeforeInit, CallsSayTheRuntimeIsNotStarted) {
    ASSERT_FALSE(sluice_initialized());
    EXPECT_FALSE(sluice::initialized());
    EXPECT_EQ(sluice_barrier(), SLUICE_ERR_STATE);
    std::string msg = sluice_last_error();
    EXPECT_NE(msg.find("rank"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fix"), std::string::npos) << msg;
    EXPECT_EQ(sluice::barrier(), sluice::Status::state);
    std::uint8_t b[8];
    EXPECT_EQ(sluice_put(0, b, b, sizeof b), SLUICE_ERR_STATE);
    EXPECT_EQ(sluice_segment_attach(4096), SLUICE_ERR_STATE);
    sluice_receive_memory_t m;
    EXPECT_EQ(sluice_receive_memory(&m), SLUICE_ERR_STATE);
    EXPECT_EQ(sluice::finalize(), sluice::Status::state);
    EXPECT_NE(sluice::last_error().find("sluice"), std::string_view::npos);
}

TEST_F(BeforeInit, CppWrappersGiveNeutralValuesOnFailure) {
    EXPECT_EQ(sluice::host_of(0), UINT32_MAX);
    EXPECT_EQ(sluice::source(nullptr), UINT32_MAX);
    sluice::Segment s = sluice::segment(0);
    EXPECT_EQ(s.base, nullptr);
    EXPECT_EQ(s.size, 0u);
    EXPECT_TRUE(sluice::host_ranks().empty());
}

// The copy of large same-host Puts and Gets (src/rma/copy.cpp): every byte
// of the range at every mutual alignment of source and destination, and not
// one byte either side of it, at lengths around its vector width, its
// four-vector round, the size the header hands it from, and either side of
// the sizes it leaves to memcpy.
TEST(BulkCopy, CopiesExactlyTheRangeAtEveryAlignment) {
    constexpr std::size_t guard = 64;
    const std::size_t base = SLUICE_COPY_BULK_MIN_;
    const std::size_t lengths[] = {0, 1, 31, 63, 64, 65, 95, 96, 127, 128, 129, 161, 4096 + 33,
                                   base - 1, base, base + 1, base + 127, 3 * base + 45,
                                   512 * 1024 + 3, 2 * 1024 * 1024 + 35};
    std::vector<unsigned char> src(2 * 1024 * 1024 + 256 + 2 * guard), dst(src.size());
    for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<unsigned char>(i * 131 + 7);
    for (std::size_t n : lengths)
        for (std::size_t from : {0, 1, 8, 16, 31, 32, 63})
            for (std::size_t to : {0, 1, 15, 16, 17, 32, 48}) {
                const std::size_t span = guard + to + n + guard; // the range and a guard each side
                std::fill(dst.begin(), dst.begin() + span, 0xEE);
                sluice_copy_bulk_(dst.data() + guard + to, src.data() + guard + from, n);
                std::size_t bad = SIZE_MAX;
                for (std::size_t i = 0; i < span && bad == SIZE_MAX; ++i) {
                    const bool inside = i >= guard + to && i < guard + to + n;
                    const unsigned char want = inside ? src[i - to + from] : 0xEE;
                    if (dst[i] != want) bad = i;
                }
                ASSERT_EQ(bad, SIZE_MAX) << n << " bytes from offset " << from << " to offset " << to
                                         << ": wrong byte at " << bad;
            }
}
