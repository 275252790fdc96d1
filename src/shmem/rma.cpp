// src/shmem/rma.cpp - RMA, atomics, ordering and point-to-point
// synchronization on bytes and words; the typed functions (typed.cpp) call
// these.
#include "sluice_config.h"

#include "shmem/shmem_impl.hpp"

#include <atomic>
#include <cstring>

namespace sluice::shmem {

int world_pe_slow(shmem_ctx_t ctx, int pe, const char *call) {
    need_init(call);
    if (ctx == SHMEM_CTX_INVALID)
        fail(call, "pass a context shmem_ctx_create returned (or SHMEM_CTX_DEFAULT)", "SHMEM_CTX_INVALID");
    if (ctx->destroyed) [[unlikely]]
        fail(call, "use a context only between shmem_ctx_create and shmem_ctx_destroy", "a destroyed context");
    const shmem_team_t team = ctx->team;
    if (team == SHMEM_TEAM_WORLD || !team) {
        if (pe < 0 || pe >= state.npes) [[unlikely]]
            fail(call, "pass a PE in 0 .. shmem_n_pes()-1", "PE %d of %d", pe, state.npes);
        return pe;
    }
    const sluice_team_t t = team_of(team, call);
    const int size = static_cast<int>(sluice_team_size(t));
    if (pe < 0 || pe >= size) fail(call, "pass a PE of the context's team", "PE %d of a team of %d", pe, size);
    sluice_rank_t job = 0;
    check_status(sluice_team_to_job(t, static_cast<sluice_rank_t>(pe), &job), call);
    return static_cast<int>(job);
}

// `w` is a world PE here (put_bytes translated it).
void put_bytes_slow(shmem_ctx_t, void *dest, const void *src, std::size_t n, int w, const char *call) {
    if (n == 0) return;
    (void)remote_addr(dest, n, w, call);  // symmetric, else the job ends
    if (w == state.me) std::memmove(dest, src, n);
    else statics_put(w, static_cast<std::size_t>(static_cast<char *>(dest) - state.data_begin), src, n);
}

void get_bytes_slow(shmem_ctx_t, void *dest, const void *src, std::size_t n, int w, const char *call) {
    if (n == 0) return;
    (void)remote_addr(src, n, w, call);
    if (w == state.me) std::memmove(dest, src, n);
    else statics_get(dest, w, static_cast<std::size_t>(static_cast<const char *>(src) - state.data_begin), n);
}

// Strided: element i of the remote side at i*dst elements from dest
// (Put) or src (Get), of the local side at i*sst (Put) or i*dst (Get).
// Heap targets go as one Sluice strided transfer, others element by element.
void strided(bool put, shmem_ctx_t ctx, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
             std::size_t elem, std::size_t n, int pe, const char *call) {
    const int w = world_pe(ctx, pe, call);
    if (n == 0) return;
    const std::ptrdiff_t ds = dst * static_cast<std::ptrdiff_t>(elem), ss = sst * static_cast<std::ptrdiff_t>(elem);
    char *d = static_cast<char *>(dest);
    const char *s = static_cast<const char *>(src);
    const char *remote = put ? d : s;
    const std::ptrdiff_t rs = put ? ds : ss;
    const std::size_t span = static_cast<std::size_t>((n - 1) * (rs < 0 ? -rs : rs)) + elem;
    if (rs > 0 && region_of(remote, span) == Region::heap) {
        const std::ptrdiff_t dstr[1] = {ds}, sstr[1] = {ss};
        const std::size_t count[1] = {n};
        void *r = remote_addr(remote, span, w, call);
        const auto rank = static_cast<sluice_rank_t>(w);
        check_status(put ? sluice_puts(rank, r, dstr, s, sstr, elem, count, 1)
                         : sluice_gets(d, dstr, rank, r, sstr, elem, count, 1),
                     call);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        char *di = d + static_cast<std::ptrdiff_t>(i) * ds;
        const char *si = s + static_cast<std::ptrdiff_t>(i) * ss;
        if (put) put_bytes(ctx, di, si, elem, pe, call);
        else get_bytes(ctx, di, si, elem, pe, call);
    }
}

void iput_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t elem, std::size_t n, int pe, const char *call) {
    strided(true, ctx, dest, src, dst, sst, elem, n, pe, call);
}

