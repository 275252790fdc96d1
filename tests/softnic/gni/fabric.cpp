// tests/softnic/gni/fabric.cpp - mapping and locking the shared fabric.
#include "fabric.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace softnic_gni {
namespace {

Fabric *mapped = nullptr;
std::once_flag mapped_once;
constinit softnic_common::HostList hosts{"softnic-gni"};

void map_fabric() {
    const std::string path = softnic_common::fabric_path("SOFTNIC_GNI_FABRIC", "/dev/shm/softnic-gni-", hosts);
    softnic_common::FabricHead *h = softnic_common::map_fabric(path, sizeof(Fabric), fabric_magic, "softnic-gni", [](softnic_common::FabricHead *h) {
        // Start generations apart from a previous fabric's handles.
        reinterpret_cast<Fabric *>(h)->generation = static_cast<std::uint32_t>(::getpid()) & 0xffff;
    });
    mapped = reinterpret_cast<Fabric *>(h);
}

std::uint32_t env_number(const char *name, std::uint32_t fallback) {
    const char *p = std::getenv(name);
    if (!p || !*p) return fallback;
    char *end = nullptr;
    const unsigned long n = std::strtoul(p, &end, 0);
    return end != p ? static_cast<std::uint32_t>(n) : fallback;
}

} // namespace

Fabric &fabric() {
    std::call_once(mapped_once, map_fabric);
    return *mapped;
}

void collect_dead() {
    Fabric &f = fabric();
    for (auto &c : f.cdm)
        if (c.used && !alive(c.pid)) c.used = 0;
    for (auto &q : f.cq)
        if (q.used && !alive(q.pid)) q.used = 0;
    for (auto &r : f.reg)
        if (r.used && !alive(r.pid)) r.used = 0;
    for (auto &m : f.mailbox)
        if (m.used && !alive(m.pid)) m.used = 0;
    // A visitor (pid 0) stays: its poster is on another host.
    for (auto &d : f.datagram)
        if (d.used && d.pid && !alive(d.pid)) d.used = 0;
}

void lock() { softnic_common::lock(fabric().head, "softnic-gni", collect_dead); }

void unlock() { softnic_common::unlock(fabric().head); }

std::uint32_t next_generation() {
    Fabric &f = fabric();
    if (++f.generation == 0) ++f.generation;
    return f.generation;
}

void cq_post(std::int32_t index, std::uint32_t generation, std::uint64_t event) {
    if (index < 0 || static_cast<std::uint32_t>(index) >= max_cq) return;
    Cq &q = fabric().cq[index];
    if (!q.used || q.generation != generation) return;
    if (q.tail - q.head >= q.cap) {
        __atomic_store_n(&q.overrun, 1u, __ATOMIC_RELEASE);
        return;
    }
    q.e[q.tail % q.cap] = event;
    // Published last: GNI_CqGetEvent reads tail without the lock.
    __atomic_store_n(&q.tail, q.tail + 1, __ATOMIC_RELEASE);
}

std::uint32_t mdd_limit() {
    static const std::uint32_t n = env_number("SOFTNIC_GNI_MDD_LIMIT", default_mdd_limit);
    return n;
}

std::uint32_t bte_delay_us() {
    static const std::uint32_t n = env_number("SOFTNIC_GNI_BTE_DELAY_US", 0);
    return n;
}

bool job(Job &out) {
    const char *names[] = {"PMI_GNI_PTAG", "PMI_GNI_COOKIE", "PMI_GNI_DEV_ID"};
    std::uint32_t v[3];
    for (int i = 0; i < 3; ++i) {
        // ALPS sets colon-separated lists (one entry per domain); the first
        // is the job's.
        const char *p = std::getenv(names[i]);
        if (!p || !*p) return false;
        char *end = nullptr;
        v[i] = static_cast<std::uint32_t>(std::strtoul(p, &end, 0));
        if (end == p) return false;
    }
    out = Job{v[0], v[1], v[2]};
    return true;
}

bool several_hosts() { return hosts.several(); }
int host_index() { return hosts.self(); }
std::uint32_t host_count() { return hosts.count(); }
in_addr host_address(std::uint32_t host) { return hosts.address(host); }
std::uint16_t wire_port() { return softnic_common::port_read("SOFTNIC_GNI_WIRE_PORT", default_wire_port); }

bool local_address(std::uint32_t &out) {
    if (several_hosts()) {
        if (host_index() < 0) return false;
        out = static_cast<std::uint32_t>(host_index()) + 1;
        return true;
    }
    const char *p = std::getenv("PMI_GNI_LOC_ADDR");
    char *end = nullptr;
    if (!p || !*p) return false;
    const unsigned long n = std::strtoul(p, &end, 0);
    if (end == p) return false;
    out = static_cast<std::uint32_t>(n);
    return true;
}

int host_of(std::uint32_t address) {
    // One host: every address is looked up on its fabric, where only the
    // domains attached with it match.
    if (!several_hosts()) return this_host;
    if (address == 0 || address > host_count()) return no_host;
    const int host = static_cast<int>(address - 1);
    return host == host_index() ? this_host : host;
}

} // namespace softnic_gni
