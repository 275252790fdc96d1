// src/shmem/typed.cpp - the typed functions of shmem.h, made from its type
// lists: each is one call of the byte or word operation of rma.cpp.
#include "sluice_config.h"

#include "shmem/shmem_impl.hpp"

#include <cstring>
#include <type_traits>

namespace sluice::shmem {
namespace {

// The Sluice atomic type a word of T goes through: one domain per size
// for the integers (signed or not, the same agent), float and double their own.
template <class T>
constexpr sluice_dt_t dt_of() {
    if constexpr (std::is_same_v<T, float>) return SLUICE_DT_FLT;
    else if constexpr (std::is_same_v<T, double>) return SLUICE_DT_DBL;
    else return sizeof(T) == 4 ? SLUICE_DT_U32 : SLUICE_DT_U64;
}

template <class T>
std::uint64_t bits(T v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
}
template <class T>
T from_bits(std::uint64_t b) {
    T v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}

template <class T>
T amo_t(shmem_ctx_t ctx, T *addr, int pe, sluice_aop_t op, T a, T b, const char *call) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8);
    const int w = world_pe(ctx, pe, call);
    return from_bits<T>(amo(dt_of<T>(), addr, w, op, bits(a), bits(b), call));
}

template <class T>
bool compare(T v, int cmp, T x, const char *call) {
    switch (cmp) {
    case SHMEM_CMP_EQ: return v == x;
    case SHMEM_CMP_NE: return v != x;
    case SHMEM_CMP_GT: return v > x;
    case SHMEM_CMP_GE: return v >= x;
    case SHMEM_CMP_LT: return v < x;
    case SHMEM_CMP_LE: return v <= x;
    default: break;
    }
    fail(call, "pass SHMEM_CMP_EQ, _NE, _GT, _GE, _LT or _LE", "comparison %d", cmp);
}

template <class T>
bool holds(T *ivar, int cmp, T x, const char *call) {
    return compare(__atomic_load_n(ivar, __ATOMIC_ACQUIRE), cmp, x, call);
}

// The index of the first entry not yet satisfied, that `status` does not
// exclude, that now holds; nelems when none does.
template <class T, class V>
std::size_t test_any(T *ivars, std::size_t n, const int *status, int cmp, V x, const char *call) {
    for (std::size_t i = 0; i < n; ++i)
        if ((!status || !status[i]) && holds(&ivars[i], cmp, x(i), call)) return i;
    return SIZE_MAX;
}

template <class T, class V>
bool test_all(T *ivars, std::size_t n, const int *status, int cmp, V x, const char *call) {
    for (std::size_t i = 0; i < n; ++i)
        if ((!status || !status[i]) && !holds(&ivars[i], cmp, x(i), call)) return false;
    return true;
}

template <class T, class V>
std::size_t test_some(T *ivars, std::size_t n, std::size_t *idx, const int *status, int cmp, V x, const char *call) {
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i)
        if ((!status || !status[i]) && holds(&ivars[i], cmp, x(i), call)) idx[k++] = i;
    return k;
}

// Whether every entry is excluded (the _any and _some forms then return at once).
bool all_excluded(std::size_t n, const int *status) {
    if (n == 0) return true;
    if (!status) return false;
    for (std::size_t i = 0; i < n; ++i)
        if (!status[i]) return false;
    return true;
}

template <class T>
void wait_until(T *ivar, int cmp, T x, const char *call) {
    need_init(call);
    wait_for([&] { return holds(ivar, cmp, x, call); });
}

} // namespace
} // namespace sluice::shmem

using namespace sluice::shmem;

#define CTX_ SHMEM_CTX_DEFAULT

