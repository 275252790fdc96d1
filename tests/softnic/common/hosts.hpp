// tests/softnic/common/hosts.hpp - the hosts of a software NIC's fabric:
// SOFTNIC_HOSTS=ADDR[,ADDR...] names one IPv4 address per host (a network
// namespace, or a machine), the same list for every process, and a process
// is the host whose address is the first of the list local to it.  Every
// NIC (verbs/, gni/, lapi/) reads the list with these functions.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

namespace softnic_common {

constexpr std::uint32_t max_hosts = 64;

struct Hosts {
    std::vector<in_addr> address;  // empty: SOFTNIC_HOSTS unset, one host
    int self = 0;                  // this process's host; -1: none of the list
};

// Reads SOFTNIC_HOSTS.  A malformed list, or one naming no address local to
// this network namespace (one it can bind to), leaves `self` -1 after one
// line on stderr that starts with `nic` and names the variable.
Hosts hosts_read(const char *nic);

// A NIC's list, read (hosts_read) on its first use and never destroyed:
// detached threads may ask while the process exits.  Each NIC defines its
// own at namespace scope, so that two NICs in one process keep theirs.
class HostList {
public:
    explicit constexpr HostList(const char *nic) : nic_(nic) {}
    HostList(const HostList &) = delete;
    HostList &operator=(const HostList &) = delete;

    bool several() const { return !hosts().address.empty(); }  // false: SOFTNIC_HOSTS unset, one host
    int self() const { return hosts().self; }                  // see Hosts
    std::uint32_t count() const;                               // 1 with one host
    in_addr address(std::uint32_t host) const { return hosts().address.at(host); }

private:
    const Hosts &hosts() const;

    const char *nic_;
    mutable std::once_flag once_;
    mutable const Hosts *hosts_ = nullptr;
};
// Nothing to run at exit, and constant-initialised (constinit) where defined.
static_assert(std::is_trivially_destructible_v<HostList>);

// The TCP port in variable `name` (1-65535), else `fallback`.
std::uint16_t port_read(const char *name, std::uint16_t fallback);

// `address`:`port` as a socket address.
sockaddr_in socket_address(in_addr address, std::uint16_t port);

} // namespace softnic_common
