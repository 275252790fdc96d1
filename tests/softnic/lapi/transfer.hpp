// tests/softnic/lapi/transfer.hpp - packets, and carrying a message in
// them.
//
// Every transfer is a message of one kind, carried in packets of at most
// packet_bytes (fabric.hpp): a header naming the message (its source task
// and the source's message number), then up to packet_data bytes of its
// data.  An active message's first packet also carries its uhdr, before
// the data.  The origin pushes a message's packets in order into the
// target's ring (or over the wire to another host, wire.hpp) as room
// allows; the target's dispatcher copies each packet's data into place
// (context.hpp) and completes the message once its last packet landed.
#pragma once

#include "fabric.hpp"
#include "lapi.h"

#include <cstdint>
#include <vector>

namespace softnic_lapi {

enum Kind : std::uint32_t {
    kind_am = 1,      // LAPI_Amsend
    kind_put,         // LAPI_Put
    kind_get,         // LAPI_Get's request: no data
    kind_reply,       // a get's data, back to its origin
    kind_ack,         // an active message or put completed at its target
    kind_collective,  // a task arrived at LAPI_Gfence or LAPI_Address_init
};

// Addresses are the task's own that names them (target_* at the target,
// origin_* at the origin); counters are lapi_cntr_t addresses, 0 for none.
struct PacketHead {
    std::uint32_t kind;
    std::uint32_t source;   // the task that pushed it
    std::uint64_t message;  // the message's number at the task that started it
    std::uint64_t total;    // data bytes of the whole message
    std::uint64_t offset;   // of this packet's data; 0: the first packet
    std::uint32_t length;   // data bytes in this packet
    std::uint32_t uhdr_len; // an active message's first packet: uhdr bytes before the data
    std::uint64_t handler;  // an active message's header handler (address or index); a collective's sequence
    std::uint64_t target_addr;  // put, get: at the target; a collective's value
    std::uint64_t target_cntr;
    std::uint64_t origin_addr;  // get, reply: where the data goes at the origin
    std::uint64_t origin_cntr;  // get, reply: org_cntr
    std::uint64_t completion_cntr;  // active message, put, ack: cmpl_cntr at the origin
};
constexpr std::uint32_t packet_data = packet_bytes - sizeof(PacketHead);
static_assert(LAPI_MAX_UHDR_SZ < packet_data, "an active message's uhdr fits its first packet");

// A message on its way out: its packets are pushed from `data` (the
// caller's buffer, or a get's target memory), the uhdr copied at the call.
// `sent_cntr` (org_cntr; a get's tgt_cntr at its target) is incremented
// once the last packet is pushed: the buffer may then be reused.
struct Outgoing {
    PacketHead head{};
    const unsigned char *data = nullptr;
    std::vector<unsigned char> uhdr;
    lapi_cntr_t *sent_cntr = nullptr;
    std::uint64_t sent = 0;
    bool started = false;
};

// Pushes `o`'s next packets to `to` until it is all out (done), the ring is
// full, or the task is gone.
Push outgoing_push(const TaskRef &to, Outgoing &o);

// Counters, as LAPI updates them: atomically.
void counter_add(std::uint64_t counter, int n);
int counter_get(const lapi_cntr_t *c);

} // namespace softnic_lapi
