// src/rma/copy.cpp - the copy of a same-host Put or Get of
// SLUICE_COPY_BULK_MIN_ bytes and more (<sluice.h>): the inline blocking
// path and the library's non-blocking one both come here.
//
// Past the first-level cache neither glibc's memcpy nor a loop of 32-byte
// AVX2 loads and destination-aligned stores is the faster on every machine
// (docs/performance.md, "Put and Get bandwidth"), so each process measures
// them.  Sizes fall in three bands (below 512 KiB, to 2 MiB, from 2 MiB);
// the first copy of a band is made with memcpy, then repeated by each
// candidate in turn, three rounds, the best round of each counting: the
// candidates are timed on the program's own buffers, size and alignment,
// once per band (on a quiet 2-vCPU VM 0.1 ms from a 32 KiB first copy, 2 ms
// from 2 MiB, the first touch of its pages included).  The band then keeps
// the faster; a lead under 5 % is a tie, and a tie goes to memcpy.
// SLUICE_COPY=libc or avx2 skips the timing and uses that copy in every
// band; SLUICE_VERBOSE=1 says each band's choice and figures.  Non-temporal
// stores are not a candidate: up to 4 MiB both buffers fit the last-level
// cache, and streaming past it copied at half the speed.
#include "sluice_config.h"

#include <sluice.h>

#include "base/knobs.hpp"
#include "base/status.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SLUICE_COPY_AVX2 1
#endif

namespace sluice::rma {
namespace {

using CopyFn = void (*)(void *, const void *, std::size_t);

void copy_libc(void *to, const void *from, std::size_t n) { std::memcpy(to, from, n); }

#ifdef SLUICE_COPY_AVX2
// n >= 64.  The first and last 32 bytes are copied unaligned (loaded before
// any store, so the overlap with the aligned middle is harmless); the middle
// stores to 32-byte-aligned destinations, four vectors a round.
__attribute__((target("avx2"))) void copy_avx2(void *to, const void *from, std::size_t n) {
    auto *d = static_cast<char *>(to);
    const auto *s = static_cast<const char *>(from);
    const __m256i head = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s));
    const __m256i tail = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + n - 32));
    char *const end = d + n;
    const std::size_t skew = 32 - (reinterpret_cast<std::uintptr_t>(d) & 31);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(d), head);
    d += skew;
    s += skew;
    n -= skew;
    for (; n >= 128; d += 128, s += 128, n -= 128) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + 32));
        const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + 64));
        const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s + 96));
        _mm256_store_si256(reinterpret_cast<__m256i *>(d), a);
        _mm256_store_si256(reinterpret_cast<__m256i *>(d + 32), b);
        _mm256_store_si256(reinterpret_cast<__m256i *>(d + 64), c);
        _mm256_store_si256(reinterpret_cast<__m256i *>(d + 96), e);
    }
    for (; n >= 32; d += 32, s += 32, n -= 32)
        _mm256_store_si256(reinterpret_cast<__m256i *>(d),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i *>(s)));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(end - 32), tail);
}

bool avx2_present() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}
#endif

// The bands: up to the second-level cache, past it, and past it by far
// (the last-level cache or memory).
struct Band {
    std::size_t below;  // the band's copies are shorter than this
    const char *name;
};
constexpr Band bands[] = {{512 * 1024, "below 512K"}, {2 * 1024 * 1024, "512K to 2M"}, {SIZE_MAX, "from 2M"}};
constexpr int band_count = sizeof bands / sizeof bands[0];

#ifdef SLUICE_COPY_AVX2
// ns per copy, best of three rounds, for memcpy (index 0) and the AVX2 loop
// (1), alternating within a round so that a disturbance reaches both; short
// copies are timed in batches of about 512 KiB.  Repeating the caller's
// copy is harmless: the same bytes land in the same place each time.
void measure(void *to, const void *from, std::size_t n, double ns[2]) {
    constexpr CopyFn candidates[] = {copy_libc, copy_avx2};
    const int repeat = static_cast<int>(std::max<std::size_t>(1, 512 * 1024 / n));
    ns[0] = ns[1] = 1e300;
    for (int round = 0; round < 3; ++round)
        for (int c = 0; c < 2; ++c) {
            const std::uint64_t t0 = base::now_ns();
            for (int i = 0; i < repeat; ++i) {
                candidates[c](to, from, n);
                asm volatile("" ::: "memory");
            }
            ns[c] = std::min(ns[c], static_cast<double>(base::now_ns() - t0) / repeat);
        }
}

// The band's faster copy, measured on its first copy; SLUICE_COPY=avx2
// forces the loop.
CopyFn choose_with_avx2(const Band &band, const std::string &knob, void *to, const void *from, std::size_t n) {
    if (knob == "avx2") {
        base::say("copy %s: the AVX2 loop (SLUICE_COPY=avx2)", band.name);
        return copy_avx2;
    }
    const std::uint64_t t0 = base::now_ns();
    copy_libc(to, from, n);  // first touch: page faults, cold caches
    double ns[2];
    measure(to, from, n, ns);
    const bool loop = ns[1] < 0.95 * ns[0];
    const double bytes = static_cast<double>(n);  // bytes per ns are GB/s
    base::say("copy %s: %s; measured in %.2f ms on the first such copy, %zu bytes: memcpy %.1f, avx2 %.1f GB/s",
              band.name, loop ? "the AVX2 loop" : "memcpy", static_cast<double>(base::now_ns() - t0) / 1e6, n,
              bytes / ns[0], bytes / ns[1]);
    return loop ? copy_avx2 : copy_libc;
}
#endif

CopyFn choose(const Band &band, [[maybe_unused]] void *to, [[maybe_unused]] const void *from,
              [[maybe_unused]] std::size_t n) {
    const std::string &knob = base::knob_string(base::Knob::COPY);
    if (knob == "libc") {
        base::say("copy %s: memcpy (SLUICE_COPY=libc)", band.name);
        return copy_libc;
    }
#ifdef SLUICE_COPY_AVX2
    if (avx2_present()) return choose_with_avx2(band, knob, to, from, n);
#endif
    base::say("copy %s: memcpy (%s)", band.name,
              knob == "avx2" ? "SLUICE_COPY=avx2, but this CPU has no AVX2" : "no AVX2 on this CPU");
    return copy_libc;
}

// Each band's copy: at first one that chooses it (once, whichever thread
// comes first), then the one chosen.
template <int b> void first_copy(void *to, const void *from, std::size_t n);
std::atomic<CopyFn> band_copy[band_count] = {first_copy<0>, first_copy<1>, first_copy<2>};
std::once_flag band_chosen[band_count];
template <int b> void first_copy(void *to, const void *from, std::size_t n) {
    std::call_once(band_chosen[b], [&] { band_copy[b].store(choose(bands[b], to, from, n)); });
    band_copy[b].load()(to, from, n);
}

} // namespace
} // namespace sluice::rma

extern "C" void sluice_copy_bulk_(void *to, const void *from, size_t length) {
    using namespace sluice::rma;
    if (length < 64) {
        std::memcpy(to, from, length);
        return;
    }
    int b = 0;
    while (length >= bands[b].below) ++b;
    band_copy[b].load(std::memory_order_relaxed)(to, from, length);
}
