// tests/softnic/lapi/transfer.cpp - carrying a message in packets
// (transfer.hpp).
#include "transfer.hpp"

#include "wire.hpp"

#include <algorithm>
#include <cstring>

namespace softnic_lapi {
namespace {

Push deliver(const TaskRef &to, const void *packet, std::uint32_t bytes) {
    if (to.host != this_host) return wire_push(to, packet, bytes);
    return ring_push(to.slot, to.pid, to.incarnation, packet, bytes);
}

} // namespace

Push outgoing_push(const TaskRef &to, Outgoing &o) {
    alignas(8) unsigned char packet[packet_bytes];
    // A get's request names its length and carries nothing.
    const std::uint64_t carry = o.head.kind == kind_get ? 0 : o.head.total;
    while (!o.started || o.sent < carry) {
        PacketHead h = o.head;
        const std::uint32_t uhdr = o.started ? 0 : static_cast<std::uint32_t>(o.uhdr.size());
        const std::uint64_t room = packet_data - uhdr;
        h.offset = o.sent;
        h.length = static_cast<std::uint32_t>(std::min<std::uint64_t>(room, carry - o.sent));
        h.uhdr_len = uhdr;
        std::memcpy(packet, &h, sizeof h);
        if (uhdr) std::memcpy(packet + sizeof h, o.uhdr.data(), uhdr);
        if (h.length) std::memcpy(packet + sizeof h + uhdr, o.data + o.sent, h.length);
        const Push p = deliver(to, packet, static_cast<std::uint32_t>(sizeof h + uhdr + h.length));
        if (p != Push::done) return p;
        o.started = true;
        o.sent += h.length;
    }
    return Push::done;
}

void counter_add(std::uint64_t counter, int n) {
    if (counter) __atomic_add_fetch(&reinterpret_cast<lapi_cntr_t *>(counter)->cntr, n, __ATOMIC_SEQ_CST);
}

int counter_get(const lapi_cntr_t *c) { return __atomic_load_n(&c->cntr, __ATOMIC_SEQ_CST); }

} // namespace softnic_lapi
