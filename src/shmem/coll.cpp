// src/shmem/coll.cpp - collectives.  The team forms are Sluice's team
// collectives.  The deprecated active-set forms (PE_start, logPE_stride,
// PE_size, pSync) run among their members only, where no Sluice team
// exists: a barrier on pSync (arrivals counted on the first member's
// pSync[0], each member released through its own pSync[1]), then Gets of
// the other members' symmetric sources, then the barrier again.
#include "sluice_config.h"

#include "shmem/shmem_impl.hpp"

#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

namespace sluice::shmem {
namespace {

void coll_check(sluice_status_t s, const char *call) { check_status(s, call); }

// ---- reductions -----------------------------------------------------------------
enum class Op { sum, prod, min, max, band, bor, bxor };

template <class T, Op O>
void combine(void *inout, const void *in, std::size_t n, void *) {
    T *a = static_cast<T *>(inout);
    const T *b = static_cast<const T *>(in);
    for (std::size_t i = 0; i < n; ++i) {
        if constexpr (O == Op::sum) a[i] = a[i] + b[i];
        else if constexpr (O == Op::prod) a[i] = a[i] * b[i];
        else if constexpr (O == Op::min) a[i] = b[i] < a[i] ? b[i] : a[i];
        else if constexpr (O == Op::max) a[i] = b[i] > a[i] ? b[i] : a[i];
        else if constexpr (O == Op::band) a[i] = a[i] & b[i];
        else if constexpr (O == Op::bor) a[i] = a[i] | b[i];
        else a[i] = a[i] ^ b[i];
    }
}

template <class T>
constexpr sluice_dt_t reduce_dt() {
    if constexpr (std::is_same_v<T, float>) return SLUICE_DT_FLT;
    else if constexpr (std::is_same_v<T, double>) return SLUICE_DT_DBL;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 4) return std::is_signed_v<T> ? SLUICE_DT_I32 : SLUICE_DT_U32;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 8) return std::is_signed_v<T> ? SLUICE_DT_I64 : SLUICE_DT_U64;
    else return SLUICE_DT_USER;
}

constexpr sluice_reduce_op_t sluice_op(Op o) {
    switch (o) {
    case Op::sum: return SLUICE_REDUCE_SUM;
    case Op::prod: return SLUICE_REDUCE_PROD;
    case Op::min: return SLUICE_REDUCE_MIN;
    case Op::max: return SLUICE_REDUCE_MAX;
    case Op::band: return SLUICE_REDUCE_AND;
    case Op::bor: return SLUICE_REDUCE_OR;
    default: return SLUICE_REDUCE_XOR;
    }
}

template <class T, Op O>
int team_reduce(shmem_team_t team, T *dest, const T *src, std::size_t n, const char *call) {
    const sluice_team_t t = team_of(team, call);
    if (n == 0) return 0;
    constexpr sluice_dt_t dt = reduce_dt<T>();
    if constexpr (dt == SLUICE_DT_USER)
        coll_check(sluice_coll_reduce_all(t, dest, src, dt, sizeof(T), n, SLUICE_REDUCE_USER, combine<T, O>, nullptr),
                   call);
    else
        coll_check(sluice_coll_reduce_all(t, dest, src, dt, 0, n, sluice_op(O), nullptr, nullptr), call);
    return 0;
}

// ---- active sets -------------------------------------------------------------------
struct ActiveSet {
    int start, stride, size;
    int pe(int i) const { return start + i * stride; }
    int index_of(int p) const { return (p - start) / stride; }
};

ActiveSet active_set(int start, int log_stride, int size, const long *psync, const char *call) {
    need_init(call);
    if (log_stride < 0 || log_stride > 30 || size < 1 || start < 0)
        fail(call, "pass PE_start >= 0, 0 <= logPE_stride <= 30 and PE_size >= 1",
             "PE_start %d, logPE_stride %d, PE_size %d", start, log_stride, size);
    const ActiveSet s{start, 1 << log_stride, size};
    const long last = static_cast<long>(start) + static_cast<long>(s.stride) * (size - 1);
    if (last >= state.npes)
        fail(call, "keep every member of the active set below shmem_n_pes()",
             "the set's last PE would be %ld of %d", last, state.npes);
    const int rel = state.me - start;
    if (rel < 0 || rel % s.stride || rel / s.stride >= size)
        fail(call, "call an active-set collective on the set's members only", "PE %d is not in the set", state.me);
    if (!psync) fail(call, "pass a symmetric pSync array", "null pSync");
    return s;
}