extern "C" {

// ---- RMA -------------------------------------------------------------------------
#define RMA_(T, N)                                                                                      \
    void shmem_ctx_##N##_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                       \
        put_bytes(c, d, s, n * sizeof(T), pe, "shmem_" #N "_put");                                      \
    }                                                                                                   \
    void shmem_##N##_put(T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put(CTX_, d, s, n, pe); } \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                   \
        put_bytes_nbi(c, d, s, n * sizeof(T), pe, "shmem_" #N "_put_nbi");                                  \
    }                                                                                                   \
    void shmem_##N##_put_nbi(T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put_nbi(CTX_, d, s, n, pe); } \
    void shmem_ctx_##N##_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                       \
        get_bytes(c, d, s, n * sizeof(T), pe, "shmem_" #N "_get");                                      \
    }                                                                                                   \
    void shmem_##N##_get(T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get(CTX_, d, s, n, pe); } \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                   \
        get_bytes_nbi(c, d, s, n * sizeof(T), pe, "shmem_" #N "_get_nbi");                                  \
    }                                                                                                   \
    void shmem_##N##_get_nbi(T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get_nbi(CTX_, d, s, n, pe); } \
    void shmem_ctx_##N##_p(shmem_ctx_t c, T *d, T v, int pe) { put_bytes(c, d, &v, sizeof(T), pe, "shmem_" #N "_p"); } \
    void shmem_##N##_p(T *d, T v, int pe) { shmem_ctx_##N##_p(CTX_, d, v, pe); }                         \
    T shmem_ctx_##N##_g(shmem_ctx_t c, const T *s, int pe) {                                            \
        T v;                                                                                            \
        get_bytes(c, &v, s, sizeof(T), pe, "shmem_" #N "_g");                                           \
        return v;                                                                                       \
    }                                                                                                   \
    T shmem_##N##_g(const T *s, int pe) { return shmem_ctx_##N##_g(CTX_, s, pe); }                      \
    void shmem_ctx_##N##_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
        iput_bytes(c, d, s, dst, sst, sizeof(T), n, pe, "shmem_" #N "_iput");                           \
    }                                                                                                   \
    void shmem_##N##_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {           \
        shmem_ctx_##N##_iput(CTX_, d, s, dst, sst, n, pe);                                              \
    }                                                                                                   \
    void shmem_ctx_##N##_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
        iget_bytes(c, d, s, dst, sst, sizeof(T), n, pe, "shmem_" #N "_iget");                           \
    }                                                                                                   \
    void shmem_##N##_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {           \
        shmem_ctx_##N##_iget(CTX_, d, s, dst, sst, n, pe);                                              \
    }                                                                                                   \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v,  \
                                    int op, int pe) {                                                   \
        put_signal(c, d, s, n * sizeof(T), sig, v, op, pe, "shmem_" #N "_put_signal");                  \
    }                                                                                                   \
    void shmem_##N##_put_signal(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { \
        shmem_ctx_##N##_put_signal(CTX_, d, s, n, sig, v, op, pe);                                      \
    }                                                                                                   \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig,       \
                                        uint64_t v, int op, int pe) {                                   \
        put_signal(c, d, s, n * sizeof(T), sig, v, op, pe, "shmem_" #N "_put_signal_nbi");              \
    }                                                                                                   \
    void shmem_##N##_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { \
        shmem_ctx_##N##_put_signal_nbi(CTX_, d, s, n, sig, v, op, pe);                                  \
    }
SHMEM_RMA_TYPES_(RMA_)
#undef RMA_

#define SIZED_(B, T)                                                                                    \
    void shmem_ctx_put##B(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {                    \
        put_bytes(c, d, s, n * (B / 8), pe, "shmem_put" #B);                                            \
    }                                                                                                   \
    void shmem_put##B(void *d, const void *s, size_t n, int pe) { shmem_ctx_put##B(CTX_, d, s, n, pe); } \
    void shmem_ctx_put##B##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {              \
        put_bytes_nbi(c, d, s, n * (B / 8), pe, "shmem_put" #B "_nbi");                                     \
    }                                                                                                   \
    void shmem_put##B##_nbi(void *d, const void *s, size_t n, int pe) { shmem_ctx_put##B##_nbi(CTX_, d, s, n, pe); } \
    void shmem_ctx_get##B(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {                    \
        get_bytes(c, d, s, n * (B / 8), pe, "shmem_get" #B);                                            \
    }                                                                                                   \
    void shmem_get##B(void *d, const void *s, size_t n, int pe) { shmem_ctx_get##B(CTX_, d, s, n, pe); } \
    void shmem_ctx_get##B##_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {              \
        get_bytes_nbi(c, d, s, n * (B / 8), pe, "shmem_get" #B "_nbi");                                     \
    }                                                                                                   \
    void shmem_get##B##_nbi(void *d, const void *s, size_t n, int pe) { shmem_ctx_get##B##_nbi(CTX_, d, s, n, pe); } \
    void shmem_ctx_iput##B(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
        iput_bytes(c, d, s, dst, sst, B / 8, n, pe, "shmem_iput" #B);                                   \
    }                                                                                                   \
    void shmem_iput##B(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {        \
        shmem_ctx_iput##B(CTX_, d, s, dst, sst, n, pe);                                                 \
    }                                                                                                   \
    void shmem_ctx_iget##B(shmem_ctx_t c, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
        iget_bytes(c, d, s, dst, sst, B / 8, n, pe, "shmem_iget" #B);                                   \
    }                                                                                                   \
    void shmem_iget##B(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {        \
        shmem_ctx_iget##B(CTX_, d, s, dst, sst, n, pe);                                                 \
    }                                                                                                   \
    void shmem_ctx_put##B##_signal(shmem_ctx_t c, void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, \
                                   int op, int pe) {                                                    \
        put_signal(c, d, s, n * (B / 8), sig, v, op, pe, "shmem_put" #B "_signal");                     \
    }                                                                                                   \
    void shmem_put##B##_signal(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { \
        shmem_ctx_put##B##_signal(CTX_, d, s, n, sig, v, op, pe);                                       \
    }                                                                                                   \
    void shmem_ctx_put##B##_signal_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, uint64_t *sig,  \
                                       uint64_t v, int op, int pe) {                                    \
        put_signal(c, d, s, n * (B / 8), sig, v, op, pe, "shmem_put" #B "_signal_nbi");                 \
    }                                                                                                   \
    void shmem_put##B##_signal_nbi(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { \
        shmem_ctx_put##B##_signal_nbi(CTX_, d, s, n, sig, v, op, pe);                                   \
    }
