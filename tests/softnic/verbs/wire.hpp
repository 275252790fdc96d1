// tests/softnic/verbs/wire.hpp - work between hosts, over TCP.
//
// With SOFTNIC_HOSTS, every process that has a device open listens on its
// host's address at SOFTNIC_WIRE_PORT, sharing the port with the host's
// other such processes (SO_REUSEPORT): any of them serves work that comes
// from another host, carrying out its target's side on its own host's
// fabric (serve, transfer.hpp) as a local poster would, and answers with
// the verdict (and an RDMA_READ's bytes).  A poster keeps one connection
// per other host and has one request on the wire at a time.
#pragma once

#include "transfer.hpp"

#include <cstdint>
#include <vector>

namespace softnic {

// Carries the target's side of `k` (`ud`: from a UD QP) to host `k.host`
// and waits for its verdict; holds no lock meanwhile.  No process of that
// host listens, or the connection breaks with `k` on it: absent (retried
// until the transport timeout, the next try on a new connection).  A
// serving process answers every request it has read unless it dies, so
// only a request whose serving process died while serving it may be
// carried out twice: the wire has no sequence numbers.
Verdict wire_exchange(const Work &k, bool ud, const Source &source, std::vector<std::uint8_t> &read);

// A device opened, closed: the process serves other hosts while it has
// one open (nothing without SOFTNIC_HOSTS).
void serving_start();
void serving_stop();

} // namespace softnic
