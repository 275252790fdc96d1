// tests/sim/event_queue.hpp - the simulator's clock.  Every event is due a
// fixed delay after the event that schedules it (a latency, a handler
// time, ...), so each delay gets a FIFO lane whose times never decrease,
// and the next event is the earliest lane head: O(1) per event, no heap,
// no allocation once the rings have grown.  Ties go to the lower lane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace sluice::sim {

struct Event {
    std::int64_t time;
    std::uint32_t record;
};

class Lane {
public:
    bool empty() const { return count_ == 0; }
    std::size_t size() const { return count_; }
    const Event &front() const { return ring_[head_]; }
    // The k-th event after the front, if there is one (for prefetching).
    const Event *peek(std::size_t k) const { return k < count_ ? &ring_[(head_ + k) & mask_] : nullptr; }
    void pop() {
        head_ = (head_ + 1) & mask_;
        --count_;
    }
    void push(const Event &e) {
        if (count_ == ring_.size()) grow();
        ring_[(head_ + count_) & mask_] = e;
        ++count_;
    }
    std::size_t bytes() const { return ring_.capacity() * sizeof(Event); }

private:
    void grow() {
        std::vector<Event> bigger(ring_.empty() ? 1024 : ring_.size() * 2);
        for (std::size_t i = 0; i < count_; ++i) bigger[i] = ring_[(head_ + i) & mask_];
        ring_.swap(bigger);
        head_ = 0;
        mask_ = ring_.size() - 1;
    }
    std::vector<Event> ring_;
    std::size_t head_ = 0, count_ = 0, mask_ = 0;
};

template <unsigned Lanes>
class EventQueue {
public:
    void delay_set(unsigned lane, std::int64_t delay) { delay_[lane] = delay; }
    void push(unsigned lane, std::int64_t now, std::uint32_t record) {
        lanes_[lane].push(Event{now + delay_[lane], record});
        ++pending_;
    }
    bool empty() const { return pending_ == 0; }
    std::size_t size() const { return pending_; }
    // The earliest event and its lane; false if none.
    bool pop(Event &e, unsigned &lane) {
        if (!pending_) return false;
        std::int64_t best = std::numeric_limits<std::int64_t>::max();
        unsigned at = 0;
        for (unsigned i = 0; i < Lanes; ++i) {
            if (!lanes_[i].empty() && lanes_[i].front().time < best) {
                best = lanes_[i].front().time;
                at = i;
            }
        }
        e = lanes_[at].front();
        lanes_[at].pop();
        lane = at;
        --pending_;
        return true;
    }
    // Calls f(record) for the k-th event of every lane: the run loop
    // prefetches what those events will touch.
    template <typename F>
    void ahead(std::size_t k, F &&f) const {
        for (const Lane &l : lanes_)
            if (const Event *e = l.peek(k)) f(e->record);
    }
    std::size_t bytes() const {
        std::size_t b = 0;
        for (const Lane &l : lanes_) b += l.bytes();
        return b;
    }

private:
    Lane lanes_[Lanes];
    std::int64_t delay_[Lanes] = {};
    std::size_t pending_ = 0;
};

} // namespace sluice::sim
