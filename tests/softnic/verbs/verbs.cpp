// tests/softnic/verbs/verbs.cpp - the verbs API of the software NIC, built
// as a drop-in libibverbs.so.1 (libibverbs.map gives every function the
// symbol version that rdma-core's library gives it), so that unmodified
// verbs programs found it first on the library path (softnic-run).
//
// Objects a peer must reach live in the shared fabric (fabric.hpp); the
// ibv_* structures the program sees are this process's handles on them.
// Lock order: a process's own mutex (pending work) before the fabric's;
// neither is held while waiting for another host (wire.hpp).
#include "fabric.hpp"
#include "transfer.hpp"
#include "wire.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace softnic;

namespace {

// ---- handles ----

struct SoftContext {
    ibv_context ctx;
    std::uint32_t device;
    std::int32_t async;  // its asynchronous-event socket's number, or no_async
};
std::uint32_t device_of(ibv_context *c) { return reinterpret_cast<SoftContext *>(c)->device; }
struct SoftQp {
    ibv_qp qp;
    std::uint32_t index;
};
struct SoftCq {
    ibv_cq cq;
    std::uint32_t index;
};
struct SoftSrq {
    ibv_srq srq;
    std::uint32_t index;
};
struct SoftMr {
    ibv_mr mr;
    std::uint32_t index;
};
struct SoftAh {
    ibv_ah ah;
    ibv_ah_attr attr;
};

ibv_device the_device[4];
ibv_device *device_list[5];

// This process's completion channels, by number, and CQs by table index
// (to turn a channel's message back into the ibv_cq).
std::mutex local_mutex;
std::vector<ibv_cq *> cq_by_index(max_cq, nullptr);
int next_channel = 0;
int next_context = 0;

// By QP table index, this process's signaled sends not yet polled: each
// the value of Qp::sq_posted once it was posted (under the fabric lock).
// A map: the process holds a few of the table's QPs.
std::unordered_map<std::uint32_t, std::deque<std::uint32_t>> sq_signaled;

// The work requests `q`'s send queue holds at most.
std::uint32_t sq_depth(const Qp &q) { return sq_slots() ? std::min(q.max_send_wr, sq_slots()) : q.max_send_wr; }

// A send completion polled (under the fabric lock): it frees its QP's
// send queue up to its work request, or, in error, all of it.
void sq_free(const ibv_wc &wc) {
    if (wc.opcode & IBV_WC_RECV) return;
    const std::uint32_t qi = wc.qp_num - qpn_base;
    if (qi >= max_qp) return;
    Qp &q = fabric().qp[qi];
    if (!q.used || q.pid != me()) return;
    std::deque<std::uint32_t> &signaled = sq_signaled[qi];
    if (wc.status != IBV_WC_SUCCESS) {
        q.sq_freed = q.sq_posted;
        signaled.clear();
    } else if (!signaled.empty()) {
        q.sq_freed = signaled.front();
        signaled.pop_front();
    }
}

int fail(int e) {
    errno = e;
    return e;
}
template <class T> T *fail_null(int e) {
    errno = e;
    return nullptr;
}

// ---- work that must wait, or goes to another host ----
// Kept per process, in posting order per QP, and retried by a thread.
// Work for another host goes over the wire one at a time, carried by the
// posting thread (as it carries out work on this host at once) or, when
// it must wait, by that thread.

// Never destroyed: the thread may still wait on them while the process
// exits, and destroying a condition variable waited on blocks.
struct PendingState {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<Work> work;
    bool thread_started = false;
    bool sending = false;            // a thread has work on the wire
    std::int64_t in_flight = -1;     // of this QP
    bool in_flight_dropped = false;  // that QP was destroyed meanwhile
};
PendingState &pending_state = *new PendingState;
std::mutex &pending_mutex = pending_state.mutex;
std::condition_variable &pending_cv = pending_state.cv;
std::deque<Work> &pending = pending_state.work;
bool &pending_thread_started = pending_state.thread_started;

bool qp_has_pending(std::uint32_t qp) {
    if (pending_state.in_flight == qp) return true;
    for (const Work &w : pending)
        if (w.qp == qp) return true;
    return false;
}

std::chrono::steady_clock::time_point retry_time(const Work &k) {
    return std::chrono::steady_clock::now() + std::chrono::microseconds(k.rnr ? 100 : 1000);
}

// Retries what waits on this host; under pending_mutex.
void retry_pending() {
    std::vector<Notice> notices;
    lock();
    std::vector<std::uint32_t> blocked;  // QPs whose head must still wait
    const auto now = std::chrono::steady_clock::now();
    for (auto it = pending.begin(); it != pending.end();) {
        if (it->host >= 0 || std::find(blocked.begin(), blocked.end(), it->qp) != blocked.end() || now < it->next) {
            blocked.push_back(it->qp);
            ++it;
            continue;
        }
        if (execute(*it, notices) == Outcome::retry) {
            it->next = retry_time(*it);
            blocked.push_back(it->qp);
            ++it;
        } else {
            it = pending.erase(it);
        }
    }
    unlock();
    notify(notices);
}

// Carries the first work for another host that may go now over the wire,
// with neither pending_mutex (held by `g` otherwise) nor the fabric lock
// held meanwhile: a host waits for another's answer holding nothing that
// host might need.  False if no such work may go, or another thread is
// sending.
bool send_remote(std::unique_lock<std::mutex> &g) {
    if (pending_state.sending) return false;
    const auto now = std::chrono::steady_clock::now();
    std::vector<std::uint32_t> blocked;
    auto it = pending.begin();
    for (; it != pending.end(); ++it) {
        if (it->host >= 0 && now >= it->next && std::find(blocked.begin(), blocked.end(), it->qp) == blocked.end())
            break;
        blocked.push_back(it->qp);
    }
    if (it == pending.end()) return false;
    Work k = std::move(*it);
    pending.erase(it);
    std::vector<Notice> notices;
    Source source;
    lock();
    const bool ready = ready_to_send(k, source, notices);
    const bool ud = fabric().qp[k.qp].type == IBV_QPT_UD;
    unlock();
    notify(notices);
    if (!ready) return true;
    pending_state.sending = true;
    pending_state.in_flight = k.qp;
    pending_state.in_flight_dropped = false;
    g.unlock();
    std::vector<std::uint8_t> read;
    const Verdict v = wire_exchange(k, ud, source, read);
    g.lock();
    pending_state.sending = false;
    pending_state.in_flight = -1;
    if (pending_state.in_flight_dropped) return true;
    lock();
    const Outcome o = conclude(k, v, read, notices);
    unlock();
    notify(notices);
    if (o == Outcome::retry) {
        k.next = retry_time(k);
        pending.push_front(std::move(k));  // no earlier work of its QP waits
        pending_cv.notify_one();           // the thread may be waiting, the queue was empty
    }
    return true;
}

void pending_thread_main() {
    std::unique_lock<std::mutex> g(pending_mutex);
    for (;;) {
        if (pending.empty()) {
            pending_cv.wait(g);
            continue;
        }
        retry_pending();
        while (send_remote(g)) {
        }
        g.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        g.lock();
    }
}

// Transport timeout: 4.096 us * 2^timeout, retry_cnt + 1 tries.
std::chrono::steady_clock::duration transport_timeout(const Qp &q) {
    const double one = 4.096e-6 * static_cast<double>(1ull << std::min<unsigned>(q.timeout ? q.timeout : 14, 31));
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(one * (q.retry_cnt + 1)));
}

