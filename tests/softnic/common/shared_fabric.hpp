// tests/softnic/common/shared_fabric.hpp - the file a software NIC's
// processes share, as a NIC's own memory is shared by everything that uses
// it: mapping it, its robust process-shared lock, and telling a live
// process from a dead one.  Each NIC (verbs/, gni/, lapi/) keeps its own
// tables in the file after a FabricHead.
#pragma once

#include "hosts.hpp"

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace softnic_common {

// What every fabric file begins with.
struct FabricHead {
    std::uint64_t magic;  // published last, by the process that created the file
    pthread_mutex_t lock;
};

// Ends the process with "<nic>: <what> <path>: <errno's text>".
[[noreturn]] void die(const char *nic, const char *what, const char *path);

// The host's fabric file: variable `knob`, else `fallback` followed by the
// user id; with several hosts, "-h<host index>" after it, since /dev/shm
// is one for all network namespaces.
std::string fabric_path(const char *knob, const char *fallback, const HostList &hosts);

// Maps the file at `path`, `bytes` long, creating it when absent.  Its
// creator initialises the lock (robust: a holder that dies does not leave it
// taken), calls `init` on the mapping, then publishes `magic`; any other
// process waits for the magic and ends, naming the file, when another
// version's is there.  `nic` starts every message.
FabricHead *map_fabric(const std::string &path, std::size_t bytes, std::uint64_t magic, const char *nic,
                       void (*init)(FabricHead *));

// Takes the lock; when its holder died, makes it consistent and calls
// `collect_dead` (which frees that process's objects) before returning.
void lock(FabricHead &h, const char *nic, void (*collect_dead)());
void unlock(FabricHead &h);

// Holds a NIC's fabric lock (its `lock` and `unlock`) while it lives.
template <void (*lock)(), void (*unlock)()> struct FabricLock {
    FabricLock() { lock(); }
    ~FabricLock() { unlock(); }
    FabricLock(const FabricLock &) = delete;
    FabricLock &operator=(const FabricLock &) = delete;
};

// Whether process `pid` exists (a pid of another user's process counts).
bool alive(std::int32_t pid);

} // namespace softnic_common
