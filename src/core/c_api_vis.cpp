// src/core/c_api_vis.cpp - the C API of VIS and of the completion extras
// (test_some / wait_some, NBI sync by category, access regions, local
// completion): state checks, then src/rma.
#include "core/c_api_common.hpp"
#include "rma/vis.hpp"

#include <sluice.h>

using sluice::base::Status;
using sluice::core::code;
using sluice::core::runtime;
namespace rma = sluice::rma;

namespace {

rma::VisSide vector_side(std::size_t count, const sluice_memvec_t *list) {
    rma::VisSide s;
    s.kind = rma::VisSide::Kind::vector;
    s.count = count;
    s.vec = list;
    return s;
}
rma::VisSide indexed_side(std::size_t count, void *const *list, std::size_t len) {
    rma::VisSide s;
    s.kind = rma::VisSide::Kind::indexed;
    s.count = count;
    s.list = list;
    s.len = len;
    return s;
}
rma::VisSide strided_side(const void *base, const ptrdiff_t *strides, std::size_t elem, const size_t *count,
                          std::size_t levels) {
    rma::VisSide s;
    s.kind = rma::VisSide::Kind::strided;
    s.base = static_cast<char *>(const_cast<void *>(base));
    s.strides = strides;
    s.counts = count;
    s.levels = levels;
    s.elem = elem;
    return s;
}

int put(sluice_rank_t rank, const rma::VisSide &dst, const rma::VisSide &src, rma::VisCompletion how,
        sluice_event_t *ev, const char *op) {
    SLUICE_REQUIRE_RUNNING(op);
    return code(rma::vis_transfer(true, rank, dst, src, how, ev, op));
}
int get(const rma::VisSide &dst, sluice_rank_t rank, const rma::VisSide &src, rma::VisCompletion how,
        sluice_event_t *ev, const char *op) {
    SLUICE_REQUIRE_RUNNING(op);
    return code(rma::vis_transfer(false, rank, src, dst, how, ev, op));
}
constexpr auto blocking = rma::VisCompletion::blocking;
constexpr auto nb = rma::VisCompletion::nb;
constexpr auto nbi = rma::VisCompletion::nbi;

} // namespace

