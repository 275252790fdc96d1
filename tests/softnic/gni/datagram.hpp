// tests/softnic/gni/datagram.hpp - uGNI datagrams (GNI_EpPostDataWId and
// friends): the connection-less exchange a program sets up its SMSG
// connections with.  A directed datagram (on a bound endpoint) aimed at
// domain Y matches Y's directed datagram back to its poster if there is
// one, else Y's oldest wildcard (a post on an unbound endpoint); each side
// gets the other's bytes.
//
// Where a match is made: every datagram lives in the fabric of one host,
// which matches it under its lock.  A post and the wildcards of a domain
// are its own host's.  Between two hosts, both directed datagrams of a
// pair of domains are matched on the higher host (its index in
// SOFTNIC_HOSTS), so a pair's two directed datagrams always meet in one
// fabric and make one exchange:
//   - a directed post aimed at a domain of a higher host is forwarded
//     there, where it waits as a visitor (the poster's entry is away),
//     and the answer, or a done message later, completes the post;
//   - a directed post aimed at a domain X of a lower host stays on its
//     own host and sends X's host a notice, which X's oldest free
//     wildcard takes at once, or claims later (its first post after
//     the notice, or X's process's next datagram call) from the post's
//     host.  X's host leaves a notice to Y alone while X's own directed
//     datagram to Y is undecided: the pair's two meet on Y's host.
// The thread that holds an entry's round trip marks it busy; nothing
// else takes it meanwhile, and a served match is made visible only once
// its answer is sent.  README.md says what is and is not modelled.
#pragma once

#include "fabric.hpp"
#include "gni_pub.h"

#include <cstdint>

namespace softnic_gni {

// An endpoint's datagram (one at a time): its entry in the fabric and the
// caller's buffer for the peer's bytes.
struct DatagramRef {
    std::int32_t index = -1;  // -1: none
    std::uint32_t generation = 0;
    std::uint64_t id = 0;
    void *out = nullptr;
    std::uint16_t out_len = 0;
};

// The API's side, for domain `cdm` (index in the fabric's cdm[]) of this
// process; arguments are checked by the caller (gni.cpp).
// Whether `ref` names a datagram that is still the endpoint's.
bool datagram_held(DatagramRef &ref);
// Posts: directed at `target`, or a wildcard when it is null.
gni_return_t datagram_post(std::uint32_t cdm, const Target *target, const void *in, std::uint16_t length,
                           std::uint64_t id, void *out, std::uint16_t out_len, DatagramRef &ref);
// GNI_EpPostDataTestById: NO_MATCH, or SUCCESS with the state; COMPLETED
// copies the peer's bytes out and sets its address and instance id.
// COMPLETED and TERMINATED release the datagram.
gni_return_t datagram_test(std::uint32_t cdm, DatagramRef &ref, std::uint64_t id, gni_post_state_t &state,
                           std::uint32_t &address, std::uint32_t &inst);
// GNI_EpPostDataCancelById: SUCCESS (TERMINATED), NO_MATCH, or
// INVALID_STATE when it completed (or was cancelled) already.
gni_return_t datagram_cancel(DatagramRef &ref, std::uint64_t id);
// GNI_EpUnbind, GNI_EpDestroy: cancels the endpoint's datagram and frees it.
void datagram_drop(DatagramRef &ref);
// GNI_CdmDestroy: every datagram of the domain.
void datagram_detach(std::uint32_t cdm);
// GNI_PostDataProbeById: a datagram of the domain that is COMPLETED or
// TERMINATED and not yet tested.  Without one, and with no wire work for
// the domain, it reads two words and takes no lock.
bool datagram_probe(std::uint32_t cdm, std::uint64_t &id);

// The wire's side (wire.cpp): one message between hosts and its answer,
// in the machine's byte order.
struct DatagramWire {
    std::uint32_t op;       // forward, notice, claim, withdraw, done (datagram.cpp)
    std::uint32_t verdict;  // an answer's
    Target poster;          // whose bytes `in` are: the requester's post, or in an answer its match
    Target target;          // whom a forwarded or noticed post is for
    std::uint32_t host;     // the requester's host
    std::uint16_t in_len;
    std::uint16_t pad;
    std::uint64_t key;        // the requester's entry; a claim's and a done's: the entry it is for
    std::uint64_t other_key;  // a withdraw's visitor; an answer's entry stored
    std::uint8_t in[GNI_DATAGRAM_MAXSIZE];
};
// A match served from the wire, shown only once its answer is sent.
struct DatagramStaged {
    std::int32_t index = -1;
    std::uint32_t generation = 0;
};
// Serves `in` from another host on this host's fabric.
void datagram_serve(const DatagramWire &in, DatagramWire &answer, DatagramStaged &later);
// After the answer: the staged match is made (answered) or undone.
void datagram_commit(const DatagramStaged &later, bool answered);

} // namespace softnic_gni
