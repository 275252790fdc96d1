// tests/softnic/common/shared_fabric.cpp - see shared_fabric.hpp.
#include "shared_fabric.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace softnic_common {

void die(const char *nic, const char *what, const char *path) {
    std::fprintf(stderr, "%s: %s %s: %s\n", nic, what, path, std::strerror(errno));
    std::abort();
}

std::string fabric_path(const char *knob, const char *fallback, const HostList &hosts) {
    const char *p = std::getenv(knob);
    std::string path = p && *p ? p : fallback + std::to_string(::getuid());
    if (hosts.several()) path += "-h" + std::to_string(hosts.self());
    return path;
}

FabricHead *map_fabric(const std::string &path, std::size_t bytes, std::uint64_t magic, const char *nic,
                       void (*init)(FabricHead *)) {
    bool creator = false;
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
        creator = true;
        if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) die(nic, "cannot size", path.c_str());
    } else if (errno == EEXIST) {
        fd = ::open(path.c_str(), O_RDWR);
        if (fd < 0) die(nic, "cannot open", path.c_str());
        // The creator may still be sizing it.
        for (int i = 0; i < 5000; ++i) {
            struct stat st {};
            if (::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) >= bytes) break;
            ::usleep(1000);
        }
    } else {
        die(nic, "cannot create", path.c_str());
    }
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) die(nic, "cannot map", path.c_str());
    auto *h = static_cast<FabricHead *>(p);
    if (creator) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&h->lock, &a);
        pthread_mutexattr_destroy(&a);
        init(h);
        __atomic_store_n(&h->magic, magic, __ATOMIC_RELEASE);
    } else {
        for (int i = 0; i < 5000 && __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != magic; ++i) ::usleep(1000);
        if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != magic) {
            std::fprintf(stderr, "%s: %s is not a fabric of this version of the NIC; remove it\n", nic, path.c_str());
            std::abort();
        }
    }
    return h;
}

void lock(FabricHead &h, const char *nic, void (*collect_dead)()) {
    const int r = pthread_mutex_lock(&h.lock);
    if (r == EOWNERDEAD) {
        pthread_mutex_consistent(&h.lock);
        collect_dead();
    } else if (r != 0) {
        errno = r;
        die(nic, "cannot lock", "the fabric");
    }
}

void unlock(FabricHead &h) { pthread_mutex_unlock(&h.lock); }

bool alive(std::int32_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

} // namespace softnic_common
