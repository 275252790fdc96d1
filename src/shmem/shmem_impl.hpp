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
    // The program's static data ([data_begin, data_end) here) and each PE's.
    char *data_begin = nullptr, *data_end = nullptr;
    char **data_base = nullptr;  // per PE
    // One atomic domain per Sluice type (index sluice_dt_t), over the world.
    sluice_ad_t ad[SLUICE_DT_DBL + 1] = {};
    // Static-data operations in flight (their acknowledgements pending).
    std::atomic<long> statics_pending{0};
};
extern State state;

// The one line every misuse ends with: names the call and the fix, exits.
[[noreturn]] void fail(const char *call, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// Checks that shmem_init ran (else fail naming `call`).
void need_init(const char *call);
// The world PE of `pe` in ctx's team, checked.
int world_pe(shmem_ctx_t ctx, int pe, const char *call);
Region region_of(const void *addr, std::size_t len);
// Where `addr` (symmetric, here) is on `pe`; fails if it is not symmetric.
void *remote_addr(const void *addr, std::size_t len, int pe, const char *call);
void check_status(sluice_status_t s, const char *call);

// RMA on bytes, any symmetric address (heap or statics).
void put_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call);
void get_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, int pe, const char *call);
void iput_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t elem, std::size_t n, int pe, const char *call);
void iget_bytes(shmem_ctx_t ctx, void *dest, const void *src, std::ptrdiff_t dst, std::ptrdiff_t sst,
                std::size_t elem, std::size_t n, int pe, const char *call);
void put_signal(shmem_ctx_t ctx, void *dest, const void *src, std::size_t n, std::uint64_t *sig,
                std::uint64_t signal, int sig_op, int pe, const char *call);
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
void statics_quiet();

// Polls until `done()` holds.
template <class F>
void wait_for(F done) {
    while (!done()) sluice_poll();
}

// Teams (teams.cpp).
void teams_init();
void teams_fini();
sluice_team_t team_of(shmem_team_t t, const char *call);

} // namespace sluice::shmem

#endif
