// sluice/vis.hpp - the C++ API of VIS (vector, indexed and strided Put and
// Get) and of the completion extras.  Included by <sluice/sluice.hpp>; the
// rules are those of the same calls in <sluice.h>.
#pragma once

#include <sluice.h>

#include <cstddef>
#include <span>

namespace sluice {

using MemVec = sluice_memvec_t;

enum class NbiCategory : unsigned {
    puts = SLUICE_NBI_PUTS,
    gets = SLUICE_NBI_GETS,
    ams = SLUICE_NBI_AMS,
    atomics = SLUICE_NBI_ATOMICS,
    all = SLUICE_NBI_ALL,
};
inline constexpr NbiCategory operator|(NbiCategory a, NbiCategory b) {
    return static_cast<NbiCategory>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}

// ---- completion extras ----------------------------------------------------
[[nodiscard]] inline Status test_some(std::span<Event> evs) {
    return detail::wrap(sluice_event_test_some(evs.data(), evs.size()));
}
[[nodiscard]] inline Status wait_some(std::span<Event> evs) {
    return detail::wrap(sluice_event_wait_some(evs.data(), evs.size()));
}
[[nodiscard]] inline Status nbi_sync(NbiCategory c) {
    return detail::wrap(sluice_nbi_sync_cat(static_cast<unsigned>(c)));
}
[[nodiscard]] inline Status nbi_test(NbiCategory c) {
    return detail::wrap(sluice_nbi_test_cat(static_cast<unsigned>(c)));
}
[[nodiscard]] inline Status nbi_region_begin() { return detail::wrap(sluice_nbi_region_begin()); }
[[nodiscard]] inline Status nbi_region_end(Event &ev) { return detail::wrap(sluice_nbi_region_end(&ev)); }
[[nodiscard]] inline Status put_nb_lc(Rank r, void *dest, const void *src, std::size_t n, Event &lc, Event &ev) {
    return detail::wrap(sluice_put_nb_lc(r, dest, src, n, &lc, &ev));
}

// ---- vector: spans of (address, length) -----------------------------------
[[nodiscard]] inline Status putv(Rank r, std::span<const MemVec> dst, std::span<const MemVec> src) {
    return detail::wrap(sluice_putv(r, dst.size(), dst.data(), src.size(), src.data()));
}
[[nodiscard]] inline Status putv_nb(Rank r, std::span<const MemVec> dst, std::span<const MemVec> src, Event &ev) {
    return detail::wrap(sluice_putv_nb(r, dst.size(), dst.data(), src.size(), src.data(), &ev));
}
[[nodiscard]] inline Status putv_nbi(Rank r, std::span<const MemVec> dst, std::span<const MemVec> src) {
    return detail::wrap(sluice_putv_nbi(r, dst.size(), dst.data(), src.size(), src.data()));
}
[[nodiscard]] inline Status getv(std::span<const MemVec> dst, Rank r, std::span<const MemVec> src) {
    return detail::wrap(sluice_getv(dst.size(), dst.data(), r, src.size(), src.data()));
}
[[nodiscard]] inline Status getv_nb(std::span<const MemVec> dst, Rank r, std::span<const MemVec> src, Event &ev) {
    return detail::wrap(sluice_getv_nb(dst.size(), dst.data(), r, src.size(), src.data(), &ev));
}
[[nodiscard]] inline Status getv_nbi(std::span<const MemVec> dst, Rank r, std::span<const MemVec> src) {
    return detail::wrap(sluice_getv_nbi(dst.size(), dst.data(), r, src.size(), src.data()));
}

// ---- indexed: spans of addresses, one length per side ---------------------
[[nodiscard]] inline Status puti(Rank r, std::span<void *const> dst, std::size_t dst_len, std::span<void *const> src,
                                 std::size_t src_len) {
    return detail::wrap(sluice_puti(r, dst.size(), dst.data(), dst_len, src.size(), src.data(), src_len));
}
[[nodiscard]] inline Status puti_nb(Rank r, std::span<void *const> dst, std::size_t dst_len,
                                    std::span<void *const> src, std::size_t src_len, Event &ev) {
    return detail::wrap(sluice_puti_nb(r, dst.size(), dst.data(), dst_len, src.size(), src.data(), src_len, &ev));
}
[[nodiscard]] inline Status puti_nbi(Rank r, std::span<void *const> dst, std::size_t dst_len,
                                     std::span<void *const> src, std::size_t src_len) {
    return detail::wrap(sluice_puti_nbi(r, dst.size(), dst.data(), dst_len, src.size(), src.data(), src_len));
}
[[nodiscard]] inline Status geti(std::span<void *const> dst, std::size_t dst_len, Rank r, std::span<void *const> src,
                                 std::size_t src_len) {
    return detail::wrap(sluice_geti(dst.size(), dst.data(), dst_len, r, src.size(), src.data(), src_len));
}
[[nodiscard]] inline Status geti_nb(std::span<void *const> dst, std::size_t dst_len, Rank r,
                                    std::span<void *const> src, std::size_t src_len, Event &ev) {
    return detail::wrap(sluice_geti_nb(dst.size(), dst.data(), dst_len, r, src.size(), src.data(), src_len, &ev));
}
[[nodiscard]] inline Status geti_nbi(std::span<void *const> dst, std::size_t dst_len, Rank r,
                                     std::span<void *const> src, std::size_t src_len) {
    return detail::wrap(sluice_geti_nbi(dst.size(), dst.data(), dst_len, r, src.size(), src.data(), src_len));
}

// ---- strided: counts.size() levels; each side's strides hold as many -----
[[nodiscard]] inline Status puts(Rank r, void *dst, std::span<const std::ptrdiff_t> dst_strides, const void *src,
                                 std::span<const std::ptrdiff_t> src_strides, std::size_t elem_size,
                                 std::span<const std::size_t> counts) {
    return detail::wrap(sluice_puts(r, dst, dst_strides.data(), src, src_strides.data(), elem_size, counts.data(),
                                    counts.size()));
}
[[nodiscard]] inline Status puts_nb(Rank r, void *dst, std::span<const std::ptrdiff_t> dst_strides, const void *src,
                                    std::span<const std::ptrdiff_t> src_strides, std::size_t elem_size,
                                    std::span<const std::size_t> counts, Event &ev) {
    return detail::wrap(sluice_puts_nb(r, dst, dst_strides.data(), src, src_strides.data(), elem_size, counts.data(),
                                       counts.size(), &ev));
}
[[nodiscard]] inline Status puts_nbi(Rank r, void *dst, std::span<const std::ptrdiff_t> dst_strides, const void *src,
                                     std::span<const std::ptrdiff_t> src_strides, std::size_t elem_size,
                                     std::span<const std::size_t> counts) {
    return detail::wrap(sluice_puts_nbi(r, dst, dst_strides.data(), src, src_strides.data(), elem_size, counts.data(),
                                        counts.size()));
}
[[nodiscard]] inline Status gets(void *dst, std::span<const std::ptrdiff_t> dst_strides, Rank r, const void *src,
                                 std::span<const std::ptrdiff_t> src_strides, std::size_t elem_size,
                                 std::span<const std::size_t> counts) {
    return detail::wrap(sluice_gets(dst, dst_strides.data(), r, src, src_strides.data(), elem_size, counts.data(),
                                    counts.size()));
}
[[nodiscard]] inline Status gets_nb(void *dst, std::span<const std::ptrdiff_t> dst_strides, Rank r, const void *src,
                                    std::span<const std::ptrdiff_t> src_strides, std::size_t elem_size,
                                    std::span<const std::size_t> counts, Event &ev) {
    return detail::wrap(sluice_gets_nb(dst, dst_strides.data(), r, src, src_strides.data(), elem_size, counts.data(),
                                       counts.size(), &ev));
}
[[nodiscard]] inline Status gets_nbi(void *dst, std::span<const std::ptrdiff_t> dst_strides, Rank r, const void *src,
                                     std::span<const std::ptrdiff_t> src_strides, std::size_t elem_size,
                                     std::span<const std::size_t> counts) {
    return detail::wrap(sluice_gets_nbi(dst, dst_strides.data(), r, src, src_strides.data(), elem_size, counts.data(),
                                        counts.size()));
}

} // namespace sluice
