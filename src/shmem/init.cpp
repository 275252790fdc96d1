// src/shmem/init.cpp - setup, query, exit, the symmetric heap, shmem_ptr.
#include "sluice_config.h"

#include "shmem/shmem_impl.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

extern "C" {
struct sluice_shmem_fast_ sluice_shmem_fast_ = {nullptr, 0, nullptr, nullptr, 0};
}

namespace sluice::shmem {

State state;

namespace {

constexpr std::size_t default_heap = std::size_t{128} << 20;
// The heap starts at an address of this alignment on every PE (the segment
// is asked this much larger), so that an offset aligned on one PE is
// aligned on all: shmem_align up to 2^23 gives one symmetric block.
constexpr std::size_t heap_origin_align = std::size_t{8} << 20;

// The heap's allocations: offset -> size, and the free ranges.  Every PE
// makes the same calls in the same order (they are collective), so every
// PE finds the same offsets.
std::mutex heap_lock;
std::map<std::size_t, std::size_t> used, free_ranges;

// SHMEM_SYMMETRIC_SIZE: bytes, with an optional K, M, G or T (powers of 1024).
std::size_t heap_size_wanted() {
    const char *v = std::getenv("SHMEM_SYMMETRIC_SIZE");
    if (!v || !*v) return default_heap;
    char *end = nullptr;
    errno = 0;
    const double n = std::strtod(v, &end);
    double scale = 1;
    if (end && *end) {
        switch (*end) {
        case 'k': case 'K': scale = 1024.0; break;
        case 'm': case 'M': scale = 1024.0 * 1024; break;
        case 'g': case 'G': scale = 1024.0 * 1024 * 1024; break;
        case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
        default: scale = 0;
        }
        if (scale != 0 && end[1] != '\0' && !((end[1] == 'b' || end[1] == 'B') && end[2] == '\0')) scale = 0;
    }
    if (errno || end == v || scale == 0 || n < 0)
        fail("shmem_init", "set SHMEM_SYMMETRIC_SIZE to a size such as 256M or 1G", "SHMEM_SYMMETRIC_SIZE=%s", v);
    return static_cast<std::size_t>(n * scale);
}

// The main program's writable load segments (.data and .bss): the static
// data OpenSHMEM makes symmetric.
int find_statics(dl_phdr_info *info, std::size_t, void *) {
    char *lo = nullptr, *hi = nullptr;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) &ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W)) continue;
        char *b = reinterpret_cast<char *>(info->dlpi_addr + ph.p_vaddr);
        char *e = b + ph.p_memsz;
        if (!lo || b < lo) lo = b;
        if (!hi || e > hi) hi = e;
    }
    state.data_begin = lo;
    state.data_end = hi;
    return 1;  // the first object is the main program
}

void *heap_alloc(std::size_t alignment, std::size_t size, const char *call) {
    if (size == 0) return nullptr;
    if (alignment < 16) alignment = 16;
    size = (size + 15) & ~std::size_t{15};
    std::lock_guard<std::mutex> g(heap_lock);
    for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it) {
        const std::size_t at = (it->first + alignment - 1) / alignment * alignment;
        if (at + size > it->first + it->second) continue;
        const std::size_t start = it->first, len = it->second;
        free_ranges.erase(it);
        if (at > start) free_ranges[start] = at - start;
        if (at + size < start + len) free_ranges[at + size] = start + len - at - size;
        used[at] = size;
        return state.heap + at;
    }
    (void)call;
    return nullptr;
}