SHMEM_SIZED_(SIZED_)
#undef SIZED_

void shmem_ctx_putmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {
    put_bytes(c, d, s, n, pe, "shmem_putmem");
}
void shmem_putmem(void *d, const void *s, size_t n, int pe) { shmem_ctx_putmem(CTX_, d, s, n, pe); }
void shmem_ctx_putmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {
    put_bytes_nbi(c, d, s, n, pe, "shmem_putmem_nbi");
}
void shmem_putmem_nbi(void *d, const void *s, size_t n, int pe) { shmem_ctx_putmem_nbi(CTX_, d, s, n, pe); }
void shmem_ctx_getmem(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {
    get_bytes(c, d, s, n, pe, "shmem_getmem");
}
void shmem_getmem(void *d, const void *s, size_t n, int pe) { shmem_ctx_getmem(CTX_, d, s, n, pe); }
void shmem_ctx_getmem_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, int pe) {
    get_bytes_nbi(c, d, s, n, pe, "shmem_getmem_nbi");
}
void shmem_getmem_nbi(void *d, const void *s, size_t n, int pe) { shmem_ctx_getmem_nbi(CTX_, d, s, n, pe); }
void shmem_ctx_putmem_signal(shmem_ctx_t c, void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op,
                             int pe) {
    put_signal(c, d, s, n, sig, v, op, pe, "shmem_putmem_signal");
}
void shmem_putmem_signal(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) {
    shmem_ctx_putmem_signal(CTX_, d, s, n, sig, v, op, pe);
}
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t c, void *d, const void *s, size_t n, uint64_t *sig, uint64_t v,
                                 int op, int pe) {
    put_signal(c, d, s, n, sig, v, op, pe, "shmem_putmem_signal_nbi");
}
void shmem_putmem_signal_nbi(void *d, const void *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) {
    shmem_ctx_putmem_signal_nbi(CTX_, d, s, n, sig, v, op, pe);
}

