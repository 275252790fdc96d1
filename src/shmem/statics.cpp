// src/shmem/statics.cpp - RMA and atomics on another PE's static data (the
// program's globals and statics: symmetric in OpenSHMEM, outside the Sluice
// segment).  Each goes as AMs whose handler acts at the target, at the same
// offset from the start of its static data:
//   put:    Medium request (bytes; offset, cookie) -> Short ack (cookie)
//   get:    Short request (offset, length, destination, cookie)
//           -> Medium reply (bytes; destination, cookie)
//   atomic: Medium request (one AmoWire) -> Medium reply (the old value)
// The requester waits for the cookie's counter, polling: every static-data
// operation is complete at the target when its call returns.  Handler indices
// 248 to 253 are libsluice-shmem's (docs/openshmem.md).
#include "sluice_config.h"

#include "shmem/shmem_impl.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace sluice::shmem {
namespace {

enum : sluice_handler_t { h_put = 248, h_put_ack, h_get, h_get_reply, h_amo, h_amo_reply };

struct AmoWire {
    std::uint64_t offset, op1, op2, result, cookie;
    std::uint32_t dt, op;
};
struct AmoReply {
    std::uint64_t old, result, cookie;
};

void split(const void *p, std::uint32_t &lo, std::uint32_t &hi) {
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    lo = static_cast<std::uint32_t>(v);
    hi = static_cast<std::uint32_t>(static_cast<std::uint64_t>(v) >> 32);
}
template <class T>
T *join(std::uint32_t lo, std::uint32_t hi) {
    return reinterpret_cast<T *>(static_cast<std::uintptr_t>((static_cast<std::uint64_t>(hi) << 32) | lo));
}

// Where `offset` (`n` bytes) lies in this PE's static data; a request that
// falls outside it (a peer with a different program) ends the job.
char *local_at(std::uint64_t offset, std::size_t n) {
    const auto size = static_cast<std::uint64_t>(state.data_end - state.data_begin);
    if (offset > size || n > size - offset)
        fail("shmem (static data)", "run the same program on every PE",
             "a peer addressed %zu bytes at offset %llu of static data of %llu bytes", n,
             static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size));
    return state.data_begin + offset;
}

// Each requesting thread counts its outstanding pieces in one counter that
// is never re-initialised, and a handler acquires that counter before it
// writes the requester's memory.  The chain through the peer's process
// already orders the request before its answer; ThreadSanitizer sees only
// this process, and this keeps the order visible to it too.
thread_local std::atomic<long> t_pending{0};

std::atomic<long> &counter(std::uint32_t lo, std::uint32_t hi) {
    auto &c = *join<std::atomic<long>>(lo, hi);
    (void)c.load(std::memory_order_acquire);
    return c;
}
void done(std::uint32_t lo, std::uint32_t hi) { counter(lo, hi).fetch_sub(1, std::memory_order_release); }

void on_put(sluice_token_t t, void *payload, std::size_t n, const std::uint32_t *a, unsigned) {
    std::memcpy(local_at((static_cast<std::uint64_t>(a[1]) << 32) | a[0], n), payload, n);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    (void)sluice_am_reply_short(t, h_put_ack, a + 2, 2);
}
void on_put_ack(sluice_token_t, void *, std::size_t, const std::uint32_t *a, unsigned) { done(a[0], a[1]); }

void on_get(sluice_token_t t, void *, std::size_t, const std::uint32_t *a, unsigned) {
    const char *from = local_at((static_cast<std::uint64_t>(a[1]) << 32) | a[0], a[2]);
    (void)sluice_am_reply_medium(t, h_get_reply, from, a[2], a + 3, 4);
}
void on_get_reply(sluice_token_t, void *payload, std::size_t n, const std::uint32_t *a, unsigned) {
    auto &c = counter(a[2], a[3]);
    std::memcpy(join<char>(a[0], a[1]), payload, n);
    c.fetch_sub(1, std::memory_order_release);
}

