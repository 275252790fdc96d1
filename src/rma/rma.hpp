// src/rma/rma.hpp - Put/Get semantics and completion.
//
// Native path: when a peer's segment is mapped here (a load/store conduit)
// and SLUICE_NATIVE_RMA is on, Put/Get are memcpy and complete at once.  On
// an RDMA conduit (native_rma without load_store) they are the transport's
// non-blocking put_nb/get_nb, whose completion, reaped by poll, drops the
// event's or the NBI counter.  Otherwise the reference Put/Get over AM: a Put is a chain of AM Long
// requests into the target segment, each acknowledged by a reply; a Get is a
// chain of requests each answered by a Medium reply that the reply handler
// copies into the destination.
#pragma once

#include "am/am.hpp"

#include <sluice.h>

#include <atomic>
#include <cstring>
#include <vector>

// The object behind sluice_event_t: complete when `pending` is 0.  A proxy
// (a local-completion event of sluice_put_nb_lc where the conduit reports
// only full completion) has no count of its own: it completes with
// `shared`, which counts its handles in `handles`, so the two handles are
// waited in any order and each released once (RmaEngine::event_release).
struct sluice_event {
    std::atomic<std::uint64_t> pending{0};
    sluice_event *shared = nullptr;
    std::atomic<std::uint32_t> handles{1};
};

namespace sluice::rma {

using am::Rank;
using base::Status;

// Implicit (NBI) operations count on a thread-local counter per category
// (sluice_nbi_sync_cat), or, while the thread has an access region open
// (sluice_nbi_region_begin/end), on the region's event.
enum class NbiCategory : unsigned { puts = 0, gets = 1, ams = 2, atomics = 3 };
inline constexpr unsigned nbi_category_count = 4;
std::atomic<std::uint64_t> &nbi_counter(NbiCategory category);

class RmaEngine {
public:
    void configure(am::AmEngine *am, const am::SegmentTable *segments, Rank size, bool native);
    void system_handlers_register(am::AmEngine &am);

    // Blocking Put/Get: the common case (a mapped peer, valid arguments) is
    // inline; everything else, errors included, takes the out-of-line path.
    Status put(Rank r, void *dest, const void *src, std::size_t n, const char *op) {
        if (char *view = fast_view(r, dest, src, n)) {
            std::memcpy(view, src, n);
            return Status::ok;
        }
        return put_slow(r, dest, src, n, op);
    }
    Status get(void *dest, Rank r, const void *src, std::size_t n, const char *op) {
        if (char *view = fast_view(r, src, dest, n)) {
            std::memcpy(dest, view, n);
            return Status::ok;
        }
        return get_slow(dest, r, src, n, op);
    }
    // `immediate` (SLUICE_FLAG_IMMEDIATE): Status::not_ready, nothing
    // started, where the transfer would first have to wait (the conduit's
    // queue or registrations, or room for the first request of a transfer
    // over AM).
    Status put_nb(Rank r, void *dest, const void *src, std::size_t n, sluice_event **ev, bool immediate = false);
    Status get_nb(void *dest, Rank r, const void *src, std::size_t n, sluice_event **ev, bool immediate = false);
    Status put_nbi(Rank r, void *dest, const void *src, std::size_t n, bool immediate = false);
    Status get_nbi(void *dest, Rank r, const void *src, std::size_t n, bool immediate = false);
    // Publishes the mapped peer segments for the inline Put/Get of
    // <sluice.h> (after segment attach), and withdraws them (first thing in
    // finalize).  Debug builds publish nothing: every call is checked.
    void publish_mapped();
    void withdraw_mapped();
    Status event_test(sluice_event *ev);
    Status event_wait(sluice_event *ev);
    static bool event_complete(const sluice_event *ev) {
        const sluice_event *e = ev->shared ? ev->shared : ev;
        return e->pending.load(std::memory_order_acquire) == 0;
    }
    // Drops one handle of a completed event (SLUICE_EVENT_DONE: nothing).
    static void event_release(sluice_event *ev);
    // sluice_put_nb_lc: `*lc` completes once `src` may be reused, `*ev` as
    // for put_nb.  Mapped and AM paths copy or send the source before they
    // return (*lc = SLUICE_EVENT_DONE); native RDMA reads it until the
    // operation completes, so *lc is then a proxy of *ev.
    Status put_nb_lc(Rank r, void *dest, const void *src, std::size_t n, sluice_event **lc, sluice_event **ev);
    Status nbi_sync();
    // Waits for the NBI operations of the categories in `mask` (bit 1 << c
    // per NbiCategory c) this thread issued outside access regions.
    Status nbi_sync(unsigned mask, const char *op);
    // Polls once; Status::ok when those operations completed, else not_ready.
    Status nbi_test(unsigned mask, const char *op);
    // Access regions: the NBI operations this thread issues between begin
    // and end complete one event (end writes it; SLUICE_EVENT_DONE when
    // they all completed already).  Regions do not nest; no NBI sync inside.
    Status nbi_region_begin();
    Status nbi_region_end(sluice_event **ev);
    // Events: the first (`some`) or every completed one of a list; the
    // completed ones are released and set to SLUICE_EVENT_DONE.
    Status event_test_some(sluice_event **evs, std::size_t count, const char *op);
    Status event_wait_some(sluice_event **evs, std::size_t count);

