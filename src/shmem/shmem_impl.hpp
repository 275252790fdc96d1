// src/shmem/shmem_impl.hpp - libsluice-shmem's state and the calls its
// typed functions share.  The layer is a client of Sluice's C API only:
// the symmetric heap is the Sluice segment, RMA is sluice_put/get, atomics
// are Sluice atomic domains, teams and collectives are Sluice's.  What
// Sluice cannot address (the program's static data, which lies outside the
// segment) goes by AMs whose handlers act at the target (statics.cpp).
#ifndef SLUICE_SHMEM_IMPL_HPP
#define SLUICE_SHMEM_IMPL_HPP

#include <shmem.h>
#include <sluice.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

struct sluice_shmem_team_ {
    sluice_team_t team = SLUICE_TEAM_NULL;
    shmem_team_config_t config{};
    long config_mask = 0;
    int contexts = 0;  // live contexts made from this team
    bool predefined = false;
};

struct sluice_shmem_ctx_ {
    long options = 0;
    shmem_team_t team = nullptr;  // PE numbers are this team's
    bool predefined = false;
    bool destroyed = false;  // kept, so that a later use is told, not undefined
    // The context's _nbi Puts and Gets still in flight (Sluice events), which
    // its quiet and fence complete; the mutex also serializes those quiets.
    std::mutex pending_mutex;
    std::vector<sluice_event_t> pending;
};

namespace sluice::shmem {

// Where an address of this PE lies and how a peer's copy is reached.
enum class Region { none, heap, statics };

struct State {
    bool initialized = false;
    bool finalized = false;
    int me = 0, npes = 1;
    int thread_level = SHMEM_THREAD_MULTIPLE;
    // The heap: this PE's segment; every PE's base (their addresses).
    char *heap = nullptr;
    std::size_t heap_size = 0;
    char **heap_base = nullptr;  // per PE
    // Per PE: its heap as mapped here, or null; the same where the 64-bit
    // atomic domain reaches it by CPU atomics (the inline path of shmem.h).
    char **heap_view = nullptr;
    char **amo_view = nullptr;
    // The program's static data ([data_begin, data_end) here) and each PE's.
    char *data_begin = nullptr, *data_end = nullptr;
    char **data_base = nullptr;  // per PE
    // One atomic domain per Sluice type (index sluice_dt_t), over the world.
    sluice_ad_t ad[SLUICE_DT_DBL + 1] = {};
    // The live contexts, the default one included (quiet() completes them all).
    std::mutex contexts_mutex;
    std::vector<shmem_ctx_t> contexts;
};
extern State state;

// The one line every misuse ends with: names the call and the fix, exits.
[[noreturn]] void fail(const char *call, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// The cold halves of the checks below: they report and end the job.
[[noreturn]] void not_initialized(const char *call);
[[noreturn]] void not_symmetric(const void *addr, std::size_t len, const char *call);
void check_status(sluice_status_t s, const char *call);

// Checks that shmem_init ran (else fail naming `call`).
inline void need_init(const char *call) {
    if (!state.initialized) [[unlikely]]
        not_initialized(call);
}
// The world PE of `pe` in ctx's team, checked (world_pe_slow: contexts of
// other teams, and every bad argument).
int world_pe_slow(shmem_ctx_t ctx, int pe, const char *call);
inline int world_pe(shmem_ctx_t ctx, int pe, const char *call) {
    if (ctx == SHMEM_CTX_DEFAULT && state.initialized && static_cast<unsigned>(pe) < static_cast<unsigned>(state.npes))
        [[likely]] return pe;
    return world_pe_slow(ctx, pe, call);
}
inline Region region_of(const void *addr, std::size_t len) {
    const auto off = static_cast<std::size_t>(static_cast<const char *>(addr) - state.heap);
    if (off <= state.heap_size && len <= state.heap_size - off) return Region::heap;
    const auto soff = static_cast<std::size_t>(static_cast<const char *>(addr) - state.data_begin);
    const auto ssize = static_cast<std::size_t>(state.data_end - state.data_begin);
    if (soff <= ssize && len <= ssize - soff) return Region::statics;
    return Region::none;
}
// Where `addr` (symmetric, here) is on `pe`; fails if it is not symmetric.
inline void *remote_addr(const void *addr, std::size_t len, int pe, const char *call) {
    const char *p = static_cast<const char *>(addr);
    switch (region_of(addr, len)) {
    case Region::heap: return state.heap_base[pe] + (p - state.heap);
    case Region::statics: return state.data_base[pe] + (p - state.data_begin);
    case Region::none: break;
    }
    not_symmetric(addr, len, call);
}

// RMA on bytes, any symmetric address (heap or statics): the heap inline
// (on a same-host peer, sluice_put / sluice_get are a copy in the caller),
// the rest in rma.cpp.
void put_bytes_slow(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call);
void get_bytes_slow(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call);
inline void put_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call) {
    const int w = world_pe(ctx, pe, call);
    const auto off = static_cast<std::size_t>(static_cast<char *>(dest) - state.heap);
    if (n && off <= state.heap_size && n <= state.heap_size - off) [[likely]] {
        if (sluice_put(static_cast<sluice_rank_t>(w), state.heap_base[w] + off, src, n) != SLUICE_OK) [[unlikely]]
            check_status(SLUICE_ERR_TRANSPORT, call);
        return;
    }
    put_bytes_slow(ctx, dest, src, n, w, call);
}
inline void get_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call) {
    const int w = world_pe(ctx, pe, call);
    const auto off = static_cast<std::size_t>(static_cast<const char *>(src) - state.heap);
    if (n && off <= state.heap_size && n <= state.heap_size - off) [[likely]] {
        if (sluice_get(dest, static_cast<sluice_rank_t>(w), state.heap_base[w] + off, n) != SLUICE_OK) [[unlikely]]
            check_status(SLUICE_ERR_TRANSPORT, call);
        return;
    }
    get_bytes_slow(ctx, dest, src, n, w, call);
}
void iput_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t elem, std::size_t n, int pe, const char *call);
void iget_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t elem, std::size_t n, int pe, const char *call);
void put_signal(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, std::uint64_t *sig,
                std::uint64_t signal, int sig_op, int pe, const char *call);