void set_barrier(const ActiveSet &s, long *psync, const char *call) {
    if (s.size == 1) return;
    const std::uint64_t arrivals = static_cast<std::uint64_t>(s.size - 1);
    if (state.me == s.start) {
        wait_for([&] { return amo(SLUICE_DT_U64, &psync[0], state.me, SLUICE_OP_GET, 0, 0, call) == arrivals; });
        (void)amo(SLUICE_DT_U64, &psync[0], state.me, SLUICE_OP_SET, static_cast<std::uint64_t>(SHMEM_SYNC_VALUE), 0,
                  call);
        for (int i = 1; i < s.size; ++i) (void)amo(SLUICE_DT_U64, &psync[1], s.pe(i), SLUICE_OP_SET, 1, 0, call);
    } else {
        (void)amo(SLUICE_DT_U64, &psync[0], s.start, SLUICE_OP_ADD, 1, 0, call);
        wait_for([&] { return amo(SLUICE_DT_U64, &psync[1], state.me, SLUICE_OP_GET, 0, 0, call) == 1; });
        (void)amo(SLUICE_DT_U64, &psync[1], state.me, SLUICE_OP_SET, static_cast<std::uint64_t>(SHMEM_SYNC_VALUE), 0,
                  call);
    }
}

void get_from(void *dest, const void *src, std::size_t n, int pe, const char *call) {
    get_bytes(SHMEM_CTX_DEFAULT, dest, src, n, pe, call);
}

template <class T, Op O>
void to_all(T *dest, const T *src, int nreduce, int start, int log_stride, int size, long *psync, const char *call) {
    const ActiveSet s = active_set(start, log_stride, size, psync, call);
    if (nreduce < 0) fail(call, "pass nreduce >= 0", "nreduce %d", nreduce);
    const auto n = static_cast<std::size_t>(nreduce);
    std::vector<T> acc(src, src + n), other(n);
    quiet();
    set_barrier(s, psync, call);
    for (int i = 0; i < s.size; ++i) {
        if (s.pe(i) == state.me || n == 0) continue;
        get_from(other.data(), src, n * sizeof(T), s.pe(i), call);
        combine<T, O>(acc.data(), other.data(), n, nullptr);
    }
    set_barrier(s, psync, call);  // every member has read this one's source
    if (n) std::memcpy(dest, acc.data(), n * sizeof(T));
}

void active_broadcast(void *dest, const void *src, std::size_t bytes, int root, int start, int log_stride, int size,
                      long *psync, const char *call) {
    const ActiveSet s = active_set(start, log_stride, size, psync, call);
    if (root < 0 || root >= s.size) fail(call, "pass PE_root as an index in the active set", "PE_root %d of %d", root, s.size);
    quiet();
    set_barrier(s, psync, call);
    if (state.me != s.pe(root) && bytes) get_from(dest, src, bytes, s.pe(root), call);
    set_barrier(s, psync, call);
}

// collect: each member's count is read from its pSync[2] (stored before the barrier).
void active_collect(void *dest, const void *src, std::size_t elem, std::size_t n, bool fixed, int start,
                    int log_stride, int size, long *psync, const char *call) {
    const ActiveSet s = active_set(start, log_stride, size, psync, call);
    quiet();
    if (!fixed) __atomic_store_n(&psync[2], static_cast<long>(n), __ATOMIC_SEQ_CST);
    set_barrier(s, psync, call);
    char *d = static_cast<char *>(dest);
    std::size_t at = 0;
    for (int i = 0; i < s.size; ++i) {
        const int p = s.pe(i);
        std::size_t count = n;
        if (!fixed && p != state.me) {
            long c = 0;
            get_from(&c, &psync[2], sizeof c, p, call);
            count = static_cast<std::size_t>(c);
        }
        if (count) {
            if (p == state.me) std::memmove(d + at, src, count * elem);
            else get_from(d + at, src, count * elem, p, call);
        }
        at += count * elem;
    }
    set_barrier(s, psync, call);
    if (!fixed) __atomic_store_n(&psync[2], SHMEM_SYNC_VALUE, __ATOMIC_SEQ_CST);
}

void active_alltoalls(void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst, std::size_t elem,
                      std::size_t n, int start, int log_stride, int size, long *psync, const char *call) {
    const ActiveSet s = active_set(start, log_stride, size, psync, call);
    quiet();
    set_barrier(s, psync, call);
    const int me = s.index_of(state.me);
    char *d = static_cast<char *>(dest);
    const char *sp = static_cast<const char *>(src);
    const auto step_d = dst * static_cast<std::ptrdiff_t>(elem), step_s = sst * static_cast<std::ptrdiff_t>(elem);
    for (int i = 0; i < s.size && n; ++i)
        iget_bytes(SHMEM_CTX_DEFAULT, d + static_cast<std::ptrdiff_t>(i) * static_cast<std::ptrdiff_t>(n) * step_d,
                   sp + static_cast<std::ptrdiff_t>(me) * static_cast<std::ptrdiff_t>(n) * step_s, dst, sst, elem, n,
                   s.pe(i), call);
    set_barrier(s, psync, call);
}

