// src/rma/rma.cpp - Put/Get: checks, the native memcpy path, and the
// reference Put/Get over AM.
#include "sluice_config.h"

#include "rma/rma.hpp"

#include <algorithm>
#include <cstring>

// Read by the inline Put/Get of <sluice.h> (declared there, extern "C").
struct sluice_mapped_ sluice_mapped_ = {nullptr, 0};

namespace sluice::rma {
namespace {

thread_local std::atomic<std::uint64_t> nbi_outstanding[nbi_category_count];
thread_local sluice_event *nbi_region = nullptr;
// The AM engine the reference handlers reply through (one runtime per process).
am::AmEngine *rma_am = nullptr;

void split(const void *p, std::uint32_t &lo, std::uint32_t &hi) {
    auto v = reinterpret_cast<std::uint64_t>(p);
    lo = static_cast<std::uint32_t>(v);
    hi = static_cast<std::uint32_t>(v >> 32);
}
template <class T>
T *join(std::uint32_t lo, std::uint32_t hi) {
    return reinterpret_cast<T *>((static_cast<std::uint64_t>(hi) << 32) | lo);
}

// Target of a reference Put chunk: the bytes are in place; acknowledge.
void on_put(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    am::Send ack;
    ack.handler = am::sys_put_ack;
    ack.args = args;
    ack.nargs = 2;
    (void)rma_am->system_reply(token, ack);
}
void on_put_ack(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned) {
    // Any thread may run this.  The acquire load orders us after the
    // issuer's release increment before we write (ThreadSanitizer checks an
    // RMW's write before applying its acquire, so acq_rel alone is not seen).
    auto *counter = join<std::atomic<std::uint64_t>>(args[0], args[1]);
    if (counter->load(std::memory_order_acquire) == 0)
        base::fatal("put", "this is a Sluice bug", "acknowledgement for a completed Put");
    counter->fetch_sub(1, std::memory_order_release);
}
// Target of a reference Get chunk: answer with the bytes.
void on_get(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    am::Send data;
    data.category = am::AmCategory::medium;
    data.handler = am::sys_get_reply;
    data.payload = join<const char>(args[0], args[1]);
    data.length = args[2];
    // Segment memory, readable until finalize: a conduit may resend from
    // it rather than copy it (udp).  A resend reads the bytes again while
    // the Get is still incomplete at the issuer, and so within the Get.
    data.payload_stable = true;
    data.args = args + 3;
    data.nargs = 4;
    (void)rma_am->system_reply(token, data);
}
void on_get_reply(sluice_token_t, void *payload, std::size_t n, const std::uint32_t *args, unsigned) {
    auto *counter = join<std::atomic<std::uint64_t>>(args[2], args[3]);
    // Any thread may run this: acquire the issuer's release of the counter
    // first, so its earlier writes to the destination come before ours.
    if (counter->load(std::memory_order_acquire) == 0)
        base::fatal("get", "this is a Sluice bug", "data for a completed Get");
    std::memcpy(join<char>(args[0], args[1]), payload, n);
    counter->fetch_sub(1, std::memory_order_release);
}

} // namespace

std::atomic<std::uint64_t> &nbi_counter(NbiCategory category) {
    if (__builtin_expect(nbi_region != nullptr, 0)) return nbi_region->pending;
    return nbi_outstanding[static_cast<unsigned>(category)];
}

void RmaEngine::configure(am::AmEngine *am, const am::SegmentTable *segments, Rank size, bool native) {
    am_ = am;
    segments_ = segments;
    size_ = size;
    native_ = native;
    rma_am = am;
}

void RmaEngine::system_handlers_register(am::AmEngine &am) {
    am.system_register(am::sys_put, on_put);
    am.system_register(am::sys_put_ack, on_put_ack);
    am.system_register(am::sys_get, on_get);
    am.system_register(am::sys_get_reply, on_get_reply);
}

Status RmaEngine::check(Rank r, const void *remote, const void *local, std::size_t n, const char *op) const {
    if (r >= size_)
        return base::report(Status::rank, op, "use a rank below sluice_size()", "rank %u, but the job has %u ranks", r, size_);
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "do RMA after the handler returns",
                            "RMA from inside a handler");
    if (n && !local)
        return base::report(Status::argument, op, "pass the local buffer", "%zu bytes with a null local buffer", n);
    if (!segments_->attached)
        return base::report(Status::segment, op,
                            "call sluice_segment_attach (collective, on every rank) before RMA",
                            "no segment is attached yet (%zu bytes at %p to rank %u)", n, remote, r);
    if (!segments_->contains(r, reinterpret_cast<std::uint64_t>(remote), n))
        return base::report(Status::segment, op,
                            "keep the remote range inside the target's segment (sluice_segment_info)",
                            "%zu bytes at %p are outside the segment of rank %u", n, remote, r);
    return Status::ok;
}

