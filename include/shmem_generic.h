/*
 * shmem_generic.h - the generic names of OpenSHMEM 1.5 (included by shmem.h):
 * C11 _Generic selections in C, overloads in C++.  Each selects the typed
 * function from the type of its pointer argument (with or without const),
 * and the shmem_ctx_ form when the first argument is a shmem_ctx_t.
 */
#ifndef SHMEM_GENERIC_H
#define SHMEM_GENERIC_H

/* Type lists of the generic names, X(C type, TYPENAME, FAMILY): the
 * distinct C types only (int32_t and the like are these under other names). */
#define SHMEM_G_RMA_(X, F)                                                                              \
    X(float, float, F) X(double, double, F) X(long double, longdouble, F) X(char, char, F)              \
    X(signed char, schar, F) X(short, short, F) X(int, int, F) X(long, long, F)                         \
    X(long long, longlong, F) X(unsigned char, uchar, F) X(unsigned short, ushort, F)                   \
    X(unsigned int, uint, F) X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)
#define SHMEM_G_AMO_STD_(X, F)                                                                          \
    X(int, int, F) X(long, long, F) X(long long, longlong, F) X(unsigned int, uint, F)                  \
    X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)
#define SHMEM_G_AMO_EXT_(X, F) SHMEM_G_AMO_STD_(X, F) X(float, float, F) X(double, double, F)
#define SHMEM_G_AMO_BIT_(X, F)                                                                          \
    X(unsigned int, uint, F) X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)             \
    X(int, int32, F) X(long, int64, F)
#define SHMEM_G_SYNC_(X, F)                                                                             \
    X(short, short, F) X(int, int, F) X(long, long, F) X(long long, longlong, F)                        \
    X(unsigned short, ushort, F) X(unsigned int, uint, F) X(unsigned long, ulong, F)                    \
    X(unsigned long long, ulonglong, F)
#define SHMEM_G_REDUCE_BIT_(X, F)                                                                       \
    X(unsigned char, uchar, F) X(unsigned short, ushort, F) X(unsigned int, uint, F)                    \
    X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F) X(signed char, int8, F)              \
    X(short, int16, F) X(int, int32, F) X(long, int64, F)
#define SHMEM_G_REDUCE_MINMAX_(X, F)                                                                    \
    X(char, char, F) X(signed char, schar, F) X(short, short, F) X(int, int, F) X(long, long, F)        \
    X(long long, longlong, F) X(unsigned char, uchar, F) X(unsigned short, ushort, F)                   \
    X(unsigned int, uint, F) X(unsigned long, ulong, F) X(unsigned long long, ulonglong, F)             \
    X(float, float, F) X(double, double, F) X(long double, longdouble, F)
#define SHMEM_G_REDUCE_ARITH_(X, F)                                                                     \
    SHMEM_G_REDUCE_MINMAX_(X, F) X(float _Complex, complexf, F) X(double _Complex, complexd, F)

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

/* Never defined: a generic name called with an unsupported type fails to
 * compile or link, naming this. */
void shmem_generic_type_not_supported_(void);
#define SHMEM_A1_(a, ...) a
#define SHMEM_A2_(a, b, ...) b
#define SHMEM_A3_(a, b, c, ...) c
#define SHMEM_ASSOC_(T, N, F) T * : shmem_##N##_##F, const T * : shmem_##N##_##F,
#define SHMEM_ASSOC_CTX_(T, N, F) T * : shmem_ctx_##N##_##F, const T * : shmem_ctx_##N##_##F,
#define SHMEM_SEL_(LIST, F, x) _Generic((x), LIST(SHMEM_ASSOC_, F) default : shmem_generic_type_not_supported_)
#define SHMEM_SEL_CTX_(LIST, F, x)                                                                      \
    _Generic((x), LIST(SHMEM_ASSOC_CTX_, F) default : shmem_generic_type_not_supported_)
