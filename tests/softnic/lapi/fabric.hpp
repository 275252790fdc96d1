// tests/softnic/lapi/fabric.hpp - the software LAPI's shared state.
//
// Every task of the host maps one file (SOFTNIC_LAPI_FABRIC, default
// /dev/shm/softnic-lapi-<uid>): the host's fabric, what the switch adapter
// and its driver would hold.  Under one robust process-shared lock it has
// the table of tasks (job key, task id, pid, incarnation) and, per task, the
// ring of packets other tasks push into: a packet is one slot, and a
// message larger than a packet is several (transfer.hpp).  The ring's
// consumer is its task's dispatcher, which reads without the lock.  A
// task's doorbell word is a futex its producers wake.  README.md says what
// is and is not modelled.
#pragma once

#include "../common/hosts.hpp"
#include "../common/shared_fabric.hpp"

#include <netinet/in.h>

#include <cstdint>

namespace softnic_lapi {

constexpr std::uint32_t max_tasks = 128;     // a host's, across jobs
constexpr std::uint32_t max_job_tasks = 4096; // MP_PROCS, across hosts
constexpr std::uint32_t ring_slots = 64;     // packets waiting for one task
constexpr std::uint32_t packet_bytes = 2048; // MAX_PKT_SZ: one slot, header included

enum TaskState : std::uint32_t { task_free = 0, task_active = 1, task_ended = 2 };

// A task of a job on this host.  A task id that joins again in its job
// (LAPI_Init after LAPI_Term, or after its process died) gets the next
// incarnation; packets are pushed only to the incarnation a sender met.
struct TaskEntry {
    std::uint32_t state;
    std::int32_t pid;
    std::uint64_t partition;  // MP_PARTITION: the job
    std::uint32_t task;       // MP_CHILD
    std::uint32_t tasks;      // MP_PROCS
    std::uint32_t incarnation;
    std::uint32_t pad;
};

struct Slot {
    std::uint32_t ready;  // published last by the producer, cleared by the consumer
    std::uint32_t bytes;
    alignas(8) unsigned char packet[packet_bytes];
};

// Packets [head, tail) wait in slot[index % ring_slots].
struct Ring {
    std::uint64_t head;  // the consumer's
    std::uint64_t tail;  // producers', under the lock
    std::uint32_t doorbell;
    std::uint32_t pad[11];
    Slot slot[ring_slots];
};

struct Fabric {
    softnic_common::FabricHead head;  // magic and lock
    TaskEntry task[max_tasks];
    Ring ring[max_tasks];
};

constexpr std::uint64_t fabric_magic = 0x3169706166736e73ull;  // "snsfapi1"

Fabric &fabric();
void lock();
void unlock();
using Locked = softnic_common::FabricLock<lock, unlock>;

// A task as a sender met it.  host is this_host, or the index in
// SOFTNIC_HOSTS of the host it is on (wire.hpp).
constexpr int this_host = -1;
struct TaskRef {
    int host = this_host;
    std::uint32_t slot = 0;
    std::int32_t pid = 0;
    std::uint32_t incarnation = 0;
};

// Joins task `task` of job `partition` on this host; sets `slot` and
// `incarnation`.  LAPI_SUCCESS, LAPI_ERR_TASK_IN_USE (a live process has
// that task id in the job) or LAPI_ERR_NO_FABRIC (the table is full).
int task_join(std::uint64_t partition, std::uint32_t task, std::uint32_t tasks, std::uint32_t &slot,
              std::uint32_t &incarnation);
void task_leave(std::uint32_t slot);  // LAPI_Term: the entry stays, ended
// Task `task` of the job on this host in incarnation `incarnation` or later
// (active or ended); false when it has not joined.
bool task_find(std::uint64_t partition, std::uint32_t task, std::uint32_t incarnation, TaskRef &out);

// What became of a task a sender met (this host only; lock-free).
enum class Liveness { live, ended, died };
Liveness task_liveness(const TaskRef &t);

// Pushes one packet into task `to`'s ring and rings its doorbell.
enum class Push { done, full, gone };
Push ring_push(std::uint32_t slot, std::int32_t pid, std::uint32_t incarnation, const void *packet,
               std::uint32_t bytes);
// The consumer's side of its own ring: the oldest packet (nullptr when
// none), and giving its slot back.
const Slot *ring_peek(std::uint32_t slot);
void ring_release(std::uint32_t slot);
// The doorbell: its value, waiting until it differs from `seen` (or
// `timeout_us` passed), and waking the task's waiters.
std::uint32_t doorbell(std::uint32_t slot);
void doorbell_wait(std::uint32_t slot, std::uint32_t seen, long timeout_us);
void doorbell_ring(std::uint32_t slot);

// Frees the entries of processes that no longer exist (under the lock).
void collect_dead();

// The knobs, read at each LAPI_Init.
struct Knobs {
    long hh_limit_ms;          // SOFTNIC_LAPI_HH_LIMIT_MS
    long completion_delay_us;  // SOFTNIC_LAPI_COMPLETION_DELAY_US
    long init_timeout_s;       // SOFTNIC_LAPI_INIT_TIMEOUT_S
};
Knobs knobs_read();

// The job, from POE's environment: MP_CHILD, MP_PROCS, MP_PARTITION.
// LAPI_SUCCESS, or the LAPI_ERR_ENV_* code naming the first variable that
// is missing or malformed.
struct Job {
    std::uint32_t task, tasks;
    std::uint64_t partition;
};
int job_read(Job &out);

// Hosts (SOFTNIC_HOSTS, common/hosts.hpp: one IPv4 address per host, the
// same list for every process).  Unset: one host.
constexpr std::uint16_t default_wire_port = 4793;  // verbs 4791, gni 4792
bool several_hosts();
// This process's host: its index in the list; -1 (said once on stderr)
// when no address of the list is local to it.
int host_index();
std::uint32_t host_count();
in_addr host_address(std::uint32_t host);
std::uint16_t wire_port();  // SOFTNIC_LAPI_WIRE_PORT

} // namespace softnic_lapi