void RmaEngine::wait_counter(std::atomic<std::uint64_t> &counter) {
    conduit::wait_for_zero(counter, [this] { return am_->poll(); });
}

Status RmaEngine::put_reference(Rank r, void *dest, const void *src, std::size_t n,
                                std::atomic<std::uint64_t> &counter, bool immediate) {
    const std::size_t chunk = std::max<std::size_t>(1, am_->max_long());
    std::uint32_t ctr[2];
    split(&counter, ctr[0], ctr[1]);
    for (std::size_t off = 0; off < n || (n == 0 && off == 0); off += chunk) {
        am::Send m;
        m.category = am::AmCategory::long_;
        m.handler = am::sys_put;
        m.payload = static_cast<const char *>(src) + off;
        m.length = std::min(chunk, n - off);
        m.dest_addr = static_cast<char *>(dest) + off;
        m.args = ctr;
        m.nargs = 2;
        counter.fetch_add(1, std::memory_order_release);
        if (Status s = am_->system_request(r, m, immediate && off == 0); s != Status::ok) {
            counter.fetch_sub(1);
            if (s == Status::not_ready) return s;
            return base::report(s, "put", nullptr, "the transport failed sending to rank %u", r);
        }
        if (n == 0) break;
    }
    return Status::ok;
}

Status RmaEngine::get_reference(void *dest, Rank r, const void *src, std::size_t n,
                                std::atomic<std::uint64_t> &counter, bool immediate) {
    // Replies in whole packets of the peer's transport (udp on loopback:
    // one 64 KiB datagram, not smp's 16 KiB Medium, nor a 64 KiB Medium
    // and a nearly empty second datagram).
    const std::size_t chunk = am_->route(r)->capabilities().get_piece(am_->max_medium());
    for (std::size_t off = 0; off < n; off += chunk) {
        std::uint32_t args[7];
        split(static_cast<const char *>(src) + off, args[0], args[1]);
        args[2] = static_cast<std::uint32_t>(std::min(chunk, n - off));
        split(static_cast<char *>(dest) + off, args[3], args[4]);
        split(&counter, args[5], args[6]);
        am::Send m;
        m.handler = am::sys_get;
        m.args = args;
        m.nargs = 7;
        counter.fetch_add(1, std::memory_order_release);
        if (Status s = am_->system_request(r, m, immediate && off == 0); s != Status::ok) {
            counter.fetch_sub(1);
            if (s == Status::not_ready) return s;
            return base::report(s, "get", nullptr, "the transport failed sending to rank %u", r);
        }
    }
    return Status::ok;
}

// One body for both directions: `remote` is in rank r's segment, `local`
// is the caller's buffer (the source of a Put, the destination of a Get).
Status RmaEngine::start_reference(bool put, Rank r, void *remote, void *local, std::size_t n,
                                  std::atomic<std::uint64_t> &counter, bool immediate) {
    return put ? put_reference(r, remote, local, n, counter, immediate)
               : get_reference(local, r, remote, n, counter, immediate);
}
// The native paths; true if they took the transfer (its status in `s`).
// A blocking RDMA transfer waits for its own completion only.
bool RmaEngine::native(bool put, Rank r, void *remote, void *local, std::size_t n, Status &s) {
    s = Status::ok;
    if (copy_mapped(put, r, remote, local, n)) return true;
    conduit::Transport *t = rdma_transport(r);
    if (!t) return false;
    s = put ? t->put(r, remote, local, n) : t->get(local, r, remote, n);
    return true;
}

Status RmaEngine::start(bool put, Rank r, void *remote, void *local, std::size_t n,
                        std::atomic<std::uint64_t> &counter, bool immediate) {
    if (conduit::Transport *t = rdma_transport(r)) {
        Status s = put ? t->put_nb(r, remote, local, n, counter, immediate)
                       : t->get_nb(local, r, remote, n, counter, immediate);
        if (s != Status::ok && s != Status::not_ready)
            return base::report(s, put ? "put" : "get", nullptr, "the transport failed on rank %u", r);
        return s;
    }
    return start_reference(put, r, remote, local, n, counter, immediate);
}

Status RmaEngine::blocking(bool put, Rank r, void *remote, void *local, std::size_t n, const char *op) {
    if (Status s = check(r, remote, local, n, op); s != Status::ok) return s;
    Status s;
    if (native(put, r, remote, local, n, s)) return s;
    std::atomic<std::uint64_t> counter{0};
    s = start_reference(put, r, remote, local, n, counter);
    wait_counter(counter);
    return s;
}