/* With an optional context first: select on argument K of the call without it. */
#define SHMEM_G1_(LIST, F, ...)                                                                         \
    _Generic(SHMEM_A1_(__VA_ARGS__, 0), shmem_ctx_t                                                     \
             : SHMEM_SEL_CTX_(LIST, F, SHMEM_A2_(__VA_ARGS__, 0, 0)), default                           \
             : SHMEM_SEL_(LIST, F, SHMEM_A1_(__VA_ARGS__, 0)))(__VA_ARGS__)
#define SHMEM_G2_(LIST, F, ...)                                                                         \
    _Generic(SHMEM_A1_(__VA_ARGS__, 0), shmem_ctx_t                                                     \
             : SHMEM_SEL_CTX_(LIST, F, SHMEM_A3_(__VA_ARGS__, 0, 0, 0)), default                        \
             : SHMEM_SEL_(LIST, F, SHMEM_A2_(__VA_ARGS__, 0, 0)))(__VA_ARGS__)
/* No context form: select on the first or second argument. */
#define SHMEM_N1_(LIST, F, ...) SHMEM_SEL_(LIST, F, SHMEM_A1_(__VA_ARGS__, 0))(__VA_ARGS__)
#define SHMEM_N2_(LIST, F, ...) SHMEM_SEL_(LIST, F, SHMEM_A2_(__VA_ARGS__, 0, 0))(__VA_ARGS__)

#define shmem_put(...) SHMEM_G1_(SHMEM_G_RMA_, put, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEM_G1_(SHMEM_G_RMA_, put_nbi, __VA_ARGS__)
#define shmem_get(...) SHMEM_G1_(SHMEM_G_RMA_, get, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEM_G1_(SHMEM_G_RMA_, get_nbi, __VA_ARGS__)
#define shmem_p(...) SHMEM_G1_(SHMEM_G_RMA_, p, __VA_ARGS__)
#define shmem_g(...) SHMEM_G1_(SHMEM_G_RMA_, g, __VA_ARGS__)
#define shmem_iput(...) SHMEM_G1_(SHMEM_G_RMA_, iput, __VA_ARGS__)
#define shmem_iget(...) SHMEM_G1_(SHMEM_G_RMA_, iget, __VA_ARGS__)
#define shmem_put_signal(...) SHMEM_G1_(SHMEM_G_RMA_, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) SHMEM_G1_(SHMEM_G_RMA_, put_signal_nbi, __VA_ARGS__)

#define shmem_atomic_fetch(...) SHMEM_G1_(SHMEM_G_AMO_EXT_, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEM_G1_(SHMEM_G_AMO_EXT_, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEM_G1_(SHMEM_G_AMO_EXT_, atomic_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEM_G1_(SHMEM_G_AMO_STD_, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEM_G1_(SHMEM_G_AMO_STD_, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEM_G1_(SHMEM_G_AMO_STD_, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEM_G1_(SHMEM_G_AMO_STD_, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEM_G1_(SHMEM_G_AMO_STD_, atomic_add, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEM_G1_(SHMEM_G_AMO_BIT_, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEM_G1_(SHMEM_G_AMO_BIT_, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEM_G1_(SHMEM_G_AMO_BIT_, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEM_G1_(SHMEM_G_AMO_BIT_, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEM_G1_(SHMEM_G_AMO_BIT_, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEM_G1_(SHMEM_G_AMO_BIT_, atomic_xor, __VA_ARGS__)
/* The _nbi fetching forms select on the target (the second argument). */
#define shmem_atomic_fetch_nbi(...) SHMEM_G2_(SHMEM_G_AMO_EXT_, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEM_G2_(SHMEM_G_AMO_EXT_, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEM_G2_(SHMEM_G_AMO_STD_, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEM_G2_(SHMEM_G_AMO_STD_, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEM_G2_(SHMEM_G_AMO_STD_, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEM_G2_(SHMEM_G_AMO_BIT_, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEM_G2_(SHMEM_G_AMO_BIT_, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEM_G2_(SHMEM_G_AMO_BIT_, atomic_fetch_xor_nbi, __VA_ARGS__)

