// src/conduits/common/peer_order.hpp - putting one peer's messages back in
// the order it sent them, for networks that match receives in order but
// complete them in any order (libfabric's tcp;ofi_rxm reports a large
// message moved by rendezvous after the smaller ones sent behind it;
// Portals' reference implementation over UDP reorders too).
//
// The sender numbers each message of a stream (`next_send`, and `unsend`
// when the network refused it); the receiver hands every arrival to
// `arrived`, which appends it to the ready queue when its turn has come,
// with every held one it unblocks, and holds it otherwise.  A peer may
// have `Streams` independent streams (Portals: requests and replies, each
// ordered on its own).  Sequence numbers are 16 bits and wrap; a peer
// never has 32768 messages in flight (the conduits' buffers bound it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::conduit::common {

template <class Item, unsigned Streams = 1>
class PeerOrder {
public:
    std::uint16_t next_send(unsigned stream = 0) { return send_seq_[stream]++; }
    void unsend(unsigned stream = 0) { --send_seq_[stream]; }

    // `item`, numbered `seq` in `stream`, has arrived: appended to `ready`
    // (anything with push_back) with whatever it unblocks, in order, or
    // held.  True when it went to `ready`.
    template <class Ready>
    bool arrived(const Item &item, std::uint16_t seq, unsigned stream, Ready &ready) {
        if (seq != expect_[stream]) {
            held_.push_back(Held{item, seq, stream});
            return false;
        }
        ready.push_back(item);
        ++expect_[stream];
        for (bool found = !held_.empty(); found;) {
            found = false;
            for (std::size_t i = 0; i < held_.size(); ++i) {
                const Held &h = held_[i];
                if (h.seq != expect_[h.stream]) continue;
                ready.push_back(h.item);
                ++expect_[h.stream];
                held_[i] = held_.back();
                held_.pop_back();
                found = true;
                break;
            }
        }
        return true;
    }

    // Whether a message numbered `seq` in `stream` would be taken now
    // (Portals copies one out of its receive buffer before it is held).
    bool in_turn(std::uint16_t seq, unsigned stream = 0) const { return seq == expect_[stream]; }
    std::size_t held() const { return held_.size(); }

private:
    struct Held {
        Item item;
        std::uint16_t seq;
        unsigned stream;
    };
    std::uint16_t send_seq_[Streams]{};
    std::uint16_t expect_[Streams]{};
    std::vector<Held> held_;  // arrived ahead of their turn
};

} // namespace sluice::conduit::common
