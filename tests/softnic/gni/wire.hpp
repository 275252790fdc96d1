// tests/softnic/gni/wire.hpp - transfers between hosts, over TCP.
//
// With SOFTNIC_HOSTS, every process that has a domain attached listens on
// its host's address at SOFTNIC_GNI_WIRE_PORT, sharing the port with the
// host's other such processes (common/wire.hpp): any of them serves a
// transfer that comes from another host, carrying out its target's side
// on its own host's fabric (transfer.hpp) as a poster there would, and
// answers with the verdict (and a get's bytes, a fetching atomic's old
// word).  The target sees the transfer (its SMSG message, its remote
// event, a datagram's match) after that answer.  Each thread of a poster
// (a caller of the API, the BTE thread) keeps its own connection per other
// host and has one request on the wire at a time, holding no lock
// meanwhile.
#pragma once

#include "gni_pub.h"
#include "transfer.hpp"

#include <cstdint>

namespace softnic_gni {

// The target's side of post `d` (checked on the poster's side) for
// `target` on host `host`: a put's bytes are read from `d.local_addr`, a
// get's bytes and a fetching atomic's old word are written there.
// Returns the event status; status_no_peer also when no process of that
// host answers: nothing listens there, or the connection broke with the
// request on it three times.
std::uint8_t wire_post(std::uint32_t host, const Target &target, const gni_post_descriptor_t &d,
                       std::uint32_t remote_event);

// SMSG to `target` on host `host`: the verdict of smsg_deliver there
// (SUCCESS, NOT_DONE when the mailbox has no credit, INVALID_PARAM,
// TRANSACTION_ERROR), or TRANSACTION_ERROR when the peer is not attached
// there or no process of that host answers.
gni_return_t wire_smsg(std::uint32_t host, const Target &target, const gni_smsg_attr_t &remote, const void *header,
                       std::uint32_t header_length, const void *data, std::uint32_t data_length, std::uint8_t tag,
                       std::uint32_t remote_event);

// A datagram message (datagram.hpp) to host `host` and its answer; false
// when no process of that host answers.
struct DatagramWire;
bool wire_datagram(std::uint32_t host, const DatagramWire &message, DatagramWire &answer);

// A domain attached, destroyed: the process serves other hosts while it
// has one (nothing without SOFTNIC_HOSTS).
void serving_start();
void serving_stop();

} // namespace softnic_gni