#define shmem_wait_until(...) SHMEM_N1_(SHMEM_G_SYNC_, wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) SHMEM_N1_(SHMEM_G_SYNC_, wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) SHMEM_N1_(SHMEM_G_SYNC_, wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) SHMEM_N1_(SHMEM_G_SYNC_, wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) SHMEM_N1_(SHMEM_G_SYNC_, wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) SHMEM_N1_(SHMEM_G_SYNC_, wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) SHMEM_N1_(SHMEM_G_SYNC_, wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) SHMEM_N1_(SHMEM_G_SYNC_, test, __VA_ARGS__)
#define shmem_test_all(...) SHMEM_N1_(SHMEM_G_SYNC_, test_all, __VA_ARGS__)
#define shmem_test_any(...) SHMEM_N1_(SHMEM_G_SYNC_, test_any, __VA_ARGS__)
#define shmem_test_some(...) SHMEM_N1_(SHMEM_G_SYNC_, test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) SHMEM_N1_(SHMEM_G_SYNC_, test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) SHMEM_N1_(SHMEM_G_SYNC_, test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) SHMEM_N1_(SHMEM_G_SYNC_, test_some_vector, __VA_ARGS__)

/* shmem_sync(team) and the active-set shmem_sync(PE_start, logPE_stride,
 * PE_size, pSync), told apart by their argument count. */
#define SHMEM_SYNC_PICK_(a, b, c, d, name, ...) name
#define shmem_sync(...) SHMEM_SYNC_PICK_(__VA_ARGS__, shmem_sync, 0, 0, shmem_team_sync, 0)(__VA_ARGS__)

#define shmem_broadcast(...) SHMEM_N2_(SHMEM_G_RMA_, broadcast, __VA_ARGS__)
#define shmem_collect(...) SHMEM_N2_(SHMEM_G_RMA_, collect, __VA_ARGS__)
#define shmem_fcollect(...) SHMEM_N2_(SHMEM_G_RMA_, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) SHMEM_N2_(SHMEM_G_RMA_, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) SHMEM_N2_(SHMEM_G_RMA_, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) SHMEM_N2_(SHMEM_G_REDUCE_BIT_, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEM_N2_(SHMEM_G_REDUCE_BIT_, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEM_N2_(SHMEM_G_REDUCE_BIT_, xor_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEM_N2_(SHMEM_G_REDUCE_MINMAX_, min_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEM_N2_(SHMEM_G_REDUCE_MINMAX_, max_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEM_N2_(SHMEM_G_REDUCE_ARITH_, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEM_N2_(SHMEM_G_REDUCE_ARITH_, prod_reduce, __VA_ARGS__)

#elif defined(__cplusplus)

