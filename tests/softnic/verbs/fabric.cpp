// tests/softnic/verbs/fabric.cpp - mapping and locking the shared fabric.
#include "fabric.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <vector>

#include <endian.h>

namespace softnic {
namespace {

Fabric *mapped = nullptr;
std::once_flag mapped_once;
constinit softnic_common::HostList hosts{"softnic"};

void map_fabric() {
    const std::string path = softnic_common::fabric_path("SOFTNIC_FABRIC", "/dev/shm/softnic-v3-", hosts);
    softnic_common::FabricHead *h = softnic_common::map_fabric(path, sizeof(Fabric), fabric_magic, "softnic", [](softnic_common::FabricHead *h) {
        // Start generations apart from a previous fabric's handles.
        reinterpret_cast<Fabric *>(h)->key_generation = static_cast<std::uint32_t>(::getpid()) & 0xffff;
    });
    mapped = reinterpret_cast<Fabric *>(h);
}

} // namespace

Fabric &fabric() {
    std::call_once(mapped_once, map_fabric);
    return *mapped;
}

void collect_dead() {
    Fabric &f = fabric();
    auto gone = [](std::int32_t pid) { return !alive(pid); };
    for (auto &q : f.qp)
        if (q.used && gone(q.pid)) q.used = 0;
    for (auto &c : f.cq)
        if (c.used && gone(c.pid)) c.used = 0;
    for (auto &s : f.srq)
        if (s.used && gone(s.pid)) s.used = 0;
    for (auto &m : f.mr)
        if (m.used && gone(m.pid)) m.used = 0;
}

void lock() { softnic_common::lock(fabric().head, "softnic", collect_dead); }

void unlock() { softnic_common::unlock(fabric().head); }

void channel_address(std::int32_t pid, std::int32_t channel, char *name, std::size_t size, std::size_t &length) {
    // Abstract (leading NUL): nothing to remove when the process ends.
    name[0] = 0;
    const int n = std::snprintf(name + 1, size - 1, "softnic-%u-%d-%d", static_cast<unsigned>(::getuid()), pid, channel);
    length = 1 + static_cast<std::size_t>(n);
}

namespace {

std::uint32_t env_count(const char *name) {
    const char *p = std::getenv(name);
    const long n = p ? std::strtol(p, nullptr, 10) : 1;
    return n >= 1 && n <= 4 ? static_cast<std::uint32_t>(n) : 1;
}
} // namespace

std::uint32_t device_count() { return env_count("SOFTNIC_DEVICES"); }
std::uint32_t port_count() { return env_count("SOFTNIC_PORTS"); }

bool several_hosts() { return hosts.several(); }
int host_index() { return hosts.self(); }
std::uint32_t host_count() { return hosts.count(); }
in_addr host_address(std::uint32_t host) { return hosts.address(host); }

std::uint16_t wire_port() { return softnic_common::port_read("SOFTNIC_WIRE_PORT", default_wire_port); }

namespace {
// This host's index in addresses (0 when the list names none).
std::uint32_t self() { return static_cast<std::uint32_t>(std::max(host_index(), 0)); }
} // namespace

bool ethernet() {
    // Read once: every work request asks.
    static const bool eth = [] {
        const char *p = std::getenv("SOFTNIC_LINK_LAYER");
        return p && (std::strcmp(p, "eth") == 0 || std::strcmp(p, "ethernet") == 0);
    }();
    return eth;
}

bool ud_lost() {
    static const long percent = [] {
        const char *p = std::getenv("SOFTNIC_UD_LOSS");
        return p ? std::clamp(std::strtol(p, nullptr, 10), 0L, 100L) : 0L;
    }();
    if (percent == 0) return false;
    thread_local std::mt19937 random(std::random_device{}());
    return static_cast<long>(std::uniform_int_distribution<int>(0, 99)(random)) < percent;
}

namespace {
// A count from the environment: `name`'s value within [low, high], or
// `unset` when it is not set.
std::uint32_t env_clamped(const char *name, long low, long high, std::uint32_t unset) {
    const char *p = std::getenv(name);
    return p ? static_cast<std::uint32_t>(std::clamp(std::strtol(p, nullptr, 10), low, high)) : unset;
}
} // namespace

std::uint32_t rd_atom_limit() {
    static const std::uint32_t limit = env_clamped("SOFTNIC_MAX_QP_RD_ATOM", 1, max_rd_atom, max_rd_atom);
    return limit;
}

std::uint64_t mr_budget() {
    static const std::uint64_t budget = [] {
        const char *p = std::getenv("SOFTNIC_MR_BUDGET");
        if (!p) return std::uint64_t{0};
        char *end = nullptr;
        std::uint64_t v = std::strtoull(p, &end, 10);
        switch (end && *end ? *end : ' ') {
        case 'G': case 'g': v <<= 10; [[fallthrough]];
        case 'M': case 'm': v <<= 10; [[fallthrough]];
        case 'K': case 'k': v <<= 10; break;
        default: break;
        }
        return v;
    }();
    return budget;
}

std::uint32_t mr_limit() {
    static const std::uint32_t limit = env_clamped("SOFTNIC_MAX_MR", 1, max_mr, max_mr);
    return limit;
}

std::uint32_t sq_slots() {
    static const std::uint32_t n = env_clamped("SOFTNIC_SQ_SLOTS", 0, 1L << 20, 0);
    return n;
}

std::uint32_t cq_slots() {
    static const std::uint32_t n = env_clamped("SOFTNIC_CQ_SLOTS", 0, 1L << 20, 0);
    return n;
}

bool corrupt_sends() {
    static const bool on = [] {
        const char *p = std::getenv("SOFTNIC_CORRUPT_SENDS");
        return p && std::strcmp(p, "1") == 0;
    }();
    return on;
}

std::uint16_t port_lid(std::uint32_t device, std::uint32_t port) {
    return ethernet() ? 0 : static_cast<std::uint16_t>(self() * lids_per_host + device * 4 + port);
}

ibv_gid port_gid(std::uint32_t device, std::uint32_t port) {
    ibv_gid g{};
    if (ethernet()) {
        // RoCE v2: the IPv4-mapped address 127.<host>.<device>.<port>.
        g.raw[10] = g.raw[11] = 0xff;
        g.raw[12] = 127;
        g.raw[13] = static_cast<std::uint8_t>(self());
        g.raw[14] = static_cast<std::uint8_t>(device);
        g.raw[15] = static_cast<std::uint8_t>(port);
    } else {
        g.global.subnet_prefix = htobe64(0xfe80000000000000ull);
        g.global.interface_id = htobe64(node_guid(device) + port);
    }
    return g;
}

std::uint64_t node_guid(std::uint32_t device) {
    return 0x0002c9fffe000000ull | (std::uint64_t{self()} << 8) | (0x50 + device);
}

bool path_reaches(std::uint16_t dlid, const std::uint8_t *dgid, bool global, std::uint32_t device, std::uint32_t port) {
    if (!ethernet()) return dlid == port_lid(device, port);
    const ibv_gid g = port_gid(device, port);
    return global && std::memcmp(dgid, g.raw, sizeof g.raw) == 0;
}

int remote_host(std::uint16_t dlid, const std::uint8_t *dgid, bool global) {
    if (!several_hosts()) return -1;
    static constexpr std::uint8_t v4_127[13] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127};
    std::uint32_t host;
    if (!ethernet()) host = dlid / lids_per_host;
    else if (global && std::memcmp(dgid, v4_127, sizeof v4_127) == 0) host = dgid[13];
    else return -1;
    return host < host_count() && host != self() ? static_cast<int>(host) : -1;
}

} // namespace softnic
