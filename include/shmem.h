/*
 * shmem.h - OpenSHMEM 1.5 on Sluice (libsluice-shmem).
 *
 * The standard's C interfaces: the typed functions, and the generic names
 * (shmem_put, shmem_atomic_fetch_add, shmem_sum_reduce, ...) as C11
 * _Generic selections in C and as overloads in C++.  What is implemented
 * and how it maps onto Sluice: docs/openshmem.md.  Extensions: shmemx.h.
 *
 * The typed families are declared from type lists (SHMEM_*_TYPES_ below):
 * one list entry (C type, TYPENAME) gives every function of the family for
 * that type, e.g. shmem_int_put, shmem_ctx_int_put, shmem_int_put_nbi.
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <complex.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version, constants ---------------------------------------------------- */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define SHMEM_MAX_NAME_LEN 256
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define SHMEM_VENDOR_STRING "Sluice OpenSHMEM"
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* Active-set collectives' work arrays.  The library needs pSync[0] and
 * pSync[1] (set to SHMEM_SYNC_VALUE before first use, left so on return);
 * the sizes are those of common implementations, so programs that size
 * their arrays from them port unchanged. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 64
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* shmem_malloc_with_hints: accepted, the same heap. */
#define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#define SHMEM_MALLOC_SIGNAL_REMOTE 2L

/* ---- contexts and teams ----------------------------------------------------- */
typedef struct sluice_shmem_ctx_ *shmem_ctx_t;
typedef struct sluice_shmem_team_ *shmem_team_t;
extern shmem_ctx_t SHMEM_CTX_DEFAULT;
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_SERIALIZED 0x1L
#define SHMEM_CTX_PRIVATE 0x2L
#define SHMEM_CTX_NOSTORE 0x4L
#define SHMEM_TEAM_NUM_CONTEXTS 0x1L

typedef struct {
    int num_contexts;
} shmem_team_config_t;

/* ---- library setup, query, exit ---------------------------------------------- */
void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
#if defined(__cplusplus)
[[noreturn]]
#elif defined(__GNUC__)
__attribute__((noreturn))
#endif
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);
void shmem_pcontrol(int level);
/* Deprecated names. */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);

/* ---- symmetric heap ------------------------------------------------------------ */
void *shmem_malloc(size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmalloc(size_t size);
void *shmemalign(size_t alignment, size_t size);
void *shrealloc(void *ptr, size_t size);
void shfree(void *ptr);

/* ---- contexts, teams ------------------------------------------------------------- */
int shmem_ctx_create(long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);
int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask, shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange, const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
int shmem_team_sync(shmem_team_t team);

/* ---- ordering, completion, synchronization ---------------------------------------- */
void shmem_quiet(void);
void shmem_fence(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_barrier_all(void);
void shmem_sync_all(void);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);

/* ---- type lists ------------------------------------------------------------------ */
/* X(C type, TYPENAME) */
#define SHMEM_RMA_TYPES_(X)                                                                             \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char) X(signed char, schar)    \
    X(short, short) X(int, int) X(long, long) X(long long, longlong) X(unsigned char, uchar)            \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)                             \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)                \
    X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)     \
    X(size_t, size) X(ptrdiff_t, ptrdiff)
#define SHMEM_AMO_STD_TYPES_(X)                                                                         \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint) X(unsigned long, ulong)      \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)            \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
#define SHMEM_AMO_EXT_TYPES_(X) SHMEM_AMO_STD_TYPES_(X) X(float, float) X(double, double)
#define SHMEM_AMO_BIT_TYPES_(X)                                                                         \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)    \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
#define SHMEM_SYNC_TYPES_(X)                                                                            \
    X(short, short) X(int, int) X(long, long) X(long long, longlong) X(unsigned short, ushort)          \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)    \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
/* Reductions: and/or/xor; min/max; sum/prod. */
#define SHMEM_REDUCE_BIT_TYPES_(X)                                                                      \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)     \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)                \
    X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)     \
    X(size_t, size)
#define SHMEM_REDUCE_MINMAX_TYPES_(X)                                                                   \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)                       \
    X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar) X(unsigned short, ushort)      \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)      \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)         \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float) X(double, double)           \
    X(long double, longdouble)