int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad) {
    const std::uint32_t qi = reinterpret_cast<SoftQp *>(qp)->index;
    std::unique_lock<std::mutex> pg(pending_mutex);
    std::vector<Notice> notices;
    int rc = 0;
    bool to_send = false;  // work for another host
    lock();
    Qp &q = fabric().qp[qi];
    for (; wr; wr = wr->next) {
        if (q.state != IBV_QPS_RTS && q.state != IBV_QPS_ERR) {
            rc = EINVAL;
            break;
        }
        if (q.sq_posted - q.sq_freed >= sq_depth(q)) {
            rc = ENOMEM;  // the send queue is full until completions are polled
            break;
        }
        const bool ud = q.type == IBV_QPT_UD;
        const bool ok_op = wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_IMM ||
                           (!ud && (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                                    wr->opcode == IBV_WR_RDMA_READ || atomic_opcode(wr->opcode)));
        if (!ok_op || wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > max_sge) {
            rc = EINVAL;
            break;
        }
        Work k{};
        k.qp = qi;
        k.wr_id = wr->wr_id;
        k.opcode = wr->opcode;
        k.signaled = q.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
        k.imm = wr->imm_data;
        std::size_t total = 0;
        for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
        if (total > (ud ? ud_mtu : max_msg)) {
            rc = EINVAL;
            break;
        }
        // Reads and atomics bring bytes back: nothing of theirs is inline.
        const bool fetches = wr->opcode == IBV_WR_RDMA_READ || atomic_opcode(wr->opcode);
        const bool inl = (wr->send_flags & IBV_SEND_INLINE) && !fetches;
        if (inl && total > max_inline) {
            rc = EINVAL;
            break;
        }
        k.length = static_cast<std::uint32_t>(total);
        if (ud) {
            auto *ah = reinterpret_cast<SoftAh *>(wr->wr.ud.ah);
            k.remote_qpn = wr->wr.ud.remote_qpn;
            k.remote_qkey = wr->wr.ud.remote_qkey;
            if (ah) {
                k.dlid = ah->attr.dlid;
                k.global = ah->attr.is_global;
                std::memcpy(k.dgid, ah->attr.grh.dgid.raw, sizeof k.dgid);
            }
            k.host = remote_host(k.dlid, k.dgid, k.global);
        } else {
            const bool atomic = atomic_opcode(wr->opcode);
            k.remote_addr = atomic ? wr->wr.atomic.remote_addr : wr->wr.rdma.remote_addr;
            k.rkey = atomic ? wr->wr.atomic.rkey : wr->wr.rdma.rkey;
            k.host = remote_host(q.dlid, q.dgid, q.global);
            if (k.host >= 0) {
                k.remote_qpn = q.dest_qpn;
                k.dlid = q.dlid;
                k.global = q.global;
                std::memcpy(k.dgid, q.dgid, sizeof k.dgid);
            }
        }
        // Taken: it holds a slot of the send queue until polled.
        ++q.sq_posted;
        if (k.signaled) sq_signaled[qi].push_back(q.sq_posted);
        // Local memory: checked against the registrations (not for inline
        // data), gathered now for sends and writes.
        bool local_ok = true;
        for (int i = 0; i < wr->num_sge && local_ok; ++i) {
            const ibv_sge &s = wr->sg_list[i];
            if (!inl && !find_mr(me(), s.lkey, s.addr, s.length, fetches ? IBV_ACCESS_LOCAL_WRITE : 0))
                local_ok = false;
        }
        // An atomic's old value fills exactly 8 bytes of local memory.
        const bool length_ok = !atomic_opcode(wr->opcode) || total == atomic_bytes;
        if (!local_ok || !length_ok) {
            const ibv_wc_status st = q.state == IBV_QPS_ERR ? IBV_WC_WR_FLUSH_ERR
                                     : local_ok             ? IBV_WC_LOC_LEN_ERR
                                                            : IBV_WC_LOC_PROT_ERR;
            complete(q.send_cq, send_wc(qi, k.wr_id, wc_opcode(wr->opcode), st, 0), notices);
            if (st != IBV_WC_WR_FLUSH_ERR && q.type == IBV_QPT_RC) to_error(qi, notices);
            continue;
        }
        if (fetches) {
            for (int i = 0; i < wr->num_sge; ++i)
                k.local.push_back(Sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey});
            if (atomic_opcode(wr->opcode)) {
                const std::uint64_t operand[2] = {wr->wr.atomic.compare_add, wr->wr.atomic.swap};
                k.payload.resize(sizeof operand);
                std::memcpy(k.payload.data(), operand, sizeof operand);
            }
        } else {
            k.payload.resize(total);
            std::size_t at = 0;
            for (int i = 0; i < wr->num_sge; ++i) {
                std::memcpy(k.payload.data() + at, reinterpret_cast<void *>(wr->sg_list[i].addr), wr->sg_list[i].length);
                at += wr->sg_list[i].length;
            }
        }
        k.deadline = std::chrono::steady_clock::now() + transport_timeout(q);
        if (k.host >= 0 || qp_has_pending(qi) || execute(k, notices) == Outcome::retry) {
            if (pending.size() >= 4 * max_qp_wr) {
                rc = ENOMEM;
                break;
            }
            to_send = to_send || k.host >= 0;
            k.next = k.host >= 0 ? std::chrono::steady_clock::now() : retry_time(k);
            pending.push_back(std::move(k));
            if (!pending_thread_started) {
                pending_thread_started = true;
                std::thread(pending_thread_main).detach();
            }
            pending_cv.notify_one();
        }
    }
    unlock();
    if (to_send)
        while (send_remote(pg)) {
        }
    pg.unlock();
    notify(notices);
    if (rc && bad) *bad = wr;
    return rc;
}