void heap_release(void *p, const char *call) {
    std::lock_guard<std::mutex> g(heap_lock);
    const auto it = used.find(static_cast<std::size_t>(static_cast<char *>(p) - state.heap));
    if (static_cast<char *>(p) < state.heap || it == used.end())
        fail(call, "pass a pointer shmem_malloc, shmem_calloc, shmem_align or shmem_realloc returned",
             "%p is not the start of a symmetric heap block", p);
    std::size_t at = it->first, size = it->second;
    used.erase(it);
    auto next = free_ranges.lower_bound(at);
    if (next != free_ranges.end() && next->first == at + size) {
        size += next->second;
        free_ranges.erase(next);
    }
    auto prev = free_ranges.lower_bound(at);
    if (prev != free_ranges.begin()) {
        --prev;
        if (prev->first + prev->second == at) {
            at = prev->first;
            size += prev->second;
            free_ranges.erase(prev);
        }
    }
    free_ranges[at] = size;
}

std::size_t block_size(void *p) {
    std::lock_guard<std::mutex> g(heap_lock);
    const auto it = used.find(static_cast<std::size_t>(static_cast<char *>(p) - state.heap));
    return it == used.end() ? 0 : it->second;
}

void heap_failed(const char *call, std::size_t size) {
    fail(call, "raise SHMEM_SYMMETRIC_SIZE (the heap is the Sluice segment) or free blocks",
         "no room for %zu bytes in the symmetric heap of %zu bytes", size, state.heap_size);
}

// Where each PE's heap is mapped here, for shmem.h's inline path.
void publish_views() {
    const auto *amo = reinterpret_cast<const sluice_ad_inline_ *>(state.ad[SLUICE_DT_U64]);
    state.heap_view = new char *[state.npes];
    state.amo_view = new char *[state.npes];
    for (int pe = 0; pe < state.npes; ++pe) {
        char probe = 0;
        char *view = state.heap_size == 0 ? nullptr
                                           : sluice_mapped_view_(static_cast<sluice_rank_t>(pe), state.heap_base[pe],
                                                                 &probe, state.heap_size);
        state.heap_view[pe] = view;
        state.amo_view[pe] = view && amo->direct[pe] ? view : nullptr;
    }
}

void do_init(int requested) {
    if (state.initialized) return;  // a second shmem_init is allowed and does nothing
    if (state.finalized)
        fail("shmem_init", "initialize OpenSHMEM once per process", "called after shmem_finalize");
    // Software progress while the program computes: Sluice's progress
    // thread, unless the program set SLUICE_PROGRESS_THREAD itself or
    // initialized MPI already (the thread needs MPI_THREAD_SERIALIZED there;
    // docs/openshmem.md, "Progress").
    if (!std::getenv("SLUICE_PROGRESS_THREAD")) {
        int mpi_up = 0;
        if (auto initialized = reinterpret_cast<int (*)(int *)>(dlsym(RTLD_DEFAULT, "MPI_Initialized")))
            (void)initialized(&mpi_up);
        if (!mpi_up) setenv("SLUICE_PROGRESS_THREAD", "1", 0);
    }
    if (!sluice_initialized()) {
        if (sluice_status_t s = sluice_init(nullptr, nullptr); s != SLUICE_OK)
            fail("shmem_init", "see Sluice's message above", "sluice_init: %s", sluice_last_error());
    }
    state.me = static_cast<int>(sluice_rank());
    state.npes = static_cast<int>(sluice_size());
    state.thread_level = requested;
    const std::size_t size = heap_size_wanted();
    check_status(sluice_segment_attach(size + heap_origin_align), "shmem_init");
    void *base = nullptr;
    std::size_t segment = 0;
    check_status(sluice_segment_info(sluice_rank(), &base, &segment), "shmem_init");
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    const std::uintptr_t origin = (b + heap_origin_align - 1) / heap_origin_align * heap_origin_align;
    state.heap = reinterpret_cast<char *>(origin);
    state.heap_size = size;
    free_ranges.clear();
    used.clear();
    if (size) free_ranges[0] = size;
    state.heap_base = new char *[state.npes];
    check_status(sluice_allgather(&state.heap, state.heap_base, sizeof(char *)), "shmem_init");
    dl_iterate_phdr(find_statics, nullptr);
    state.data_base = new char *[state.npes];
    check_status(sluice_allgather(&state.data_begin, state.data_base, sizeof(char *)), "shmem_init");
    const sluice_dt_t types[] = {SLUICE_DT_U32, SLUICE_DT_U64, SLUICE_DT_FLT, SLUICE_DT_DBL};
    for (sluice_dt_t dt : types) {
        std::uint64_t ops = 0;
        for (unsigned op = 0; op < SLUICE_OP_COUNT_; ++op) ops |= SLUICE_AOP_BIT(op);
        if (dt == SLUICE_DT_FLT || dt == SLUICE_DT_DBL)
            ops &= ~(SLUICE_AOP_BIT(SLUICE_OP_AND) | SLUICE_AOP_BIT(SLUICE_OP_FAND) | SLUICE_AOP_BIT(SLUICE_OP_OR) |
                     SLUICE_AOP_BIT(SLUICE_OP_FOR) | SLUICE_AOP_BIT(SLUICE_OP_XOR) | SLUICE_AOP_BIT(SLUICE_OP_FXOR));
        check_status(sluice_ad_create(sluice_team_job(), dt, ops, 0, &state.ad[dt]), "shmem_init");
    }
    statics_init();
    teams_init();
    state.initialized = true;
    publish_views();
    sluice_shmem_fast_ = {state.heap, state.heap_size, state.heap_view, state.amo_view, state.npes};
    check_status(sluice_barrier(), "shmem_init");
}

} // namespace