// ---- atomics -----------------------------------------------------------------------
#define AMO_STD_(T, N)                                                                                  \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe) {                                   \
        return amo_t<T>(c, d, pe, SLUICE_OP_FINC, 0, 0, "shmem_" #N "_atomic_fetch_inc");               \
    }                                                                                                   \
    T shmem_##N##_atomic_fetch_inc(T *d, int pe) { return shmem_ctx_##N##_atomic_fetch_inc(CTX_, d, pe); } \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t c, T *d, int pe) {                                      \
        (void)amo_t<T>(c, d, pe, SLUICE_OP_INC, 0, 0, "shmem_" #N "_atomic_inc");                       \
    }                                                                                                   \
    void shmem_##N##_atomic_inc(T *d, int pe) { shmem_ctx_##N##_atomic_inc(CTX_, d, pe); }               \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t c, T *d, T v, int pe) {                              \
        return amo_t<T>(c, d, pe, SLUICE_OP_FADD, v, 0, "shmem_" #N "_atomic_fetch_add");               \
    }                                                                                                   \
    T shmem_##N##_atomic_fetch_add(T *d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_add(CTX_, d, v, pe); } \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t c, T *d, T v, int pe) {                                 \
        (void)amo_t<T>(c, d, pe, SLUICE_OP_ADD, v, 0, "shmem_" #N "_atomic_add");                       \
    }                                                                                                   \
    void shmem_##N##_atomic_add(T *d, T v, int pe) { shmem_ctx_##N##_atomic_add(CTX_, d, v, pe); }       \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t c, T *d, T cond, T v, int pe) {                   \
        return amo_t<T>(c, d, pe, SLUICE_OP_FCAS, cond, v, "shmem_" #N "_atomic_compare_swap");         \
    }                                                                                                   \
    T shmem_##N##_atomic_compare_swap(T *d, T cond, T v, int pe) {                                      \
        return shmem_ctx_##N##_atomic_compare_swap(CTX_, d, cond, v, pe);                               \
    }                                                                                                   \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe) {                      \
        *f = shmem_ctx_##N##_atomic_fetch_inc(c, d, pe);                                                \
    }                                                                                                   \
    void shmem_##N##_atomic_fetch_inc_nbi(T *f, T *d, int pe) { *f = shmem_##N##_atomic_fetch_inc(d, pe); } \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) {                 \
        *f = shmem_ctx_##N##_atomic_fetch_add(c, d, v, pe);                                             \
    }                                                                                                   \
    void shmem_##N##_atomic_fetch_add_nbi(T *f, T *d, T v, int pe) { *f = shmem_##N##_atomic_fetch_add(d, v, pe); } \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T cond, T v, int pe) {      \
        *f = shmem_ctx_##N##_atomic_compare_swap(c, d, cond, v, pe);                                    \
    }                                                                                                   \
    void shmem_##N##_atomic_compare_swap_nbi(T *f, T *d, T cond, T v, int pe) {                         \
        *f = shmem_##N##_atomic_compare_swap(d, cond, v, pe);                                           \
    }
SHMEM_AMO_STD_TYPES_(AMO_STD_)
#undef AMO_STD_

#define AMO_EXT_(T, N)                                                                                  \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t c, const T *s, int pe) {                                 \
        return amo_t<T>(c, const_cast<T *>(s), pe, SLUICE_OP_GET, 0, 0, "shmem_" #N "_atomic_fetch");   \
    }                                                                                                   \
    T shmem_##N##_atomic_fetch(const T *s, int pe) { return shmem_ctx_##N##_atomic_fetch(CTX_, s, pe); } \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t c, T *d, T v, int pe) {                                 \
        (void)amo_t<T>(c, d, pe, SLUICE_OP_SET, v, 0, "shmem_" #N "_atomic_set");                       \
    }                                                                                                   \
    void shmem_##N##_atomic_set(T *d, T v, int pe) { shmem_ctx_##N##_atomic_set(CTX_, d, v, pe); }       \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t c, T *d, T v, int pe) {                                   \
        return amo_t<T>(c, d, pe, SLUICE_OP_SWAP, v, 0, "shmem_" #N "_atomic_swap");                    \
    }                                                                                                   \
    T shmem_##N##_atomic_swap(T *d, T v, int pe) { return shmem_ctx_##N##_atomic_swap(CTX_, d, v, pe); } \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe) {                    \
        *f = shmem_ctx_##N##_atomic_fetch(c, s, pe);                                                    \
    }                                                                                                   \
    void shmem_##N##_atomic_fetch_nbi(T *f, const T *s, int pe) { *f = shmem_##N##_atomic_fetch(s, pe); } \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) {                      \
        *f = shmem_ctx_##N##_atomic_swap(c, d, v, pe);                                                  \
    }                                                                                                   \
    void shmem_##N##_atomic_swap_nbi(T *f, T *d, T v, int pe) { *f = shmem_##N##_atomic_swap(d, v, pe); }
SHMEM_AMO_EXT_TYPES_(AMO_EXT_)
#undef AMO_EXT_