// ---- receives ----

template <std::uint32_t N>
int post_to_ring(WqeRing<N> &ring, std::uint32_t sge_limit, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    for (; wr; wr = wr->next) {
        if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > sge_limit || ring.count() >= ring.cap) {
            if (bad) *bad = wr;
            return ring.count() >= ring.cap ? ENOMEM : EINVAL;
        }
        Wqe &w = ring.w[ring.tail % ring.cap];
        w.wr_id = wr->wr_id;
        w.num_sge = static_cast<std::uint32_t>(wr->num_sge);
        for (int i = 0; i < wr->num_sge; ++i)
            w.sge[i] = Sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
        ++ring.tail;
    }
    return 0;
}

int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    const std::uint32_t qi = reinterpret_cast<SoftQp *>(qp)->index;
    std::vector<Notice> notices;
    lock();
    Qp &q = fabric().qp[qi];
    int rc;
    if (q.srq >= 0 || q.state == IBV_QPS_RESET) {
        if (bad) *bad = wr;
        rc = EINVAL;
    } else {
        rc = post_to_ring(q.rq, max_sge, wr, bad);
        if (q.state == IBV_QPS_ERR) to_error(qi, notices);
    }
    unlock();
    notify(notices);
    return rc;
}

int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    lock();
    Srq &s = fabric().srq[reinterpret_cast<SoftSrq *>(srq)->index];
    const int rc = post_to_ring(s.rq, s.max_sge, wr, bad);
    unlock();
    return rc;
}

// ---- completion queues ----

int poll_cq(ibv_cq *cq, int n, ibv_wc *wc) {
    Cq &c = fabric().cq[reinterpret_cast<SoftCq *>(cq)->index];
    // Nothing new: no need for the lock (tail only grows under it).
    if (__atomic_load_n(&c.tail, __ATOMIC_ACQUIRE) == c.head) return 0;
    lock();
    int got = 0;
    while (got < n && c.head != c.tail) {
        wc[got] = c.e[c.head % c.cap];
        sq_free(wc[got++]);
        ++c.head;
    }
    unlock();
    return got;
}

int req_notify_cq(ibv_cq *cq, int) {
    lock();
    fabric().cq[reinterpret_cast<SoftCq *>(cq)->index].armed = 1;
    unlock();
    return 0;
}

// ---- objects ----

template <class Table> int free_slot(Table &t) {
    for (std::size_t i = 0; i < std::size(t); ++i)
        if (!t[i].used) return static_cast<int>(i);
    collect_dead();
    for (std::size_t i = 0; i < std::size(t); ++i)
        if (!t[i].used) return static_cast<int>(i);
    return -1;
}

void devices_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        const std::uint32_t n = device_count();
        for (std::uint32_t i = 0; i < n; ++i) {
            ibv_device &d = the_device[i];
            d.node_type = IBV_NODE_CA;
            d.transport_type = IBV_TRANSPORT_IB;
            std::snprintf(d.name, sizeof d.name, "softnic%u", i);
            std::snprintf(d.dev_name, sizeof d.dev_name, "uverbs%u", i);
            std::snprintf(d.dev_path, sizeof d.dev_path, "/sys/class/infiniband_verbs/uverbs%u", i);
            std::snprintf(d.ibdev_path, sizeof d.ibdev_path, "/sys/class/infiniband/softnic%u", i);
            device_list[i] = &d;
        }
        device_list[n] = nullptr;
    });
}

bool valid_port(ibv_context *, std::uint32_t port) { return port >= 1 && port <= port_count(); }

} // namespace

// ---- the API (libibverbs.map gives each its version) ----
// verbs.h wraps these in macros that pick an inline variant.
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port

extern "C" {

ibv_device **ibv_get_device_list(int *num) {
    devices_init();
    if (num) *num = 0;
    if (host_index() < 0) return fail_null<ibv_device *>(ENODEV);  // SOFTNIC_HOSTS names no address of ours
    const std::uint32_t n = device_count();
    if (num) *num = static_cast<int>(n);
    auto **list = static_cast<ibv_device **>(std::calloc(n + 1, sizeof(ibv_device *)));
    if (!list) return fail_null<ibv_device *>(ENOMEM);
    for (std::uint32_t i = 0; i < n; ++i) list[i] = device_list[i];
    return list;
}

// The index of one of the NIC's devices, or -1.
static int device_index(const ibv_device *device) {
    for (std::uint32_t i = 0; i < device_count(); ++i)
        if (device == &the_device[i]) return static_cast<int>(i);
    return -1;
}

void ibv_free_device_list(ibv_device **list) { std::free(list); }

const char *ibv_get_device_name(ibv_device *device) { return device ? device->name : nullptr; }

__be64 ibv_get_device_guid(ibv_device *device) {
    const int i = device_index(device);
    return htobe64(node_guid(i < 0 ? 0 : static_cast<std::uint32_t>(i)));
}

int ibv_get_device_index(ibv_device *device) { return device_index(device); }

ibv_context *ibv_open_device(ibv_device *device) {
    devices_init();
    const int index = device_index(device);
    if (index < 0 || host_index() < 0) return fail_null<ibv_context>(ENODEV);
    (void)fabric();
    auto *c = new SoftContext{};
    c->device = static_cast<std::uint32_t>(index);
    c->ctx.device = device;
    c->ctx.cmd_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    // Asynchronous events come to a socket of the context's own, from any
    // process of the fabric (a CQ overrun is found by the one completing).
    c->ctx.async_fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (c->ctx.async_fd < 0) {
        delete c;
        return nullptr;
    }
    {
        std::lock_guard<std::mutex> g(local_mutex);
        c->async = async_channel(next_context++);
    }
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::size_t len = 0;
    channel_address(me(), c->async, a.sun_path, sizeof a.sun_path, len);
    if (::bind(c->ctx.async_fd, reinterpret_cast<sockaddr *>(&a), static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len)) != 0) {
        ::close(c->ctx.async_fd);
        delete c;
        return nullptr;
    }
    c->ctx.num_comp_vectors = 1;
    pthread_mutex_init(&c->ctx.mutex, nullptr);
    c->ctx.abi_compat = nullptr;  // not an extended context: the _ex calls answer EOPNOTSUPP
    c->ctx.ops.poll_cq = poll_cq;
    c->ctx.ops.req_notify_cq = req_notify_cq;
    c->ctx.ops.post_send = post_send;
    c->ctx.ops.post_recv = post_recv;
    c->ctx.ops.post_srq_recv = post_srq_recv;
    serving_start();
    return &c->ctx;
}

