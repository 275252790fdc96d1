// tests/softnic/verbs/fabric.hpp - the software verbs NIC's shared state.
//
// Every process of a host that opens the software NIC maps one file
// (SOFTNIC_FABRIC, default /dev/shm/softnic-v3-<uid>, with "-h<host>" after
// it when SOFTNIC_HOSTS names several hosts): the host's fabric.  It holds, under one
// robust process-shared mutex, the tables a real HCA keeps in its own
// memory and that a peer's operations must reach: queue pairs with their
// receive queues, completion queues, shared receive queues and memory
// regions.  A work request is carried out by the process that posts it,
// at once: it finds the target's queue pair, takes a receive from it,
// moves the bytes into (or out of) the target process with
// process_vm_writev/readv, and writes the completions into both sides'
// completion queues.  Work for a QP of another host goes over the wire
// (wire.hpp) to a process of that host, which carries it out there.
// Objects of a process that died are freed the next time anyone looks at
// them.  README.md says what is and is not modelled.
#pragma once

#include "../common/hosts.hpp"
#include "../common/shared_fabric.hpp"

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>

#include <cstddef>
#include <cstdint>

namespace softnic {

// Limits, reported by ibv_query_device.  The fabric file holds every
// table whole but is sparse: a slot takes memory once used (a QP's page,
// and its receive ring's pages as receives are posted), so the limits are
// set for 256 ranks on a host with connections made on demand.
constexpr std::uint32_t max_qp = 8192;
constexpr std::uint32_t max_cq = 2048;
constexpr std::uint32_t max_srq = 1024;
constexpr std::uint32_t max_mr = 4096;
constexpr std::uint32_t max_qp_wr = 1024;
constexpr std::uint32_t max_srq_wr = 4096;
constexpr std::uint32_t max_cqe = 4096;
constexpr std::uint32_t max_sge = 4;
constexpr std::uint32_t max_inline = 512;
constexpr std::uint32_t max_msg = 1u << 30;
constexpr std::uint32_t max_rd_atom = 16;  // per QP, as initiator and as target
constexpr std::uint32_t ud_mtu = 4096;
constexpr std::uint32_t grh_bytes = 40;
constexpr std::uint32_t qpn_base = 0x40;  // qp_num = qpn_base + table index

struct Sge {
    std::uint64_t addr;
    std::uint32_t length;
    std::uint32_t lkey;
};

struct Wqe {
    std::uint64_t wr_id;
    std::uint32_t num_sge;
    std::uint32_t pad;
    Sge sge[max_sge];
};

// A ring of receive work requests: [head, tail) are posted.
template <std::uint32_t N> struct WqeRing {
    std::uint32_t head, tail, cap;
    std::uint32_t pad;
    Wqe w[N];
    std::uint32_t count() const { return tail - head; }
};

struct Qp {
    std::uint32_t used;
    std::int32_t pid;
    std::uint32_t device;  // index of its device (softnicN)
    std::uint32_t type;    // ibv_qp_type
    std::uint32_t state;  // ibv_qp_state
    std::uint32_t port;
    std::uint32_t pkey_index;
    std::uint32_t access;  // IBV_ACCESS_REMOTE_* the QP allows
    std::uint32_t qkey;
    std::uint32_t dest_qpn;
    std::uint8_t dgid[16];  // the path's destination GID (global routes)
    std::uint8_t global;    // the path has a GRH
    std::uint8_t pad0;
    std::uint16_t dlid;
    std::uint8_t min_rnr_timer, timeout, retry_cnt, rnr_retry;
    std::uint8_t max_rd_atomic, max_dest_rd_atomic;  // RDMA reads and atomics: as initiator, as target
    std::uint32_t rq_psn, sq_psn;
    std::uint32_t path_mtu;
    std::uint32_t send_cq, recv_cq;  // table indexes
    std::int32_t srq;                // -1: none
    std::uint32_t sq_sig_all;
    std::uint32_t max_send_wr;
    // The send queue: work requests posted, and freed (a signaled one's
    // completion polled frees it and every one posted before it; an
    // errored one's, all of them).  The difference is what it holds.
    std::uint32_t sq_posted, sq_freed;
    WqeRing<max_qp_wr> rq;
};

struct Cq {
    std::uint32_t used;
    std::int32_t pid;
    std::uint32_t cap;
    std::uint32_t head, tail;
    std::uint32_t armed;
    std::int32_t channel;  // the channel's number in its process, -1: none
    std::int32_t async;    // its context's asynchronous-event socket number, or no_async
    std::uint32_t overflowed;
    ibv_wc e[max_cqe];
};

struct Srq {
    std::uint32_t used;
    std::int32_t pid;
    std::uint32_t limit;  // armed limit, 0: not armed
    std::uint32_t max_sge;
    WqeRing<max_srq_wr> rq;
};

struct Mr {
    std::uint32_t used;  // 0: free, else 1 + the device it was registered on (max_mr is per device)
    std::int32_t pid;
    std::uint32_t key;  // lkey = rkey
    std::uint32_t access;
    std::uint64_t addr, length;
};

struct Fabric {
    softnic_common::FabricHead head;  // magic and lock
    std::uint32_t key_generation;
    std::uint32_t pad;
    Qp qp[max_qp];
    Cq cq[max_cq];
    Srq srq[max_srq];
    Mr mr[max_mr];
};

constexpr std::uint64_t fabric_magic = 0x34766369666e7373ull;  // "ssnficv4"

// The mapped fabric (opened on first use) and its lock.  lock() frees the
// objects of processes that died, if one died holding the lock.
Fabric &fabric();
void lock();
void unlock();
// Frees every object of processes that no longer exist.
void collect_dead();
using softnic_common::alive;  // whether process `pid` exists

// The process's abstract socket name for completion channel `channel` of
// process `pid`.
void channel_address(std::int32_t pid, std::int32_t channel, char *name, std::size_t size, std::size_t &length);

// Hosts (SOFTNIC_HOSTS: one IPv4 address per host, the same list for every
// process).  Unset: one host, index 0.
using softnic_common::max_hosts;
constexpr std::uint16_t default_wire_port = 4791;  // RoCE v2's port number, here on TCP
bool several_hosts();
// This process's host: the first address of the list that is local to its
// network namespace; -1 (said once on stderr) when none is, or the list is
// malformed.
int host_index();
std::uint32_t host_count();
in_addr host_address(std::uint32_t host);
std::uint16_t wire_port();  // SOFTNIC_WIRE_PORT

// Devices and ports (SOFTNIC_DEVICES, SOFTNIC_PORTS, SOFTNIC_LINK_LAYER).
// Addresses name the host: LID = 32 x host + 4 x device + port, GID
// ::ffff:127.host.device.port on Ethernet, the host in the node GUID.
constexpr std::uint32_t lids_per_host = 32;
std::uint32_t device_count();
std::uint32_t port_count();
bool ethernet();  // RoCE: no LIDs, GIDs address the ports
// SOFTNIC_UD_LOSS: the percentage (0-100) of UD datagrams lost on the way,
// at random; UD is unreliable, so a program must live with any of it.
bool ud_lost();
// SOFTNIC_CORRUPT_SENDS=1, a test of the tests: every send's payload lands
// with its bytes inverted (a fabric that corrupts silently), so that a
// program checking its payloads is seen to notice.
bool corrupt_sends();
// SOFTNIC_MAX_QP_RD_ATOM=N (1 to 16, default 16): the RDMA reads and
// atomics a QP may have outstanding, as initiator and as target, that
// query_device reports and modify_qp enforces (real HCAs have 4 to 128).
std::uint32_t rd_atom_limit();
// SOFTNIC_MR_BUDGET=BYTES (K, M and G suffixes): the bytes one process may
// have registered at once; a registration beyond it fails with ENOMEM, as
// an HCA's does past its translation tables or the locked-memory limit.
// Unset or 0: no budget.
std::uint64_t mr_budget();
// SOFTNIC_MAX_MR=N (1 to max_mr, default max_mr): the memory regions a
// device holds, over every process of the host, that query_device reports
// as max_mr; a registration beyond them fails with ENOMEM, as on an HCA
// whose region table is full.
std::uint32_t mr_limit();
// SOFTNIC_SQ_SLOTS=N: a QP's send queue really holds N work requests at
// most, whatever max_send_wr it was created with and reports, as on HCAs
// whose work requests with inline data or several entries take several
// send-queue slots each: a post beyond it fails with ENOMEM.  Unset or 0:
// max_send_wr.
std::uint32_t sq_slots();
// SOFTNIC_CQ_SLOTS=N: a CQ really holds N completions at most, whatever
// it was created with: one more overruns it (IBV_EVENT_CQ_ERR to its
// process, its QPs in error), as when a program sizes its CQ too small.
// Unset or 0: its size.
std::uint32_t cq_slots();
std::uint16_t port_lid(std::uint32_t device, std::uint32_t port);  // 0 on Ethernet
ibv_gid port_gid(std::uint32_t device, std::uint32_t port);
std::uint64_t node_guid(std::uint32_t device);
// Whether a path (dlid, or dgid when `global`) leads to `device`'s `port`
// of this host.
bool path_reaches(std::uint16_t dlid, const std::uint8_t *dgid, bool global, std::uint32_t device, std::uint32_t port);
// The other host a path leads to, or -1: this host, or none of the list.
int remote_host(std::uint16_t dlid, const std::uint8_t *dgid, bool global);

} // namespace softnic
