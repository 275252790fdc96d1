// src/conduits/smp/ring.hpp - a single-producer single-consumer queue of
// variable-length AM records in shared memory.
//
// Why this shape: a same-host AM round trip should cost what one cache line
// moving each way costs.  The consumer therefore spins on the first word of
// the next record itself (no separate tail index to read first), and the
// producer reads the consumer's head when its cached copy says the ring is
// full, or early, right after a commit (refresh_head), where the load's miss
// overlaps the record's flight instead of standing before the next send.
//
// Records start on 64-byte lines.  A record's first 8 bytes are written
// last, in one store: the low half is its control word, the high half 4
// bytes of the conduit's own (its message header).  The control word is the
// record's size in bytes, `skip_bit` for the filler that pads the end of the
// ring when a record would not fit contiguously, and a lap tag: `tag_even`
// or `tag_odd` by the parity of the lap the record was written in.  Where
// the consumer looks for the next record, the first word is only ever 0, a
// control word of the previous lap at that place, or the record itself; so
// one compare of the tag bits with the tag it expects tells the consumer
// whether a record is there.  In a ring of one-line records this holds by
// itself: every line starts a record in every lap.  A ring that takes longer
// records (attach with `long_records`) keeps one line spare, and before it
// publishes a record or filler the producer zeroes the first word of the
// line just after it, where the consumer looks next: that word may be
// payload of a record of the last lap.  The consumer stores nothing into the
// ring: a one-line record (every Short AM) costs it no store into the line
// it read, and the lines of a long record stay in the producer's cache
// unless the handler reads them, as a Long's payload does in the segment.
#pragma once

#include "sluice_config.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sluice::conduit::smp {

// The target's cache line (configure measures it; a cross build presets it).
inline constexpr std::size_t line_size = SLUICE_CACHE_LINE_SIZE;
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

// The first 8 bytes of a record: the control word in the low half, and in
// the high half 4 bytes the conduit gives commit() (its message header), so
// a record with nothing else to say is published by one store.
inline std::atomic<std::uint64_t> &record_word(char *at) {
    return *reinterpret_cast<std::atomic<std::uint64_t> *>(at);
}

// A reserved record: where it goes, the control word that will publish it
// and the ring bytes it takes.  Kept in registers by the caller: the record
// is written through char pointers, which would make the compiler reload
// any of this kept in the producer.
struct RingSlot {
    char *at = nullptr;
    std::uint32_t control = 0;
    std::uint32_t span = 0;
};

// Producer side; lives in the sender's private memory.  Not thread-safe:
// the conduit serializes producers of one ring.
class RingProducer {
public:
    // `long_records`: records may span more than one line.
    void attach(RingShared *shared, std::size_t bytes, bool long_records) {
        shared_ = shared;
        data_ = shared->data();
        bytes_ = bytes;
        spare_ = long_records ? line_size : 0;
        tail_ = 0;
        cached_head_ = 0;
    }

    // Space for a record of `size` bytes (size < 2^29); `at` is null if the
    // ring is full now.  Fill the record after its first 4 bytes, then
    // commit() it.
    RingSlot reserve(std::size_t size) {
        const RingSlot slot = reserve_inline(size);
        if (__builtin_expect(slot.at != nullptr, 1)) return slot;
        return reserve_slow(size);
    }
    // The common case alone, with no call: the record fits before the end
    // of the ring in the room last seen.  `at` is null otherwise, and then
    // reserve() knows more.
    RingSlot reserve_inline(std::size_t size) const {
        const std::size_t need = line_align(size);
        const std::size_t offset = tail_ & (bytes_ - 1);
        if (__builtin_expect(offset + need <= bytes_ && tail_ + need + spare_ - cached_head_ <= bytes_, 1))
            return {data_ + offset, static_cast<std::uint32_t>(size) | lap_tag(tail_, bytes_),
                    static_cast<std::uint32_t>(need)};
        return {};
    }

    // Publishes a reserved record: its first word (the control word and
    // `info`) goes last.
    void commit(const RingSlot &slot, std::uint32_t info) {
        clear_after(tail_ + slot.span);
        record_word(slot.at).store(std::uint64_t{info} << 32 | slot.control, std::memory_order_release);
        tail_ += slot.span;
    }

    // Publishes nothing: a reserved run of raw bytes (no control word, so
    // all `size` bytes are the caller's) that a record in another ring
    // announces, with its size, after this returns.  The consumer finds it
    // with take(): it starts where the last record or run ended, or at the
    // start of the ring when it would not fit before the end.
    void commit_raw(const RingSlot &slot) {
        clear_after(tail_ + slot.span);
        tail_ += slot.span;
    }