int ibv_close_device(ibv_context *context) {
    if (!context) return fail(EINVAL);
    serving_stop();
    ::close(context->cmd_fd);
    ::close(context->async_fd);
    delete reinterpret_cast<SoftContext *>(context);
    return 0;
}

int ibv_query_device(ibv_context *context, ibv_device_attr *a) {
    if (!context || !a) return fail(EINVAL);
    std::memset(a, 0, sizeof *a);
    std::snprintf(a->fw_ver, sizeof a->fw_ver, "1.0.0 (softnic)");
    a->node_guid = htobe64(node_guid(device_of(context)));
    a->sys_image_guid = a->node_guid;
    a->max_mr_size = max_msg;
    a->page_size_cap = 4096;
    a->vendor_id = 0;
    a->vendor_part_id = 0;
    a->hw_ver = 1;
    a->max_qp = max_qp;
    a->max_qp_wr = max_qp_wr;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
    a->max_sge = max_sge;
    a->max_sge_rd = max_sge;
    a->max_cq = max_cq;
    a->max_cqe = max_cqe;
    a->max_mr = static_cast<int>(mr_limit());
    a->max_pd = 1024;
    a->max_qp_rd_atom = static_cast<int>(rd_atom_limit());
    a->max_ee_rd_atom = 0;
    a->max_res_rd_atom = static_cast<int>(rd_atom_limit() * max_qp);
    a->max_qp_init_rd_atom = static_cast<int>(rd_atom_limit());
    a->atomic_cap = IBV_ATOMIC_HCA;  // atomic with respect to this NIC's other atomics, not the CPU's
    a->max_ah = 1024;
    a->max_srq = max_srq;
    a->max_srq_wr = max_srq_wr;
    a->max_srq_sge = max_sge;
    a->max_pkeys = 1;
    a->local_ca_ack_delay = 16;
    a->phys_port_cnt = static_cast<std::uint8_t>(port_count());
    return 0;
}

int ibv_query_port(ibv_context *context, std::uint8_t port, _compat_ibv_port_attr *a) {
    if (!context || !a) return fail(EINVAL);
    if (!valid_port(context, port)) return fail(EINVAL);
    // Only the fields of the compatibility layout (up to link_layer).
    ibv_port_attr p{};
    p.state = IBV_PORT_ACTIVE;
    p.max_mtu = IBV_MTU_4096;
    p.active_mtu = IBV_MTU_4096;
    p.gid_tbl_len = 1;
    p.port_cap_flags = 0;
    p.max_msg_sz = max_msg;
    p.pkey_tbl_len = 1;
    p.lid = port_lid(device_of(context), port);
    p.sm_lid = 1;
    p.max_vl_num = 1;
    p.active_width = 2;  // 4x
    p.active_speed = 32; // EDR
    p.phys_state = 5;    // LinkUp
    p.link_layer = ethernet() ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
    if (ethernet()) p.sm_lid = 0;
    std::memcpy(a, &p, offsetof(ibv_port_attr, flags));
    return 0;
}

int ibv_query_gid(ibv_context *context, std::uint8_t port, int index, ibv_gid *gid) {
    if (!context || !gid || !valid_port(context, port) || index != 0) return fail(EINVAL);
    *gid = port_gid(device_of(context), port);
    return 0;
}

int _ibv_query_gid_ex(ibv_context *context, std::uint32_t port, std::uint32_t index, ibv_gid_entry *entry,
                      std::uint32_t flags, std::size_t size) {
    if (!entry || flags || size < sizeof(ibv_gid_entry)) return EINVAL;
    if (ibv_query_gid(context, static_cast<std::uint8_t>(port), static_cast<int>(index), &entry->gid)) return EINVAL;
    entry->gid_index = index;
    entry->port_num = port;
    entry->gid_type = ethernet() ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_IB;
    entry->ndev_ifindex = 0;
    return 0;
}

// rdma-core's private interface (driver.h): type 0 is "IB/RoCE v1", 1 "RoCE v2".
int ibv_query_gid_type(ibv_context *context, std::uint8_t port, unsigned index, int *type) {
    if (!context || !valid_port(context, port) || index != 0 || !type) return fail(EINVAL);
    *type = ethernet() ? 1 : 0;
    return 0;
}

int ibv_query_pkey(ibv_context *context, std::uint8_t port, int index, __be16 *pkey) {
    if (!context || !pkey || !valid_port(context, port) || index != 0) return fail(EINVAL);
    *pkey = htobe16(0xffff);
    return 0;
}

int ibv_get_pkey_index(ibv_context *context, std::uint8_t port, __be16 pkey) {
    if (!context || !valid_port(context, port)) return -EINVAL;
    return be16toh(pkey) == 0xffff ? 0 : -ENOENT;
}