void iget_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t elem, std::size_t n, int pe, const char *call) {
    strided(false, ctx, dest, src, dst, sst, elem, n, pe, call);
}

namespace {

bool fetching(sluice_aop_t op) {
    return op == SLUICE_OP_GET || op == SLUICE_OP_SWAP || op == SLUICE_OP_FCAS ||
           (op >= SLUICE_OP_FADD && (op - SLUICE_OP_FADD) % 2 == 0);
}

// The CPU atomic a word of this PE gets when it lies outside the heap
// (shared with the AM handler of statics.cpp, the same agent).
template <class T>
T cpu_op(T *w, sluice_aop_t op, T a, T b) {
    T old = 0;
    switch (op) {
    case SLUICE_OP_SET: __atomic_store_n(w, a, __ATOMIC_SEQ_CST); return 0;
    case SLUICE_OP_GET: return __atomic_load_n(w, __ATOMIC_SEQ_CST);
    case SLUICE_OP_SWAP: return __atomic_exchange_n(w, a, __ATOMIC_SEQ_CST);
    case SLUICE_OP_CAS:
    case SLUICE_OP_FCAS:
        old = a;
        __atomic_compare_exchange_n(w, &old, b, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return old;
    case SLUICE_OP_ADD: case SLUICE_OP_FADD: return __atomic_fetch_add(w, a, __ATOMIC_SEQ_CST);
    case SLUICE_OP_SUB: case SLUICE_OP_FSUB: return __atomic_fetch_sub(w, a, __ATOMIC_SEQ_CST);
    case SLUICE_OP_INC: case SLUICE_OP_FINC: return __atomic_fetch_add(w, T{1}, __ATOMIC_SEQ_CST);
    case SLUICE_OP_DEC: case SLUICE_OP_FDEC: return __atomic_fetch_sub(w, T{1}, __ATOMIC_SEQ_CST);
    case SLUICE_OP_AND: case SLUICE_OP_FAND: return __atomic_fetch_and(w, a, __ATOMIC_SEQ_CST);
    case SLUICE_OP_OR: case SLUICE_OP_FOR: return __atomic_fetch_or(w, a, __ATOMIC_SEQ_CST);
    case SLUICE_OP_XOR: case SLUICE_OP_FXOR: return __atomic_fetch_xor(w, a, __ATOMIC_SEQ_CST);
    default: break;
    }
    // MULT, MIN, MAX: compare-and-swap loops (no typed caller uses them).
    old = __atomic_load_n(w, __ATOMIC_SEQ_CST);
    for (;;) {
        T next = op == SLUICE_OP_MULT || op == SLUICE_OP_FMULT ? static_cast<T>(old * a)
                 : op == SLUICE_OP_MIN || op == SLUICE_OP_FMIN ? (a < old ? a : old)
                                                               : (a > old ? a : old);
        if (__atomic_compare_exchange_n(w, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return old;
    }
}

} // namespace

std::uint64_t apply_local(void *addr, sluice_dt_t dt, sluice_aop_t op, std::uint64_t op1, std::uint64_t op2) {
    // Floating-point words take set, get and swap only: their bits move as integers.
    if (dt == SLUICE_DT_U32 || dt == SLUICE_DT_FLT)
        return cpu_op(static_cast<std::uint32_t *>(addr), op, static_cast<std::uint32_t>(op1),
                      static_cast<std::uint32_t>(op2));
    return cpu_op(static_cast<std::uint64_t *>(addr), op, op1, op2);
}

std::uint64_t amo(sluice_dt_t dt, void *addr, int pe, sluice_aop_t op, std::uint64_t op1, std::uint64_t op2,
                  const char *call) {
    const std::size_t size = dt == SLUICE_DT_U32 || dt == SLUICE_DT_FLT ? 4 : 8;
    if (reinterpret_cast<std::uintptr_t>(addr) & (size - 1))
        fail(call, "align the target to its type's size", "target %p is not aligned to %zu bytes", addr, size);
    const Region where = region_of(addr, size);
    if (where == Region::none) not_symmetric(addr, size, call);
    if (where == Region::statics) {
        if (pe == state.me) return apply_local(addr, dt, op, op1, op2);
        return statics_amo(pe, static_cast<std::size_t>(static_cast<char *>(addr) - state.data_begin), dt, op, op1,
                           op2);
    }
    void *r = state.heap_base[pe] + (static_cast<char *>(addr) - state.heap);
    const auto rank = static_cast<sluice_rank_t>(pe);
    const bool f = fetching(op);
    std::uint64_t result = 0;
    sluice_status_t s = SLUICE_OK;
    switch (dt) {
    case SLUICE_DT_U32: {
        std::uint32_t v = 0;
        s = sluice_ad_op_u32(state.ad[dt], f ? &v : nullptr, rank, r, op, static_cast<std::uint32_t>(op1),
                             static_cast<std::uint32_t>(op2), 0);
        result = v;
        break;
    }
    case SLUICE_DT_U64:
        s = sluice_ad_op_u64(state.ad[dt], f ? &result : nullptr, rank, r, op, op1, op2, 0);
        break;
    case SLUICE_DT_FLT: {
        float a, b, v = 0;
        const auto a32 = static_cast<std::uint32_t>(op1), b32 = static_cast<std::uint32_t>(op2);
        std::memcpy(&a, &a32, 4);
        std::memcpy(&b, &b32, 4);
        s = sluice_ad_op_flt(state.ad[dt], f ? &v : nullptr, rank, r, op, a, b, 0);
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        result = bits;
        break;
    }
    default: {
        double a, b, v = 0;
        std::memcpy(&a, &op1, 8);
        std::memcpy(&b, &op2, 8);
        s = sluice_ad_op_dbl(state.ad[dt], f ? &v : nullptr, rank, r, op, a, b, 0);
        std::memcpy(&result, &v, 8);
        break;
    }
    }
    check_status(s, call);
    return result;
}

void put_signal(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, std::uint64_t *sig,
                std::uint64_t signal, int sig_op, int pe, const char *call) {
    if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD)
        fail(call, "pass SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD", "signal operation %d", sig_op);
    put_bytes(ctx, dest, src, n, pe, call);  // complete at the target when it returns
    std::atomic_thread_fence(std::memory_order_seq_cst);
    (void)amo(SLUICE_DT_U64, sig, world_pe(ctx, pe, call), sig_op == SHMEM_SIGNAL_SET ? SLUICE_OP_SET : SLUICE_OP_ADD,
              signal, 0, call);
}

namespace {

// Events a context holds at most before it reaps the completed ones (and,
// when that is not enough, waits for them all): a program that issues _nbi
// transfers without ever calling quiet keeps a bounded list.
constexpr std::size_t pending_reap = 1024;

void keep_pending(shmem_ctx_t ctx, sluice_event_t ev, const char *call) {
    std::lock_guard<std::mutex> lock(ctx->pending_mutex);
    std::vector<sluice_event_t> &p = ctx->pending;
    if (p.size() >= pending_reap) {
        std::size_t kept = 0;
        for (sluice_event_t e : p) {
            const sluice_status_t s = sluice_event_test(e);
            if (s == SLUICE_NOT_READY) p[kept++] = e;
            else check_status(s, call);
        }
        p.resize(kept);
        if (kept >= pending_reap / 2) {
            check_status(sluice_event_wait_all(p.data(), p.size()), call);
            p.clear();
        }
    }
    p.push_back(ev);
}

} // namespace

// On the heap: Sluice's non-blocking transfer to `pe`'s copy
// (remote_addr), its event kept by `ctx` unless it completed at once.
void put_bytes_nbi(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call) {
    const int w = world_pe(ctx, pe, call);
    if (n == 0 || region_of(dest, n) != Region::heap) return put_bytes_slow(ctx, dest, src, n, w, call);
    sluice_event_t ev = SLUICE_EVENT_DONE;
    check_status(sluice_put_nb(static_cast<sluice_rank_t>(w), remote_addr(dest, n, w, call), src, n, &ev), call);
    if (ev != SLUICE_EVENT_DONE) keep_pending(ctx, ev, call);
}

void get_bytes_nbi(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call) {
    const int w = world_pe(ctx, pe, call);
    if (n == 0 || region_of(src, n) != Region::heap) return get_bytes_slow(ctx, dest, src, n, w, call);
    sluice_event_t ev = SLUICE_EVENT_DONE;
    check_status(sluice_get_nb(dest, static_cast<sluice_rank_t>(w), remote_addr(src, n, w, call), n, &ev), call);
    if (ev != SLUICE_EVENT_DONE) keep_pending(ctx, ev, call);
}

void quiet_ctx(shmem_ctx_t ctx, const char *call) {
    need_init(call);
    {
        std::lock_guard<std::mutex> lock(ctx->pending_mutex);
        if (!ctx->pending.empty()) {
            check_status(sluice_event_wait_all(ctx->pending.data(), ctx->pending.size()), call);
            ctx->pending.clear();
        }
    }
    check_status(sluice_nbi_sync(), call);  // static-data operations complete as they return
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

void quiet() {
    need_init("shmem_quiet");
    std::lock_guard<std::mutex> lock(state.contexts_mutex);
    for (shmem_ctx_t ctx : state.contexts) quiet_ctx(ctx, "shmem_quiet");
}

} // namespace sluice::shmem

using namespace sluice::shmem;

extern "C" {

void shmem_quiet(void) { quiet_ctx(SHMEM_CTX_DEFAULT, "shmem_quiet"); }
void shmem_fence(void) { quiet_ctx(SHMEM_CTX_DEFAULT, "shmem_fence"); }
void shmem_ctx_quiet(shmem_ctx_t ctx) {
    (void)world_pe(ctx, 0, "shmem_ctx_quiet");
    quiet_ctx(ctx, "shmem_ctx_quiet");
}
void shmem_ctx_fence(shmem_ctx_t ctx) {
    (void)world_pe(ctx, 0, "shmem_ctx_fence");
    quiet_ctx(ctx, "shmem_ctx_fence");
}

void shmem_barrier_all(void) {
    quiet();
    check_status(sluice_barrier(), "shmem_barrier_all");
}

void shmem_sync_all(void) {
    need_init("shmem_sync_all");
    check_status(sluice_barrier(), "shmem_sync_all");
}

uint64_t shmem_signal_fetch(const uint64_t *sig_addr) {
    need_init("shmem_signal_fetch");
    return amo(SLUICE_DT_U64, const_cast<uint64_t *>(sig_addr), state.me, SLUICE_OP_GET, 0, 0, "shmem_signal_fetch");
}

// Locks: a long on PE 0 holds 0 (free) or the holder's PE + 1.
void shmem_set_lock(long *lock) {
    need_init("shmem_set_lock");
    const std::uint64_t mine = static_cast<std::uint64_t>(state.me) + 1;
    while (amo(SLUICE_DT_U64, lock, 0, SLUICE_OP_FCAS, 0, mine, "shmem_set_lock") != 0) sluice_poll();
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

int shmem_test_lock(long *lock) {
    need_init("shmem_test_lock");
    const std::uint64_t mine = static_cast<std::uint64_t>(state.me) + 1;
    const bool got = amo(SLUICE_DT_U64, lock, 0, SLUICE_OP_FCAS, 0, mine, "shmem_test_lock") == 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return got ? 0 : 1;
}

void shmem_clear_lock(long *lock) {
    need_init("shmem_clear_lock");
    quiet();
    const std::uint64_t mine = static_cast<std::uint64_t>(state.me) + 1;
    const std::uint64_t old = amo(SLUICE_DT_U64, lock, 0, SLUICE_OP_FCAS, mine, 0, "shmem_clear_lock");
    if (old != mine)
        fail("shmem_clear_lock", "clear only a lock this PE holds (shmem_set_lock or shmem_test_lock got it)",
             "the lock is %s", old == 0 ? "free" : "held by another PE");
}

} // extern "C"