// Team collect: every member's count first, then the blocks gathered at
// the largest size and packed.
int team_collect(shmem_team_t team, void *dest, const void *src, std::size_t bytes, const char *call) {
    const sluice_team_t t = team_of(team, call);
    const std::size_t n = sluice_team_size(t);
    std::vector<std::uint64_t> counts(n);
    const std::uint64_t mine = bytes;
    coll_check(sluice_coll_allgather(t, counts.data(), &mine, sizeof mine), call);
    std::uint64_t most = 0;
    for (std::uint64_t c : counts) most = c > most ? c : most;
    if (most == 0) return 0;
    std::vector<char> padded(most), all(most * n);
    std::memcpy(padded.data(), src, bytes);
    coll_check(sluice_coll_allgather(t, all.data(), padded.data(), most), call);
    char *d = static_cast<char *>(dest);
    for (std::size_t r = 0; r < n; ++r) {
        std::memcpy(d, all.data() + r * most, counts[r]);
        d += counts[r];
    }
    return 0;
}

int team_alltoalls(shmem_team_t team, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
                   std::size_t elem, std::size_t n, const char *call) {
    const sluice_team_t t = team_of(team, call);
    const std::size_t npes = sluice_team_size(t);
    if (n == 0) return 0;
    std::vector<char> packed(npes * n * elem), out(npes * n * elem);
    const char *s = static_cast<const char *>(src);
    char *d = static_cast<char *>(dest);
    for (std::size_t k = 0; k < npes * n; ++k)
        std::memcpy(packed.data() + k * elem, s + static_cast<std::ptrdiff_t>(k) * sst * static_cast<std::ptrdiff_t>(elem), elem);
    coll_check(sluice_coll_alltoall(t, out.data(), packed.data(), n * elem), call);
    for (std::size_t k = 0; k < npes * n; ++k)
        std::memcpy(d + static_cast<std::ptrdiff_t>(k) * dst * static_cast<std::ptrdiff_t>(elem), out.data() + k * elem, elem);
    return 0;
}

} // namespace
} // namespace sluice::shmem

using namespace sluice::shmem;

