// tests/sim/window.hpp - the simulator's clock: windows of one latency.
//
// Every message between nodes takes exactly the latency L, so whatever a
// node does during [kL, (k+1)L) reaches another node in the next window at
// the earliest: within a window the nodes are independent (the lookahead of
// conservative parallel simulation).  The simulator therefore runs window
// after window and, inside one, node after node, each node's own events in
// time order.  A node's engine, queues and ledger entries stay in cache for
// all its events of the window, instead of being fetched again for every
// event of a global time order; each node still sees exactly the order it
// would have in one.
//
// Messages sent during a window are collected, then sorted by destination,
// time and sending order; CPU completions that fall in a later window wait
// in a small ring of per-window node lists.  No heap, no allocation per event
// once the vectors have grown.
#pragma once

#include "credit/credit.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace sluice::sim {

class WindowClock {
public:
    static constexpr std::int64_t never = std::numeric_limits<std::int64_t>::max();

    struct Arrival {
        std::uint64_t key;     // destination << 32 | offset of the arrival in its window
        std::uint32_t record;
        std::uint32_t order;   // sending order within the window, the last tie-break
    };

    // `width`: the latency; `longest`: the longest CPU time of one item.
    WindowClock(std::int64_t width, std::int64_t longest)
        : width_(std::max<std::int64_t>(width, 1)),
          ring_(static_cast<std::size_t>(std::max<std::int64_t>(longest, 0) / width_ + 2)) {}

    std::int64_t width() const { return width_; }
    std::int64_t start() const { return index_ * width_; }
    std::int64_t end() const { return start() + width_; }

    // A message sent at `now` (in this window) reaches `dst` one width later.
    void send(credit::Peer dst, std::int64_t now, std::uint32_t record) {
        next_.push_back(Arrival{static_cast<std::uint64_t>(dst) << 32 | static_cast<std::uint32_t>(now - start()),
                                record, static_cast<std::uint32_t>(next_.size())});
    }
    // Node `n`'s CPU finishes at `t`, in a later window.
    void done_later(credit::Peer n, std::int64_t t) {
        ring_[static_cast<std::size_t>(t / width_) % ring_.size()].push_back(n);
        ++pending_done_;
    }

    // Moves to the next window with anything in it; false when nothing is
    // left anywhere.
    bool advance() {
        for (;;) {
            if (next_.empty() && pending_done_ == 0) return false;
            ++index_;
            now_.swap(next_);
            next_.clear();
            done_.clear();
            done_.swap(ring_[static_cast<std::size_t>(index_) % ring_.size()]);
            pending_done_ -= done_.size();
            if (now_.empty() && done_.empty()) continue;
            std::sort(now_.begin(), now_.end(), [](const Arrival &a, const Arrival &b) {
                return a.key != b.key ? a.key < b.key : a.order < b.order;
            });
            std::sort(done_.begin(), done_.end());
            return true;
        }
    }

    // This window: arrivals sorted by node then time, nodes whose CPU finishes.
    const std::vector<Arrival> &arrivals() const { return now_; }
    const std::vector<credit::Peer> &done_nodes() const { return done_; }
    static credit::Peer node_of(const Arrival &a) { return static_cast<credit::Peer>(a.key >> 32); }
    std::int64_t time_of(const Arrival &a) const { return start() + static_cast<std::int64_t>(a.key & 0xffffffffu); }

    std::size_t bytes() const {
        std::size_t b = (now_.capacity() + next_.capacity()) * sizeof(Arrival) + done_.capacity() * sizeof(credit::Peer);
        for (const auto &r : ring_) b += r.capacity() * sizeof(credit::Peer);
        return b;
    }

private:
    std::int64_t width_;
    std::int64_t index_ = 0;
    std::vector<Arrival> now_, next_;
    std::vector<credit::Peer> done_;
    std::vector<std::vector<credit::Peer>> ring_;
    std::size_t pending_done_ = 0;
};

} // namespace sluice::sim
