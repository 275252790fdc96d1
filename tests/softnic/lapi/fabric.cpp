// tests/softnic/lapi/fabric.cpp - the task table, the rings and the knobs
// (fabric.hpp).
#include "fabric.hpp"

#include "lapi.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

namespace softnic_lapi {
namespace {

Fabric *mapped = nullptr;
std::once_flag mapped_once;
constinit softnic_common::HostList hosts{"softnic-lapi"};

void map_fabric() {
    softnic_common::FabricHead *h = softnic_common::map_fabric(
        softnic_common::fabric_path("SOFTNIC_LAPI_FABRIC", "/dev/shm/softnic-lapi-", hosts), sizeof(Fabric),
        fabric_magic, "softnic-lapi", [](softnic_common::FabricHead *) {});
    mapped = reinterpret_cast<Fabric *>(h);
}

long env_number(const char *name, long fallback) {
    const char *p = std::getenv(name);
    if (!p || !*p) return fallback;
    char *end = nullptr;
    const long n = std::strtol(p, &end, 10);
    return end != p && *end == 0 && n >= 0 ? n : fallback;
}

// A whole decimal number in [low, high] from variable `name`.
bool env_exact(const char *name, unsigned long long low, unsigned long long high, unsigned long long &out) {
    const char *p = std::getenv(name);
    if (!p || *p < '0' || *p > '9') return false;
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(p, &end, 10);
    if (errno || *end || n < low || n > high) return false;
    out = n;
    return true;
}

long futex(std::uint32_t *word, int op, std::uint32_t value, const timespec *timeout) {
    // Not FUTEX_PRIVATE: the word is in a mapping other processes share.
    return ::syscall(SYS_futex, word, op, value, timeout, nullptr, 0);
}

void ring_reset(std::uint32_t slot) {
    Ring &r = fabric().ring[slot];
    for (Slot &s : r.slot) __atomic_store_n(&s.ready, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&r.head, 0ull, __ATOMIC_RELEASE);
    __atomic_store_n(&r.tail, 0ull, __ATOMIC_RELEASE);
}

} // namespace

Fabric &fabric() {
    std::call_once(mapped_once, map_fabric);
    return *mapped;
}

void collect_dead() {
    for (TaskEntry &t : fabric().task)
        if (t.state != task_free && !softnic_common::alive(t.pid)) t.state = task_free;
}

void lock() { softnic_common::lock(fabric().head, "softnic-lapi", collect_dead); }
void unlock() { softnic_common::unlock(fabric().head); }

int task_join(std::uint64_t partition, std::uint32_t task, std::uint32_t tasks, std::uint32_t &slot,
              std::uint32_t &incarnation) {
    Locked l;
    Fabric &f = fabric();
    int free_slot = -1, same = -1;
    for (std::uint32_t i = 0; i < max_tasks; ++i) {
        const TaskEntry &t = f.task[i];
        if (t.state == task_free) {
            if (free_slot < 0) free_slot = static_cast<int>(i);
        } else if (t.partition == partition && t.task == task) {
            same = static_cast<int>(i);
        }
    }
    std::uint32_t next = 1;
    if (same >= 0) {
        TaskEntry &t = f.task[same];
        // A task that ended, or whose process died, may join again; a live
        // one holds its id.
        if (t.state == task_active && softnic_common::alive(t.pid)) return LAPI_ERR_TASK_IN_USE;
        next = t.incarnation + 1;
        free_slot = same;
    }
    if (free_slot < 0) {
        collect_dead();
        for (std::uint32_t i = 0; i < max_tasks && free_slot < 0; ++i)
            if (f.task[i].state == task_free) free_slot = static_cast<int>(i);
        if (free_slot < 0) return LAPI_ERR_NO_FABRIC;
    }
    slot = static_cast<std::uint32_t>(free_slot);
    incarnation = next;
    ring_reset(slot);
    f.task[slot] = TaskEntry{task_active, static_cast<std::int32_t>(::getpid()), partition, task, tasks, next, 0};
    return LAPI_SUCCESS;
}

void task_leave(std::uint32_t slot) {
    Locked l;
    TaskEntry &t = fabric().task[slot];
    if (t.pid == ::getpid()) t.state = task_ended;
}

bool task_find(std::uint64_t partition, std::uint32_t task, std::uint32_t incarnation, TaskRef &out) {
    Locked l;
    const Fabric &f = fabric();
    for (std::uint32_t i = 0; i < max_tasks; ++i) {
        const TaskEntry &t = f.task[i];
        if (t.state != task_free && t.partition == partition && t.task == task && t.incarnation >= incarnation) {
            out = TaskRef{this_host, i, t.pid, t.incarnation};
            return true;
        }
    }
    return false;
}

Liveness task_liveness(const TaskRef &r) {
    const TaskEntry &t = fabric().task[r.slot];
    const std::uint32_t state = __atomic_load_n(&t.state, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&t.pid, __ATOMIC_ACQUIRE) != r.pid ||
        __atomic_load_n(&t.incarnation, __ATOMIC_ACQUIRE) != r.incarnation || state == task_free)
        return Liveness::ended;  // replaced: the one we met is gone
    if (!softnic_common::alive(r.pid)) return state == task_ended ? Liveness::ended : Liveness::died;
    return state == task_ended ? Liveness::ended : Liveness::live;
}

