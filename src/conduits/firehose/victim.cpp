// src/conduits/firehose/victim.cpp - the victim pool (victim.hpp).
#include "conduits/firehose/victim.hpp"
#include "sluice_config.h"

#include <unistd.h>

#include <algorithm>
#include <bit>

namespace sluice::rma::firehose {

using base::Status;

Status VictimPool::create(conduit::Transport &t, const VictimConfig &c, std::unique_ptr<VictimPool> &out) {
    const long page = ::sysconf(_SC_PAGESIZE);
    const auto page_bytes = static_cast<std::size_t>(page > 0 ? page : SLUICE_PAGE_SIZE);
    if (!std::has_single_bit(c.region_bytes) || c.region_bytes < page_bytes)
        return base::report(Status::argument, "firehose", "give SLUICE_FIREHOSE_MAXREGION_SIZE a power of two of a page or more",
                            "region size %zu bytes (page %zu)", c.region_bytes, page_bytes);
    if (!c.max_regions || c.max_bytes < c.region_bytes)
        return base::report(Status::argument, "firehose",
                            "allow at least one region of SLUICE_FIREHOSE_MAXREGION_SIZE (SLUICE_FIREHOSE_MAXVICTIM_R, _M)",
                            "%zu regions, %zu bytes, region size %zu", c.max_regions, c.max_bytes, c.region_bytes);
    out.reset(new VictimPool(t, c));
    out->page_ = page_bytes;
    // The table sized for every region it may hold, scaled.
    out->table_.reserve(std::max<std::size_t>(8, static_cast<std::size_t>(static_cast<double>(c.max_regions) * c.table_scale)));
    return Status::ok;
}

std::size_t VictimPool::table_buckets() const {
    std::lock_guard<std::mutex> guard(lock_);
    return table_.bucket_count();
}

VictimPool::~VictimPool() {
    for (auto &[window, e] : table_) t_.mem_deregister(e.region);
}

Status VictimPool::acquire(const void *addr, std::size_t len, Pin &pin) {
    const auto at = reinterpret_cast<std::uintptr_t>(addr);
    const std::uintptr_t window = at & ~(config_.region_bytes - 1);
    if (!len || !addr || ((at + len - 1) & ~(config_.region_bytes - 1)) != window)
        return base::report(Status::argument, "firehose pin", "pin a non-empty range within one region (VictimPool::pieces)",
                            "%zu bytes at %p, region size %zu", len, addr, config_.region_bytes);
    std::uintptr_t begin = at & ~(page_ - 1);
    std::uintptr_t end = std::min((at + len + page_ - 1) & ~(page_ - 1), window + config_.region_bytes);
    std::lock_guard<std::mutex> guard(lock_);
    if (auto it = table_.find(window); it != table_.end()) {
        Entry &e = it->second;
        if (!e.stale && e.begin <= begin && end <= e.end) {
            if (!e.refs++) lru_.erase(e.lru);
            ++stats_.hits;
            pin = Pin{&e.region, window};
            return Status::ok;
        }
        if (e.refs) {  // in use and too small (or going away): one registration per window
            ++stats_.busy;
            return Status::not_ready;
        }
        begin = std::min(begin, e.begin);  // grow it: the new one covers both
        end = std::max(end, e.end);
        drop(it);
    }
    if (!room_for(end - begin)) {
        ++stats_.busy;
        return Status::not_ready;
    }
    conduit::MemRegion region;
    if (Status s = t_.mem_register(reinterpret_cast<void *>(begin), end - begin, region); s != Status::ok) return s;
    Entry &e = table_[window];
    e.region = region;
    e.begin = begin;
    e.end = end;
    e.refs = 1;
    ++stats_.misses;
    ++stats_.regions;
    stats_.pinned_bytes += end - begin;
    stats_.peak_pinned_bytes = std::max(stats_.peak_pinned_bytes, stats_.pinned_bytes);
    pin = Pin{&e.region, window};
    return Status::ok;
}

void VictimPool::release(const Pin &pin) {
    std::lock_guard<std::mutex> guard(lock_);
    auto it = table_.find(pin.window);
    if (it == table_.end() || !it->second.refs) return;
    Entry &e = it->second;
    if (--e.refs) return;
    if (e.stale) {
        drop(it);
        return;
    }
    e.lru = lru_.insert(lru_.end(), pin.window);
}

void VictimPool::invalidate(const void *addr, std::size_t len) {
    if (!len) return;
    const auto lo = reinterpret_cast<std::uintptr_t>(addr);
    const std::uintptr_t hi = lo + len;  // exclusive
    std::lock_guard<std::mutex> guard(lock_);
    auto overlaps = [&](const Entry &e) { return e.begin < hi && lo < e.end; };
    auto forget = [&](Table::iterator it) {
        ++stats_.invalidated;
        if (it->second.refs) {
            it->second.stale = true;  // its transfers finish; then it goes
            return std::next(it);
        }
        auto next = std::next(it);
        drop(it);
        return next;
    };
    const std::uintptr_t first = lo & ~(config_.region_bytes - 1);
    const std::size_t windows = (hi - 1 - first) / config_.region_bytes + 1;
    if (windows > table_.size()) {  // a large range: look at what is registered
        for (auto it = table_.begin(); it != table_.end();)
            it = overlaps(it->second) && !it->second.stale ? forget(it) : std::next(it);
        return;
    }
    for (std::size_t i = 0; i < windows; ++i)
        if (auto it = table_.find(first + i * config_.region_bytes); it != table_.end() && overlaps(it->second) && !it->second.stale)
            forget(it);
}

VictimStats VictimPool::stats() const {
    std::lock_guard<std::mutex> guard(lock_);
    return stats_;
}

void VictimPool::drop(Table::iterator it) {
    Entry &e = it->second;
    if (!e.refs && !e.stale) lru_.erase(e.lru);
    t_.mem_deregister(e.region);
    --stats_.regions;
    stats_.pinned_bytes -= e.end - e.begin;
    table_.erase(it);
}

bool VictimPool::room_for(std::size_t bytes) {
    if (bytes > config_.max_bytes) return false;
    while (stats_.regions + 1 > config_.max_regions || stats_.pinned_bytes + bytes > config_.max_bytes) {
        if (lru_.empty()) return false;
        drop(table_.find(lru_.front()));
        ++stats_.evictions;
    }
    return true;
}

} // namespace sluice::rma::firehose