/* C++: one overload per type and form. */
inline int shmem_sync(shmem_team_t team) { return shmem_team_sync(team); }
#define SHMEM_CXX_RMA_(T, N, F)                                                                         \
    inline void shmem_put(T *d, const T *s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); }         \
    inline void shmem_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put(c, d, s, n, pe); } \
    inline void shmem_put_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); } \
    inline void shmem_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                      \
        shmem_ctx_##N##_put_nbi(c, d, s, n, pe);                                                        \
    }                                                                                                   \
    inline void shmem_get(T *d, const T *s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); }         \
    inline void shmem_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get(c, d, s, n, pe); } \
    inline void shmem_get_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); } \
    inline void shmem_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) {                      \
        shmem_ctx_##N##_get_nbi(c, d, s, n, pe);                                                        \
    }                                                                                                   \
    inline void shmem_p(T *d, T v, int pe) { shmem_##N##_p(d, v, pe); }                                 \
    inline void shmem_p(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); }            \
    inline T shmem_g(const T *s, int pe) { return shmem_##N##_g(s, pe); }                               \
    inline T shmem_g(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_g(c, s, pe); }          \
    inline void shmem_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {          \
        shmem_##N##_iput(d, s, dst, sst, n, pe);                                                        \
    }                                                                                                   \
    inline void shmem_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
        shmem_ctx_##N##_iput(c, d, s, dst, sst, n, pe);                                                 \
    }                                                                                                   \
    inline void shmem_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) {          \
        shmem_##N##_iget(d, s, dst, sst, n, pe);                                                        \
    }                                                                                                   \
    inline void shmem_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { \
        shmem_ctx_##N##_iget(c, d, s, dst, sst, n, pe);                                                 \
    }                                                                                                   \
    inline void shmem_put_signal(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { \
        shmem_##N##_put_signal(d, s, n, sig, v, op, pe);                                                \
    }                                                                                                   \
    inline void shmem_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, \
                                 int pe) {                                                              \
        shmem_ctx_##N##_put_signal(c, d, s, n, sig, v, op, pe);                                         \
    }                                                                                                   \
    inline void shmem_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int op, int pe) { \
        shmem_##N##_put_signal_nbi(d, s, n, sig, v, op, pe);                                            \
    }                                                                                                   \
    inline void shmem_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v,  \
                                     int op, int pe) {                                                  \
        shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sig, v, op, pe);                                     \
    }                                                                                                   \
    inline int shmem_broadcast(shmem_team_t t, T *d, const T *s, size_t n, int root) {                  \
        return shmem_##N##_broadcast(t, d, s, n, root);                                                 \
    }                                                                                                   \
    inline int shmem_collect(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_collect(t, d, s, n); } \
    inline int shmem_fcollect(shmem_team_t t, T *d, const T *s, size_t n) {                             \
        return shmem_##N##_fcollect(t, d, s, n);                                                        \
    }                                                                                                   \
    inline int shmem_alltoall(shmem_team_t t, T *d, const T *s, size_t n) {                             \
        return shmem_##N##_alltoall(t, d, s, n);                                                        \
    }                                                                                                   \
    inline int shmem_alltoalls(shmem_team_t t, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n) { \
        return shmem_##N##_alltoalls(t, d, s, dst, sst, n);                                             \
    }
SHMEM_G_RMA_(SHMEM_CXX_RMA_, 0)
#undef SHMEM_CXX_RMA_

#define SHMEM_CXX_AMO_STD_(T, N, F)                                                                     \
    inline T shmem_atomic_fetch_inc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); }       \
    inline T shmem_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe) { return shmem_ctx_##N##_atomic_fetch_inc(c, d, pe); } \
    inline void shmem_atomic_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }                      \
    inline void shmem_atomic_inc(shmem_ctx_t c, T *d, int pe) { shmem_ctx_##N##_atomic_inc(c, d, pe); } \
    inline T shmem_atomic_fetch_add(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); } \
    inline T shmem_atomic_fetch_add(shmem_ctx_t c, T *d, T v, int pe) {                                 \
        return shmem_ctx_##N##_atomic_fetch_add(c, d, v, pe);                                           \
    }                                                                                                   \
    inline void shmem_atomic_add(T *d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); }               \
    inline void shmem_atomic_add(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_add(c, d, v, pe); } \
    inline T shmem_atomic_compare_swap(T *d, T cond, T v, int pe) {                                     \
        return shmem_##N##_atomic_compare_swap(d, cond, v, pe);                                         \
    }                                                                                                   \
    inline T shmem_atomic_compare_swap(shmem_ctx_t c, T *d, T cond, T v, int pe) {                      \
        return shmem_ctx_##N##_atomic_compare_swap(c, d, cond, v, pe);                                  \
    }                                                                                                   \
    inline void shmem_atomic_fetch_inc_nbi(T *f, T *d, int pe) { shmem_##N##_atomic_fetch_inc_nbi(f, d, pe); } \
    inline void shmem_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe) {                         \
        shmem_ctx_##N##_atomic_fetch_inc_nbi(c, f, d, pe);                                              \
    }                                                                                                   \
    inline void shmem_atomic_fetch_add_nbi(T *f, T *d, T v, int pe) {                                   \
        shmem_##N##_atomic_fetch_add_nbi(f, d, v, pe);                                                  \
    }                                                                                                   \
    inline void shmem_atomic_fetch_add_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) {                    \
        shmem_ctx_##N##_atomic_fetch_add_nbi(c, f, d, v, pe);                                           \
    }                                                                                                   \
    inline void shmem_atomic_compare_swap_nbi(T *f, T *d, T cond, T v, int pe) {                        \
        shmem_##N##_atomic_compare_swap_nbi(f, d, cond, v, pe);                                         \
    }                                                                                                   \
    inline void shmem_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T cond, T v, int pe) {         \
        shmem_ctx_##N##_atomic_compare_swap_nbi(c, f, d, cond, v, pe);                                  \
    }