Push ring_push(std::uint32_t slot, std::int32_t pid, std::uint32_t incarnation, const void *packet,
               std::uint32_t bytes) {
    {
        Locked l;
        const TaskEntry &t = fabric().task[slot];
        if (t.state != task_active || t.pid != pid || t.incarnation != incarnation || !softnic_common::alive(pid))
            return Push::gone;
        Ring &r = fabric().ring[slot];
        if (r.tail - __atomic_load_n(&r.head, __ATOMIC_ACQUIRE) >= ring_slots) return Push::full;
        Slot &s = r.slot[r.tail % ring_slots];
        std::memcpy(s.packet, packet, bytes);
        s.bytes = bytes;
        __atomic_store_n(&s.ready, 1u, __ATOMIC_RELEASE);
        ++r.tail;
    }
    doorbell_ring(slot);
    return Push::done;
}

const Slot *ring_peek(std::uint32_t slot) {
    Ring &r = fabric().ring[slot];
    const Slot &s = r.slot[__atomic_load_n(&r.head, __ATOMIC_RELAXED) % ring_slots];
    return __atomic_load_n(&s.ready, __ATOMIC_ACQUIRE) ? &s : nullptr;
}

void ring_release(std::uint32_t slot) {
    Ring &r = fabric().ring[slot];
    const std::uint64_t head = __atomic_load_n(&r.head, __ATOMIC_RELAXED);
    __atomic_store_n(&r.slot[head % ring_slots].ready, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&r.head, head + 1, __ATOMIC_RELEASE);
}

std::uint32_t doorbell(std::uint32_t slot) { return __atomic_load_n(&fabric().ring[slot].doorbell, __ATOMIC_ACQUIRE); }

void doorbell_wait(std::uint32_t slot, std::uint32_t seen, long timeout_us) {
    const timespec t{timeout_us / 1000000, (timeout_us % 1000000) * 1000};
    futex(&fabric().ring[slot].doorbell, FUTEX_WAIT, seen, &t);
}

void doorbell_ring(std::uint32_t slot) {
    std::uint32_t *word = &fabric().ring[slot].doorbell;
    __atomic_add_fetch(word, 1u, __ATOMIC_RELEASE);
    futex(word, FUTEX_WAKE, INT_MAX, nullptr);
}

Knobs knobs_read() {
    return Knobs{env_number("SOFTNIC_LAPI_HH_LIMIT_MS", 2000), env_number("SOFTNIC_LAPI_COMPLETION_DELAY_US", 0),
                 env_number("SOFTNIC_LAPI_INIT_TIMEOUT_S", 60)};
}

int job_read(Job &out) {
    unsigned long long tasks = 0, task = 0, partition = 0;
    if (!env_exact("MP_CHILD", 0, max_job_tasks - 1, task)) return LAPI_ERR_ENV_MP_CHILD;
    if (!env_exact("MP_PROCS", 1, max_job_tasks, tasks)) return LAPI_ERR_ENV_MP_PROCS;
    if (task >= tasks) return LAPI_ERR_ENV_MP_CHILD;
    if (!env_exact("MP_PARTITION", 1, ~0ull, partition)) return LAPI_ERR_ENV_MP_PARTITION;
    out = Job{static_cast<std::uint32_t>(task), static_cast<std::uint32_t>(tasks), partition};
    return LAPI_SUCCESS;
}

bool several_hosts() { return hosts.several(); }
int host_index() { return hosts.self(); }
std::uint32_t host_count() { return hosts.count(); }
in_addr host_address(std::uint32_t host) { return hosts.address(host); }
std::uint16_t wire_port() { return softnic_common::port_read("SOFTNIC_LAPI_WIRE_PORT", default_wire_port); }

} // namespace softnic_lapi
