// src/conduits/common/buffer_pool.hpp - packet-sized buffers, reused: a
// packet sent stays in its buffer until it is acknowledged, a packet
// received until its handler has run (udp).  A buffer is allocated the
// first time the pool is empty and kept until clear(): the pool holds the
// most buffers ever in use at once.  Not zeroed: pages are touched only as
// used.  Not thread-safe (udp calls it under its lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace sluice::conduit::common {

class BufferPool {
public:
    // The size of every buffer; before the first get().
    void configure(std::size_t bytes) { bytes_ = bytes; }
    std::size_t buffer_bytes() const { return bytes_; }
    std::uint8_t *get() {
        if (free_.empty()) {
            all_.emplace_back(new std::uint8_t[bytes_]);
            return all_.back().get();
        }
        std::uint8_t *b = free_.back();
        free_.pop_back();
        return b;
    }
    // Gives back a buffer get() returned.
    void put(std::uint8_t *b) { free_.push_back(b); }
    // Buffers allocated so far, and those not in use.
    std::size_t allocated() const { return all_.size(); }
    std::size_t idle() const { return free_.size(); }
    void clear() {
        free_.clear();
        all_.clear();
    }

private:
    std::size_t bytes_ = 0;
    std::vector<std::uint8_t *> free_;
    std::vector<std::unique_ptr<std::uint8_t[]>> all_;
};

} // namespace sluice::conduit::common