    // Reads the consumer's head now.  Called right after commit() on a ring
    // that a round trip fills in a few messages: the load of the head's line,
    // which the consumer has just written, is then on its way while the
    // record is, and the next reserve() finds room without waiting for it.
    void refresh_head() { cached_head_ = shared_->head.load(std::memory_order_acquire); }

private:
    // Wrapping (a filler pads the end of the ring) or looking at the
    // consumer's head again.
    [[gnu::noinline]] RingSlot reserve_slow(std::size_t size) {
        const std::size_t need = line_align(size);
        std::size_t offset = tail_ & (bytes_ - 1);
        const std::size_t filler = offset + need > bytes_ ? bytes_ - offset : 0;
        if (!has_room(filler + need + spare_)) return {};
        if (filler) {
            clear_after(tail_ + filler);
            record_word(data_ + offset).store(skip_bit | lap_tag(tail_, bytes_) | static_cast<std::uint32_t>(filler),
                                               std::memory_order_release);
            tail_ += filler;
            offset = 0;
        }
        return {data_ + offset, static_cast<std::uint32_t>(size) | lap_tag(tail_, bytes_),
                static_cast<std::uint32_t>(need)};
    }
    bool has_room(std::size_t n) {
        if (tail_ + n - cached_head_ <= bytes_) return true;
        cached_head_ = shared_->head.load(std::memory_order_acquire);
        return tail_ + n - cached_head_ <= bytes_;
    }

    // A ring of long records: the consumer's next place after a record
    // ending at `end` shows no stale payload (the spare line is free).
    void clear_after(std::uint64_t end) {
        if (spare_) record_word(data_ + (end & (bytes_ - 1))).store(0, std::memory_order_relaxed);
    }

    RingShared *shared_ = nullptr;
    char *data_ = nullptr;
    std::size_t bytes_ = 0;
    std::size_t spare_ = 0;  // line_size for a ring of long records
    std::uint64_t tail_ = 0;
    std::uint64_t cached_head_ = 0;
};

// Consumer side; lives in the receiver's private memory.
class RingConsumer {
public:
    void attach(RingShared *shared, std::size_t bytes) {
        shared_ = shared;
        data_ = shared->data();
        bytes_ = bytes;
        published_ = 0;
        advance(0);
    }

    // The next record, or null.  Fillers are consumed on the way.  Only the
    // thread holding the conduit's per-ring flag calls peek and release.
    char *peek(std::uint32_t &size) {
        std::uint32_t info;
        return peek(size, info);
    }
    // The same, with the `info` the producer committed the record with.
    char *peek(std::uint32_t &size, std::uint32_t &info) {
        for (;;) {
            char *at = next_.load(std::memory_order_relaxed);
            const std::uint64_t w = record_word(at).load(std::memory_order_acquire);
            const auto c = static_cast<std::uint32_t>(w);
            if ((c & tag_mask) != expect_.load(std::memory_order_relaxed)) return nullptr;
            if (c & skip_bit) {
                release(c & size_mask);
                continue;
            }
            size = c & size_mask;
            info = static_cast<std::uint32_t>(w >> 32);
            return at;
        }
    }

    // Where the raw run of `size` bytes the producer placed next
    // (commit_raw) is, told its size by the record that announced it; no
    // load of the ring itself.  Release it with release(size).
    char *take(std::uint32_t size) {
        const std::size_t offset = head_ & (bytes_ - 1);
        if (offset + line_align(size) > bytes_) advance(head_ + (bytes_ - offset));  // past the filler
        return next_.load(std::memory_order_relaxed);
    }

    // Consumes the record peek() returned (of `size` bytes).  The producer sees the
    // space again at the next publish(), or here once a quarter of the ring
    // waits: one store to the shared head per batch, not per message, yet
    // large records still stream.
    void release(std::uint32_t size) {
        advance(head_ + line_align(size));
        if (head_ - published_ >= bytes_ / 4) publish();
    }
    void publish() {
        published_ = head_;
        shared_->head.store(published_, std::memory_order_release);
    }

    // Cheap emptiness test for any poller: two private loads and the
    // control word.  Other threads may be consuming, so the place and tag it
    // reads may be stale or from different moments: a hint only.  A wrong
    // answer is harmless, because drain() re-reads everything under the
    // ring's flag.  ThreadSanitizer would call the read of a line the
    // producer may be writing a race, so it is not instrumented.
    __attribute__((no_sanitize("thread"))) bool ready() const {
        const char *at = next_.load(std::memory_order_relaxed);
        return (static_cast<std::uint32_t>(record_word(const_cast<char *>(at)).load(std::memory_order_acquire)) & tag_mask) ==
               expect_.load(std::memory_order_relaxed);
    }

private:
    // Moves the head, and keeps the next record's place and expected tag
    // ready for the pollers (a record is there when its tag is the expected
    // one: not 0, not last lap's).
    void advance(std::uint64_t head) {
        head_ = head;
        next_.store(data_ + (head & (bytes_ - 1)), std::memory_order_relaxed);
        expect_.store(lap_tag(head, bytes_), std::memory_order_relaxed);
    }

    RingShared *shared_ = nullptr;
    char *data_ = nullptr;
    std::size_t bytes_ = 0;
    std::uint64_t head_ = 0;              // touched only under the ring's flag
    std::atomic<char *> next_{nullptr};   // read by any poller, as a hint
    std::atomic<std::uint32_t> expect_{0};
    std::uint64_t published_ = 0;
};

} // namespace sluice::conduit::smp
