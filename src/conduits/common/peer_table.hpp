// src/conduits/common/peer_table.hpp - a conduit's state for each peer,
// made on the first message to or from it.  A peer never touched costs one
// pointer: a rank of a 100,000-rank job that talks to 8 peers holds the
// state of 8.  What the start-up exchange gave about every peer (its
// address) stays in the conduit's own dense table; this one holds what
// talking to a peer builds (windows, queues, connections).  Lookups are an
// index and a load; making a peer's state is the caller's (it knows the
// configuration) and happens once.  Not thread-safe: the conduit's lock
// guards insert; find is safe wherever the state's creation is ordered
// before it (the peer's message was queued under that lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace sluice::conduit::common {

template <class T> class PeerTable {
public:
    // n peers, none touched.
    void reset(std::size_t n) {
        slots_.clear();
        slots_.resize(n);
        touched_.clear();
    }
    void clear() {
        std::vector<std::unique_ptr<T>>().swap(slots_);
        std::vector<std::uint32_t>().swap(touched_);
    }
    std::size_t size() const { return slots_.size(); }
    // The state of peer r, or null before its first touch.
    T *find(std::uint32_t r) const { return slots_[r].get(); }
    // Peer r's first touch: keeps `state` (r must not have one yet).
    T &insert(std::uint32_t r, std::unique_ptr<T> state) {
        slots_[r] = std::move(state);
        touched_.push_back(r);
        return *slots_[r];
    }
    // Peer r's state, made value-initialized at its first touch (a T that
    // needs no configuration).
    T &at(std::uint32_t r) {
        if (T *t = slots_[r].get()) return *t;
        return insert(r, std::make_unique<T>());
    }
    // The peers touched, in the order of their first touch.
    const std::vector<std::uint32_t> &touched() const { return touched_; }
    template <class F> void each(F &&f) const {
        for (std::uint32_t r : touched_) f(r, *slots_[r]);
    }

private:
    std::vector<std::unique_ptr<T>> slots_;
    std::vector<std::uint32_t> touched_;
};

} // namespace sluice::conduit::common