void fail(const char *call, const char *fix, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "sluice-shmem: PE %d: %s: %s; fix: %s\n", state.me, call, what, fix);
    std::fflush(stderr);
    if (sluice_initialized()) sluice_exit(1);
    std::_Exit(1);
}

void not_initialized(const char *call) {
    if (state.finalized)
        fail(call, "call OpenSHMEM only between shmem_init and shmem_finalize", "called after shmem_finalize");
    fail(call, "call shmem_init (or shmem_init_thread) first", "OpenSHMEM is not initialized");
}

void check_status(sluice_status_t s, const char *call) {
    if (s != SLUICE_OK) [[unlikely]]
        fail(call, "see Sluice's message above", "%s", sluice_last_error());
}

void not_symmetric(const void *addr, std::size_t len, const char *call) {
    fail(call, "pass symmetric memory: from shmem_malloc and friends, or a global or static variable",
         "%p (%zu bytes) is not symmetric", addr, len);
}

} // namespace sluice::shmem

using namespace sluice::shmem;

extern "C" {

void shmem_init(void) { do_init(SHMEM_THREAD_MULTIPLE); }

int shmem_init_thread(int requested, int *provided) {
    if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
        fail("shmem_init_thread", "ask for SHMEM_THREAD_SINGLE, _FUNNELED, _SERIALIZED or _MULTIPLE",
             "thread level %d", requested);
    do_init(requested);
    // Sluice is thread-safe: every level is given as asked (MULTIPLE holds).
    if (provided) *provided = requested;
    return 0;
}

void shmem_query_thread(int *provided) {
    need_init("shmem_query_thread");
    if (provided) *provided = state.thread_level;
}

void shmem_finalize(void) {
    if (!state.initialized) return;
    sluice_shmem_fast_.npes = 0;  // from here on every call goes to the library, which refuses it
    quiet();
    check_status(sluice_barrier(), "shmem_finalize");
    teams_fini();
    for (sluice_ad_t &ad : state.ad)
        if (ad) {
            check_status(sluice_ad_destroy(ad), "shmem_finalize");
            ad = nullptr;
        }
    state.initialized = false;
    state.finalized = true;
    check_status(sluice_finalize(), "shmem_finalize");
}

void shmem_global_exit(int status) {
    std::fflush(stdout);
    if (sluice_initialized()) sluice_exit(status);
    std::exit(status);
}

int shmem_my_pe(void) {
    need_init("shmem_my_pe");
    return state.me;
}

int shmem_n_pes(void) {
    need_init("shmem_n_pes");
    return state.npes;
}

int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }
void start_pes(int) { shmem_init(); }