extern "C" {

void shmem_barrier(int start, int log_stride, int size, long *psync) {
    const ActiveSet s = active_set(start, log_stride, size, psync, "shmem_barrier");
    quiet();
    set_barrier(s, psync, "shmem_barrier");
}

void shmem_sync(int start, int log_stride, int size, long *psync) {
    const ActiveSet s = active_set(start, log_stride, size, psync, "shmem_sync");
    set_barrier(s, psync, "shmem_sync");
}

#define COLL_(T, N)                                                                                     \
    int shmem_##N##_broadcast(shmem_team_t team, T *d, const T *s, size_t n, int root) {                \
        const sluice_team_t t = team_of(team, "shmem_" #N "_broadcast");                                \
        if (root < 0 || root >= static_cast<int>(sluice_team_size(t)))                                   \
            fail("shmem_" #N "_broadcast", "pass PE_root as a PE of the team", "PE_root %d", root);      \
        if (n) coll_check(sluice_coll_broadcast(t, static_cast<sluice_rank_t>(root), d, s, n * sizeof(T)), \
                          "shmem_" #N "_broadcast");                                                    \
        return 0;                                                                                       \
    }                                                                                                   \
    int shmem_##N##_collect(shmem_team_t team, T *d, const T *s, size_t n) {                            \
        return team_collect(team, d, s, n * sizeof(T), "shmem_" #N "_collect");                         \
    }                                                                                                   \
    int shmem_##N##_fcollect(shmem_team_t team, T *d, const T *s, size_t n) {                           \
        const sluice_team_t t = team_of(team, "shmem_" #N "_fcollect");                                 \
        if (n) coll_check(sluice_coll_allgather(t, d, s, n * sizeof(T)), "shmem_" #N "_fcollect");      \
        return 0;                                                                                       \
    }                                                                                                   \
    int shmem_##N##_alltoall(shmem_team_t team, T *d, const T *s, size_t n) {                           \
        const sluice_team_t t = team_of(team, "shmem_" #N "_alltoall");                                 \
        if (n) coll_check(sluice_coll_alltoall(t, d, s, n * sizeof(T)), "shmem_" #N "_alltoall");       \
        return 0;                                                                                       \
    }                                                                                                   \
    int shmem_##N##_alltoalls(shmem_team_t team, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n) { \
        return team_alltoalls(team, d, s, dst, sst, sizeof(T), n, "shmem_" #N "_alltoalls");            \
    }
SHMEM_RMA_TYPES_(COLL_)
#undef COLL_

int shmem_broadcastmem(shmem_team_t team, void *d, const void *s, size_t n, int root) {
    return shmem_uchar_broadcast(team, static_cast<unsigned char *>(d), static_cast<const unsigned char *>(s), n, root);
}
int shmem_collectmem(shmem_team_t team, void *d, const void *s, size_t n) {
    return team_collect(team, d, s, n, "shmem_collectmem");
}
int shmem_fcollectmem(shmem_team_t team, void *d, const void *s, size_t n) {
    return shmem_uchar_fcollect(team, static_cast<unsigned char *>(d), static_cast<const unsigned char *>(s), n);
}
int shmem_alltoallmem(shmem_team_t team, void *d, const void *s, size_t n) {
    return shmem_uchar_alltoall(team, static_cast<unsigned char *>(d), static_cast<const unsigned char *>(s), n);
}
int shmem_alltoallsmem(shmem_team_t team, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n) {
    return team_alltoalls(team, d, s, dst, sst, 1, n, "shmem_alltoallsmem");
}

#define ACTIVE_(B)                                                                                      \
    void shmem_broadcast##B(void *d, const void *s, size_t n, int root, int start, int ls, int size, long *ps) { \
        active_broadcast(d, s, n * (B / 8), root, start, ls, size, ps, "shmem_broadcast" #B);           \
    }                                                                                                   \
    void shmem_collect##B(void *d, const void *s, size_t n, int start, int ls, int size, long *ps) {    \
        active_collect(d, s, B / 8, n, false, start, ls, size, ps, "shmem_collect" #B);                 \
    }                                                                                                   \
    void shmem_fcollect##B(void *d, const void *s, size_t n, int start, int ls, int size, long *ps) {   \
        active_collect(d, s, B / 8, n, true, start, ls, size, ps, "shmem_fcollect" #B);                 \
    }                                                                                                   \
    void shmem_alltoall##B(void *d, const void *s, size_t n, int start, int ls, int size, long *ps) {   \
        active_alltoalls(d, s, 1, 1, B / 8, n, start, ls, size, ps, "shmem_alltoall" #B);               \
    }                                                                                                   \
    void shmem_alltoalls##B(void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int start, int ls, \
                            int size, long *ps) {                                                       \
        active_alltoalls(d, s, dst, sst, B / 8, n, start, ls, size, ps, "shmem_alltoalls" #B);          \
    }
ACTIVE_(32)
ACTIVE_(64)
#undef ACTIVE_

#define REDUCE_(T, N, OP, O)                                                                            \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *d, const T *s, size_t n) {                      \
        return team_reduce<T, Op::O>(team, d, s, n, "shmem_" #N "_" #OP "_reduce");                     \
    }
#define REDUCE_BIT_(T, N) REDUCE_(T, N, and, band) REDUCE_(T, N, or, bor) REDUCE_(T, N, xor, bxor)
#define REDUCE_MINMAX_(T, N) REDUCE_(T, N, min, min) REDUCE_(T, N, max, max)
#define REDUCE_ARITH_(T, N) REDUCE_(T, N, sum, sum) REDUCE_(T, N, prod, prod)
SHMEM_REDUCE_BIT_TYPES_(REDUCE_BIT_)
SHMEM_REDUCE_MINMAX_TYPES_(REDUCE_MINMAX_)
SHMEM_REDUCE_ARITH_TYPES_(REDUCE_ARITH_)
#undef REDUCE_BIT_
#undef REDUCE_MINMAX_
#undef REDUCE_ARITH_
#undef REDUCE_

#define TO_ALL_(T, N, OP, O)                                                                            \
    void shmem_##N##_##OP##_to_all(T *d, const T *s, int n, int start, int ls, int size, T *, long *ps) { \
        to_all<T, Op::O>(d, s, n, start, ls, size, ps, "shmem_" #N "_" #OP "_to_all");                 \
    }
#define TO_ALL_BIT_(T, N) TO_ALL_(T, N, and, band) TO_ALL_(T, N, or, bor) TO_ALL_(T, N, xor, bxor)
#define TO_ALL_MINMAX_(T, N) TO_ALL_(T, N, min, min) TO_ALL_(T, N, max, max)
#define TO_ALL_ARITH_(T, N) TO_ALL_(T, N, sum, sum) TO_ALL_(T, N, prod, prod)
SHMEM_TO_ALL_BIT_TYPES_(TO_ALL_BIT_)
SHMEM_TO_ALL_MINMAX_TYPES_(TO_ALL_MINMAX_)
SHMEM_TO_ALL_ARITH_TYPES_(TO_ALL_ARITH_)
#undef TO_ALL_BIT_
#undef TO_ALL_MINMAX_
#undef TO_ALL_ARITH_
#undef TO_ALL_

} // extern "C"