SHMEM_G_AMO_STD_(SHMEM_CXX_AMO_STD_, 0)
#undef SHMEM_CXX_AMO_STD_

#define SHMEM_CXX_AMO_EXT_(T, N, F)                                                                     \
    inline T shmem_atomic_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); }         \
    inline T shmem_atomic_fetch(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_atomic_fetch(c, s, pe); } \
    inline void shmem_atomic_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }               \
    inline void shmem_atomic_set(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_set(c, d, v, pe); } \
    inline T shmem_atomic_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); }         \
    inline T shmem_atomic_swap(shmem_ctx_t c, T *d, T v, int pe) { return shmem_ctx_##N##_atomic_swap(c, d, v, pe); } \
    inline void shmem_atomic_fetch_nbi(T *f, const T *s, int pe) { shmem_##N##_atomic_fetch_nbi(f, s, pe); } \
    inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe) {                       \
        shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe);                                                  \
    }                                                                                                   \
    inline void shmem_atomic_swap_nbi(T *f, T *d, T v, int pe) { shmem_##N##_atomic_swap_nbi(f, d, v, pe); } \
    inline void shmem_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) {                         \
        shmem_ctx_##N##_atomic_swap_nbi(c, f, d, v, pe);                                                \
    }
SHMEM_G_AMO_EXT_(SHMEM_CXX_AMO_EXT_, 0)
#undef SHMEM_CXX_AMO_EXT_

#define SHMEM_CXX_AMO_BIT1_(T, N, OP)                                                                   \
    inline T shmem_atomic_fetch_##OP(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_##OP(d, v, pe); } \
    inline T shmem_atomic_fetch_##OP(shmem_ctx_t c, T *d, T v, int pe) {                                \
        return shmem_ctx_##N##_atomic_fetch_##OP(c, d, v, pe);                                          \
    }                                                                                                   \
    inline void shmem_atomic_##OP(T *d, T v, int pe) { shmem_##N##_atomic_##OP(d, v, pe); }             \
    inline void shmem_atomic_##OP(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_##OP(c, d, v, pe); } \
    inline void shmem_atomic_fetch_##OP##_nbi(T *f, T *d, T v, int pe) {                                \
        shmem_##N##_atomic_fetch_##OP##_nbi(f, d, v, pe);                                               \
    }                                                                                                   \
    inline void shmem_atomic_fetch_##OP##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) {                 \
        shmem_ctx_##N##_atomic_fetch_##OP##_nbi(c, f, d, v, pe);                                        \
    }
#define SHMEM_CXX_AMO_BIT_(T, N, F)                                                                     \
    SHMEM_CXX_AMO_BIT1_(T, N, and) SHMEM_CXX_AMO_BIT1_(T, N, or) SHMEM_CXX_AMO_BIT1_(T, N, xor)
SHMEM_G_AMO_BIT_(SHMEM_CXX_AMO_BIT_, 0)
#undef SHMEM_CXX_AMO_BIT_
#undef SHMEM_CXX_AMO_BIT1_

