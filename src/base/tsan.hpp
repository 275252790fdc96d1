// src/base/tsan.hpp - orders ThreadSanitizer cannot see.
//
// ThreadSanitizer follows happens-before within one process.  Sluice's
// orders often run through another: a handler on the progress thread writes
// memory, its reply reaches the peer, the peer enters a barrier, and the
// barrier completes on this process's main thread.  That chain is a real
// happens-before (release and acquire on shared memory or the network at each
// step), but the steps in the peer are invisible here and ThreadSanitizer
// reports the handler's write and the main thread's later read as a race.
// These two calls state such an order where Sluice guarantees it; outside a
// ThreadSanitizer build they compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace sluice::base {

#if defined(__SANITIZE_THREAD__)
inline void tsan_release(void *sync) { __tsan_release(sync); }
inline void tsan_acquire(void *sync) { __tsan_acquire(sync); }
#else
inline void tsan_release(void *) {}
inline void tsan_acquire(void *) {}
#endif

} // namespace sluice::base