// The _nbi Put and Get: on the heap a Sluice non-blocking transfer, kept by
// the context until its quiet (static data: complete on return).
void put_bytes_nbi(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call);
void get_bytes_nbi(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call);
// Completes what `ctx` issued (its quiet and fence).
void quiet_ctx(shmem_ctx_t ctx, const char *call);
// Completes what every context issued (barriers, collectives, finalize).
void quiet();

// One atomic operation on a word of `size` bytes (4 or 8) of Sluice type
// `dt`, at symmetric `addr` of world PE `pe`; operands and result as the
// low `size` bytes of 64-bit values.
std::uint64_t amo(sluice_dt_t dt, void *addr, int pe, sluice_aop_t op, std::uint64_t op1, std::uint64_t op2,
                  const char *call);
// The same operation as a CPU atomic on a word of this PE.
std::uint64_t apply_local(void *addr, sluice_dt_t dt, sluice_aop_t op, std::uint64_t op1, std::uint64_t op2);

// Static data over AMs (statics.cpp).
void statics_init();
void statics_put(int pe, std::size_t offset, const void *src, std::size_t n);
void statics_get(void *dest, int pe, std::size_t offset, std::size_t n);
std::uint64_t statics_amo(int pe, std::size_t offset, sluice_dt_t dt, sluice_aop_t op, std::uint64_t op1,
                          std::uint64_t op2);

// Polls until `done()` holds; what it waits for may be written by a peer's
// Put or atomic without a message, so block mode naps (sluice_poll_wait).
template <class F>
void wait_for(F done) {
    while (!done()) sluice_poll_wait();
}

// Teams (teams.cpp).
void teams_init();
void teams_fini();
sluice_team_t team_of(shmem_team_t t, const char *call);

} // namespace sluice::shmem

#endif