#define SHMEM_CXX_SYNC_(T, N, F)                                                                        \
    inline void shmem_wait_until(T *v, int cmp, T x) { shmem_##N##_wait_until(v, cmp, x); }            \
    inline size_t shmem_wait_until_all(T *v, size_t n, const int *st, int cmp, T x) {                   \
        return shmem_##N##_wait_until_all(v, n, st, cmp, x);                                            \
    }                                                                                                   \
    inline size_t shmem_wait_until_any(T *v, size_t n, const int *st, int cmp, T x) {                   \
        return shmem_##N##_wait_until_any(v, n, st, cmp, x);                                            \
    }                                                                                                   \
    inline size_t shmem_wait_until_some(T *v, size_t n, size_t *idx, const int *st, int cmp, T x) {     \
        return shmem_##N##_wait_until_some(v, n, idx, st, cmp, x);                                      \
    }                                                                                                   \
    inline void shmem_wait_until_all_vector(T *v, size_t n, const int *st, int cmp, T *x) {             \
        shmem_##N##_wait_until_all_vector(v, n, st, cmp, x);                                            \
    }                                                                                                   \
    inline size_t shmem_wait_until_any_vector(T *v, size_t n, const int *st, int cmp, T *x) {           \
        return shmem_##N##_wait_until_any_vector(v, n, st, cmp, x);                                     \
    }                                                                                                   \
    inline size_t shmem_wait_until_some_vector(T *v, size_t n, size_t *idx, const int *st, int cmp, T *x) { \
        return shmem_##N##_wait_until_some_vector(v, n, idx, st, cmp, x);                               \
    }                                                                                                   \
    inline int shmem_test(T *v, int cmp, T x) { return shmem_##N##_test(v, cmp, x); }                   \
    inline int shmem_test_all(T *v, size_t n, const int *st, int cmp, T x) {                            \
        return shmem_##N##_test_all(v, n, st, cmp, x);                                                  \
    }                                                                                                   \
    inline size_t shmem_test_any(T *v, size_t n, const int *st, int cmp, T x) {                         \
        return shmem_##N##_test_any(v, n, st, cmp, x);                                                  \
    }                                                                                                   \
    inline size_t shmem_test_some(T *v, size_t n, size_t *idx, const int *st, int cmp, T x) {           \
        return shmem_##N##_test_some(v, n, idx, st, cmp, x);                                            \
    }                                                                                                   \
    inline int shmem_test_all_vector(T *v, size_t n, const int *st, int cmp, T *x) {                    \
        return shmem_##N##_test_all_vector(v, n, st, cmp, x);                                           \
    }                                                                                                   \
    inline size_t shmem_test_any_vector(T *v, size_t n, const int *st, int cmp, T *x) {                 \
        return shmem_##N##_test_any_vector(v, n, st, cmp, x);                                           \
    }                                                                                                   \
    inline size_t shmem_test_some_vector(T *v, size_t n, size_t *idx, const int *st, int cmp, T *x) {   \
        return shmem_##N##_test_some_vector(v, n, idx, st, cmp, x);                                     \
    }
SHMEM_G_SYNC_(SHMEM_CXX_SYNC_, 0)
#undef SHMEM_CXX_SYNC_

#define SHMEM_CXX_REDUCE1_(T, N, OP)                                                                    \
    inline int shmem_##OP##_reduce(shmem_team_t t, T *d, const T *s, size_t n) {                        \
        return shmem_##N##_##OP##_reduce(t, d, s, n);                                                   \
    }
#define SHMEM_CXX_REDUCE_BIT_(T, N, F)                                                                  \
    SHMEM_CXX_REDUCE1_(T, N, and) SHMEM_CXX_REDUCE1_(T, N, or) SHMEM_CXX_REDUCE1_(T, N, xor)
#define SHMEM_CXX_REDUCE_MINMAX_(T, N, F) SHMEM_CXX_REDUCE1_(T, N, min) SHMEM_CXX_REDUCE1_(T, N, max)
#define SHMEM_CXX_REDUCE_ARITH_(T, N, F) SHMEM_CXX_REDUCE1_(T, N, sum) SHMEM_CXX_REDUCE1_(T, N, prod)
SHMEM_G_REDUCE_BIT_(SHMEM_CXX_REDUCE_BIT_, 0)
SHMEM_G_REDUCE_MINMAX_(SHMEM_CXX_REDUCE_MINMAX_, 0)
SHMEM_G_REDUCE_ARITH_(SHMEM_CXX_REDUCE_ARITH_, 0)
#undef SHMEM_CXX_REDUCE_BIT_
#undef SHMEM_CXX_REDUCE_MINMAX_
#undef SHMEM_CXX_REDUCE_ARITH_
#undef SHMEM_CXX_REDUCE1_

#endif /* C11 / C++ */
#endif /* SHMEM_GENERIC_H */