int ibv_read_sysfs_file(const char *, const char *file, char *buf, std::size_t size) {
    const char *v = nullptr;
    if (file && std::strstr(file, "board_id")) v = "SOFTNIC";
    else if (file && std::strstr(file, "fw_ver")) v = "1.0.0";
    if (!v || !buf || size == 0) return -1;
    const int n = std::snprintf(buf, size, "%s", v);
    return n;
}

int ibv_get_sysfs_path(char *, std::size_t) { return -1; }

ibv_pd *ibv_alloc_pd(ibv_context *context) {
    if (!context) return fail_null<ibv_pd>(EINVAL);
    auto *pd = new ibv_pd{};
    pd->context = context;
    static std::atomic<std::uint32_t> handles{1};
    pd->handle = handles++;
    return pd;
}

int ibv_dealloc_pd(ibv_pd *pd) {
    if (!pd) return fail(EINVAL);
    delete pd;
    return 0;
}

ibv_mr *ibv_reg_mr_iova2(ibv_pd *pd, void *addr, std::size_t length, std::uint64_t iova, unsigned int access) {
    if (!pd || length == 0 || length > max_msg * 16ull) return fail_null<ibv_mr>(EINVAL);
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
        return fail_null<ibv_mr>(EINVAL);
    if (iova != reinterpret_cast<std::uintptr_t>(addr)) return fail_null<ibv_mr>(EOPNOTSUPP);
    lock();
    Fabric &f = fabric();
    if (const std::uint64_t budget = mr_budget()) {
        std::uint64_t mine = length;
        for (const Mr &m : f.mr)
            if (m.used && m.pid == me()) mine += m.length;
        if (mine > budget) {
            unlock();
            return fail_null<ibv_mr>(ENOMEM);
        }
    }
    // The device's region table (SOFTNIC_MAX_MR), shared by the host's
    // processes; those of processes that died are freed when it is full.
    const std::uint32_t device = device_of(pd->context);
    const auto held = [&] {
        return static_cast<std::uint32_t>(
            std::count_if(std::begin(f.mr), std::end(f.mr), [&](const Mr &m) { return m.used == 1 + device; }));
    };
    bool room = held() < mr_limit();
    if (!room) {
        collect_dead();
        room = held() < mr_limit();
    }
    const int i = room ? free_slot(f.mr) : -1;
    if (i < 0) {
        unlock();
        return fail_null<ibv_mr>(ENOMEM);
    }
    Mr &m = f.mr[i];
    f.key_generation = (f.key_generation + 1) & 0xfffff;
    m.used = 1 + device;
    m.pid = me();
    m.key = (f.key_generation << 12) | static_cast<std::uint32_t>(i);
    m.access = access | 0;
    m.addr = reinterpret_cast<std::uintptr_t>(addr);
    m.length = length;
    unlock();
    auto *r = new SoftMr{};
    r->mr.context = pd->context;
    r->mr.pd = pd;
    r->mr.addr = addr;
    r->mr.length = length;
    r->mr.handle = static_cast<std::uint32_t>(i);
    r->mr.lkey = r->mr.rkey = m.key;
    r->index = static_cast<std::uint32_t>(i);
    return &r->mr;
}

ibv_mr *ibv_reg_mr(ibv_pd *pd, void *addr, std::size_t length, int access) {
    return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr), static_cast<unsigned>(access));
}

ibv_mr *ibv_reg_mr_iova(ibv_pd *pd, void *addr, std::size_t length, std::uint64_t iova, int access) {
    return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}

// dma-buf memory (a GPU's) is not modelled (libfabric links the symbol).
ibv_mr *ibv_reg_dmabuf_mr(ibv_pd *, std::uint64_t, std::size_t, std::uint64_t, int, int) {
    errno = EOPNOTSUPP;
    return nullptr;
}

int ibv_dereg_mr(ibv_mr *mr) {
    if (!mr) return fail(EINVAL);
    auto *r = reinterpret_cast<SoftMr *>(mr);
    lock();
    fabric().mr[r->index].used = 0;
    unlock();
    delete r;
    return 0;
}

ibv_comp_channel *ibv_create_comp_channel(ibv_context *context) {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    int number;
    {
        std::lock_guard<std::mutex> g(local_mutex);
        number = next_channel++;
    }
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::size_t len = 0;
    channel_address(me(), number, a.sun_path, sizeof a.sun_path, len);
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len)) != 0) {
        ::close(fd);
        return nullptr;
    }
    auto *ch = new ibv_comp_channel{};
    ch->context = context;
    ch->fd = fd;
    ch->refcnt = number;  // the channel's number, for the CQs bound to it
    return ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel *channel) {
    if (!channel) return fail(EINVAL);
    ::close(channel->fd);
    delete channel;
    return 0;
}

ibv_cq *ibv_create_cq(ibv_context *context, int cqe, void *cq_context, ibv_comp_channel *channel, int) {
    if (!context || cqe < 1 || static_cast<std::uint32_t>(cqe) > max_cqe) return fail_null<ibv_cq>(EINVAL);
    lock();
    Fabric &f = fabric();
    const int i = free_slot(f.cq);
    if (i < 0) {
        unlock();
        return fail_null<ibv_cq>(ENOMEM);
    }
    Cq &c = f.cq[i];
    c.used = 1;
    c.pid = me();
    c.cap = static_cast<std::uint32_t>(cqe);
    c.head = c.tail = 0;
    c.armed = 0;
    c.overflowed = 0;
    c.channel = channel ? channel->refcnt : -1;
    c.async = reinterpret_cast<SoftContext *>(context)->async;
    unlock();
    auto *s = new SoftCq{};
    s->cq.context = context;
    s->cq.channel = channel;
    s->cq.cq_context = cq_context;
    s->cq.handle = static_cast<std::uint32_t>(i);
    s->cq.cqe = cqe;
    pthread_mutex_init(&s->cq.mutex, nullptr);
    pthread_cond_init(&s->cq.cond, nullptr);
    s->index = static_cast<std::uint32_t>(i);
    std::lock_guard<std::mutex> g(local_mutex);
    cq_by_index[i] = &s->cq;
    return &s->cq;
}

