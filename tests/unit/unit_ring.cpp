// tests/unit/unit_ring.cpp - the smp ring (src/conduits/smp/ring.hpp) in one
// process: records of every size across thousands of laps, with payloads
// crafted to look like control words, come out exactly once and in order.
#include "conduits/smp/ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace smp = sluice::conduit::smp;

namespace {

struct Ring {
    explicit Ring(std::size_t bytes, bool long_records = true) : bytes(bytes), memory(smp::ring_footprint(bytes) + smp::line_size) {
        auto addr = reinterpret_cast<std::uintptr_t>(memory.data());
        shared = reinterpret_cast<smp::RingShared *>((addr + smp::line_size - 1) & ~(smp::line_size - 1));
        new (shared) smp::RingShared{};
        producer.attach(shared, bytes, long_records);
        consumer.attach(shared, bytes);
    }
    std::size_t bytes;
    std::vector<char> memory;
    smp::RingShared *shared;
    smp::RingProducer producer;
    smp::RingConsumer consumer;
};

// Fills a record's body (after the first word, which commit writes) with
// words that would pass for control words of either lap, so a consumer that
// trusted stale bytes would take them.
void poison(char *record, std::size_t size, std::uint32_t seq) {
    for (std::size_t off = 8; off + 4 <= size; off += 4) {
        std::uint32_t w = ((off / 4 + seq) & 1 ? smp::tag_odd : smp::tag_even) | 64u;
        std::memcpy(record + off, &w, 4);
    }
}

} // namespace

TEST(Ring, EmptyRingHasNothing) {
    Ring r(4096);
    std::uint32_t size = 0;
    EXPECT_FALSE(r.consumer.ready());
    EXPECT_EQ(r.consumer.peek(size), nullptr);
}

TEST(Ring, VariableRecordsOverManyLaps) {
    Ring r(4096);
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::size_t> pick(8, 700);  // 1 to 11 lines: fillers happen
    std::vector<std::size_t> in_flight;
    std::uint32_t sent = 0, received = 0;
    std::uint64_t bytes_moved = 0;
    while (bytes_moved < 4096ull * 3000) {  // 3000 laps
        // Produce until full, then consume a random share: both ends wrap
        // at different places every lap.
        for (;;) {
            std::size_t size = pick(rng);
            const smp::RingSlot slot = r.producer.reserve(size);
            if (!slot.at) break;
            poison(slot.at, size, sent);
            r.producer.commit(slot, sent++);  // the info word carries the sequence number
            in_flight.push_back(size);
            bytes_moved += size;
        }
        // A third of the time drain it all, so the consumer looks at the
        // line the producer will write next: stale bytes sit there.
        std::size_t take = rng() % 3 == 0 ? in_flight.size() : 1 + rng() % in_flight.size();
        for (std::size_t i = 0; i < take; ++i) {
            ASSERT_TRUE(r.consumer.ready());
            std::uint32_t size = 0, seq = 0;
            char *rec = r.consumer.peek(size, seq);
            ASSERT_NE(rec, nullptr);
            ASSERT_EQ(size, in_flight.front());
            ASSERT_EQ(seq, received);
            ++received;
            in_flight.erase(in_flight.begin());
            r.consumer.release(size);
        }
        if (in_flight.empty()) {
            std::uint32_t size = 0;
            ASSERT_FALSE(r.consumer.ready());
            ASSERT_EQ(r.consumer.peek(size), nullptr);
        }
        r.consumer.publish();
    }
    while (!in_flight.empty()) {
        std::uint32_t size = 0;
        char *rec = r.consumer.peek(size);
        ASSERT_NE(rec, nullptr);
        ASSERT_EQ(size, in_flight.front());
        in_flight.erase(in_flight.begin());
        r.consumer.release(size);
        ++received;
    }
    EXPECT_EQ(received, sent);
    std::uint32_t size = 0;
    EXPECT_EQ(r.consumer.peek(size), nullptr);
    EXPECT_FALSE(r.consumer.ready());
}

