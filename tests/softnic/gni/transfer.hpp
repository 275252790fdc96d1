// tests/softnic/gni/transfer.hpp - a transfer's target side: finding the
// peer, checking its registration, moving the bytes and raising its remote
// event.  All of it runs under the fabric lock, in the process that carries
// the transfer out (the caller of GNI_PostFma or GNI_SmsgSendWTag, or the
// BTE thread of the caller of GNI_PostRdma).  This is the seam where a wire
// to another host would go: a peer of another NIC address would be served
// there instead.
#pragma once

#include "fabric.hpp"
#include "gni_pub.h"

#include <cstdint>

namespace softnic_gni {

// Event statuses (bits 48-55 of an event): 0 is success.
enum EventStatus : std::uint8_t {
    status_ok = 0,
    status_no_peer = 1,        // no domain of that instance id and job
    status_remote_access = 2,  // remote handle stale, range or rights wrong
    status_move_failed = 3,    // the peer's memory could not be reached
};

std::uint64_t make_event(std::uint64_t type, std::uint8_t status, std::uint32_t data, std::uint16_t token,
                         bool remote);

// A peer: the live domain of `inst_id` in the job (ptag, cookie).
struct Peer {
    std::int32_t pid;
    std::uint32_t cdm;
};
// AMO commands: whether `cmd` is one, whether it fetches the old word, and
// the word it leaves.
bool amo_known(gni_fma_cmd_type_t cmd);
bool amo_fetches(gni_fma_cmd_type_t cmd);
std::uint64_t amo_apply(gni_fma_cmd_type_t cmd, std::uint64_t old, std::uint64_t first, std::uint64_t second);

bool peer_find(std::uint32_t inst_id, std::uint32_t ptag, std::uint32_t cookie, Peer &out);

// Whether `h` is a live registration of this process's domain `cdm`
// covering [addr, addr + length).
bool local_registered(const gni_mem_handle_t &h, std::uint32_t cdm, std::uint64_t addr, std::uint64_t length);

// The poster's side of a post is checked by the caller; this carries out
// the rest: the remote registration check, the move (and the atomic), and
// the remote event when the descriptor asks for one (`remote_event` is the
// endpoint's remote event data).  Returns the event status.
std::uint8_t post_execute(const Peer &peer, const gni_post_descriptor_t &d, std::uint32_t remote_event);

// SMSG: puts one message into the mailbox `remote` describes in `peer`,
// and raises the SMSG event on the mailbox registration's CQ.  NOT_DONE
// when the sender has no credit, INVALID_PARAM for a message above
// msg_maxsize or a mailbox that is not the peer's registered memory.
gni_return_t smsg_deliver(const Peer &peer, const gni_smsg_attr_t &remote, const void *header,
                          std::uint32_t header_length, const void *data, std::uint32_t data_length, std::uint8_t tag,
                          std::uint32_t remote_event);

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
