// src/rma/copy.cpp - the copy of a same-host Put or Get of
// SLUICE_COPY_BULK_MIN_ bytes and more (<sluice.h>): the inline blocking
// path and the library's non-blocking one both come here.
//
// Why not memcpy: from 32 KiB up the copy no longer fits the first-level
// cache, and glibc (2.36 on the CI machine's Cascade Lake) copies such
// sizes with `rep movsb`, which moved 19 to 34 GB/s at 64 KiB depending on
// where source and destination start within their pages; a loop of 32-byte
// loads and destination-aligned 32-byte stores moved 35 to 38 GB/s on the
// same buffers, and 11.6 to 12.1 against 10.3 to 11.8 GB/s at 4 MiB
// (docs/performance.md, "Put and Get bandwidth"); around 1 MiB it is the
// slower, and memcpy copies there (below).  Below 32 KiB glibc's own
// choice is the faster (114 against 71 GB/s at 16 KiB), so the header calls
// memcpy there.  Non-temporal stores are not used: at 4 MiB both buffers
// fit the last-level cache, and bypassing it would send the copy to memory.
#include "sluice_config.h"

#include <sluice.h>

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SLUICE_COPY_AVX2 1
#endif

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
#endif

// Chosen once, when the library is loaded.
CopyFn choose() {
#ifdef SLUICE_COPY_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) return copy_avx2;
#endif
    return copy_libc;
}
const CopyFn bulk = choose();

// Between these two sizes the copy spills out of the second-level cache
// (1 MiB a core there) and glibc's rep movsb, which writes whole lines
// without reading them first, is the faster: 17.5-18.2 against 11.3-12.6
// GB/s at 1 MiB, equal at 512 KiB and 2 MiB; from 2 MiB the loop is level
// or ahead again (Get at 4 MiB: 11.7-11.9 against 10.5-10.7 GB/s).
constexpr std::size_t libc_from = 512 * 1024, libc_below = 2 * 1024 * 1024;

} // namespace

extern "C" void sluice_copy_bulk_(void *to, const void *from, size_t length) {
    if (length < 64 || (length >= libc_from && length < libc_below)) std::memcpy(to, from, length);
    else bulk(to, from, length);
}