int ibv_resize_cq(ibv_cq *, int) { return EOPNOTSUPP; }

int ibv_destroy_cq(ibv_cq *cq) {
    if (!cq) return fail(EINVAL);
    auto *s = reinterpret_cast<SoftCq *>(cq);
    lock();
    Fabric &f = fabric();
    for (const Qp &q : f.qp)
        if (q.used && q.pid == me() && (q.send_cq == s->index || q.recv_cq == s->index)) {
            unlock();
            return EBUSY;
        }
    f.cq[s->index].used = 0;
    unlock();
    {
        std::lock_guard<std::mutex> g(local_mutex);
        cq_by_index[s->index] = nullptr;
    }
    delete s;
    return 0;
}

int ibv_get_cq_event(ibv_comp_channel *channel, ibv_cq **cq, void **cq_context) {
    std::uint32_t index;
    for (;;) {
        const ssize_t n = ::recv(channel->fd, &index, sizeof index, 0);
        if (n == static_cast<ssize_t>(sizeof index)) break;
        if (n < 0 && errno == EINTR) continue;
        return -1;
    }
    std::lock_guard<std::mutex> g(local_mutex);
    if (index >= max_cq || !cq_by_index[index]) return -1;
    *cq = cq_by_index[index];
    *cq_context = (*cq)->cq_context;
    return 0;
}

void ibv_ack_cq_events(ibv_cq *cq, unsigned int n) {
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += n;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

// The events raised: IBV_EVENT_CQ_ERR (a CQ overran).  Blocks unless the
// program made async_fd non-blocking (then -1, errno EAGAIN, when none).
int ibv_get_async_event(ibv_context *context, ibv_async_event *event) {
    if (!context || !event) return fail(EINVAL);
    std::uint32_t m[2];
    for (;;) {
        const ssize_t n = ::recv(context->async_fd, m, sizeof m, 0);
        if (n == static_cast<ssize_t>(sizeof m)) break;
        if (n < 0 && errno == EINTR) continue;
        return -1;
    }
    *event = ibv_async_event{};
    event->event_type = static_cast<ibv_event_type>(m[0] - 1);
    std::lock_guard<std::mutex> g(local_mutex);
    event->element.cq = m[1] < max_cq ? cq_by_index[m[1]] : nullptr;
    return 0;
}

void ibv_ack_async_event(ibv_async_event *) {}

ibv_srq *ibv_create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) {
    if (!pd || !attr || attr->attr.max_wr < 1 || attr->attr.max_wr > max_srq_wr || attr->attr.max_sge < 1 ||
        attr->attr.max_sge > max_sge)
        return fail_null<ibv_srq>(EINVAL);
    lock();
    Fabric &f = fabric();
    const int i = free_slot(f.srq);
    if (i < 0) {
        unlock();
        return fail_null<ibv_srq>(ENOMEM);
    }
    Srq &s = f.srq[i];
    s.used = 1;
    s.pid = me();
    s.limit = attr->attr.srq_limit;
    s.max_sge = attr->attr.max_sge;
    s.rq.head = s.rq.tail = 0;
    s.rq.cap = attr->attr.max_wr;
    unlock();
    auto *r = new SoftSrq{};
    r->srq.context = pd->context;
    r->srq.srq_context = attr->srq_context;
    r->srq.pd = pd;
    r->srq.handle = static_cast<std::uint32_t>(i);
    pthread_mutex_init(&r->srq.mutex, nullptr);
    pthread_cond_init(&r->srq.cond, nullptr);
    r->index = static_cast<std::uint32_t>(i);
    return &r->srq;
}

int ibv_modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int mask) {
    if (!srq || !attr) return EINVAL;
    if (mask & IBV_SRQ_MAX_WR) return EINVAL;  // resizing is not modelled
    lock();
    Srq &s = fabric().srq[reinterpret_cast<SoftSrq *>(srq)->index];
    if (mask & IBV_SRQ_LIMIT) s.limit = attr->srq_limit;
    unlock();
    return 0;
}

int ibv_query_srq(ibv_srq *srq, ibv_srq_attr *attr) {
    if (!srq || !attr) return EINVAL;
    lock();
    const Srq &s = fabric().srq[reinterpret_cast<SoftSrq *>(srq)->index];
    attr->max_wr = s.rq.cap;
    attr->max_sge = s.max_sge;
    attr->srq_limit = s.limit;
    unlock();
    return 0;
}

int ibv_destroy_srq(ibv_srq *srq) {
    if (!srq) return EINVAL;
    auto *r = reinterpret_cast<SoftSrq *>(srq);
    lock();
    Fabric &f = fabric();
    for (const Qp &q : f.qp)
        if (q.used && q.pid == me() && q.srq == static_cast<std::int32_t>(r->index)) {
            unlock();
            return EBUSY;
        }
    f.srq[r->index].used = 0;
    unlock();
    delete r;
    return 0;
}