void on_amo(sluice_token_t t, void *payload, std::size_t, const std::uint32_t *, unsigned) {
    AmoWire w;
    std::memcpy(&w, payload, sizeof w);
    const auto dt = static_cast<sluice_dt_t>(w.dt);
    const std::size_t size = dt == SLUICE_DT_U32 || dt == SLUICE_DT_FLT ? 4 : 8;
    AmoReply r{apply_local(local_at(w.offset, size), dt, static_cast<sluice_aop_t>(w.op), w.op1, w.op2), w.result,
               w.cookie};
    (void)sluice_am_reply_medium(t, h_amo_reply, &r, sizeof r, nullptr, 0);
}
void on_amo_reply(sluice_token_t, void *payload, std::size_t, const std::uint32_t *, unsigned) {
    AmoReply r;
    std::memcpy(&r, payload, sizeof r);
    auto &c = counter(static_cast<std::uint32_t>(r.cookie), static_cast<std::uint32_t>(r.cookie >> 32));
    *reinterpret_cast<std::uint64_t *>(static_cast<std::uintptr_t>(r.result)) = r.old;
    c.fetch_sub(1, std::memory_order_release);
}

void wait_zero(std::atomic<long> &pending) {
    wait_for([&] { return pending.load(std::memory_order_acquire) == 0; });
}

} // namespace

void statics_init() {
    check_status(sluice_handler_register(h_put, on_put, SLUICE_AM_MEDIUM, 4), "shmem_init");
    check_status(sluice_handler_register(h_put_ack, on_put_ack, SLUICE_AM_SHORT, 2), "shmem_init");
    check_status(sluice_handler_register(h_get, on_get, SLUICE_AM_SHORT, 7), "shmem_init");
    check_status(sluice_handler_register(h_get_reply, on_get_reply, SLUICE_AM_MEDIUM, 4), "shmem_init");
    check_status(sluice_handler_register(h_amo, on_amo, SLUICE_AM_MEDIUM, 0), "shmem_init");
    check_status(sluice_handler_register(h_amo_reply, on_amo_reply, SLUICE_AM_MEDIUM, 0), "shmem_init");
}

// Sends `n` bytes as pieces of at most one Medium, send(at, len) each,
// and waits until every piece is answered.
template <class F>
void in_pieces(std::size_t n, F send) {
    const std::size_t most = sluice_am_max_medium();
    std::atomic<long> &pending = t_pending;
    for (std::size_t at = 0; at < n; at += most) {
        pending.fetch_add(1, std::memory_order_release);
        send(at, std::min(most, n - at), pending);
    }
    wait_zero(pending);
}

// A put returns when every piece has reached the target (an ack each).
void statics_put(int pe, std::size_t offset, const void *src, std::size_t n) {
    in_pieces(n, [&](std::size_t at, std::size_t len, std::atomic<long> &pending) {
        std::uint32_t a[4];
        const std::uint64_t off = offset + at;
        a[0] = static_cast<std::uint32_t>(off);
        a[1] = static_cast<std::uint32_t>(off >> 32);
        split(&pending, a[2], a[3]);
        check_status(sluice_am_request_medium(static_cast<sluice_rank_t>(pe), h_put, static_cast<const char *>(src) + at,
                                              len, a, 4),
                     "shmem_put");
    });
}

void statics_get(void *dest, int pe, std::size_t offset, std::size_t n) {
    in_pieces(n, [&](std::size_t at, std::size_t len, std::atomic<long> &pending) {
        std::uint32_t a[7];
        const std::uint64_t off = offset + at;
        a[0] = static_cast<std::uint32_t>(off);
        a[1] = static_cast<std::uint32_t>(off >> 32);
        a[2] = static_cast<std::uint32_t>(len);
        split(static_cast<char *>(dest) + at, a[3], a[4]);
        split(&pending, a[5], a[6]);
        check_status(sluice_am_request_short(static_cast<sluice_rank_t>(pe), h_get, a, 7), "shmem_get");
    });
}

std::uint64_t statics_amo(int pe, std::size_t offset, sluice_dt_t dt, sluice_aop_t op, std::uint64_t op1,
                          std::uint64_t op2) {
    std::atomic<long> &pending = t_pending;
    std::uint64_t result = 0;
    pending.fetch_add(1, std::memory_order_release);
    AmoWire w{offset, op1, op2, reinterpret_cast<std::uintptr_t>(&result), reinterpret_cast<std::uintptr_t>(&pending),
              static_cast<std::uint32_t>(dt), static_cast<std::uint32_t>(op)};
    check_status(sluice_am_request_medium(static_cast<sluice_rank_t>(pe), h_amo, &w, sizeof w, nullptr, 0),
                 "shmem atomic");
    wait_zero(pending);
    return result;
}

} // namespace sluice::shmem
