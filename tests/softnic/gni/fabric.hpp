// tests/softnic/gni/fabric.hpp - the software GNI NIC's shared state.
//
// Every process of the host that attaches a communication domain maps one
// file (SOFTNIC_GNI_FABRIC, default /dev/shm/softnic-gni-<uid>, with
// "-h<host>" after it when SOFTNIC_HOSTS names several hosts): the host's
// fabric.  It holds, under one robust process-shared mutex, the tables an
// Aries NIC and its driver keep and that a peer's operations must reach:
// communication domains, completion queues (a peer writes remote events
// into them), memory registrations, SMSG mailboxes and datagrams.  Objects
// of a process that died are freed when next seen.  A transfer to a domain
// of another host goes over the wire (wire.hpp) to a process of that host,
// which carries it out on its fabric.  README.md says what is and is not
// modelled.
#pragma once

#include "../common/hosts.hpp"
#include "../common/shared_fabric.hpp"
#include "gni_pub.h"

#include <netinet/in.h>

#include <pthread.h>

#include <cstdint>

namespace softnic_gni {

// Table sizes (the whole host's).
constexpr std::uint32_t max_cdm = 256;
constexpr std::uint32_t max_cq = 256;
constexpr std::uint32_t max_cq_entries = 4096;
constexpr std::uint32_t max_reg = 4096;
constexpr std::uint32_t max_mailbox = 1024;
constexpr std::uint32_t max_datagram = 2048;
constexpr std::uint32_t max_notice = 2048;
// Registrations per NIC (memory domain descriptors) unless
// SOFTNIC_GNI_MDD_LIMIT says otherwise.
constexpr std::uint32_t default_mdd_limit = 1024;

// A communication domain attached to the NIC (GNI_CdmAttach).
struct Cdm {
    std::uint32_t used;
    std::int32_t pid;
    std::uint32_t address;  // the NIC address it attached with
    std::uint32_t inst_id;
    std::uint32_t ptag;
    std::uint32_t cookie;
    std::uint32_t registrations;  // against the MDD limit
    // Its datagrams COMPLETED or TERMINATED and not yet tested, and what
    // its process has to do for them at its next datagram call (bits,
    // datagram.cpp); GNI_PostDataProbeById reads both without the lock.
    std::uint32_t datagrams_done;
    std::uint32_t datagram_work;
    std::uint32_t pad;
};

// A completion queue: [head, tail) hold events; an event that finds it full
// is lost and sets overrun, which the next GNI_CqGetEvent reports.
struct Cq {
    std::uint32_t used;
    std::int32_t pid;
    std::uint32_t generation;
    std::uint32_t cap;
    std::uint64_t head, tail;
    std::uint32_t overrun;
    std::uint32_t pad;
    std::uint64_t e[max_cq_entries];
};

// A memory registration.  Handles carry (generation, index) and the owner's
// pid, so that a stale handle matches nothing.
struct Reg {
    std::uint32_t used;
    std::int32_t pid;
    std::uint32_t cdm;  // the NIC (index in cdm[]) it was registered with
    std::uint32_t generation;
    std::uint64_t addr, length;
    std::uint32_t flags;
    std::int32_t dst_cq;  // remote events (SMSG, REMOTE_EVENT posts), -1: none
    std::uint32_t dst_cq_generation;
    std::uint32_t pad;
};

// An SMSG mailbox: one receiver's slots for one peer, in the receiver's
// registered memory.  Messages [released, written) are in slots
// index % maxcredit, written - released is the credit in use, and the
// receiver sees [released, sent): a message that came over the wire is
// written, then seen once its sender has the answer (transfer.hpp).
struct Mailbox {
    std::uint32_t used;
    std::int32_t pid;  // the receiver
    std::uint32_t reg, reg_generation;
    std::uint64_t addr;  // the mailbox's first byte in the receiver
    std::uint32_t maxcredit, maxsize, slot_size;
    std::uint32_t pad;
    std::uint64_t written, sent, released;
};

// Whom a transfer or a datagram is for, or whose it is: the domain
// attached with NIC address `address` and instance id `inst_id` in the job
// (ptag, cookie).
struct Target {
    std::uint32_t address, inst_id, ptag, cookie;
};

// A datagram (datagram.hpp): a post of a domain of this host, or a
// visitor, the directed post of a domain of a lower host (its index in
// SOFTNIC_HOSTS) aimed at a domain of this one, which is matched here.
enum DatagramKind : std::uint8_t { datagram_directed = 1, datagram_wildcard, datagram_visitor };
enum DatagramState : std::uint8_t {
    datagram_pending = 1,
    datagram_away,  // a post matched on a higher host, as a visitor there
    datagram_completed,
    datagram_terminated,
};
struct Datagram {
    std::uint32_t used;
    std::int32_t pid;  // the poster's; 0 for a visitor
    std::uint32_t generation;
    std::uint32_t cdm;  // the poster's domain (index in cdm[]), for a post
    std::uint8_t kind, state;
    std::uint8_t busy;    // a thread awaits a round trip on the wire for it: nothing else may take it
    std::uint8_t unsent;  // its forward or notice found no process of the peer's host: sent again later
    std::uint16_t in_len, got_len;
    std::uint64_t seq;  // posting order: the oldest wildcard is matched first
    std::uint64_t id;   // the caller's datagram id
    Target poster;
    Target target;  // a directed datagram's
    Target peer;    // whose datagram it matched, once COMPLETED
    std::uint32_t remote_host;  // a visitor's poster's host; the host holding an away post
    std::uint32_t pad;
    std::uint64_t remote_key;  // the visitor's post there; the away post's visitor there
    std::uint8_t in[GNI_DATAGRAM_MAXSIZE];
    std::uint8_t got[GNI_DATAGRAM_MAXSIZE];  // the peer's in bytes, once COMPLETED
};

// That the directed post `key` of a domain of higher host `host`, aimed at
// `target` of this host, waits there for a wildcard of `target`.
struct Notice {
    std::uint32_t used;
    std::uint32_t host;
    std::uint64_t key;
    std::uint64_t seq;
    Target poster, target;
    std::uint32_t claiming;  // a wildcard's claim for it is on the wire
    std::uint32_t pad;
};

struct Fabric {
    softnic_common::FabricHead head;  // magic and lock
    std::uint32_t generation;
    std::uint32_t pad;
    std::uint64_t datagram_seq;
    // Entries [0, top) of datagram[] and notice[] hold every one in use:
    // scans stop there.
    std::uint32_t datagram_top, notice_top;
    Cdm cdm[max_cdm];
    Cq cq[max_cq];
    Reg reg[max_reg];
    Mailbox mailbox[max_mailbox];
    Datagram datagram[max_datagram];
    Notice notice[max_notice];
};

constexpr std::uint64_t fabric_magic = 0x33696e67666e7373ull;  // "ssnfgni3"

// The mapped fabric (opened on first use) and its lock.  lock() frees the
// objects of processes that died, if one died holding it.
Fabric &fabric();
void lock();
void unlock();
using Locked = softnic_common::FabricLock<lock, unlock>;

using softnic_common::alive;  // whether process `pid` exists
// Frees every object of processes that no longer exist (under the lock).
void collect_dead();
std::uint32_t next_generation();  // under the lock

// Under the lock: appends an event to CQ `index` if it is still the one of
// `generation`; a full CQ loses it and is marked overrun.
void cq_post(std::int32_t index, std::uint32_t generation, std::uint64_t event);

// Knobs, read once.
std::uint32_t mdd_limit();        // SOFTNIC_GNI_MDD_LIMIT
std::uint32_t bte_delay_us();     // SOFTNIC_GNI_BTE_DELAY_US
// The job's credentials, as ALPS sets them (PMI_GNI_PTAG, PMI_GNI_COOKIE,
// PMI_GNI_DEV_ID); false when one is missing.
struct Job {
    std::uint32_t ptag, cookie, dev_id;
};
bool job(Job &out);

// Hosts (SOFTNIC_HOSTS, common/hosts.hpp: one IPv4 address per host, the
// same list for every process).  Unset: one host.
constexpr std::uint16_t default_wire_port = 4792;  // the verbs NIC's is 4791
bool several_hosts();
// This process's host: its index in the list; -1 (said once on stderr)
// when no address of the list is local to it.
int host_index();
std::uint32_t host_count();
in_addr host_address(std::uint32_t host);
std::uint16_t wire_port();  // SOFTNIC_GNI_WIRE_PORT
// This host's NIC address: with SOFTNIC_HOSTS its index + 1, else
// PMI_GNI_LOC_ADDR.  False when there is none (no host of the list, or
// PMI_GNI_LOC_ADDR unset).
bool local_address(std::uint32_t &out);
// Where NIC address `address` is: this_host, another host of the list
// (its index), or no_host.
constexpr int this_host = -1;
constexpr int no_host = -2;
int host_of(std::uint32_t address);

} // namespace softnic_gni
