// src/conduits/udp/source_filter.hpp - the udp conduit's check of where a
// datagram comes from, done by the kernel: a classic BPF socket filter on the
// receiving socket that knows every peer's source addresses.
//
// A datagram from a known (address, port) passes whole; any other is cut to
// its UDP header, so it reaches the conduit as a datagram of 0 bytes, which
// no Sluice sender ever sends: the conduit counts it as from an unknown
// address and drops it.  With the filter in place a receive need not ask
// for the sender's address, which on Linux costs a round trip on loopback
// several per cent (udp README, "Source addresses").
//
// Unprivileged: SO_ATTACH_FILTER needs no capability.  IPv4 only, like the
// conduit.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::conduit::udp {

// One place datagrams may come from; both fields in network order.
struct Source {
    std::uint32_t ip = 0;
    std::uint16_t port = 0;
};

// The most sources one filter checks.  The filter tests them one after the
// other, so its cost grows with their number; past this the conduit checks
// addresses itself.
inline constexpr std::size_t source_filter_max = 64;

// Attaches the filter for `sources` (duplicates allowed) to `fd`, once
// source_filter_works(ip) has passed.  False, with `why` set, when there
// are more than source_filter_max, the test fails or the kernel refuses the
// filter; nothing is attached to `fd` then, and the conduit checks addresses
// itself.
bool source_filter_attach(int fd, const std::vector<Source> &sources, in_addr ip, std::string &why);

// Checks on `ip` (an address of this host) that this kernel's socket filters
// see a UDP datagram as the filter expects: one datagram from a known port
// and one from an unknown, between three sockets of its own.  False, with
// `why` set, if anything differs.
bool source_filter_works(in_addr ip, std::string &why);

} // namespace sluice::conduit::udp
