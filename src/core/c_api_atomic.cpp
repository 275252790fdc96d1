// src/core/c_api_atomic.cpp - the C API of atomic domains (src/atomic).
// The exported sluice_ad_op_<type> are defined here, not the header's
// inline versions.
#define SLUICE_NO_INLINE_RMA
#include "atomic/atomic.hpp"
#include "core/c_api_common.hpp"

#include <sluice.h>

using sluice::base::Status;
using sluice::core::code;
using sluice::core::runtime;
namespace atomic = sluice::atomic;

extern "C" {

sluice_status_t sluice_ad_create(sluice_team_t team, sluice_dt_t type, uint64_t ops, unsigned flags, sluice_ad_t *ad) {
    SLUICE_REQUIRE_RUNNING("ad_create");
    return code(atomic::domain_create(team, type, ops, flags, ad));
}
sluice_status_t sluice_ad_destroy(sluice_ad_t ad) {
    SLUICE_REQUIRE_RUNNING("ad_destroy");
    return code(atomic::domain_destroy(ad));
}
sluice_status_t sluice_ad_path(sluice_ad_t ad, const char **path, const char **why) {
    SLUICE_REQUIRE_RUNNING("ad_path");
    return code(atomic::domain_path(ad, path, why));
}

#define SLUICE_AD_DEFINE_(suffix, type)                                                                           \
    sluice_status_t sluice_ad_op_##suffix(sluice_ad_t ad, type *result, sluice_rank_t rank, void *addr,           \
                                          sluice_aop_t op, type op1, type op2, unsigned flags) {                  \
        SLUICE_REQUIRE_RUNNING("ad_op_" #suffix);                                                                 \
        return code(atomic::operate<type>(ad, result, rank, addr, op, op1, op2, flags, atomic::Mode::blocking,   \
                                          nullptr, "ad_op_" #suffix));                                            \
    }                                                                                                             \
    sluice_status_t sluice_ad_op_nb_##suffix(sluice_ad_t ad, type *result, sluice_rank_t rank, void *addr,        \
                                             sluice_aop_t op, type op1, type op2, unsigned flags,                 \
                                             sluice_event_t *event) {                                             \
        SLUICE_REQUIRE_RUNNING("ad_op_nb_" #suffix);                                                              \
        return code(atomic::operate<type>(ad, result, rank, addr, op, op1, op2, flags, atomic::Mode::nb, event,  \
                                          "ad_op_nb_" #suffix));                                                  \
    }                                                                                                             \
    sluice_status_t sluice_ad_op_nbi_##suffix(sluice_ad_t ad, type *result, sluice_rank_t rank, void *addr,       \
                                              sluice_aop_t op, type op1, type op2, unsigned flags) {              \
        SLUICE_REQUIRE_RUNNING("ad_op_nbi_" #suffix);                                                             \
        return code(atomic::operate<type>(ad, result, rank, addr, op, op1, op2, flags, atomic::Mode::nbi,        \
                                          nullptr, "ad_op_nbi_" #suffix));                                        \
    }
SLUICE_AD_DEFINE_(i32, int32_t)
SLUICE_AD_DEFINE_(u32, uint32_t)
SLUICE_AD_DEFINE_(i64, int64_t)
SLUICE_AD_DEFINE_(u64, uint64_t)
SLUICE_AD_DEFINE_(flt, float)
SLUICE_AD_DEFINE_(dbl, double)
#undef SLUICE_AD_DEFINE_

} // extern "C"