ibv_qp *ibv_create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) {
    if (!pd || !attr || !attr->send_cq || !attr->recv_cq) return fail_null<ibv_qp>(EINVAL);
    if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD) return fail_null<ibv_qp>(EOPNOTSUPP);
    ibv_qp_cap &cap = attr->cap;
    if (cap.max_send_wr > max_qp_wr || cap.max_send_sge > max_sge || cap.max_inline_data > max_inline ||
        (!attr->srq && (cap.max_recv_wr > max_qp_wr || cap.max_recv_sge > max_sge)))
        return fail_null<ibv_qp>(EINVAL);
    lock();
    Fabric &f = fabric();
    const int i = free_slot(f.qp);
    if (i < 0) {
        unlock();
        return fail_null<ibv_qp>(ENOMEM);
    }
    Qp &q = f.qp[i];
    std::memset(static_cast<void *>(&q), 0, offsetof(Qp, rq));
    q.used = 1;
    q.pid = me();
    q.device = device_of(pd->context);
    q.type = attr->qp_type;
    q.state = IBV_QPS_RESET;
    q.send_cq = reinterpret_cast<SoftCq *>(attr->send_cq)->index;
    q.recv_cq = reinterpret_cast<SoftCq *>(attr->recv_cq)->index;
    q.srq = attr->srq ? static_cast<std::int32_t>(reinterpret_cast<SoftSrq *>(attr->srq)->index) : -1;
    q.sq_sig_all = attr->sq_sig_all;
    q.max_send_wr = std::max<std::uint32_t>(1, cap.max_send_wr);
    sq_signaled.erase(static_cast<std::uint32_t>(i));
    q.rq.head = q.rq.tail = 0;
    q.rq.cap = std::max<std::uint32_t>(1, cap.max_recv_wr);
    unlock();
    if (!attr->srq) cap.max_recv_sge = max_sge;
    cap.max_send_sge = max_sge;
    cap.max_inline_data = max_inline;
    auto *s = new SoftQp{};
    s->qp.context = pd->context;
    s->qp.qp_context = attr->qp_context;
    s->qp.pd = pd;
    s->qp.send_cq = attr->send_cq;
    s->qp.recv_cq = attr->recv_cq;
    s->qp.srq = attr->srq;
    s->qp.handle = static_cast<std::uint32_t>(i);
    s->qp.qp_num = qpn_base + static_cast<std::uint32_t>(i);
    s->qp.state = IBV_QPS_RESET;
    s->qp.qp_type = attr->qp_type;
    pthread_mutex_init(&s->qp.mutex, nullptr);
    pthread_cond_init(&s->qp.cond, nullptr);
    s->index = static_cast<std::uint32_t>(i);
    return &s->qp;
}

int ibv_modify_qp(ibv_qp *qp, ibv_qp_attr *a, int mask) {
    if (!qp || !a) return EINVAL;
    auto *s = reinterpret_cast<SoftQp *>(qp);
    std::vector<Notice> notices;
    lock();
    Qp &q = fabric().qp[s->index];
    const ibv_qp_state from = static_cast<ibv_qp_state>(q.state);
    const ibv_qp_state to = (mask & IBV_QP_STATE) ? a->qp_state : from;
    const bool rc = q.type == IBV_QPT_RC;
    const auto has = [&](int bits) { return (mask & bits) == bits; };
    bool ok = true;
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
        ok = true;
    } else if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
        ok = has(IBV_QP_PKEY_INDEX | IBV_QP_PORT) && (rc ? has(IBV_QP_ACCESS_FLAGS) : has(IBV_QP_QKEY)) &&
             a->port_num >= 1 && a->port_num <= port_count() && a->pkey_index == 0;
    } else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
        ok = !rc || (has(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                         IBV_QP_MIN_RNR_TIMER) &&
                     a->path_mtu >= IBV_MTU_256 && a->path_mtu <= IBV_MTU_4096);
    } else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
        ok = rc ? has(IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)
                : has(IBV_QP_SQ_PSN);
    } else if (from == to && (from == IBV_QPS_INIT || from == IBV_QPS_RTS)) {
        ok = true;  // attributes only
    } else {
        ok = false;
    }
    // Outstanding RDMA reads and atomics: at most the device's limits.
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > rd_atom_limit()) ok = false;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > rd_atom_limit()) ok = false;
    if (!ok) {
        unlock();
        return EINVAL;
    }
    if (mask & IBV_QP_PORT) q.port = a->port_num;
    if (mask & IBV_QP_PKEY_INDEX) q.pkey_index = a->pkey_index;
    if (mask & IBV_QP_ACCESS_FLAGS) q.access = a->qp_access_flags;
    if (mask & IBV_QP_QKEY) q.qkey = a->qkey;
    if (mask & IBV_QP_AV) {
        q.dlid = a->ah_attr.dlid;
        q.global = a->ah_attr.is_global;
        std::memcpy(q.dgid, a->ah_attr.grh.dgid.raw, sizeof q.dgid);
    }
    if (mask & IBV_QP_PATH_MTU) q.path_mtu = a->path_mtu;
    if (mask & IBV_QP_DEST_QPN) q.dest_qpn = a->dest_qp_num;
    if (mask & IBV_QP_RQ_PSN) q.rq_psn = a->rq_psn;
    if (mask & IBV_QP_SQ_PSN) q.sq_psn = a->sq_psn;
    if (mask & IBV_QP_MIN_RNR_TIMER) q.min_rnr_timer = a->min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT) q.timeout = a->timeout;
    if (mask & IBV_QP_RETRY_CNT) q.retry_cnt = a->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY) q.rnr_retry = a->rnr_retry;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) q.max_rd_atomic = a->max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) q.max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (to == IBV_QPS_RESET) {
        q.rq.head = q.rq.tail = 0;
        q.sq_posted = q.sq_freed = 0;
        sq_signaled.erase(s->index);
    }
    q.state = to;
    if (to == IBV_QPS_ERR) to_error(s->index, notices);
    unlock();
    notify(notices);
    qp->state = to;
    return 0;
}

int ibv_query_qp(ibv_qp *qp, ibv_qp_attr *a, int, ibv_qp_init_attr *init) {
    if (!qp || !a || !init) return EINVAL;
    auto *s = reinterpret_cast<SoftQp *>(qp);
    lock();
    const Qp &q = fabric().qp[s->index];
    std::memset(a, 0, sizeof *a);
    a->qp_state = a->cur_qp_state = static_cast<ibv_qp_state>(q.state);
    a->path_mtu = q.path_mtu ? static_cast<ibv_mtu>(q.path_mtu) : IBV_MTU_4096;
    a->qkey = q.qkey;
    a->rq_psn = q.rq_psn;
    a->sq_psn = q.sq_psn;
    a->dest_qp_num = q.dest_qpn;
    a->qp_access_flags = static_cast<int>(q.access);
    a->cap.max_send_wr = q.max_send_wr;
    a->cap.max_recv_wr = q.srq >= 0 ? 0 : q.rq.cap;
    a->cap.max_send_sge = a->cap.max_recv_sge = max_sge;
    a->cap.max_inline_data = max_inline;
    a->ah_attr.dlid = q.dlid;
    a->ah_attr.port_num = static_cast<std::uint8_t>(q.port);
    a->pkey_index = static_cast<std::uint16_t>(q.pkey_index);
    a->port_num = static_cast<std::uint8_t>(q.port);
    a->timeout = q.timeout;
    a->retry_cnt = q.retry_cnt;
    a->max_rd_atomic = q.max_rd_atomic;
    a->max_dest_rd_atomic = q.max_dest_rd_atomic;
    a->rnr_retry = q.rnr_retry;
    a->min_rnr_timer = q.min_rnr_timer;
    unlock();
    std::memset(init, 0, sizeof *init);
    init->qp_context = qp->qp_context;
    init->send_cq = qp->send_cq;
    init->recv_cq = qp->recv_cq;
    init->srq = qp->srq;
    init->cap = a->cap;
    init->qp_type = qp->qp_type;
    init->sq_sig_all = static_cast<int>(q.sq_sig_all);
    return 0;
}