#define SHMEM_REDUCE_ARITH_TYPES_(X)                                                                    \
    SHMEM_REDUCE_MINMAX_TYPES_(X) X(float _Complex, complexf) X(double _Complex, complexd)
/* The deprecated active-set reductions (shmem_<TYPENAME>_<op>_to_all). */
#define SHMEM_TO_ALL_BIT_TYPES_(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_TO_ALL_MINMAX_TYPES_(X)                                                                   \
    SHMEM_TO_ALL_BIT_TYPES_(X) X(float, float) X(double, double) X(long double, longdouble)
#define SHMEM_TO_ALL_ARITH_TYPES_(X)                                                                    \
    SHMEM_TO_ALL_MINMAX_TYPES_(X) X(float _Complex, complexf) X(double _Complex, complexd)
/* Sized RMA: X(bits, element type) */
#define SHMEM_SIZED_(X) X(8, uint8_t) X(16, uint16_t) X(32, uint32_t) X(64, uint64_t) X(128, __uint128_t)

/* ---- RMA -------------------------------------------------------------------------- */
#define SHMEM_DECL_RMA_(T, N)                                                                           \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);                              \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);         \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);                          \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);     \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);                              \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);         \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);                          \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe);     \
    void shmem_##N##_p(T *dest, T value, int pe);                                                       \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                                  \
    T shmem_##N##_g(const T *source, int pe);                                                           \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                                      \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,  \
                              size_t nelems, int pe);                                                   \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,  \
                              size_t nelems, int pe);                                                   \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,            \
                                uint64_t signal, int sig_op, int pe);                                   \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,           \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);           \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr,        \
                                    uint64_t signal, int sig_op, int pe);                               \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,       \
                                        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEM_RMA_TYPES_(SHMEM_DECL_RMA_)
#undef SHMEM_DECL_RMA_

#define SHMEM_DECL_SIZED_(B, T)                                                                         \
    void shmem_put##B(void *dest, const void *source, size_t nelems, int pe);                           \
    void shmem_ctx_put##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);      \
    void shmem_put##B##_nbi(void *dest, const void *source, size_t nelems, int pe);                     \
    void shmem_ctx_put##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##B(void *dest, const void *source, size_t nelems, int pe);                           \
    void shmem_ctx_get##B(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);      \
    void shmem_get##B##_nbi(void *dest, const void *source, size_t nelems, int pe);                     \
    void shmem_ctx_get##B##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_iput##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iput##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                           size_t nelems, int pe);                                                      \
    void shmem_iget##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iget##B(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                           size_t nelems, int pe);                                                      \
    void shmem_put##B##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,       \
                               uint64_t signal, int sig_op, int pe);                                    \
    void shmem_ctx_put##B##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,      \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);            \
    void shmem_put##B##_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,   \
                                   uint64_t signal, int sig_op, int pe);                                \
    void shmem_ctx_put##B##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,  \
                                       uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEM_SIZED_(SHMEM_DECL_SIZED_)
#undef SHMEM_DECL_SIZED_
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                         int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,
                             int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                                 uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ---- atomics ------------------------------------------------------------------------ */
