// tests/softnic/verbs/transfer.hpp - carrying out a send work request.
//
// Two sides, as on a real fabric: the poster's (its QP's state, its send
// completion, its retries) and the target's (the target QP found, a
// receive taken, the bytes moved with process_vm_writev/readv, the
// receive completion).  On one host the poster runs both, under the
// fabric lock (execute); for a QP of another host the wire (wire.hpp)
// carries the target's side to a process of that host, which runs it
// there (serve), and brings back its verdict.
#pragma once

#include "fabric.hpp"

#include <chrono>
#include <cstdint>
#include <vector>

namespace softnic {

std::int32_t me();  // this process's pid

// The region of `pid` that holds [addr, addr+len) under `key` with `access`
// (0: any), or null.  Under the fabric lock.
const Mr *find_mr(std::int32_t pid, std::uint32_t key, std::uint64_t addr, std::uint64_t len, std::uint32_t access);

// A completion channel to tell, once the fabric is unlocked.
// A completion channel's wake-up (event 0), or an asynchronous event
// (ibv_event_type + 1) for its context's socket; either names the CQ.
struct Notice {
    std::int32_t pid, channel;
    std::uint32_t cq;
    std::uint32_t event = 0;
};
// Cq::async of a CQ whose context has no asynchronous-event socket.
constexpr std::int32_t no_async = -1;
// The socket number of asynchronous events for context `n` of a process
// (completion channels count up from 0).
constexpr std::int32_t async_channel(std::int32_t n) { return -2 - n; }
void notify(const std::vector<Notice> &notices);
// Adds a completion to CQ `index`.  Under the fabric lock.
void complete(std::uint32_t index, const ibv_wc &wc, std::vector<Notice> &notices);
// The completion opcode of a send work request's opcode.
ibv_wc_opcode wc_opcode(ibv_wr_opcode op);
ibv_wc send_wc(std::uint32_t qp, std::uint64_t wr_id, ibv_wc_opcode op, ibv_wc_status status, std::uint32_t len);
// Moves a QP to the error state: its posted receives complete flushed.
void to_error(std::uint32_t index, std::vector<Notice> &notices);

// IBV_WR_ATOMIC_FETCH_AND_ADD or IBV_WR_ATOMIC_CMP_AND_SWP: 8 bytes at an
// 8-byte aligned remote address, the old value returned to the poster.
inline bool atomic_opcode(ibv_wr_opcode op) {
    return op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP;
}
constexpr std::uint32_t atomic_bytes = 8;

// A send work request, with its payload gathered at post time.
struct Work {
    std::uint32_t qp;
    std::uint64_t wr_id;
    ibv_wr_opcode opcode;
    bool signaled;
    std::uint32_t imm;
    std::uint64_t remote_addr;
    std::uint32_t rkey;
    std::uint32_t remote_qpn, remote_qkey;  // UD; RC over the wire: the QP's dest_qpn
    std::uint16_t dlid;                     // UD: the address handle's; RC over the wire: the QP's path
    bool global;
    std::uint8_t dgid[16];
    std::vector<std::uint8_t> payload;  // sends and writes; atomics: compare_add, then swap (8 bytes each)
    std::vector<Sge> local;             // reads and atomics: where the bytes go
    std::uint32_t length;
    std::int32_t host = -1;  // another host's index: carried out over the wire
    // Retries.
    std::chrono::steady_clock::time_point next, deadline;
    bool rnr = false;
    unsigned rnr_tries = 0;
};

// Who posted a work request, as its target sees it.
struct Source {
    std::uint32_t qpn;
    std::uint16_t lid;
    ibv_gid gid;
};

// What the target's side found.
struct Verdict {
    enum class Kind : std::uint32_t {
        done,    // with `status`
        rnr,     // no receive posted: retry after the RNR timer
        absent,  // no such QP, or not ready: retry until the transport timeout
    } kind;
    ibv_wc_status status;
};

enum class Outcome { done, retry };

// Carries out `k` on this host; under the fabric lock.
Outcome execute(Work &k, std::vector<Notice> &notices);

// The poster's side of work for another host, under the fabric lock.
// ready_to_send: false when the work is over (its QP gone, or in the error
// state: flushed); else `source` is set.  conclude: completes it by the
// target's verdict (`read`: the bytes of an RDMA_READ, an atomic's old
// value), or asks for a retry.
bool ready_to_send(Work &k, Source &source, std::vector<Notice> &notices);
Outcome conclude(Work &k, const Verdict &v, const std::vector<std::uint8_t> &read, std::vector<Notice> &notices);

// The receive completion the target's side owes.  On one host the poster
// writes it at once; over the wire the serving process writes it after its
// answer, so that a target that ends as soon as it has its completion
// cannot end before its poster has the answer.
struct Arrival {
    bool owed = false;
    bool breaks = false;  // an RC receive failed: its QP goes to the error state
    std::uint32_t qp = 0, cq = 0;
    ibv_wc wc{};
};
// Writes it; under the fabric lock.
void arrive(const Arrival &a, std::vector<Notice> &notices);

// The target's side of `k` (`ud`: from a UD QP) from another host's
// `source`, on this host; under the fabric lock.  An RDMA_READ's bytes, and
// an atomic's old value, go to `read`.
Verdict serve(const Work &k, bool ud, const Source &source, std::vector<std::uint8_t> &read, Arrival &arrival);

} // namespace softnic
