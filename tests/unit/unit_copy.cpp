// tests/unit/unit_copy.cpp - the bulk copy of same-host Put and Get
// (src/rma/copy.cpp): each copy it can choose moves every byte at awkward
// sizes and alignments, SLUICE_COPY forces the choice, and the knob refuses
// other values.  A process chooses once per band, at the band's first copy,
// so each case runs in a child (EXPECT_EXIT) and reads the choices from its
// SLUICE_VERBOSE lines.
#include "tests/unit/unit_env.hpp"

#include <sluice.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace sluice::base;
using sluice_test::CleanEnvironment;

namespace {

// Copies with sluice_copy_bulk_ from 64 B (its smallest loop) to 3 MiB,
// across the bands' edges (512 KiB, 2 MiB), with source and destination at
// odd offsets from a 64-byte boundary.  Checks every byte copied and 64
// bytes either side of the destination; prints the first fault.  Returns
// the number of faulty copies.
int copy_faults() {
    constexpr std::size_t kib = 1024, mib = 1024 * kib, pad = 64;
    const std::size_t sizes[] = {64,       65,           96,          127,         128,
                                 129,      191,          255,         257,         1000,
                                 4095,     4097,         32 * kib - 1, 32 * kib + 33, 64 * kib,
                                 64 * kib + 77, 512 * kib - 1, 512 * kib, 512 * kib + 1, 2 * mib - 1,
                                 2 * mib,  2 * mib + 99, 3 * mib + 13};
    const std::size_t offsets[] = {0, 1, 15, 31, 32, 33, 63};
    constexpr std::size_t largest = 3 * mib + 13 + 2 * 64 + 2 * pad;
    std::vector<unsigned char> from(largest), to(largest);
    std::uint64_t x = 88172645463325252ull;  // xorshift: no period a shifted copy would match
    for (auto &byte : from) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        byte = static_cast<unsigned char>(x);
    }
    int faults = 0;
    for (std::size_t n : sizes)
        for (std::size_t s : offsets)
            for (std::size_t d : offsets) {
                // Past 256 KiB, a few pairs of offsets are enough.
                if (n > 256 * kib && (s + d) % 3 != 0) continue;
                unsigned char *const dest = to.data() + pad + d;
                std::memset(dest - pad, 0xA5, n + 2 * pad);
                sluice_copy_bulk_(dest, from.data() + s, n);
                std::size_t bad = SIZE_MAX;
                const char *where = " of the copy";
                for (std::size_t i = 0; i < pad && bad == SIZE_MAX; ++i)
                    if (dest[-1 - static_cast<std::ptrdiff_t>(i)] != 0xA5) bad = i, where = " before the copy";
                    else if (dest[n + i] != 0xA5) bad = i, where = " after the copy";
                if (bad == SIZE_MAX && std::memcmp(dest, from.data() + s, n) != 0)
                    for (bad = 0; dest[bad] == from[s + bad];) ++bad;
                if (bad == SIZE_MAX) continue;
                if (faults++ == 0)
                    std::fprintf(stderr, "fault: %zu bytes, source +%zu, destination +%zu: byte %zu%s\n", n, s, d,
                                 bad, where);
            }
    return faults;
}

// The child: SLUICE_COPY=choice, verbose, then the copies; exit code 0
// when every copy was right.
[[noreturn]] void copies_with(const char *choice) {
    ::setenv("SLUICE_COPY", choice, 1);
    ::setenv("SLUICE_VERBOSE", "1", 1);
    (void)knobs_load();
    const int faults = copy_faults();
    std::fprintf(stderr, "%d faulty copies\n", faults);
    std::exit(faults == 0 ? 0 : 1);
}

bool cpu_has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

// What each band says under SLUICE_VERBOSE, in the order the copies reach
// them (the first copy of each is 64 B, 512 KiB, 2 MiB): `said(band)`.
template <class Said> std::string bands_say(Said said) {
    return "copy below 512K: " + said("64") + ".*copy 512K to 2M: " + said("524288") + ".*copy from 2M: " +
           said("2097152") + ".*\n0 faulty copies\n";
}

} // namespace

// Each band chooses at its first copy and says so.
TEST_F(CleanEnvironment, BulkCopyMeasuresEachBandAndCopiesEveryByte) {
    const std::string says = bands_say([](const std::string &bytes) -> std::string {
        if (!cpu_has_avx2()) return "memcpy \\(no AVX2 on this CPU\\)";
        return "(memcpy|the AVX2 loop); measured in [0-9.]+ ms on the first such copy, " + bytes +
               " bytes: memcpy [0-9.]+, avx2 [0-9.]+ GB/s";
    });
    EXPECT_EXIT(copies_with("auto"), ::testing::ExitedWithCode(0), says);
}

TEST_F(CleanEnvironment, BulkCopyForcedToLibc) {
    EXPECT_EXIT(copies_with("libc"), ::testing::ExitedWithCode(0),
                bands_say([](const std::string &) -> std::string { return "memcpy \\(SLUICE_COPY=libc\\)"; }));
}

// On a CPU without AVX2 (or off x86) the knob cannot have the loop and says so.
TEST_F(CleanEnvironment, BulkCopyForcedToAvx2) {
    const std::string said = cpu_has_avx2() ? "the AVX2 loop \\(SLUICE_COPY=avx2\\)"
                                            : "memcpy \\(SLUICE_COPY=avx2, but this CPU has no AVX2\\)";
    EXPECT_EXIT(copies_with("avx2"), ::testing::ExitedWithCode(0),
                bands_say([&](const std::string &) { return said; }));
}

// A value the knob does not list is refused by the knob table (sluice_init
// and sluicerun then refuse the job), naming the values it takes.
TEST_F(CleanEnvironment, BulkCopyKnobRefusesOtherValues) {
    const KnobInfo *copy = nullptr;
    for (const KnobInfo &k : knob_table())
        if (std::strcmp(k.name, "SLUICE_COPY") == 0) copy = &k;
    ASSERT_NE(copy, nullptr);
    for (const char *ok : {"auto", "libc", "avx2"}) EXPECT_TRUE(knob_value_valid(*copy, ok)) << ok;
    for (const char *bad : {"memcpy", "AVX2", "avx512", "libc,avx2"}) EXPECT_FALSE(knob_value_valid(*copy, bad)) << bad;
    set("SLUICE_COPY", "avx512");
    const std::vector<std::string> errors = knobs_load();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("SLUICE_COPY=avx512 is out of range: it must be auto, libc, or avx2"), std::string::npos)
        << errors[0];
    EXPECT_EQ(knob_string(Knob::COPY), "auto");
}
