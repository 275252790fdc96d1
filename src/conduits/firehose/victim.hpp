// src/conduits/firehose/victim.hpp - firehose's victim pool: registrations of
// local memory outside the segment (a Put's source, a Get's destination),
// kept after use so the next transfer from the same buffer finds its pages
// registered.  README.md in this folder.
//
// Memory is cut into aligned windows of `region_bytes` (a power of two,
// at least a page).  A pin covers the pages a transfer touches within one
// window; a transfer that crosses windows is pinned piece by piece
// (`pieces()`), so one registration never spans two windows and every
// window has at most one.  A registration is reference counted while
// transfers use it and goes on the least-recently-used list when the
// last one ends; a miss that would pass the bounds (regions, bytes)
// deregisters from the front of that list.  When every registration is in
// use, acquire() answers Status::not_ready and the caller sends through a
// bounce buffer instead: the pool never waits.
//
// Memory the program frees or unmaps must never be reached through a
// registration made for what was there before: invalidate() drops every
// registration overlapping a range (an in-use one once its last transfer
// ends, and never handed out again).  Whoever learns of unmaps calls it.
//
// Thread-safe: one lock around the table.
#pragma once

#include "base/status.hpp"
#include "conduits/transport.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>

namespace sluice::rma::firehose {

struct VictimConfig {
    std::size_t region_bytes = std::size_t{128} << 10;  // window size: SLUICE_FIREHOSE_MAXREGION_SIZE
    std::size_t max_regions = 1024;                     // SLUICE_FIREHOSE_MAXVICTIM_R
    std::size_t max_bytes = std::size_t{128} << 20;     // SLUICE_FIREHOSE_MAXVICTIM_M
    double table_scale = 1;                             // SLUICE_FIREHOSE_TABLE_SCALE: of max_regions
};

struct VictimStats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;        // registered anew (or grown)
    std::uint64_t evictions = 0;     // deregistered to make room
    std::uint64_t busy = 0;          // refused: every registration in use
    std::uint64_t invalidated = 0;   // dropped because their memory went away
    std::size_t regions = 0;         // registered now
    std::size_t pinned_bytes = 0;    // registered now
    std::size_t peak_pinned_bytes = 0;  // the most registered at any time
};

class VictimPool {
public:
    // `t` registers through its memory-domain hooks (mem_register); it
    // must outlive the pool.  Refuses (Status::argument, reported) a
    // window that is not a power of two of at least a page, and bounds
    // that hold no window.
    static base::Status create(conduit::Transport &t, const VictimConfig &c, std::unique_ptr<VictimPool> &out);
    ~VictimPool();  // deregisters everything
    VictimPool(const VictimPool &) = delete;
    VictimPool &operator=(const VictimPool &) = delete;

    // A registration held by one transfer; release() it when the transfer
    // completed.
    struct Pin {
        const conduit::MemRegion *region = nullptr;  // covers the range acquired
        std::uintptr_t window = 0;
    };
    // Pins [addr, addr + len), which must lie in one window (len > 0).
    // Status::not_ready: every registration is in use (use a bounce
    // buffer); another status: the transport refused to register.
    base::Status acquire(const void *addr, std::size_t len, Pin &pin);
    void release(const Pin &pin);

    // Drops what overlaps [addr, addr + len): the memory went away.
    void invalidate(const void *addr, std::size_t len);

    // Calls piece(addr, len) for each part of [addr, addr + len) within
    // one window, in order; stops at and returns the first status that is
    // not ok.
    template <class Piece> base::Status pieces(const void *addr, std::size_t len, Piece piece) const {
        auto at = reinterpret_cast<std::uintptr_t>(addr);
        while (len) {
            const std::size_t room = config_.region_bytes - (at & (config_.region_bytes - 1));
            const std::size_t n = len < room ? len : room;
            if (base::Status s = piece(reinterpret_cast<const void *>(at), n); s != base::Status::ok) return s;
            at += n;
            len -= n;
        }
        return base::Status::ok;
    }

    VictimStats stats() const;
    const VictimConfig &config() const { return config_; }
    // The table's buckets (its size, set by SLUICE_FIREHOSE_TABLE_SCALE).
    std::size_t table_buckets() const;

private:
    VictimPool(conduit::Transport &t, const VictimConfig &c) : t_(t), config_(c) {}

    struct Entry {
        conduit::MemRegion region;
        std::uintptr_t begin = 0, end = 0;  // the registered pages
        unsigned refs = 0;
        bool stale = false;                 // invalidated while in use
        std::list<std::uintptr_t>::iterator lru;  // valid while refs == 0
    };
    using Table = std::unordered_map<std::uintptr_t, Entry>;
    // Deregisters and forgets an unused entry.
    void drop(Table::iterator it);
    // Makes room for `bytes` more: evicts unused entries, oldest first.
    bool room_for(std::size_t bytes);

    conduit::Transport &t_;
    VictimConfig config_;
    std::size_t page_ = 0;              // set by create
    mutable std::mutex lock_;
    Table table_;                       // by window
    std::list<std::uintptr_t> lru_;     // windows with refs == 0, oldest first
    VictimStats stats_;
};

} // namespace sluice::rma::firehose