#define SHMEM_DECL_AMO_STD_(T, N)                                                                       \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                                    \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);                               \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                                       \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                                  \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                                           \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                                              \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);                         \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);                                \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe);           \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                                   \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe);              \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);                          \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);     \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe);               \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe);
SHMEM_AMO_STD_TYPES_(SHMEM_DECL_AMO_STD_)
#undef SHMEM_DECL_AMO_STD_
#define SHMEM_DECL_AMO_EXT_(T, N)                                                                       \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                                                \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);                           \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                                              \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);                         \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                                                \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);                           \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);                               \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe);          \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);                               \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEM_AMO_EXT_TYPES_(SHMEM_DECL_AMO_EXT_)
#undef SHMEM_DECL_AMO_EXT_
#define SHMEM_DECL_AMO_BIT_(T, N)                                                                       \
    T shmem_##N##_atomic_fetch_and(T *dest, T value, int pe);                                           \
    T shmem_ctx_##N##_atomic_fetch_and(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
    void shmem_##N##_atomic_and(T *dest, T value, int pe);                                              \
    void shmem_ctx_##N##_atomic_and(shmem_ctx_t ctx, T *dest, T value, int pe);                         \
    T shmem_##N##_atomic_fetch_or(T *dest, T value, int pe);                                            \
    T shmem_ctx_##N##_atomic_fetch_or(shmem_ctx_t ctx, T *dest, T value, int pe);                       \
    void shmem_##N##_atomic_or(T *dest, T value, int pe);                                               \
    void shmem_ctx_##N##_atomic_or(shmem_ctx_t ctx, T *dest, T value, int pe);                          \
    T shmem_##N##_atomic_fetch_xor(T *dest, T value, int pe);                                           \
    T shmem_ctx_##N##_atomic_fetch_xor(shmem_ctx_t ctx, T *dest, T value, int pe);                      \
    void shmem_##N##_atomic_xor(T *dest, T value, int pe);                                              \
    void shmem_ctx_##N##_atomic_xor(shmem_ctx_t ctx, T *dest, T value, int pe);                         \
    void shmem_##N##_atomic_fetch_and_nbi(T *fetch, T *dest, T value, int pe);                          \
    void shmem_ctx_##N##_atomic_fetch_and_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);     \
    void shmem_##N##_atomic_fetch_or_nbi(T *fetch, T *dest, T value, int pe);                           \
    void shmem_ctx_##N##_atomic_fetch_or_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);      \
    void shmem_##N##_atomic_fetch_xor_nbi(T *fetch, T *dest, T value, int pe);                          \
    void shmem_ctx_##N##_atomic_fetch_xor_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEM_AMO_BIT_TYPES_(SHMEM_DECL_AMO_BIT_)
#undef SHMEM_DECL_AMO_BIT_
/* Deprecated atomic names (OpenSHMEM 1.3). */
#define SHMEM_DEPR_AMO_TYPES_(X) X(int, int) X(long, long) X(long long, longlong)
#define SHMEM_DECL_AMO_DEPR_(T, N)                                                                      \
    T shmem_##N##_finc(T *dest, int pe);                                                                \
    void shmem_##N##_inc(T *dest, int pe);                                                              \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                                       \
    void shmem_##N##_add(T *dest, T value, int pe);                                                     \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);
SHMEM_DEPR_AMO_TYPES_(SHMEM_DECL_AMO_DEPR_)
#undef SHMEM_DECL_AMO_DEPR_
#define SHMEM_DECL_AMO_DEPR_EXT_(T, N)                                                                  \
    T shmem_##N##_fetch(const T *source, int pe);                                                       \
    void shmem_##N##_set(T *dest, T value, int pe);                                                     \
    T shmem_##N##_swap(T *dest, T value, int pe);
SHMEM_DEPR_AMO_TYPES_(SHMEM_DECL_AMO_DEPR_EXT_)
SHMEM_DECL_AMO_DEPR_EXT_(float, float)
SHMEM_DECL_AMO_DEPR_EXT_(double, double)
#undef SHMEM_DECL_AMO_DEPR_EXT_
long shmem_swap(long *dest, long value, int pe);

/* ---- point-to-point synchronization ---------------------------------------------------- */
#define SHMEM_DECL_SYNC_(T, N)                                                                          \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                                         \
    size_t shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, const int *status,     \
                                       int cmp, T cmp_value);                                           \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp,         \
                                           T *cmp_values);                                              \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp,       \
                                             T *cmp_values);                                            \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices,                 \
                                              const int *status, int cmp, T *cmp_values);               \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                                                \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);         \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value);      \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp,  \
                                 T cmp_value);                                                          \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp,             \
                                       T *cmp_values);                                                  \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status,    \
                                        int cmp, T *cmp_values);                                        \
    void shmem_##N##_wait(T *ivar, T cmp_value);
SHMEM_SYNC_TYPES_(SHMEM_DECL_SYNC_)
#undef SHMEM_DECL_SYNC_
void shmem_wait(long *ivar, long cmp_value);

/* ---- locks ------------------------------------------------------------------------------ */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ---- collectives --------------------------------------------------------------------------- */
#define SHMEM_DECL_COLL_(T, N)                                                                          \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, int PE_root); \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems);                \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems);               \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems);               \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, \
                              size_t nelems);
