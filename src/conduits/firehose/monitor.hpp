// src/conduits/firehose/monitor.hpp - firehose's memory monitor: learns when
// the program gives memory back to the kernel (munmap, mremap, mmap with
// MAP_FIXED over a mapping, madvise DONTNEED/FREE/REMOVE, brk shrinking),
// so that a cached registration is never used for new memory at the same
// address.  README.md and docs/firehose.md say how, and where it is blind.
//
// How: on x86-64 Linux with glibc, install() redirects those libc functions
// to hooks here by writing a jump over their first instructions (libc's
// own callers, free() and the heap trimming in malloc included, reach
// them through the same code).  A hook records the range in a fixed ring,
// lock-free and without allocating (it may run inside malloc), and then
// makes the system call itself.  Each registrar reads the ring from its
// own position before every pin (drain) and invalidates what it finds;
// one that fell more than a ring behind is told everything went away.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::rma::firehose::monitor {

// Installs the hooks once per process; true if they are in place (now or
// from an earlier call).  False, with the reason in `why`, where they
// cannot be (another architecture or C library, libc text that cannot be
// made writable): registrations must then not outlive their transfer.
bool install(const char **why = nullptr);
bool installed();

// Where the ring is now: a reader starting here sees what comes after.
std::uint64_t position();

// Calls gone(context, addr, len) for every range recorded after `seen`, in
// order, and moves `seen` to the end; gone(context, 0, SIZE_MAX) once
// instead when some were overwritten before this reader saw them.  Cheap
// (one load) when nothing was recorded.  One thread per `seen` at a time.
void drain(std::uint64_t &seen, void (*gone)(void *, std::uintptr_t, std::size_t), void *context);

// What the hooks do first: record [addr, addr + len) as gone (for tests,
// and for callers that free memory behind libc's back).
void record(const void *addr, std::size_t len);

} // namespace sluice::rma::firehose::monitor