Status RmaEngine::nonblocking(bool put, Rank r, void *remote, void *local, std::size_t n, sluice_event **ev,
                              const char *op, bool immediate) {
    if (!ev) return base::report(Status::argument, op, "pass where to store the event", "null event pointer");
    if (Status s = check(r, remote, local, n, op); s != Status::ok) return s;
    if (copy_mapped(put, r, remote, local, n)) {
        *ev = SLUICE_EVENT_DONE;
        return Status::ok;
    }
    auto *e = new sluice_event;
    if (Status s = start(put, r, remote, local, n, e->pending, immediate); s != Status::ok) {
        wait_counter(e->pending);
        delete e;
        return s;
    }
    *ev = e;
    return Status::ok;
}

Status RmaEngine::put_slow(Rank r, void *dest, const void *src, std::size_t n, const char *op) {
    return blocking(true, r, dest, const_cast<void *>(src), n, op);
}
Status RmaEngine::get_slow(void *dest, Rank r, const void *src, std::size_t n, const char *op) {
    return blocking(false, r, const_cast<void *>(src), dest, n, op);
}
Status RmaEngine::put_nb(Rank r, void *dest, const void *src, std::size_t n, sluice_event **ev, bool immediate) {
    return nonblocking(true, r, dest, const_cast<void *>(src), n, ev, "put_nb", immediate);
}
Status RmaEngine::get_nb(void *dest, Rank r, const void *src, std::size_t n, sluice_event **ev, bool immediate) {
    return nonblocking(false, r, const_cast<void *>(src), dest, n, ev, "get_nb", immediate);
}

Status RmaEngine::put_nb_lc(Rank r, void *dest, const void *src, std::size_t n, sluice_event **lc,
                            sluice_event **ev) {
    const char *op = "put_nb_lc";
    if (!ev || !lc)
        return base::report(Status::argument, op, "pass where to store both events", "null event pointer");
    if (Status s = check(r, dest, src, n, op); s != Status::ok) return s;
    void *local = const_cast<void *>(src);
    if (copy_mapped(true, r, dest, local, n)) {
        *lc = *ev = SLUICE_EVENT_DONE;
        return Status::ok;
    }
    auto *e = new sluice_event;
    if (Status s = start(true, r, dest, local, n, e->pending); s != Status::ok) {
        wait_counter(e->pending);
        delete e;
        return s;
    }
    if (rdma_transport(r)) {
        // The conduit reads the source until the Put completes.
        auto *proxy = new sluice_event;
        proxy->shared = e;
        e->handles.store(2, std::memory_order_relaxed);
        *lc = proxy;
    } else {
        *lc = SLUICE_EVENT_DONE;
    }
    *ev = e;
    return Status::ok;
}

Status RmaEngine::put_nbi(Rank r, void *dest, const void *src, std::size_t n, bool immediate) {
    if (Status s = check(r, dest, src, n, "put_nbi"); s != Status::ok) return s;
    if (copy_mapped(true, r, dest, const_cast<void *>(src), n)) return Status::ok;
    return start(true, r, dest, const_cast<void *>(src), n, nbi_counter(NbiCategory::puts), immediate);
}

Status RmaEngine::get_nbi(void *dest, Rank r, const void *src, std::size_t n, bool immediate) {
    if (Status s = check(r, src, dest, n, "get_nbi"); s != Status::ok) return s;
    if (copy_mapped(false, r, const_cast<void *>(src), dest, n)) return Status::ok;
    return start(false, r, const_cast<void *>(src), dest, n, nbi_counter(NbiCategory::gets), immediate);
}

void RmaEngine::publish_mapped() {
#ifndef SLUICE_DEBUG
    // A peer whose segment is not mapped here keeps {0, 0, null}: the inline
    // bounds test (<sluice.h>) relies on its size being 0.
    mapped_.assign(size_, sluice_mapped_segment_{});
    for (Rank r = 0; r < size_; ++r) {
        const am::SegmentTable::Entry &e = segments_->entries[r];
        if (native_ && e.view)
            mapped_[r] = {static_cast<std::uintptr_t>(e.base), static_cast<std::uintptr_t>(e.size), e.view};
    }
    sluice_mapped_ = {mapped_.data(), size_};
#endif
}

void RmaEngine::withdraw_mapped() {
    sluice_mapped_ = {nullptr, 0};
    mapped_.clear();
}