SHMEM_RMA_TYPES_(SHMEM_DECL_COLL_)
#undef SHMEM_DECL_COLL_
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems);
/* Active-set forms (deprecated in 1.5): nelems of 32- or 64-bit elements. */
#define SHMEM_DECL_ACTIVE_(B)                                                                           \
    void shmem_broadcast##B(void *dest, const void *source, size_t nelems, int PE_root, int PE_start,   \
                            int logPE_stride, int PE_size, long *pSync);                                \
    void shmem_collect##B(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                          int PE_size, long *pSync);                                                    \
    void shmem_fcollect##B(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                           int PE_size, long *pSync);                                                   \
    void shmem_alltoall##B(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, \
                           int PE_size, long *pSync);                                                   \
    void shmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                            int PE_start, int logPE_stride, int PE_size, long *pSync);
SHMEM_DECL_ACTIVE_(32)
SHMEM_DECL_ACTIVE_(64)
#undef SHMEM_DECL_ACTIVE_

#define SHMEM_DECL_REDUCE_(T, N, OP)                                                                    \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEM_DECL_REDUCE_BIT_(T, N)                                                                    \
    SHMEM_DECL_REDUCE_(T, N, and) SHMEM_DECL_REDUCE_(T, N, or) SHMEM_DECL_REDUCE_(T, N, xor)
#define SHMEM_DECL_REDUCE_MINMAX_(T, N) SHMEM_DECL_REDUCE_(T, N, min) SHMEM_DECL_REDUCE_(T, N, max)
#define SHMEM_DECL_REDUCE_ARITH_(T, N) SHMEM_DECL_REDUCE_(T, N, sum) SHMEM_DECL_REDUCE_(T, N, prod)
SHMEM_REDUCE_BIT_TYPES_(SHMEM_DECL_REDUCE_BIT_)
SHMEM_REDUCE_MINMAX_TYPES_(SHMEM_DECL_REDUCE_MINMAX_)
SHMEM_REDUCE_ARITH_TYPES_(SHMEM_DECL_REDUCE_ARITH_)
#undef SHMEM_DECL_REDUCE_BIT_
#undef SHMEM_DECL_REDUCE_MINMAX_
#undef SHMEM_DECL_REDUCE_ARITH_
#undef SHMEM_DECL_REDUCE_
#define SHMEM_DECL_TO_ALL_(T, N, OP)                                                                    \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, \
                                   int PE_size, T *pWrk, long *pSync);
#define SHMEM_DECL_TO_ALL_BIT_(T, N)                                                                    \
    SHMEM_DECL_TO_ALL_(T, N, and) SHMEM_DECL_TO_ALL_(T, N, or) SHMEM_DECL_TO_ALL_(T, N, xor)
#define SHMEM_DECL_TO_ALL_MINMAX_(T, N) SHMEM_DECL_TO_ALL_(T, N, min) SHMEM_DECL_TO_ALL_(T, N, max)
#define SHMEM_DECL_TO_ALL_ARITH_(T, N) SHMEM_DECL_TO_ALL_(T, N, sum) SHMEM_DECL_TO_ALL_(T, N, prod)
SHMEM_TO_ALL_BIT_TYPES_(SHMEM_DECL_TO_ALL_BIT_)
SHMEM_TO_ALL_MINMAX_TYPES_(SHMEM_DECL_TO_ALL_MINMAX_)
SHMEM_TO_ALL_ARITH_TYPES_(SHMEM_DECL_TO_ALL_ARITH_)
#undef SHMEM_DECL_TO_ALL_BIT_
#undef SHMEM_DECL_TO_ALL_MINMAX_
#undef SHMEM_DECL_TO_ALL_ARITH_
#undef SHMEM_DECL_TO_ALL_

/* ---- same-host heap RMA and atomics inlined (internal) ------------------------------------ */
/* A Put or Get of the default context between this PE's heap and a PE whose
 * heap is mapped here (smp), and a 64-bit fetch-add or add there, run in
 * the caller: shmem_init publishes below where each PE's heap is mapped
 * here (null for a PE that is not), so one bounds test finds the peer's
 * bytes, and the copy is sluice.h's (the CPU atomic the library's atomic
 * domain uses, where it uses one).  Anything else (another PE, static data, a bad argument, before
 * shmem_init or after shmem_finalize) calls the library, which checks it
 * all and reports.  SLUICE_NO_INLINE_RMA turns this off, as in sluice.h.
 * The names ending in '_' are not part of the API. */
