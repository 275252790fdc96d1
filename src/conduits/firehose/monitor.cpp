// src/conduits/firehose/monitor.cpp - the memory monitor (monitor.hpp).
#include "conduits/firehose/monitor.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sched.h>

// Not under ThreadSanitizer: glibc calls madvise on a thread's stack after
// the sanitizer has let go of the thread, and the hook's (instrumented)
// atomics then crash in its runtime.
#if defined(__SANITIZE_THREAD__)
#define SLUICE_FIREHOSE_NO_HOOKS "not under ThreadSanitizer (its runtime is gone when a thread's stack is released)"
#elif defined(__x86_64__) && defined(__GLIBC__)
#include <dlfcn.h>
#include <link.h>
#define SLUICE_FIREHOSE_HOOKS 1
#endif

namespace sluice::rma::firehose::monitor {
namespace {

// Ranges recorded and not yet read by every registrar.  A slot's `seq` is
// 2i+1 while record number i is written into it and 2i+2 once written, so
// a reader can tell a slot it may read from one not written yet or already
// overwritten by a later record (then it was too slow: everything goes).
constexpr std::uint64_t ring_size = 4096;
struct Slot {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::uintptr_t> addr{0};
    std::atomic<std::size_t> len{0};
};
Slot ring[ring_size];
std::atomic<std::uint64_t> head{0};
std::atomic<bool> hooks_in{false};

} // namespace

void record(const void *addr, std::size_t len) {
    if (!len) return;
    const std::uint64_t i = head.fetch_add(1, std::memory_order_acq_rel);
    Slot &s = ring[i % ring_size];
    // Release stores, acquire loads in drain (no fences: ThreadSanitizer
    // does not model them): a reader that sees a later record's fields
    // sees its odd `seq` on the re-check.
    s.seq.store(2 * i + 1, std::memory_order_relaxed);
    s.addr.store(reinterpret_cast<std::uintptr_t>(addr), std::memory_order_release);
    s.len.store(len, std::memory_order_release);
    s.seq.store(2 * i + 2, std::memory_order_release);
}

std::uint64_t position() { return head.load(std::memory_order_acquire); }

void drain(std::uint64_t &seen, void (*gone)(void *, std::uintptr_t, std::size_t), void *context) {
    const std::uint64_t end = head.load(std::memory_order_acquire);
    if (end == seen) return;
    auto lost = [&] {
        gone(context, 0, SIZE_MAX);
        seen = end;
    };
    if (end - seen > ring_size) return lost();
    for (std::uint64_t j = seen; j != end; ++j) {
        Slot &s = ring[j % ring_size];
        const std::uint64_t want = 2 * j + 2;
        std::uint64_t at;
        // Claimed, not yet written: a writer between two stores.  One that
        // never finishes (stopped in a debugger) costs the whole cache.
        for (int spins = 0; (at = s.seq.load(std::memory_order_acquire)) < want; ++spins)
            if (spins > 100000) return lost();
            else if (spins > 100) ::sched_yield();
        if (at != want) return lost();
        const std::uintptr_t addr = s.addr.load(std::memory_order_acquire);
        const std::size_t len = s.len.load(std::memory_order_acquire);
        if (s.seq.load(std::memory_order_relaxed) != want) return lost();
        gone(context, addr, len);
    }
    seen = end;
}

bool installed() { return hooks_in.load(std::memory_order_acquire); }

#ifdef SLUICE_FIREHOSE_HOOKS
namespace {

void **curbrk = nullptr;  // glibc's __curbrk: what sbrk believes the break is

// The hooks: record, then the system call (never the libc function, whose
// first bytes now jump here).  They may run inside malloc: no allocation,
// no lock.
int hook_munmap(void *addr, std::size_t len) {
    record(addr, len);
    return static_cast<int>(::syscall(SYS_munmap, addr, len));
}

void *hook_mmap(void *addr, std::size_t len, int prot, int flags, int fd, off_t offset) {
    if (flags & MAP_FIXED) record(addr, len);  // replaces what was there (not MAP_FIXED_NOREPLACE)
    return reinterpret_cast<void *>(::syscall(SYS_mmap, addr, len, prot, flags, fd, offset));
}

void *hook_mremap(void *old_addr, std::size_t old_len, std::size_t new_len, int flags, void *new_addr) {
    record(old_addr, old_len);  // the pages move (or the range grows in place: recorded all the same)
    if (flags & MREMAP_FIXED) record(new_addr, new_len);
    return reinterpret_cast<void *>(::syscall(SYS_mremap, old_addr, old_len, new_len, flags, new_addr));
}

int hook_madvise(void *addr, std::size_t len, int advice) {
    if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE) record(addr, len);
    return static_cast<int>(::syscall(SYS_madvise, addr, len, advice));
}

// glibc's brk: the kernel answers the break it set; sbrk reads __curbrk.
int hook_brk(void *addr) {
    char *old = static_cast<char *>(*curbrk ? *curbrk : reinterpret_cast<void *>(::syscall(SYS_brk, 0)));
    if (addr && static_cast<char *>(addr) < old) record(addr, static_cast<std::size_t>(old - static_cast<char *>(addr)));
    void *now = reinterpret_cast<void *>(::syscall(SYS_brk, addr));
    *curbrk = now;
    if (now < addr) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

// movabs r11, imm64; jmp r11.  r11 is scratch at a call.
constexpr std::size_t jump_bytes = 13;

struct Target {
    const char *name;
    void *hook;
    void *at = nullptr;
};

bool hooks_install(const char **why) {
    void *libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (!libc) return *why = "libc.so.6 is not loaded", false;
    // The hooks live in this library: it must never be unloaded now.
    Dl_info self{};
    if (::dladdr(reinterpret_cast<void *>(&hook_munmap), &self) && self.dli_fname)
        (void)::dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    curbrk = static_cast<void **>(::dlsym(libc, "__curbrk"));
    Target targets[] = {{"munmap", reinterpret_cast<void *>(&hook_munmap)},
                        {"mmap", reinterpret_cast<void *>(&hook_mmap)},
                        {"mremap", reinterpret_cast<void *>(&hook_mremap)},
                        {"madvise", reinterpret_cast<void *>(&hook_madvise)},
                        {"brk", reinterpret_cast<void *>(&hook_brk)}};
    if (!curbrk) return *why = "glibc's __curbrk is not exported", false;
    for (Target &t : targets) {
        t.at = ::dlsym(libc, t.name);
        Dl_info info{};
        void *entry = nullptr;
        if (!t.at || !::dladdr1(t.at, &info, &entry, RTLD_DL_SYMENT) || !entry ||
            static_cast<const ElfW(Sym) *>(entry)->st_size < jump_bytes)
            return *why = "a libc memory function is missing or too short to redirect", false;
    }
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (Target &t : targets) {
        unsigned char jump[jump_bytes] = {0x49, 0xbb, 0, 0, 0, 0, 0, 0, 0, 0, 0x41, 0xff, 0xe3};
        const auto hook = reinterpret_cast<std::uint64_t>(t.hook);
        std::memcpy(jump + 2, &hook, 8);
        const auto at = reinterpret_cast<std::uintptr_t>(t.at);
        const std::uintptr_t first = at & ~(page - 1), last = (at + jump_bytes - 1) & ~(page - 1);
        auto *pages = reinterpret_cast<void *>(first);
        if (::mprotect(pages, last - first + page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
            return *why = "libc's code cannot be made writable (a W^X policy?)", false;
        std::memcpy(t.at, jump, jump_bytes);
        (void)::mprotect(pages, last - first + page, PROT_READ | PROT_EXEC);
        __builtin___clear_cache(static_cast<char *>(t.at), static_cast<char *>(t.at) + jump_bytes);
    }
    return true;
}

} // namespace
#endif

bool install(const char **why) {
    static std::once_flag once;
    static const char *reason = "";
    std::call_once(once, [] {
#ifdef SLUICE_FIREHOSE_HOOKS
        if (hooks_install(&reason)) hooks_in.store(true, std::memory_order_release);
#elif defined(SLUICE_FIREHOSE_NO_HOOKS)
        reason = SLUICE_FIREHOSE_NO_HOOKS;
#else
        reason = "no memory hooks for this architecture or C library";
#endif
    });
    if (why) *why = reason;
    return installed();
}

} // namespace sluice::rma::firehose::monitor
