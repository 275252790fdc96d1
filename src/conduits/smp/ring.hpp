// src/conduits/smp/ring.hpp - a single-producer single-consumer queue of
// variable-length AM records in shared memory.
//
// Why this shape: a same-host AM round trip should cost what one cache line
// moving each way costs.  The consumer therefore spins on the first word of
// the next record itself (no separate tail index to read first), and the
// producer reads the consumer's head only when its cached copy says the ring
// is full.
//
// Records start on 64-byte lines.  The first word of a record is its control
// word: the record's size in bytes, `skip_bit` for the filler that pads the
// end of the ring when a record would not fit contiguously, and a lap tag:
// `tag_even` or `tag_odd` by the parity of the lap the record was written
// in.  A line's first word is only ever 0 or a control word of the current
// or the previous lap at that place: the consumer zeroes the first word of
// every line a record or filler spanned except its first line, and every lap
// covers every line.  So one compare of the tag bits with the tag it expects
// tells the consumer whether a record is there (0 and last lap's words both
// differ), and a
// one-line record (every Short AM) costs the consumer no store into the line
// it read, which would otherwise stall its next send behind an ownership
// transfer of that line.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sluice::conduit::smp {

inline constexpr std::size_t line_size = 64;
inline constexpr std::uint32_t skip_bit = 0x80000000u;
inline constexpr std::uint32_t tag_odd = 0x40000000u;
inline constexpr std::uint32_t tag_even = 0x20000000u;
inline constexpr std::uint32_t tag_mask = tag_odd | tag_even;
inline constexpr std::uint32_t size_mask = tag_even - 1;
inline constexpr std::size_t max_ring_bytes = std::size_t{1} << 28;  // sizes fit size_mask

// The tag of records written at `position` of a ring of `bytes` (a power of two).
inline std::uint32_t lap_tag(std::uint64_t position, std::size_t bytes) {
    return position & bytes ? tag_odd : tag_even;
}

inline constexpr std::size_t line_align(std::size_t n) {
    return (n + line_size - 1) & ~(line_size - 1);
}

// The shared part of one ring: the consumer's published head on its own line,
// then the data area.
struct alignas(line_size) RingShared {
    std::atomic<std::uint64_t> head;
    char pad[line_size - sizeof(std::atomic<std::uint64_t>)];
    // data follows: `bytes` bytes
    char *data() { return reinterpret_cast<char *>(this + 1); }
};
static_assert(sizeof(RingShared) == line_size);

inline constexpr std::size_t ring_footprint(std::size_t bytes) {
    return sizeof(RingShared) + bytes;
}

inline std::atomic<std::uint32_t> &control_word(char *at) {
    return *reinterpret_cast<std::atomic<std::uint32_t> *>(at);
}

// Producer side; lives in the sender's private memory.  Not thread-safe:
// the conduit serializes producers of one ring.
class RingProducer {
public:
    void attach(RingShared *shared, std::size_t bytes) {
        shared_ = shared;
        data_ = shared->data();
        bytes_ = bytes;
        tail_ = 0;
        cached_head_ = 0;
    }

    // Space for a record of `size` bytes (size < 2^29), or null if the ring
    // is full now.  Fill it after the first 4 bytes, then commit().
    char *reserve(std::size_t size) {
        std::size_t need = line_align(size);
        std::size_t offset = tail_ & (bytes_ - 1);
        std::size_t filler = offset + need > bytes_ ? bytes_ - offset : 0;
        if (!has_room(filler + need)) return nullptr;
        if (filler) {
            control_word(data_ + offset).store(skip_bit | lap_tag(tail_, bytes_) | static_cast<std::uint32_t>(filler),
                                               std::memory_order_release);
            tail_ += filler;
            offset = 0;
        }
        pending_ = need;
        pending_size_ = static_cast<std::uint32_t>(size) | lap_tag(tail_, bytes_);
        return data_ + offset;
    }

    // Publishes the record reserved last: its control word goes last.
    void commit(char *record) {
        control_word(record).store(pending_size_, std::memory_order_release);
        tail_ += pending_;
    }

private:
    bool has_room(std::size_t n) {
        if (tail_ + n - cached_head_ <= bytes_) return true;
        cached_head_ = shared_->head.load(std::memory_order_acquire);
        return tail_ + n - cached_head_ <= bytes_;
    }

    RingShared *shared_ = nullptr;
    char *data_ = nullptr;
    std::size_t bytes_ = 0;
    std::uint64_t tail_ = 0;
    std::uint64_t cached_head_ = 0;
    std::size_t pending_ = 0;
    std::uint32_t pending_size_ = 0;
};

// Consumer side; lives in the receiver's private memory.
class RingConsumer {
public:
    void attach(RingShared *shared, std::size_t bytes) {
        shared_ = shared;
        data_ = shared->data();
        bytes_ = bytes;
        head_.store(0, std::memory_order_relaxed);
        published_ = 0;
    }

    // The next record, or null.  Fillers are consumed on the way.  Only the
    // thread holding the conduit's per-ring flag calls peek and release.
    char *peek(std::uint32_t &size) {
        for (;;) {
            const std::uint64_t head = head_.load(std::memory_order_relaxed);
            char *at = data_ + (head & (bytes_ - 1));
            std::uint32_t c = control_word(at).load(std::memory_order_acquire);
            if (!current(c, head)) return nullptr;
            if (c & skip_bit) {
                release(at, c & size_mask);
                continue;
            }
            size = c & size_mask;
            return at;
        }
    }

    // Consumes the record at `at` (of `size` bytes).  The producer sees the
    // space again at the next publish(), or here once a quarter of the ring
    // waits: one store to the shared head per batch, not per message, yet
    // large records still stream.
    void release(char *at, std::uint32_t size) {
        std::size_t span = line_align(size);
        for (std::size_t off = line_size; off < span; off += line_size)
            control_word(at + off).store(0, std::memory_order_relaxed);
        const std::uint64_t head = head_.load(std::memory_order_relaxed) + span;
        head_.store(head, std::memory_order_relaxed);
        if (head - published_ >= bytes_ / 4) publish();
    }
    void publish() {
        published_ = head_.load(std::memory_order_relaxed);
        shared_->head.store(published_, std::memory_order_release);
    }

    // Cheap emptiness test for any poller (no side effects; other threads
    // may be consuming, so the head it reads can be stale: a hint only).
    // A head stale by a whole lap points into a record the producer may be
    // writing; the answer is then meaningless but harmless, because drain()
    // re-reads everything under the ring's flag.  ThreadSanitizer would call
    // that read a race, so it is not instrumented.
    __attribute__((no_sanitize("thread"))) bool ready() const {
        const std::uint64_t head = head_.load(std::memory_order_relaxed);
        return current(control_word(data_ + (head & (bytes_ - 1))).load(std::memory_order_acquire), head);
    }

private:
    // A control word written in the lap of `head` (not 0, not a lap ago).
    bool current(std::uint32_t c, std::uint64_t head) const {
        return (c & tag_mask) == lap_tag(head, bytes_);
    }

    RingShared *shared_ = nullptr;
    char *data_ = nullptr;
    std::size_t bytes_ = 0;
    std::atomic<std::uint64_t> head_{0};
    std::uint64_t published_ = 0;
};

} // namespace sluice::conduit::smp
