// tests/softnic/gni/transfer.hpp - a transfer's target side: finding the
// peer, checking its registration, moving the bytes and raising its remote
// event.  All of it runs under the fabric lock of the target's host: in the
// process that carries the transfer out (the caller of GNI_PostFma or
// GNI_SmsgSendWTag, or the BTE thread of the caller of GNI_PostRdma) when
// the peer is on its host, else in a process of the peer's host that
// serves the request from the wire (wire.hpp).
#pragma once

#include "fabric.hpp"
#include "gni_pub.h"

#include <cstdint>

namespace softnic_gni {

// Event statuses (bits 48-55 of an event): 0 is success.
enum EventStatus : std::uint8_t {
    status_ok = 0,
    status_no_peer = 1,        // no domain of that address, instance id and job (or its host silent)
    status_remote_access = 2,  // remote handle stale, range or rights wrong
    status_move_failed = 3,    // the peer's memory could not be reached
};

std::uint64_t make_event(std::uint64_t type, std::uint8_t status, std::uint32_t data, std::uint16_t token,
                         bool remote);

// A peer: the domain a Target (fabric.hpp) names, live, on this host.
struct Peer {
    std::int32_t pid;
    std::uint32_t cdm;
};
// AMO commands: whether `cmd` is one, whether it fetches the old word, and
// the word it leaves.
bool amo_known(gni_fma_cmd_type_t cmd);
bool amo_fetches(gni_fma_cmd_type_t cmd);
std::uint64_t amo_apply(gni_fma_cmd_type_t cmd, std::uint64_t old, std::uint64_t first, std::uint64_t second);

bool peer_find(const Target &target, Peer &out);

// What the target sees last: an SMSG message becoming visible in its
// mailbox, and the remote event on its CQ.  A transfer carried out by its
// poster arrives at once; one served from the wire arrives after its
// poster has the answer, so that a target that ends once it has seen it
// does not end before its poster knows it was done.
struct Arrival {
    std::int32_t cq = -1;  // -1: no event
    std::uint32_t cq_generation = 0;
    std::uint64_t event = 0;
    std::int32_t mailbox = -1;  // -1: no message
    std::int32_t mailbox_pid = 0;
    std::uint64_t mailbox_addr = 0;
    std::uint64_t written = 0;  // the message is the mailbox's written-th
};
void arrive(const Arrival &a);  // under the lock

// Whether `h` is a live registration of this process's domain `cdm`
// covering [addr, addr + length).
bool local_registered(const gni_mem_handle_t &h, std::uint32_t cdm, std::uint64_t addr, std::uint64_t length);

// The poster's side of a post is checked by the caller; this carries out
// the rest: the remote registration check, the move (and the atomic)
// between `d.local_addr` in this process and the peer, and sets `later` to
// the remote event when the descriptor asks for one (`remote_event` is the
// endpoint's remote event data).  Returns the event status.
std::uint8_t post_execute(const Peer &peer, const gni_post_descriptor_t &d, std::uint32_t remote_event,
                          Arrival &later);

// SMSG: writes one message into the mailbox `remote` describes in `peer`,
// taking a credit, and sets `later` to its arrival (the message seen, the
// SMSG event on the mailbox registration's CQ).  NOT_DONE when the sender
// has no credit, INVALID_PARAM for a message above msg_maxsize or a
// mailbox that is not the peer's registered memory, TRANSACTION_ERROR when
// the peer's memory cannot be reached.
gni_return_t smsg_deliver(const Peer &peer, const gni_smsg_attr_t &remote, const void *header,
                          std::uint32_t header_length, const void *data, std::uint32_t data_length, std::uint8_t tag,
                          std::uint32_t remote_event, Arrival &later);

// The mailbox `attr` describes in this process (created on first use).
// -1: the attributes do not describe registered memory of `pid`.
int mailbox_find(std::int32_t pid, const gni_smsg_attr_t &attr);

// The bytes of one mailbox slot: this header, then the message's header
// bytes, then its data.
struct SlotHeader {
    std::uint32_t header_length;
    std::uint32_t data_length;
    std::uint8_t tag;
    std::uint8_t pad[7];
};
static_assert(sizeof(SlotHeader) == 16);
std::uint32_t slot_size(std::uint32_t msg_maxsize);
std::uint32_t mailbox_bytes(std::uint32_t msg_maxsize, std::uint32_t maxcredit);

} // namespace softnic_gni