    // Polls until `*counter` is 0 (the reference path's completion).
    void wait_counter(std::atomic<std::uint64_t> &counter);

    // For the VIS engine (vis.cpp), which builds on these pieces.
    // Starts a transfer that completes when `counter` drops back: native
    // RDMA (non-blocking at the transport) when the route has it, else the
    // reference transfer over AM.  Arguments checked by the caller.
    Status start(bool put, Rank r, void *remote, void *local, std::size_t n, std::atomic<std::uint64_t> &counter,
                 bool immediate = false);
    // Where rank r's segment is mapped here when RMA to it is a copy, else null.
    char *mapped_segment(Rank r) const {
        const am::SegmentTable::Entry &e = segments_->entries[r];
        return native_ ? e.view : nullptr;
    }
    const am::SegmentTable &segments() const { return *segments_; }
    Rank size() const { return size_; }
    am::AmEngine &am() const { return *am_; }

private:
    Status blocking(bool put, Rank r, void *remote, void *local, std::size_t n, const char *op);
    Status nonblocking(bool put, Rank r, void *remote, void *local, std::size_t n, sluice_event **ev,
                       const char *op, bool immediate);
    Status start_reference(bool put, Rank r, void *remote, void *local, std::size_t n,
                           std::atomic<std::uint64_t> &counter, bool immediate = false);
    bool native(bool put, Rank r, void *remote, void *local, std::size_t n, Status &s);
    Status put_slow(Rank r, void *dest, const void *src, std::size_t n, const char *op);
    Status get_slow(void *dest, Rank r, const void *src, std::size_t n, const char *op);
    // The mapping of a valid remote range of a load/store peer, or null
    // (then the slow path checks, reports and picks the transfer).
    char *fast_view(Rank r, const void *remote, const void *local, std::size_t n) const {
        if (r >= size_ || !native_ || !segments_->attached || am::AmEngine::in_handler() || !local) return nullptr;
        const am::SegmentTable::Entry &e = segments_->entries[r];
        const auto a = reinterpret_cast<std::uint64_t>(remote);
        if (!e.view || a < e.base || n > e.size || a - e.base > e.size - n) return nullptr;
        return e.view + (a - e.base);
    }
    // Where `remote` of rank r is mapped here, or null for the AM path.
    char *native_view(Rank r, const void *remote) const {
        const am::SegmentTable::Entry &e = segments_->entries[r];
        if (!native_ || !e.view) return nullptr;
        return e.view + (reinterpret_cast<std::uint64_t>(remote) - e.base);
    }
    // RDMA conduits that do not map peer segments move bytes in put/get_impl.
    conduit::Transport *rdma_transport(Rank r) const {
        conduit::Transport *t = am_->route(r);
        const auto &caps = t->capabilities();
        return native_ && caps.native_rma && !caps.load_store ? t : nullptr;
    }
    // A load/store peer: copies through the mapping; false when there is none.
    bool copy_mapped(bool put, Rank r, void *remote, void *local, std::size_t n) const {
        char *view = native_view(r, remote);
        if (!view) return false;
        if (put) sluice_copy_(view, local, n);
        else sluice_copy_(local, view, n);
        return true;
    }
    Status check(Rank r, const void *remote, const void *local, std::size_t n, const char *op) const;
    // Starts the reference transfer; `counter` counts outstanding chunks.
    // `immediate`: the first chunk's request is tried once (not_ready:
    // nothing started); the rest wait for room as usual.
    Status put_reference(Rank r, void *dest, const void *src, std::size_t n,
                         std::atomic<std::uint64_t> &counter, bool immediate);
    Status get_reference(void *dest, Rank r, const void *src, std::size_t n,
                         std::atomic<std::uint64_t> &counter, bool immediate);

    std::vector<sluice_mapped_segment_> mapped_;  // what publish_mapped() showed
    am::AmEngine *am_ = nullptr;
    const am::SegmentTable *segments_ = nullptr;
    Rank size_ = 0;
    bool native_ = true;
};

} // namespace sluice::rma
