// tests/softnic/verbs/transfer.cpp - carrying out a send work request: the
// poster's side and the target's side (transfer.hpp).
#include "transfer.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <endian.h>

namespace softnic {

std::int32_t me() {
    static const std::int32_t pid = static_cast<std::int32_t>(::getpid());
    return pid;
}

// ---- memory ----

const Mr *find_mr(std::int32_t pid, std::uint32_t key, std::uint64_t addr, std::uint64_t len, std::uint32_t access) {
    const std::uint32_t i = key & 0xfff;
    if (i >= max_mr) return nullptr;
    const Mr &m = fabric().mr[i];
    if (!m.used || m.key != key || m.pid != pid) return nullptr;
    if (addr < m.addr || addr + len > m.addr + m.length || addr + len < addr) return nullptr;
    if ((m.access & access) != access) return nullptr;
    return &m;
}

namespace {

// Copies between this process and `pid` (the same process: memcpy).
bool move_bytes(std::int32_t pid, bool to_remote, void *local, std::uint64_t remote, std::size_t len) {
    if (len == 0) return true;
    if (pid == me()) {
        void *r = reinterpret_cast<void *>(remote);
        if (to_remote) std::memmove(r, local, len);
        else std::memmove(local, r, len);
        return true;
    }
    iovec l{local, len};
    iovec r{reinterpret_cast<void *>(remote), len};
    const ssize_t n = to_remote ? ::process_vm_writev(pid, &l, 1, &r, 1, 0) : ::process_vm_readv(pid, &l, 1, &r, 1, 0);
    return n == static_cast<ssize_t>(len);
}

// The target's side of an atomic on the word at k.remote_addr of `pid`:
// its old value in `old`.  Every atomic of the host runs under the fabric
// lock, so they are atomic with respect to each other (IBV_ATOMIC_HCA), not
// to the target's CPU; on the poster's own memory they are __atomic
// operations.  A failed compare writes nothing, nor does an add of 0.
bool apply_atomic(std::int32_t pid, const Work &k, std::uint64_t &old) {
    std::uint64_t operand[2];  // compare_add, swap
    std::memcpy(operand, k.payload.data(), sizeof operand);
    const bool add = k.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
    if (pid == me()) {
        auto *word = reinterpret_cast<std::uint64_t *>(k.remote_addr);
        old = operand[0];
        if (add) old = __atomic_fetch_add(word, operand[0], __ATOMIC_SEQ_CST);
        else __atomic_compare_exchange_n(word, &old, operand[1], false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return true;
    }
    if (!move_bytes(pid, false, &old, k.remote_addr, sizeof old)) return false;
    std::uint64_t next = add ? old + operand[0] : old == operand[0] ? operand[1] : old;
    return next == old || move_bytes(pid, true, &next, k.remote_addr, sizeof next);
}

} // namespace

// ---- completions ----

void complete(std::uint32_t index, const ibv_wc &wc, std::vector<Notice> &notices) {
    Cq &c = fabric().cq[index];
    if (!c.used) return;
    const std::uint32_t slots = cq_slots() ? std::min(c.cap, cq_slots()) : c.cap;
    if (c.tail - c.head >= slots) {
        // Overrun: the completion is lost, as on an HCA, which then puts
        // the CQ in error, every QP on it in error, and tells the CQ's
        // process by an asynchronous event.
        if (c.overflowed) return;
        c.overflowed = 1;
        Fabric &f = fabric();
        for (std::uint32_t i = 0; i < max_qp; ++i)
            if (f.qp[i].used && f.qp[i].state != IBV_QPS_ERR && (f.qp[i].send_cq == index || f.qp[i].recv_cq == index))
                to_error(i, notices);
        if (c.async != no_async) notices.push_back(Notice{c.pid, c.async, index, IBV_EVENT_CQ_ERR + 1u});
        return;
    }
    c.e[c.tail % c.cap] = wc;
    ++c.tail;
    if (c.armed && c.channel >= 0) {
        c.armed = 0;
        notices.push_back(Notice{c.pid, c.channel, index});
    }
}

void notify(const std::vector<Notice> &notices) {
    if (notices.empty()) return;
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    for (const Notice &n : notices) {
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::size_t len = 0;
        channel_address(n.pid, n.channel, a.sun_path, sizeof a.sun_path, len);
        const std::uint32_t event[2] = {n.event, n.cq};
        const void *what = n.event ? static_cast<const void *>(event) : &n.cq;
        (void)::sendto(fd, what, n.event ? sizeof event : sizeof n.cq, MSG_DONTWAIT, reinterpret_cast<sockaddr *>(&a),
                       static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
    }
    ::close(fd);
}

ibv_wc_opcode wc_opcode(ibv_wr_opcode op) {
    if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM) return IBV_WC_RDMA_WRITE;
    if (op == IBV_WR_RDMA_READ) return IBV_WC_RDMA_READ;
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) return IBV_WC_FETCH_ADD;
    if (op == IBV_WR_ATOMIC_CMP_AND_SWP) return IBV_WC_COMP_SWAP;
    return IBV_WC_SEND;
}

ibv_wc send_wc(std::uint32_t qp, std::uint64_t wr_id, ibv_wc_opcode op, ibv_wc_status status, std::uint32_t len) {
    ibv_wc wc{};
    wc.wr_id = wr_id;
    wc.status = status;
    wc.opcode = op;
    wc.byte_len = len;
    wc.qp_num = qpn_base + qp;
    return wc;
}

void to_error(std::uint32_t index, std::vector<Notice> &notices) {
    Qp &q = fabric().qp[index];
    q.state = IBV_QPS_ERR;
    if (q.srq >= 0) return;
    while (q.rq.count()) {
        const Wqe &w = q.rq.w[q.rq.head % q.rq.cap];
        ibv_wc wc{};
        wc.wr_id = w.wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.opcode = IBV_WC_RECV;
        wc.qp_num = qpn_base + index;
        ++q.rq.head;
        complete(q.recv_cq, wc, notices);
    }
}

void arrive(const Arrival &a, std::vector<Notice> &notices) {
    if (!a.owed) return;
    complete(a.cq, a.wc, notices);
    if (a.breaks) to_error(a.qp, notices);
}

namespace {

// ---- the target's side ----

// The RC QP `qpn` of this host that the path reaches and that is connected
// to `source` (its number, and with `by_path` its path too: QP numbers of
// two hosts are alike), or -1.
int rc_target(std::uint32_t qpn, std::uint16_t dlid, const std::uint8_t *dgid, bool global, const Source &source,
              bool by_path) {
    const std::uint32_t i = qpn - qpn_base;
    if (qpn < qpn_base || i >= max_qp) return -1;
    const Qp &t = fabric().qp[i];
    if (!t.used || t.type != IBV_QPT_RC || !alive(t.pid)) return -1;
    if (t.dest_qpn != source.qpn) return -1;  // connected elsewhere
    if (!path_reaches(dlid, dgid, global, t.device, t.port)) return -1;  // the path leads elsewhere
    if (by_path && (ethernet() ? !t.global || std::memcmp(t.dgid, source.gid.raw, sizeof t.dgid) != 0
                               : t.dlid != source.lid))
        return -1;
    return static_cast<int>(i);
}

// Takes a receive of QP `t` (its SRQ or its own queue): false if none.
bool take_receive(Qp &t, Wqe &w) {
    if (t.srq >= 0) {
        Srq &s = fabric().srq[t.srq];
        if (!s.used || !s.rq.count()) return false;
        w = s.rq.w[s.rq.head % s.rq.cap];
        ++s.rq.head;
        return true;
    }
    if (!t.rq.count()) return false;
    w = t.rq.w[t.rq.head % t.rq.cap];
    ++t.rq.head;
    return true;
}

// Scatters `bytes` into receive `w` of process `pid` at `offset`: false on
// a bad key or too small a buffer.
bool scatter(std::int32_t pid, const Wqe &w, std::size_t offset, const std::uint8_t *bytes, std::size_t len,
             ibv_wc_status &status) {
    std::size_t room = 0;
    for (std::uint32_t i = 0; i < w.num_sge; ++i) {
        const Sge &s = w.sge[i];
        if (!find_mr(pid, s.lkey, s.addr, s.length, IBV_ACCESS_LOCAL_WRITE)) {
            status = IBV_WC_LOC_PROT_ERR;
            return false;
        }
        room += s.length;
    }
    if (offset + len > room) {
        status = IBV_WC_LOC_LEN_ERR;
        return false;
    }
    std::size_t skip = offset, done = 0;
    for (std::uint32_t i = 0; i < w.num_sge && done < len; ++i) {
        const Sge &s = w.sge[i];
        if (skip >= s.length) {
            skip -= s.length;
            continue;
        }
        const std::size_t n = std::min<std::size_t>(s.length - skip, len - done);
        if (!move_bytes(pid, true, const_cast<std::uint8_t *>(bytes + done), s.addr + skip, n)) {
            status = IBV_WC_LOC_PROT_ERR;
            return false;
        }
        done += n;
        skip = 0;
    }
    status = IBV_WC_SUCCESS;
    return true;
}

// The bytes a send delivers: its payload, inverted under
// SOFTNIC_CORRUPT_SENDS (fabric.hpp).
const std::vector<std::uint8_t> &delivered_payload(const Work &k, std::vector<std::uint8_t> &scratch) {
    if (!corrupt_sends()) return k.payload;
    scratch = k.payload;
    for (std::uint8_t &b : scratch) b = static_cast<std::uint8_t>(~b);
    return scratch;
}

// A UD send arrives: delivered now or never.
void deliver_ud(const Work &k, const Source &source, Arrival &arrival) {
    const std::uint32_t i = k.remote_qpn - qpn_base;
    if (k.remote_qpn < qpn_base || i >= max_qp || ud_lost()) return;
    Qp &t = fabric().qp[i];
    Wqe w;
    if (!t.used || t.type != IBV_QPT_UD || !alive(t.pid) || (t.state != IBV_QPS_RTR && t.state != IBV_QPS_RTS) ||
        t.qkey != k.remote_qkey || !path_reaches(k.dlid, k.dgid, k.global, t.device, t.port) || !take_receive(t, w))
        return;
    ibv_wc_status st;
    ibv_wc wc{};
    wc.wr_id = w.wr_id;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = k.remote_qpn;
    wc.src_qp = source.qpn;
    wc.slid = source.lid;
    if (k.global) {
        // The GRH: IPv6 version, payload length, next header, hop limit,
        // source and destination GIDs.
        std::uint8_t grh[grh_bytes] = {0x60};
        const std::uint16_t plen = htobe16(static_cast<std::uint16_t>(k.payload.size()));
        std::memcpy(grh + 4, &plen, 2);
        grh[6] = 0x1b;
        grh[7] = 64;
        std::memcpy(grh + 8, source.gid.raw, 16);
        std::memcpy(grh + 24, k.dgid, 16);
        ibv_wc_status gst;
        if (scatter(t.pid, w, 0, grh, sizeof grh, gst)) wc.wc_flags |= IBV_WC_GRH;
    }
    std::vector<std::uint8_t> scratch;
    const std::vector<std::uint8_t> &payload = delivered_payload(k, scratch);
    if (scatter(t.pid, w, grh_bytes, payload.data(), payload.size(), st)) {
        wc.byte_len = static_cast<std::uint32_t>(k.payload.size()) + grh_bytes;
        if (k.opcode == IBV_WR_SEND_WITH_IMM) {
            wc.wc_flags |= IBV_WC_WITH_IMM;
            wc.imm_data = k.imm;
        }
    }
    wc.status = st;
    arrival = Arrival{true, false, i, t.recv_cq, wc};
}

// An RC operation arrives at QP `ti`.
Verdict deliver_rc(const Work &k, const Source &source, std::uint32_t ti, std::vector<std::uint8_t> &read,
                   Arrival &arrival) {
    Fabric &f = fabric();
    Qp &t = f.qp[ti];
    if (t.state == IBV_QPS_ERR) return {Verdict::Kind::done, IBV_WC_REM_OP_ERR};
    if (t.state != IBV_QPS_RTR && t.state != IBV_QPS_RTS) return {Verdict::Kind::absent, IBV_WC_SUCCESS};

    const bool atomic = atomic_opcode(k.opcode);
    // RDMA reads and atomics need responder resources (max_dest_rd_atomic),
    // and an atomic an 8-byte aligned address: else the responder's NAK is
    // an invalid request.
    if ((atomic || k.opcode == IBV_WR_RDMA_READ) && t.max_dest_rd_atomic == 0)
        return {Verdict::Kind::done, IBV_WC_REM_INV_REQ_ERR};
    if (atomic) {
        if (k.remote_addr % atomic_bytes || k.length != atomic_bytes || k.payload.size() != 2 * atomic_bytes)
            return {Verdict::Kind::done, IBV_WC_REM_INV_REQ_ERR};
        if (!find_mr(t.pid, k.rkey, k.remote_addr, atomic_bytes, IBV_ACCESS_REMOTE_ATOMIC) ||
            !(t.access & IBV_ACCESS_REMOTE_ATOMIC))
            return {Verdict::Kind::done, IBV_WC_REM_ACCESS_ERR};
        std::uint64_t old = 0;
        if (!apply_atomic(t.pid, k, old)) return {Verdict::Kind::done, IBV_WC_REM_ACCESS_ERR};
        read.resize(sizeof old);
        std::memcpy(read.data(), &old, sizeof old);
        return {Verdict::Kind::done, IBV_WC_SUCCESS};
    }
    const bool writes = k.opcode == IBV_WR_RDMA_WRITE || k.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    const bool consumes = k.opcode == IBV_WR_SEND || k.opcode == IBV_WR_SEND_WITH_IMM ||
                          k.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    if (consumes) {
        const bool have = t.srq >= 0 ? (f.srq[t.srq].used && f.srq[t.srq].rq.count() > 0) : t.rq.count() > 0;
        if (!have) return {Verdict::Kind::rnr, IBV_WC_SUCCESS};
    }
    if (writes || k.opcode == IBV_WR_RDMA_READ) {
        const std::uint32_t need = writes ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
        const Mr *m = find_mr(t.pid, k.rkey, k.remote_addr, k.length, need);
        if (!m || !(t.access & need)) return {Verdict::Kind::done, IBV_WC_REM_ACCESS_ERR};
        bool moved;
        if (writes) {
            moved = move_bytes(t.pid, true, const_cast<std::uint8_t *>(k.payload.data()), k.remote_addr,
                               k.payload.size());
        } else {
            read.resize(k.length);
            moved = move_bytes(t.pid, false, read.data(), k.remote_addr, k.length);
        }
        if (!moved) return {Verdict::Kind::done, IBV_WC_REM_ACCESS_ERR};
    }
    if (consumes) {
        Wqe w{};
        (void)take_receive(t, w);
        ibv_wc wc{};
        wc.wr_id = w.wr_id;
        wc.qp_num = qpn_base + ti;
        wc.src_qp = source.qpn;
        wc.slid = source.lid;
        ibv_wc_status st = IBV_WC_SUCCESS;
        wc.opcode = k.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
        wc.byte_len = k.length;
        if (k.opcode != IBV_WR_RDMA_WRITE_WITH_IMM) {
            std::vector<std::uint8_t> scratch;
            const std::vector<std::uint8_t> &payload = delivered_payload(k, scratch);
            (void)scatter(t.pid, w, 0, payload.data(), payload.size(), st);
        }
        if (k.opcode != IBV_WR_SEND) {
            wc.wc_flags |= IBV_WC_WITH_IMM;
            wc.imm_data = k.imm;
        }
        wc.status = st;
        arrival = Arrival{true, st != IBV_WC_SUCCESS, ti, t.recv_cq, wc};
        if (st != IBV_WC_SUCCESS) return {Verdict::Kind::done, IBV_WC_REM_OP_ERR};
    }
    return {Verdict::Kind::done, IBV_WC_SUCCESS};
}

// ---- the poster's side ----

// Completes `k` at its QP with `st`; an RC error moves the QP to the error
// state.
Outcome finish(const Work &k, ibv_wc_status st, std::uint32_t len, std::vector<Notice> &notices) {
    const Qp &q = fabric().qp[k.qp];
    if (k.signaled || st != IBV_WC_SUCCESS)
        complete(q.send_cq, send_wc(k.qp, k.wr_id, wc_opcode(k.opcode), st, len), notices);
    if (st != IBV_WC_SUCCESS && st != IBV_WC_WR_FLUSH_ERR && q.type == IBV_QPT_RC) to_error(k.qp, notices);
    return Outcome::done;
}

Source source_of(std::uint32_t qp) {
    const Qp &q = fabric().qp[qp];
    return Source{qpn_base + qp, port_lid(q.device, q.port), port_gid(q.device, q.port)};
}

} // namespace

bool ready_to_send(Work &k, Source &source, std::vector<Notice> &notices) {
    const Qp &q = fabric().qp[k.qp];
    if (!q.used) return false;
    if (q.state == IBV_QPS_ERR) {
        finish(k, IBV_WC_WR_FLUSH_ERR, 0, notices);
        return false;
    }
    source = source_of(k.qp);
    return true;
}

Outcome conclude(Work &k, const Verdict &v, const std::vector<std::uint8_t> &read, std::vector<Notice> &notices) {
    const Qp &q = fabric().qp[k.qp];
    // Unreliable: sent is done, whatever became of it.
    if (q.type == IBV_QPT_UD) return finish(k, IBV_WC_SUCCESS, 0, notices);
    switch (v.kind) {
    case Verdict::Kind::absent:
        // No one answers: the transport retries until its timeout.
        if (std::chrono::steady_clock::now() < k.deadline) return Outcome::retry;
        return finish(k, IBV_WC_RETRY_EXC_ERR, 0, notices);
    case Verdict::Kind::rnr:
        // Receiver not ready: retry after its RNR timer, rnr_retry times (7:
        // for ever).
        if (q.rnr_retry != 7 && k.rnr_tries >= q.rnr_retry) return finish(k, IBV_WC_RNR_RETRY_EXC_ERR, 0, notices);
        ++k.rnr_tries;
        k.rnr = true;
        return Outcome::retry;
    case Verdict::Kind::done: break;
    }
    if (v.status != IBV_WC_SUCCESS || (k.opcode != IBV_WR_RDMA_READ && !atomic_opcode(k.opcode)))
        return finish(k, v.status, 0, notices);
    if (read.size() != k.length) return finish(k, IBV_WC_REM_ACCESS_ERR, 0, notices);
    std::size_t at = 0;
    for (const Sge &s : k.local) {
        std::memcpy(reinterpret_cast<void *>(s.addr), read.data() + at, s.length);
        at += s.length;
    }
    return finish(k, IBV_WC_SUCCESS, k.length, notices);
}

Outcome execute(Work &k, std::vector<Notice> &notices) {
    Source source;
    if (!ready_to_send(k, source, notices)) return Outcome::done;
    const Qp &q = fabric().qp[k.qp];
    std::vector<std::uint8_t> read;
    Arrival arrival;
    Verdict v{Verdict::Kind::done, IBV_WC_SUCCESS};
    if (q.type == IBV_QPT_UD) {
        deliver_ud(k, source, arrival);
    } else {
        const int ti = rc_target(q.dest_qpn, q.dlid, q.dgid, q.global, source, false);
        v = ti < 0 ? Verdict{Verdict::Kind::absent, IBV_WC_SUCCESS}
                   : deliver_rc(k, source, static_cast<std::uint32_t>(ti), read, arrival);
    }
    arrive(arrival, notices);
    return conclude(k, v, read, notices);
}

Verdict serve(const Work &k, bool ud, const Source &source, std::vector<std::uint8_t> &read, Arrival &arrival) {
    if (ud) {
        deliver_ud(k, source, arrival);
        return {Verdict::Kind::done, IBV_WC_SUCCESS};
    }
    const int ti = rc_target(k.remote_qpn, k.dlid, k.dgid, k.global, source, true);
    if (ti < 0) return {Verdict::Kind::absent, IBV_WC_SUCCESS};
    return deliver_rc(k, source, static_cast<std::uint32_t>(ti), read, arrival);
}

} // namespace softnic