struct sluice_shmem_fast_ {
    char *heap;               /* this PE's heap */
    size_t heap_size;
    char *const *heap_view;   /* per PE: its heap as mapped here, or null */
    char *const *amo_view;    /* per PE: the same where the 64-bit atomic
                                 domain uses CPU atomics on it, else null */
    int npes;                 /* 0 outside shmem_init .. shmem_finalize */
};
extern struct sluice_shmem_fast_ sluice_shmem_fast_;

#ifdef __cplusplus
} /* extern "C" */
#endif

#if !defined(SLUICE_NO_INLINE_RMA) && !defined(SLUICE_SHMEM_LIBRARY_) && (defined(__GNUC__) || defined(__clang__))
#include <sluice.h>
/* Where `n` bytes at `addr` of this PE's heap are mapped here for PE `pe`,
 * by `views` (heap_view or amo_view), or null. */
static inline char *sluice_shmem_view_(char *const *views, const void *addr, size_t n, int pe) {
    const struct sluice_shmem_fast_ *f = &sluice_shmem_fast_;
    const size_t off = (size_t)((const char *)addr - f->heap);
    char *v;
    if ((unsigned)pe >= (unsigned)f->npes || off > f->heap_size || n > f->heap_size - off || !(v = views[pe]))
        return 0;
    return v + off;
}
static inline void sluice_shmem_put_(void *dest, const void *src, size_t n, int pe) {
    char *view = sluice_shmem_view_(sluice_shmem_fast_.heap_view, dest, n, pe);
    if (view && n) sluice_copy_(view, src, n);
    else shmem_putmem(dest, src, n, pe);
}
static inline void sluice_shmem_get_(void *dest, const void *src, size_t n, int pe) {
    const char *view = sluice_shmem_view_(sluice_shmem_fast_.heap_view, src, n, pe);
    if (view && n) sluice_copy_(dest, view, n);
    else shmem_getmem(dest, src, n, pe);
}
#define shmem_putmem(dest, source, nelems, pe) sluice_shmem_put_(dest, source, nelems, pe)
#define shmem_getmem(dest, source, nelems, pe) sluice_shmem_get_(dest, source, nelems, pe)
/* The typed blocking Put, Get, p and g of the default context. */
#define SHMEM_INLINE_RMA_(T, N)                                                                         \
    static inline void sluice_shmem_##N##_put_(T *d, const T *s, size_t n, int pe) {                    \
        char *view = sluice_shmem_view_(sluice_shmem_fast_.heap_view, d, n * sizeof(T), pe);            \
        if (view && n) sluice_copy_(view, s, n * sizeof(T));                                            \
        else shmem_##N##_put(d, s, n, pe);                                                              \
    }                                                                                                   \
    static inline void sluice_shmem_##N##_get_(T *d, const T *s, size_t n, int pe) {                    \
        const char *view = sluice_shmem_view_(sluice_shmem_fast_.heap_view, s, n * sizeof(T), pe);      \
        if (view && n) sluice_copy_(d, view, n * sizeof(T));                                            \
        else shmem_##N##_get(d, s, n, pe);                                                              \
    }                                                                                                   \
    static inline void sluice_shmem_##N##_p_(T *d, T v, int pe) {                                       \
        char *view = sluice_shmem_view_(sluice_shmem_fast_.heap_view, d, sizeof(T), pe);                \
        if (view) memcpy(view, &v, sizeof(T));                                                          \
        else shmem_##N##_p(d, v, pe);                                                                   \
    }                                                                                                   \
    static inline T sluice_shmem_##N##_g_(const T *s, int pe) {                                         \
        T v;                                                                                            \
        const char *view = sluice_shmem_view_(sluice_shmem_fast_.heap_view, s, sizeof(T), pe);          \
        if (!view) return shmem_##N##_g(s, pe);                                                         \
        memcpy(&v, view, sizeof(T));                                                                    \
        return v;                                                                                       \
    }
