// tests/softnic/verbs/fabric.cpp - mapping and locking the shared fabric.
#include "fabric.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <string_view>

#include <endian.h>

namespace softnic {
namespace {

Fabric *mapped = nullptr;
std::once_flag mapped_once;

std::string_view fabric_path(char *buffer, std::size_t size) {
    const char *p = std::getenv("SOFTNIC_FABRIC");
    if (p && *p) return p;
    std::snprintf(buffer, size, "/dev/shm/softnic-v2-%u", static_cast<unsigned>(::getuid()));
    return buffer;
}

[[noreturn]] void die(const char *what, const char *path) {
    std::fprintf(stderr, "softnic: %s %s: %s\n", what, path, std::strerror(errno));
    std::abort();
}

void map_fabric() {
    char buffer[256];
    const std::string path(fabric_path(buffer, sizeof buffer));
    bool creator = false;
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
        creator = true;
        if (::ftruncate(fd, sizeof(Fabric)) != 0) die("cannot size", path.c_str());
    } else if (errno == EEXIST) {
        fd = ::open(path.c_str(), O_RDWR);
        if (fd < 0) die("cannot open", path.c_str());
        // The creator may still be sizing it.
        for (int i = 0; i < 5000; ++i) {
            struct stat st {};
            if (::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= sizeof(Fabric)) break;
            ::usleep(1000);
        }
    } else {
        die("cannot create", path.c_str());
    }
    void *p = ::mmap(nullptr, sizeof(Fabric), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) die("cannot map", path.c_str());
    auto *f = static_cast<Fabric *>(p);
    if (creator) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&f->lock, &a);
        pthread_mutexattr_destroy(&a);
        f->key_generation = static_cast<std::uint32_t>(::getpid()) & 0xffff;
        __atomic_store_n(&f->magic, fabric_magic, __ATOMIC_RELEASE);
    } else {
        for (int i = 0; i < 5000 && __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != fabric_magic; ++i) ::usleep(1000);
        if (__atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != fabric_magic) {
            std::fprintf(stderr, "softnic: %s is not a software NIC fabric of this version; remove it\n", path.c_str());
            std::abort();
        }
    }
    mapped = f;
}

} // namespace

Fabric &fabric() {
    std::call_once(mapped_once, map_fabric);
    return *mapped;
}

bool alive(std::int32_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

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

void lock() {
    Fabric &f = fabric();
    const int r = pthread_mutex_lock(&f.lock);
    if (r == EOWNERDEAD) {
        pthread_mutex_consistent(&f.lock);
        collect_dead();
    } else if (r != 0) {
        errno = r;
        die("cannot lock", "the fabric");
    }
}

void unlock() { pthread_mutex_unlock(&fabric().lock); }

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

bool ethernet() {
    const char *p = std::getenv("SOFTNIC_LINK_LAYER");
    return p && (std::strcmp(p, "eth") == 0 || std::strcmp(p, "ethernet") == 0);
}

std::uint16_t port_lid(std::uint32_t device, std::uint32_t port) {
    return ethernet() ? 0 : static_cast<std::uint16_t>(device * 4 + port);
}

ibv_gid port_gid(std::uint32_t device, std::uint32_t port) {
    ibv_gid g{};
    if (ethernet()) {
        // RoCE v2: the IPv4-mapped address 127.0.<device>.<port>.
        g.raw[10] = g.raw[11] = 0xff;
        g.raw[12] = 127;
        g.raw[14] = static_cast<std::uint8_t>(device);
        g.raw[15] = static_cast<std::uint8_t>(port);
    } else {
        g.global.subnet_prefix = htobe64(0xfe80000000000000ull);
        g.global.interface_id = htobe64(node_guid(device) + port);
    }
    return g;
}

std::uint64_t node_guid(std::uint32_t device) { return 0x0002c9fffe000000ull | (0x50 + device); }

bool path_reaches(std::uint16_t dlid, const std::uint8_t *dgid, bool global, std::uint32_t device, std::uint32_t port) {
    if (!ethernet()) return dlid == port_lid(device, port);
    const ibv_gid g = port_gid(device, port);
    return global && std::memcmp(dgid, g.raw, sizeof g.raw) == 0;
}

} // namespace softnic