void RmaEngine::event_release(sluice_event *ev) {
    if (ev == SLUICE_EVENT_DONE) return;
    sluice_event *owner = ev->shared ? ev->shared : ev;
    if (ev != owner) delete ev;
    if (owner->handles.fetch_sub(1, std::memory_order_acq_rel) == 1) delete owner;
}

Status RmaEngine::event_test(sluice_event *ev) {
    if (ev == SLUICE_EVENT_DONE) return Status::ok;
    if (!event_complete(ev)) {
        if (am::AmEngine::in_handler())
            return base::report(Status::context, "event_test", "test events after the handler returns", "called from a handler");
        am_->poll();
        if (!event_complete(ev)) return Status::not_ready;
    }
    event_release(ev);
    return Status::ok;
}

Status RmaEngine::event_wait(sluice_event *ev) {
    if (ev == SLUICE_EVENT_DONE) return Status::ok;
    if (am::AmEngine::in_handler())
        return base::report(Status::context, "event_wait", "wait for events after the handler returns", "called from a handler");
    wait_counter(ev->shared ? ev->shared->pending : ev->pending);
    event_release(ev);
    return Status::ok;
}

Status RmaEngine::nbi_sync() { return nbi_sync((1u << nbi_category_count) - 1, "nbi_sync"); }

namespace {
// The checks an NBI sync or test makes before it looks at the counters.
Status nbi_check(unsigned mask, const char *op) {
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "sync after the handler returns", "called from a handler");
    if (mask == 0 || mask >> nbi_category_count)
        return base::report(Status::argument, op, "pass a mask of SLUICE_NBI_PUTS, _GETS, _AMS, _ATOMICS or SLUICE_NBI_ALL",
                            "mask 0x%x", mask);
    if (nbi_region)
        return base::report(Status::state, op, "end the access region (sluice_nbi_region_end) first",
                            "NBI sync inside an access region");
    return Status::ok;
}
} // namespace

Status RmaEngine::nbi_sync(unsigned mask, const char *op) {
    if (Status s = nbi_check(mask, op); s != Status::ok) return s;
    for (unsigned c = 0; c < nbi_category_count; ++c)
        if (mask & (1u << c)) wait_counter(nbi_outstanding[c]);
    return Status::ok;
}

Status RmaEngine::nbi_test(unsigned mask, const char *op) {
    if (Status s = nbi_check(mask, op); s != Status::ok) return s;
    auto complete = [&] {
        for (unsigned c = 0; c < nbi_category_count; ++c)
            if ((mask & (1u << c)) && nbi_outstanding[c].load(std::memory_order_acquire) != 0) return false;
        return true;
    };
    if (complete()) return Status::ok;
    am_->poll();
    return complete() ? Status::ok : Status::not_ready;
}

Status RmaEngine::nbi_region_begin() {
    if (nbi_region)
        return base::report(Status::state, "nbi_region_begin", "end the open region first (regions do not nest)",
                            "an access region is already open on this thread");
    nbi_region = new sluice_event;
    return Status::ok;
}

Status RmaEngine::nbi_region_end(sluice_event **ev) {
    const char *op = "nbi_region_end";
    if (!ev) return base::report(Status::argument, op, "pass where to store the event", "null event pointer");
    if (!nbi_region)
        return base::report(Status::state, op, "call sluice_nbi_region_begin first", "no access region is open on this thread");
    sluice_event *e = nbi_region;
    nbi_region = nullptr;
    if (e->pending.load(std::memory_order_acquire) == 0) {
        delete e;
        *ev = SLUICE_EVENT_DONE;
    } else {
        *ev = e;
    }
    return Status::ok;
}

Status RmaEngine::event_test_some(sluice_event **evs, std::size_t count, const char *op) {
    if (count && !evs) return base::report(Status::argument, op, "pass the event array", "null array of %zu events", count);
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "test events after the handler returns", "called from a handler");
    bool any_live = false, done = false;
    // A first pass without polling: what completed already costs no poll.
    for (int pass = 0; pass < 2 && !done; ++pass) {
        if (pass == 1) am_->poll();
        for (std::size_t i = 0; i < count; ++i) {
            if (evs[i] == SLUICE_EVENT_DONE) continue;
            any_live = true;
            if (!event_complete(evs[i])) continue;
            event_release(evs[i]);
            evs[i] = SLUICE_EVENT_DONE;
            done = true;
        }
        if (!any_live) return Status::ok;
    }
    return done ? Status::ok : Status::not_ready;
}

Status RmaEngine::event_wait_some(sluice_event **evs, std::size_t count) {
    for (;;) {
        Status s = event_test_some(evs, count, "event_wait_some");
        if (s != Status::not_ready) return s;
    }
}

} // namespace sluice::rma