SHMEM_INLINE_RMA_(long, long)
SHMEM_INLINE_RMA_(int, int)
SHMEM_INLINE_RMA_(double, double)
SHMEM_INLINE_RMA_(float, float)
SHMEM_INLINE_RMA_(char, char)
SHMEM_INLINE_RMA_(long long, longlong)
SHMEM_INLINE_RMA_(unsigned long, ulong)
SHMEM_INLINE_RMA_(uint64_t, uint64)
#undef SHMEM_INLINE_RMA_
#define shmem_long_put(d, s, n, pe) sluice_shmem_long_put_(d, s, n, pe)
#define shmem_long_get(d, s, n, pe) sluice_shmem_long_get_(d, s, n, pe)
#define shmem_long_p(d, v, pe) sluice_shmem_long_p_(d, v, pe)
#define shmem_long_g(s, pe) sluice_shmem_long_g_(s, pe)
#define shmem_int_put(d, s, n, pe) sluice_shmem_int_put_(d, s, n, pe)
#define shmem_int_get(d, s, n, pe) sluice_shmem_int_get_(d, s, n, pe)
#define shmem_int_p(d, v, pe) sluice_shmem_int_p_(d, v, pe)
#define shmem_int_g(s, pe) sluice_shmem_int_g_(s, pe)
#define shmem_double_put(d, s, n, pe) sluice_shmem_double_put_(d, s, n, pe)
#define shmem_double_get(d, s, n, pe) sluice_shmem_double_get_(d, s, n, pe)
#define shmem_double_p(d, v, pe) sluice_shmem_double_p_(d, v, pe)
#define shmem_double_g(s, pe) sluice_shmem_double_g_(s, pe)
#define shmem_float_put(d, s, n, pe) sluice_shmem_float_put_(d, s, n, pe)
#define shmem_float_get(d, s, n, pe) sluice_shmem_float_get_(d, s, n, pe)
#define shmem_float_p(d, v, pe) sluice_shmem_float_p_(d, v, pe)
#define shmem_float_g(s, pe) sluice_shmem_float_g_(s, pe)
#define shmem_char_put(d, s, n, pe) sluice_shmem_char_put_(d, s, n, pe)
#define shmem_char_get(d, s, n, pe) sluice_shmem_char_get_(d, s, n, pe)
#define shmem_longlong_put(d, s, n, pe) sluice_shmem_longlong_put_(d, s, n, pe)
#define shmem_longlong_get(d, s, n, pe) sluice_shmem_longlong_get_(d, s, n, pe)
#define shmem_longlong_p(d, v, pe) sluice_shmem_longlong_p_(d, v, pe)
#define shmem_longlong_g(s, pe) sluice_shmem_longlong_g_(s, pe)
#define shmem_ulong_put(d, s, n, pe) sluice_shmem_ulong_put_(d, s, n, pe)
#define shmem_ulong_get(d, s, n, pe) sluice_shmem_ulong_get_(d, s, n, pe)
#define shmem_uint64_put(d, s, n, pe) sluice_shmem_uint64_put_(d, s, n, pe)
#define shmem_uint64_get(d, s, n, pe) sluice_shmem_uint64_get_(d, s, n, pe)
/* 64-bit fetch-add and add of the default context: the CPU atomic the
 * library's atomic domain uses on that PE, else the library. */
static inline long *sluice_shmem_amo_(long *d, int pe) {
    return ((uintptr_t)d & 7) ? 0 : (long *)(void *)sluice_shmem_view_(sluice_shmem_fast_.amo_view, d, sizeof(long), pe);
}
static inline long sluice_shmem_long_atomic_fetch_add_(long *d, long v, int pe) {
    long *w = sluice_shmem_amo_(d, pe);
    return w ? __atomic_fetch_add(w, v, __ATOMIC_RELAXED) : shmem_long_atomic_fetch_add(d, v, pe);
}
static inline void sluice_shmem_long_atomic_add_(long *d, long v, int pe) {
    long *w = sluice_shmem_amo_(d, pe);
    if (w) __atomic_fetch_add(w, v, __ATOMIC_RELAXED);
    else shmem_long_atomic_add(d, v, pe);
}
#define shmem_long_atomic_fetch_add(d, v, pe) sluice_shmem_long_atomic_fetch_add_(d, v, pe)
#define shmem_long_atomic_add(d, v, pe) sluice_shmem_long_atomic_add_(d, v, pe)
#endif

/* ---- generic names ---------------------------------------------------------------------------- */
#include "shmem_generic.h"

#endif /* SHMEM_H */