extern "C" {

// ---- completion extras ----------------------------------------------------
sluice_status_t sluice_event_test_some(sluice_event_t *events, size_t count) {
    SLUICE_REQUIRE_RUNNING("event_test_some");
    return code(runtime().rma.event_test_some(events, count, "event_test_some"));
}
sluice_status_t sluice_event_wait_some(sluice_event_t *events, size_t count) {
    SLUICE_REQUIRE_RUNNING("event_wait_some");
    return code(runtime().rma.event_wait_some(events, count));
}
sluice_status_t sluice_nbi_sync_cat(unsigned categories) {
    SLUICE_REQUIRE_RUNNING("nbi_sync_cat");
    return code(runtime().rma.nbi_sync(categories, "nbi_sync_cat"));
}
sluice_status_t sluice_nbi_test_cat(unsigned categories) {
    SLUICE_REQUIRE_RUNNING("nbi_test_cat");
    return code(runtime().rma.nbi_test(categories, "nbi_test_cat"));
}
sluice_status_t sluice_nbi_region_begin(void) {
    SLUICE_REQUIRE_RUNNING("nbi_region_begin");
    return code(runtime().rma.nbi_region_begin());
}
sluice_status_t sluice_nbi_region_end(sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("nbi_region_end");
    return code(runtime().rma.nbi_region_end(event));
}
sluice_status_t sluice_put_nb_lc(sluice_rank_t rank, void *dest, const void *src, size_t length,
                                 sluice_event_t *lc_event, sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("put_nb_lc");
    return code(runtime().rma.put_nb_lc(rank, dest, src, length, lc_event, event));
}

// ---- VIS: vector ---------------------------------------------------------------
sluice_status_t sluice_putv(sluice_rank_t rank, size_t dst_count, const sluice_memvec_t *dst_list, size_t src_count,
                            const sluice_memvec_t *src_list) {
    return put(rank, vector_side(dst_count, dst_list), vector_side(src_count, src_list), blocking, nullptr, "putv");
}
sluice_status_t sluice_putv_nb(sluice_rank_t rank, size_t dst_count, const sluice_memvec_t *dst_list, size_t src_count,
                               const sluice_memvec_t *src_list, sluice_event_t *event) {
    return put(rank, vector_side(dst_count, dst_list), vector_side(src_count, src_list), nb, event, "putv_nb");
}
sluice_status_t sluice_putv_nbi(sluice_rank_t rank, size_t dst_count, const sluice_memvec_t *dst_list,
                                size_t src_count, const sluice_memvec_t *src_list) {
    return put(rank, vector_side(dst_count, dst_list), vector_side(src_count, src_list), nbi, nullptr, "putv_nbi");
}
sluice_status_t sluice_getv(size_t dst_count, const sluice_memvec_t *dst_list, sluice_rank_t rank, size_t src_count,
                            const sluice_memvec_t *src_list) {
    return get(vector_side(dst_count, dst_list), rank, vector_side(src_count, src_list), blocking, nullptr, "getv");
}
sluice_status_t sluice_getv_nb(size_t dst_count, const sluice_memvec_t *dst_list, sluice_rank_t rank,
                               size_t src_count, const sluice_memvec_t *src_list, sluice_event_t *event) {
    return get(vector_side(dst_count, dst_list), rank, vector_side(src_count, src_list), nb, event, "getv_nb");
}
sluice_status_t sluice_getv_nbi(size_t dst_count, const sluice_memvec_t *dst_list, sluice_rank_t rank,
                                size_t src_count, const sluice_memvec_t *src_list) {
    return get(vector_side(dst_count, dst_list), rank, vector_side(src_count, src_list), nbi, nullptr, "getv_nbi");
}

// ---- VIS: indexed --------------------------------------------------------------
sluice_status_t sluice_puti(sluice_rank_t rank, size_t dst_count, void *const *dst_list, size_t dst_len,
                            size_t src_count, void *const *src_list, size_t src_len) {
    return put(rank, indexed_side(dst_count, dst_list, dst_len), indexed_side(src_count, src_list, src_len), blocking,
               nullptr, "puti");
}
sluice_status_t sluice_puti_nb(sluice_rank_t rank, size_t dst_count, void *const *dst_list, size_t dst_len,
                               size_t src_count, void *const *src_list, size_t src_len, sluice_event_t *event) {
    return put(rank, indexed_side(dst_count, dst_list, dst_len), indexed_side(src_count, src_list, src_len), nb,
               event, "puti_nb");
}
sluice_status_t sluice_puti_nbi(sluice_rank_t rank, size_t dst_count, void *const *dst_list, size_t dst_len,
                                size_t src_count, void *const *src_list, size_t src_len) {
    return put(rank, indexed_side(dst_count, dst_list, dst_len), indexed_side(src_count, src_list, src_len), nbi,
               nullptr, "puti_nbi");
}
sluice_status_t sluice_geti(size_t dst_count, void *const *dst_list, size_t dst_len, sluice_rank_t rank,
                            size_t src_count, void *const *src_list, size_t src_len) {
    return get(indexed_side(dst_count, dst_list, dst_len), rank, indexed_side(src_count, src_list, src_len), blocking,
               nullptr, "geti");
}
sluice_status_t sluice_geti_nb(size_t dst_count, void *const *dst_list, size_t dst_len, sluice_rank_t rank,
                               size_t src_count, void *const *src_list, size_t src_len, sluice_event_t *event) {
    return get(indexed_side(dst_count, dst_list, dst_len), rank, indexed_side(src_count, src_list, src_len), nb, event,
               "geti_nb");
}
sluice_status_t sluice_geti_nbi(size_t dst_count, void *const *dst_list, size_t dst_len, sluice_rank_t rank,
                                size_t src_count, void *const *src_list, size_t src_len) {
    return get(indexed_side(dst_count, dst_list, dst_len), rank, indexed_side(src_count, src_list, src_len), nbi,
               nullptr, "geti_nbi");
}

// ---- VIS: strided --------------------------------------------------------------
sluice_status_t sluice_puts(sluice_rank_t rank, void *dst, const ptrdiff_t *dst_strides, const void *src,
                            const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels) {
    return put(rank, strided_side(dst, dst_strides, elem_size, count, levels),
               strided_side(src, src_strides, elem_size, count, levels), blocking, nullptr, "puts");
}
sluice_status_t sluice_puts_nb(sluice_rank_t rank, void *dst, const ptrdiff_t *dst_strides, const void *src,
                               const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels,
                               sluice_event_t *event) {
    return put(rank, strided_side(dst, dst_strides, elem_size, count, levels),
               strided_side(src, src_strides, elem_size, count, levels), nb, event, "puts_nb");
}
sluice_status_t sluice_puts_nbi(sluice_rank_t rank, void *dst, const ptrdiff_t *dst_strides, const void *src,
                                const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels) {
    return put(rank, strided_side(dst, dst_strides, elem_size, count, levels),
               strided_side(src, src_strides, elem_size, count, levels), nbi, nullptr, "puts_nbi");
}
sluice_status_t sluice_gets(void *dst, const ptrdiff_t *dst_strides, sluice_rank_t rank, const void *src,
                            const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels) {
    return get(strided_side(dst, dst_strides, elem_size, count, levels), rank,
               strided_side(src, src_strides, elem_size, count, levels), blocking, nullptr, "gets");
}
sluice_status_t sluice_gets_nb(void *dst, const ptrdiff_t *dst_strides, sluice_rank_t rank, const void *src,
                               const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels,
                               sluice_event_t *event) {
    return get(strided_side(dst, dst_strides, elem_size, count, levels), rank,
               strided_side(src, src_strides, elem_size, count, levels), nb, event, "gets_nb");
}
sluice_status_t sluice_gets_nbi(void *dst, const ptrdiff_t *dst_strides, sluice_rank_t rank, const void *src,
                                const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels) {
    return get(strided_side(dst, dst_strides, elem_size, count, levels), rank,
               strided_side(src, src_strides, elem_size, count, levels), nbi, nullptr, "gets_nbi");
}

} // extern "C"