// Raw runs (commit_raw / take: bytes a record elsewhere announces, with no
// control word) mixed with records: every run is found where the producer
// put it, wrapping included, its bytes intact, and runs that look like
// control words of either lap are never taken for records, not even by a
// consumer that looks at an empty ring right after one.
TEST(Ring, RawRunsBetweenRecordsAreFoundByTheirSize) {
    Ring r(4096);
    std::mt19937 rng(11);
    std::uniform_int_distribution<std::size_t> pick(1, 900);
    struct Item { bool raw; std::size_t size; std::uint32_t seq; };
    std::vector<Item> in_flight;
    std::uint32_t sent = 0, received = 0, raws = 0;
    for (int round = 0; round < 20000; ++round) {
        for (;;) {
            const bool raw = rng() % 2 == 0;
            const std::size_t size = raw ? pick(rng) : std::max<std::size_t>(8, pick(rng));
            const smp::RingSlot slot = r.producer.reserve(size);
            if (!slot.at) break;
            if (raw) {
                for (std::size_t off = 0; off + 4 <= size; off += 4) {  // the first word too
                    std::uint32_t w = ((off / 4 + sent) & 1 ? smp::tag_odd : smp::tag_even) | 64u;
                    std::memcpy(slot.at + off, &w, 4);
                }
                std::memcpy(slot.at, &sent, std::min<std::size_t>(size, 4));
                r.producer.commit_raw(slot);
                ++raws;
            } else {
                poison(slot.at, size, sent);
                r.producer.commit(slot, sent);
            }
            in_flight.push_back(Item{raw, size, sent++});
        }
        std::size_t take = rng() % 3 == 0 ? in_flight.size() : 1 + rng() % in_flight.size();
        for (std::size_t i = 0; i < take; ++i) {
            const Item item = in_flight.front();
            in_flight.erase(in_flight.begin());
            if (item.raw) {
                char *run = r.consumer.take(static_cast<std::uint32_t>(item.size));
                std::uint32_t seq = 0;
                std::memcpy(&seq, run, std::min<std::size_t>(item.size, 4));
                if (item.size >= 4) ASSERT_EQ(seq, item.seq);
                else ASSERT_EQ(std::memcmp(run, &item.seq, item.size), 0);
                r.consumer.release(static_cast<std::uint32_t>(item.size));
            } else {
                std::uint32_t size = 0, seq = 0;
                char *rec = r.consumer.peek(size, seq);
                ASSERT_NE(rec, nullptr);
                ASSERT_EQ(size, item.size);
                ASSERT_EQ(seq, item.seq);
                r.consumer.release(size);
            }
            ++received;
        }
        if (in_flight.empty()) {
            std::uint32_t size = 0;
            ASSERT_FALSE(r.consumer.ready());
            ASSERT_EQ(r.consumer.peek(size), nullptr);
        }
        r.consumer.publish();
    }
    EXPECT_GT(raws, 1000u);
    EXPECT_EQ(received + in_flight.size(), sent);
}

// One-line records are never written to by the consumer: after a full lap
// every line still holds last lap's record, and none of them is taken again.
TEST(Ring, LastLapsRecordsAreNotTakenAgain) {
    Ring r(4096, false);
    const std::size_t lines = 4096 / smp::line_size;
    for (int lap = 0; lap < 5; ++lap) {
        for (std::size_t i = 0; i < lines; ++i) {
            smp::RingSlot slot = r.producer.reserve(16);
            if (!slot.at) {
                r.consumer.publish();
                slot = r.producer.reserve(16);
            }
            ASSERT_NE(slot.at, nullptr);
            r.producer.commit(slot, 0);
            std::uint32_t size = 0;
            char *got = r.consumer.peek(size);
            ASSERT_EQ(got, slot.at);
            r.consumer.release(size);
            // The next line holds a record from the previous lap (or is
            // fresh): either way nothing is there yet.
            EXPECT_FALSE(r.consumer.ready());
            EXPECT_EQ(r.consumer.peek(size), nullptr);
        }
    }
}

// The line ring's producer reads the consumer's head right after a send
// (refresh_head), so its inline reserve, which never reads the head itself,
// finds the lines the consumer handed back; and it finds none before then.
TEST(Ring, RefreshHeadSeesWhatTheConsumerHandedBack) {
    Ring r(4 * smp::line_size, false);
    for (int i = 0; i < 4; ++i) {
        const smp::RingSlot slot = r.producer.reserve_inline(16);
        ASSERT_NE(slot.at, nullptr);
        r.producer.commit(slot, 0);
    }
    r.producer.refresh_head();  // nothing consumed yet: the ring stays full
    EXPECT_EQ(r.producer.reserve_inline(16).at, nullptr);
    std::uint32_t size = 0;
    for (int i = 0; i < 4; ++i) {
        char *got = r.consumer.peek(size);
        ASSERT_NE(got, nullptr);
        r.consumer.release(size);  // a quarter of this ring: published at once
    }
    EXPECT_EQ(r.producer.reserve_inline(16).at, nullptr);  // its cached head is old
    r.producer.refresh_head();
    const smp::RingSlot slot = r.producer.reserve_inline(16);
    EXPECT_EQ(slot.at, r.shared->data());
}

// A ring of long records: the consumer stores nothing into a record's lines
// (they stay in the producer's cache), and the producer keeps one line
// spare: a ring of 8 lines takes 7 lines of records, not 8.
TEST(Ring, LongRecordsAreLeftAsWrittenAndOneLineStaysSpare) {
    Ring r(8 * smp::line_size);
    const std::size_t size = 3 * smp::line_size;
    std::vector<char> written(size);
    for (int lap = 0; lap < 6; ++lap) {
        smp::RingSlot slot = r.producer.reserve(size);
        if (!slot.at) {
            r.consumer.publish();
            slot = r.producer.reserve(size);
        }
        ASSERT_NE(slot.at, nullptr);
        poison(slot.at, size, lap);
        r.producer.commit(slot, 0);
        std::memcpy(written.data(), slot.at, size);
        std::uint32_t got_size = 0;
        char *got = r.consumer.peek(got_size);
        ASSERT_EQ(got, slot.at);
        r.consumer.release(got_size);
        EXPECT_EQ(std::memcmp(got, written.data(), size), 0) << "the consumer wrote into the record";
    }
    r.consumer.publish();
    Ring full(8 * smp::line_size);
    const smp::RingSlot seven = full.producer.reserve(7 * smp::line_size);
    ASSERT_NE(seven.at, nullptr);
    full.producer.commit(seven, 0);
    EXPECT_EQ(full.producer.reserve(8).at, nullptr) << "the spare line was handed out";
}
