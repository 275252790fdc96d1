// src/conduits/common/free_list.hpp - an intrusive free list with a count:
// the send buffers, chunks, bounce buffers and atomic slots the RDMA
// conduits keep in arrays and lend out one at a time.  T has a `T *next`.
// Not thread-safe (the conduits call it under their lock).
#pragma once

#include <cstddef>

namespace sluice::conduit::common {

template <class T>
class FreeList {
public:
    // Null when empty.
    T *take() {
        T *t = head_;
        if (t) {
            head_ = t->next;
            --count_;
        }
        return t;
    }
    void give(T *t) {
        t->next = head_;
        head_ = t;
        ++count_;
    }
    // Every element of `items[0..n)`, the first taken first.
    void fill(T *items, std::size_t n) {
        for (std::size_t i = n; i-- > 0;) give(&items[i]);
    }
    T *front() const { return head_; }
    bool empty() const { return head_ == nullptr; }
    std::size_t size() const { return count_; }
    void clear() {
        head_ = nullptr;
        count_ = 0;
    }

private:
    T *head_ = nullptr;
    std::size_t count_ = 0;
};

} // namespace sluice::conduit::common
