// src/conduits/common/fifo.hpp - a first-in first-out queue on one growing
// power-of-two array, indexed from its front: a round trip pushes and pops
// one element without allocating (std::deque allocates and frees a block
// every few).  udp keeps its per-peer send queues and its ready queue in
// one.  Not thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace sluice::conduit::common {

template <class T> class Fifo {
public:
    bool empty() const { return head_ == tail_; }
    std::size_t size() const { return tail_ - head_; }
    // Element i from the front (0: the front); i < size().
    T &operator[](std::size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    const T &operator[](std::size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    T &front() { return (*this)[0]; }
    T &back() { return (*this)[size() - 1]; }
    void push_back(const T &v) {
        if (size() == slots_.size()) grow();
        slots_[tail_++ & (slots_.size() - 1)] = v;
    }
    T pop_front() { return slots_[head_++ & (slots_.size() - 1)]; }
    void clear() {
        slots_.clear();
        head_ = tail_ = 0;
    }

private:
    void grow() {
        std::vector<T> bigger(std::max<std::size_t>(16, 2 * slots_.size()));
        for (std::size_t i = 0; i < size(); ++i) bigger[i] = (*this)[i];
        tail_ = size();
        head_ = 0;
        slots_.swap(bigger);
    }
    std::vector<T> slots_;
    std::size_t head_ = 0, tail_ = 0;
};

} // namespace sluice::conduit::common