int shmem_pe_accessible(int pe) {
    need_init("shmem_pe_accessible");
    return pe >= 0 && pe < state.npes;
}

int shmem_addr_accessible(const void *addr, int pe) {
    need_init("shmem_addr_accessible");
    return pe >= 0 && pe < state.npes && region_of(addr, 1) != Region::none;
}

void *shmem_ptr(const void *dest, int pe) {
    need_init("shmem_ptr");
    if (pe < 0 || pe >= state.npes) return nullptr;
    if (pe == state.me) return region_of(dest, 1) == Region::none ? nullptr : const_cast<void *>(dest);
    if (region_of(dest, 1) != Region::heap) return nullptr;
    char probe = 0;
    return sluice_mapped_view_(static_cast<sluice_rank_t>(pe), state.heap_base[pe] + (static_cast<const char *>(dest) - state.heap),
                               &probe, 1);
}

void shmem_info_get_version(int *major, int *minor) {
    if (major) *major = SHMEM_MAJOR_VERSION;
    if (minor) *minor = SHMEM_MINOR_VERSION;
}

void shmem_info_get_name(char *name) {
    if (!name) return;
    std::strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
    name[SHMEM_MAX_NAME_LEN - 1] = '\0';
}

void shmem_pcontrol(int) {}

void *shmem_malloc(size_t size) {
    need_init("shmem_malloc");
    void *p = heap_alloc(16, size, "shmem_malloc");
    if (!p && size) heap_failed("shmem_malloc", size);
    shmem_barrier_all();
    return p;
}

void *shmem_malloc_with_hints(size_t size, long) { return shmem_malloc(size); }

void *shmem_calloc(size_t count, size_t size) {
    need_init("shmem_calloc");
    if (size && count > SIZE_MAX / size)
        fail("shmem_calloc", "ask for fewer bytes", "%zu x %zu bytes overflows", count, size);
    const std::size_t bytes = count * size;
    void *p = heap_alloc(16, bytes, "shmem_calloc");
    if (!p && bytes != 0) heap_failed("shmem_calloc", bytes);
    if (p) std::memset(p, 0, bytes);
    shmem_barrier_all();
    return p;
}

void *shmem_align(size_t alignment, size_t size) {
    need_init("shmem_align");
    if (alignment == 0 || (alignment & (alignment - 1)))
        fail("shmem_align", "pass a power of two", "alignment %zu", alignment);
    void *p = heap_alloc(alignment, size, "shmem_align");
    if (!p && size) heap_failed("shmem_align", size);
    shmem_barrier_all();
    return p;
}

void *shmem_realloc(void *ptr, size_t size) {
    need_init("shmem_realloc");
    if (!ptr) return shmem_malloc(size);
    if (size == 0) {
        shmem_free(ptr);
        return nullptr;
    }
    const std::size_t old = block_size(ptr);
    if (!old)
        fail("shmem_realloc", "pass a pointer the symmetric heap functions returned",
             "%p is not the start of a symmetric heap block", ptr);
    shmem_barrier_all();
    void *p = heap_alloc(16, size, "shmem_realloc");
    if (!p) heap_failed("shmem_realloc", size);
    std::memcpy(p, ptr, old < size ? old : size);
    heap_release(ptr, "shmem_realloc");
    shmem_barrier_all();
    return p;
}

void shmem_free(void *ptr) {
    need_init("shmem_free");
    shmem_barrier_all();
    if (ptr) heap_release(ptr, "shmem_free");
}

void *shmalloc(size_t size) { return shmem_malloc(size); }
void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
void shfree(void *ptr) { shmem_free(ptr); }

} // extern "C"