int ibv_destroy_qp(ibv_qp *qp) {
    if (!qp) return EINVAL;
    auto *s = reinterpret_cast<SoftQp *>(qp);
    {
        std::lock_guard<std::mutex> g(pending_mutex);
        pending.erase(std::remove_if(pending.begin(), pending.end(), [&](const Work &w) { return w.qp == s->index; }),
                      pending.end());
        if (pending_state.in_flight == s->index) pending_state.in_flight_dropped = true;
        lock();
        fabric().qp[s->index].used = 0;
        sq_signaled.erase(s->index);
        unlock();
    }
    delete s;
    return 0;
}

ibv_qp_ex *ibv_qp_to_qp_ex(ibv_qp *) { return nullptr; }

ibv_ah *ibv_create_ah(ibv_pd *pd, ibv_ah_attr *attr) {
    if (!pd || !attr || attr->port_num < 1 || attr->port_num > port_count()) return fail_null<ibv_ah>(EINVAL);
    auto *a = new SoftAh{};
    a->ah.context = pd->context;
    a->ah.pd = pd;
    a->attr = *attr;
    return &a->ah;
}

int ibv_destroy_ah(ibv_ah *ah) {
    if (!ah) return EINVAL;
    delete reinterpret_cast<SoftAh *>(ah);
    return 0;
}

int ibv_init_ah_from_wc(ibv_context *context, std::uint8_t port, ibv_wc *wc, ibv_grh *grh, ibv_ah_attr *attr) {
    if (!context || !wc || !attr || !valid_port(context, port)) return EINVAL;
    std::memset(attr, 0, sizeof *attr);
    attr->dlid = wc->slid;
    attr->sl = wc->sl;
    attr->src_path_bits = wc->dlid_path_bits;
    attr->port_num = port;
    if (grh && (wc->wc_flags & IBV_WC_GRH)) {
        attr->is_global = 1;
        std::memcpy(attr->grh.dgid.raw, reinterpret_cast<const std::uint8_t *>(grh) + 8, 16);
        attr->grh.hop_limit = 0xff;
    } else if (ethernet()) {
        return EINVAL;  // RoCE needs the GRH
    }
    return 0;
}

ibv_ah *ibv_create_ah_from_wc(ibv_pd *pd, ibv_wc *wc, ibv_grh *grh, std::uint8_t port) {
    ibv_ah_attr attr;
    if (ibv_init_ah_from_wc(pd->context, port, wc, grh, &attr)) return fail_null<ibv_ah>(EINVAL);
    return ibv_create_ah(pd, &attr);
}

int ibv_attach_mcast(ibv_qp *, const ibv_gid *, std::uint16_t) { return EOPNOTSUPP; }
int ibv_detach_mcast(ibv_qp *, const ibv_gid *, std::uint16_t) { return EOPNOTSUPP; }

int ibv_fork_init(void) { return 0; }
ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_DISABLED; }

int ibv_query_ece(ibv_qp *, ibv_ece *) { return EOPNOTSUPP; }
int ibv_set_ece(ibv_qp *, ibv_ece *) { return EOPNOTSUPP; }

void ibv_copy_qp_attr_from_kern(ibv_qp_attr *, void *) {}
void ibv_copy_ah_attr_from_kern(ibv_ah_attr *, void *) {}
void ibv_copy_path_rec_from_kern(void *, void *) {}
void ibv_copy_path_rec_to_kern(void *, void *) {}

const char *ibv_wc_status_str(ibv_wc_status status) {
    static const char *const names[] = {"success", "local length error", "local QP operation error",
                                        "local EE context operation error", "local protection error",
                                        "Work Request Flushed Error", "memory management operation error",
                                        "bad response error", "local access error", "remote invalid request error",
                                        "remote access error", "remote operation error", "transport retry counter exceeded",
                                        "RNR retry counter exceeded", "local RDD violation error",
                                        "remote invalid RD request", "aborted error", "invalid EE context number",
                                        "invalid EE context state", "fatal error", "response timeout error",
                                        "general error", "TM error", "TM rendezvous error"};
    const auto i = static_cast<std::size_t>(status);
    return i < std::size(names) ? names[i] : "unknown";
}

const char *ibv_node_type_str(ibv_node_type t) {
    switch (t) {
    case IBV_NODE_CA: return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH: return "InfiniBand switch";
    case IBV_NODE_ROUTER: return "InfiniBand router";
    case IBV_NODE_RNIC: return "iWARP NIC";
    default: return "unknown";
    }
}

const char *ibv_port_state_str(ibv_port_state s) {
    static const char *const names[] = {"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE",
                                        "PORT_ACTIVE_DEFER"};
    const auto i = static_cast<std::size_t>(s);
    return i < std::size(names) ? names[i] : "unknown";
}

const char *ibv_event_type_str(ibv_event_type e) {
    return e == IBV_EVENT_SRQ_LIMIT_REACHED ? "SRQ limit reached"
           : e == IBV_EVENT_CQ_ERR          ? "CQ error"
                                            : "asynchronous event";
}

int ibv_rate_to_mult(ibv_rate rate) { return rate == IBV_RATE_MAX ? 0 : 1; }
ibv_rate mult_to_ibv_rate(int) { return IBV_RATE_MAX; }

} // extern "C"
