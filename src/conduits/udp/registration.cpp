// src/conduits/udp/registration.cpp - the udp conduit in the registry: what
// it is and whether it can run here.
#include "conduits/registry.hpp"
#include "conduits/udp/udp.hpp"

#include <cerrno>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace sluice::conduit::udp {
namespace {

// It needs nothing but IPv4 UDP sockets (no device, no library).
std::string probe() {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::string("cannot open an IPv4 UDP socket: ") + std::strerror(errno);
    ::close(fd);
    return "";
}

} // namespace
} // namespace sluice::conduit::udp

SLUICE_CONDUIT_REGISTER(udp, {
    .name = "udp",
    .description = "reliable AMs over UDP datagrams to other hosts (Put/Get over AM)",
    .priority = 10,
    .network = true,
    .wakes = true,
    .capabilities = "AMs over datagrams with acks and retransmission; Put/Get over AM; needs AM credits",
    .probe = sluice::conduit::udp::probe,
    .create = sluice::conduit::udp::make_udp_transport,
    .limits = nullptr,
})
