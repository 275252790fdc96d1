// tests/softnic/common/hosts.cpp - see hosts.hpp.
#include "hosts.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace softnic_common {
namespace {

// Whether this network namespace has `a` (binding to it works).
bool address_is_local(in_addr a) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_addr = a;
    const bool local = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr *>(&s), sizeof s) == 0;
    if (fd >= 0) ::close(fd);
    return local;
}

} // namespace

Hosts hosts_read(const char *nic) {
    Hosts h;
    const char *list = std::getenv("SOFTNIC_HOSTS");
    if (!list || !*list) return h;
    h.self = -1;
    std::string rest = list;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string one = rest.substr(0, comma);
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
        in_addr a{};
        if (::inet_pton(AF_INET, one.c_str(), &a) != 1 || h.address.size() == max_hosts) {
            std::fprintf(stderr, "%s: SOFTNIC_HOSTS=%s: \"%s\" is not an IPv4 address, or more than %u hosts\n", nic,
                         list, one.c_str(), max_hosts);
            h.self = -1;
            return h;
        }
        if (h.self < 0 && address_is_local(a)) h.self = static_cast<int>(h.address.size());
        h.address.push_back(a);
    }
    if (h.self < 0)
        std::fprintf(stderr, "%s: no address of SOFTNIC_HOSTS=%s is local to this host (network namespace)\n", nic,
                     list);
    return h;
}

const Hosts &HostList::hosts() const {
    std::call_once(once_, [this] { hosts_ = new Hosts(hosts_read(nic_)); });
    return *hosts_;
}

std::uint32_t HostList::count() const {
    return several() ? static_cast<std::uint32_t>(hosts().address.size()) : 1;
}

std::uint16_t port_read(const char *name, std::uint16_t fallback) {
    const char *p = std::getenv(name);
    const long n = p ? std::strtol(p, nullptr, 10) : 0;
    return n >= 1 && n <= 65535 ? static_cast<std::uint16_t>(n) : fallback;
}

sockaddr_in socket_address(in_addr address, std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr = address;
    return a;
}

} // namespace softnic_common