#define AMO_BIT1_(T, N, OP, FOP, POP)                                                                   \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t c, T *d, T v, int pe) {                             \
        return amo_t<T>(c, d, pe, FOP, v, 0, "shmem_" #N "_atomic_fetch_" #OP);                         \
    }                                                                                                   \
    T shmem_##N##_atomic_fetch_##OP(T *d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_##OP(CTX_, d, v, pe); } \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t c, T *d, T v, int pe) {                                \
        (void)amo_t<T>(c, d, pe, POP, v, 0, "shmem_" #N "_atomic_" #OP);                                \
    }                                                                                                   \
    void shmem_##N##_atomic_##OP(T *d, T v, int pe) { shmem_ctx_##N##_atomic_##OP(CTX_, d, v, pe); }     \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) {              \
        *f = shmem_ctx_##N##_atomic_fetch_##OP(c, d, v, pe);                                            \
    }                                                                                                   \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *f, T *d, T v, int pe) { *f = shmem_##N##_atomic_fetch_##OP(d, v, pe); }
#define AMO_BIT_(T, N)                                                                                  \
    AMO_BIT1_(T, N, and, SLUICE_OP_FAND, SLUICE_OP_AND)                                                 \
    AMO_BIT1_(T, N, or, SLUICE_OP_FOR, SLUICE_OP_OR)                                                    \
    AMO_BIT1_(T, N, xor, SLUICE_OP_FXOR, SLUICE_OP_XOR)
SHMEM_AMO_BIT_TYPES_(AMO_BIT_)
#undef AMO_BIT_
#undef AMO_BIT1_

#define AMO_DEPR_(T, N)                                                                                 \
    T shmem_##N##_finc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); }                    \
    void shmem_##N##_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }                               \
    T shmem_##N##_fadd(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); }           \
    void shmem_##N##_add(T *d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); }                       \
    T shmem_##N##_cswap(T *d, T cond, T v, int pe) { return shmem_##N##_atomic_compare_swap(d, cond, v, pe); }
SHMEM_DEPR_AMO_TYPES_(AMO_DEPR_)
#undef AMO_DEPR_
#define AMO_DEPR_EXT_(T, N)                                                                             \
    T shmem_##N##_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); }                 \
    void shmem_##N##_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }                       \
    T shmem_##N##_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); }
SHMEM_DEPR_AMO_TYPES_(AMO_DEPR_EXT_)
AMO_DEPR_EXT_(float, float)
AMO_DEPR_EXT_(double, double)
#undef AMO_DEPR_EXT_
long shmem_swap(long *d, long v, int pe) { return shmem_long_atomic_swap(d, v, pe); }

// ---- point-to-point synchronization ----------------------------------------------------
#define SYNC_(T, N)                                                                                     \
    void shmem_##N##_wait_until(T *v, int cmp, T x) { wait_until(v, cmp, x, "shmem_" #N "_wait_until"); } \
    void shmem_##N##_wait(T *v, T x) { wait_until(v, SHMEM_CMP_NE, x, "shmem_" #N "_wait"); }           \
    size_t shmem_##N##_wait_until_all(T *v, size_t n, const int *st, int cmp, T x) {                    \
        need_init("shmem_" #N "_wait_until_all");                                                       \
        wait_for([&] { return test_all(v, n, st, cmp, [&](size_t) { return x; }, "shmem_" #N "_wait_until_all"); }); \
        return 0;                                                                                       \
    }                                                                                                   \
    size_t shmem_##N##_wait_until_any(T *v, size_t n, const int *st, int cmp, T x) {                    \
        need_init("shmem_" #N "_wait_until_any");                                                       \
        if (all_excluded(n, st)) return SIZE_MAX;                                                       \
        size_t i = SIZE_MAX;                                                                            \
        wait_for([&] { return (i = test_any(v, n, st, cmp, [&](size_t) { return x; }, "shmem_" #N "_wait_until_any")) != SIZE_MAX; }); \
        return i;                                                                                       \
    }                                                                                                   \
    size_t shmem_##N##_wait_until_some(T *v, size_t n, size_t *idx, const int *st, int cmp, T x) {      \
        need_init("shmem_" #N "_wait_until_some");                                                      \
        if (all_excluded(n, st)) return 0;                                                              \
        size_t k = 0;                                                                                   \
        wait_for([&] { return (k = test_some(v, n, idx, st, cmp, [&](size_t) { return x; }, "shmem_" #N "_wait_until_some")) != 0; }); \
        return k;                                                                                       \
    }                                                                                                   \
    void shmem_##N##_wait_until_all_vector(T *v, size_t n, const int *st, int cmp, T *x) {              \
        need_init("shmem_" #N "_wait_until_all_vector");                                                \
        wait_for([&] { return test_all(v, n, st, cmp, [&](size_t i) { return x[i]; }, "shmem_" #N "_wait_until_all_vector"); }); \
    }                                                                                                   \
    size_t shmem_##N##_wait_until_any_vector(T *v, size_t n, const int *st, int cmp, T *x) {            \
        need_init("shmem_" #N "_wait_until_any_vector");                                                \
        if (all_excluded(n, st)) return SIZE_MAX;                                                       \
        size_t i = SIZE_MAX;                                                                            \
        wait_for([&] { return (i = test_any(v, n, st, cmp, [&](size_t j) { return x[j]; }, "shmem_" #N "_wait_until_any_vector")) != SIZE_MAX; }); \
        return i;                                                                                       \
    }                                                                                                   \
    size_t shmem_##N##_wait_until_some_vector(T *v, size_t n, size_t *idx, const int *st, int cmp, T *x) { \
        need_init("shmem_" #N "_wait_until_some_vector");                                               \
        if (all_excluded(n, st)) return 0;                                                              \
        size_t k = 0;                                                                                   \
        wait_for([&] { return (k = test_some(v, n, idx, st, cmp, [&](size_t j) { return x[j]; }, "shmem_" #N "_wait_until_some_vector")) != 0; }); \
        return k;                                                                                       \
    }                                                                                                   \
    int shmem_##N##_test(T *v, int cmp, T x) {                                                          \
        need_init("shmem_" #N "_test");                                                                 \
        if (holds(v, cmp, x, "shmem_" #N "_test")) return 1;                                            \
        sluice_poll();                                                                                  \
        return 0;                                                                                       \
    }                                                                                                   \
    int shmem_##N##_test_all(T *v, size_t n, const int *st, int cmp, T x) {                             \
        need_init("shmem_" #N "_test_all");                                                             \
        if (test_all(v, n, st, cmp, [&](size_t) { return x; }, "shmem_" #N "_test_all")) return 1;      \
        sluice_poll();                                                                                  \
        return 0;                                                                                       \
    }                                                                                                   \
    size_t shmem_##N##_test_any(T *v, size_t n, const int *st, int cmp, T x) {                          \
        need_init("shmem_" #N "_test_any");                                                             \
        const size_t i = test_any(v, n, st, cmp, [&](size_t) { return x; }, "shmem_" #N "_test_any");   \
        if (i == SIZE_MAX) sluice_poll();                                                               \
        return i;                                                                                       \
    }                                                                                                   \
    size_t shmem_##N##_test_some(T *v, size_t n, size_t *idx, const int *st, int cmp, T x) {            \
        need_init("shmem_" #N "_test_some");                                                            \
        const size_t k = test_some(v, n, idx, st, cmp, [&](size_t) { return x; }, "shmem_" #N "_test_some"); \
        if (k == 0) sluice_poll();                                                                      \
        return k;                                                                                       \
    }                                                                                                   \
    int shmem_##N##_test_all_vector(T *v, size_t n, const int *st, int cmp, T *x) {                     \
        need_init("shmem_" #N "_test_all_vector");                                                      \
        if (test_all(v, n, st, cmp, [&](size_t i) { return x[i]; }, "shmem_" #N "_test_all_vector")) return 1; \
        sluice_poll();                                                                                  \
        return 0;                                                                                       \
    }                                                                                                   \
    size_t shmem_##N##_test_any_vector(T *v, size_t n, const int *st, int cmp, T *x) {                  \
        need_init("shmem_" #N "_test_any_vector");                                                      \
        const size_t i = test_any(v, n, st, cmp, [&](size_t j) { return x[j]; }, "shmem_" #N "_test_any_vector"); \
        if (i == SIZE_MAX) sluice_poll();                                                               \
        return i;                                                                                       \
    }                                                                                                   \
    size_t shmem_##N##_test_some_vector(T *v, size_t n, size_t *idx, const int *st, int cmp, T *x) {    \
        need_init("shmem_" #N "_test_some_vector");                                                     \
        const size_t k = test_some(v, n, idx, st, cmp, [&](size_t j) { return x[j]; }, "shmem_" #N "_test_some_vector"); \
        if (k == 0) sluice_poll();                                                                      \
        return k;                                                                                       \
    }
SHMEM_SYNC_TYPES_(SYNC_)
#undef SYNC_

void shmem_wait(long *v, long x) { shmem_long_wait(v, x); }

uint64_t shmem_signal_wait_until(uint64_t *sig, int cmp, uint64_t x) {
    wait_until(sig, cmp, x, "shmem_signal_wait_until");
    return __atomic_load_n(sig, __ATOMIC_ACQUIRE);
}

} // extern "C"
