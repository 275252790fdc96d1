// src/conduits/common/atomic_slots.hpp - the NIC atomics in flight of an
// RDMA conduit (conduits/nic_atomics.hpp): each in a slot of one array,
// which the conduit registers once, so that the NIC reads the operands and
// writes the fetched value in memory it knows and the caller's result may
// be anywhere.  A conduit's slot type derives from AtomicSlot (and from its
// completion context); the pool lends slots and completes them.
#pragma once

#include "conduits/common/free_list.hpp"
#include "conduits/transport.hpp"

#include <sluice.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace sluice::conduit::common {

struct AtomicSlot {
    // The NIC's: little-endian, a 4-byte value is the low bytes of its field.
    std::uint64_t operand = 0, compare = 0, fetched = 0;
    void *result = nullptr;  // where `fetched` goes (null: nowhere)
    std::size_t size = 8;    // of the type
    std::atomic<std::uint64_t> *counter = nullptr;
    Rank peer = 0;
};

// The slot of a conduit without NIC atomics.
struct PlainAtomicSlot : AtomicSlot {
    PlainAtomicSlot *next = nullptr;
};

// The size of an atomic domain's type.
constexpr std::size_t atomic_type_size(sluice_dt_t t) {
    return t == SLUICE_DT_I32 || t == SLUICE_DT_U32 || t == SLUICE_DT_FLT ? 4 : 8;
}

template <class Slot>
class AtomicSlots {
public:
    static constexpr std::size_t count = 256;  // NIC atomics in flight at most

    // Makes the slots (each `init`ed, e.g. with its context's tag).
    template <class Init> void create(Init init) {
        slots_ = std::make_unique<Slot[]>(count);
        for (std::size_t i = 0; i < count; ++i) init(slots_[i]);
        free_.clear();
        free_.fill(slots_.get(), count);
    }
    bool made() const { return slots_ != nullptr; }
    bool full() const { return free_.empty(); }  // every slot in flight
    Slot *base() const { return slots_.get(); }
    static constexpr std::size_t bytes() { return count * sizeof(Slot); }

    // The slot the next atomic takes, filled in (null: none free).  It is
    // the conduit's until started(); unstarted, it stays free.
    Slot *next(Rank peer, void *result, sluice_dt_t type, std::atomic<std::uint64_t> &counter) {
        Slot *s = free_.front();
        if (!s) return nullptr;
        s->peer = peer;
        s->result = result;
        s->size = atomic_type_size(type);
        s->counter = &counter;
        return s;
    }
    // The slot next() gave was posted: the caller's counter goes up.
    void started(Slot *s) {
        (void)free_.take();
        s->counter->fetch_add(1, std::memory_order_relaxed);
    }
    // The NIC is done with `s`: the fetched value to the result (when it
    // succeeded), the counter down (release), the slot free again.
    void done(Slot *s, bool ok) {
        if (ok && s->result) std::memcpy(s->result, &s->fetched, s->size);
        s->counter->fetch_sub(1, std::memory_order_release);
        free_.give(s);
    }
    void clear() {
        free_.clear();
        slots_.reset();
    }

private:
    std::unique_ptr<Slot[]> slots_;
    FreeList<Slot> free_;
};

} // namespace sluice::conduit::common
