// tests/softnic/verbs/rules.cpp - the software NIC's rules, checked through
// the verbs API as any program sees it: the QP state machine, argument
// checks, every work-request error status, completion channels, the send
// queue's depth, a CQ overrun and its asynchronous event.  Built
// against rdma-core's headers and library by rules.sh and run under
// softnic-run; two QPs of one process talk to each other (acceptance.sh
// covers two processes).  `rules A DIR` and `rules B DIR`, on two hosts
// (hosts.sh), check a few rules between hosts.  Prints "ok: ..." per rule
// and exits non-zero if one is broken.
#include <infiniband/verbs.h>

#include "../common/peer_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char *rule, const std::string &detail = "") {
    std::printf("%s: %s%s%s\n", ok ? "ok" : "FAIL", rule, detail.empty() ? "" : ": ", detail.c_str());
    if (!ok) ++failures;
}

[[noreturn]] void die(const char *what) {
    std::printf("FAIL: %s (errno %d: %s)\n", what, errno, std::strerror(errno));
    std::exit(1);
}

struct Nic {
    ibv_context *ctx = nullptr;
    ibv_pd *pd = nullptr;
    ibv_comp_channel *channel = nullptr;
    ibv_cq *cq = nullptr;
    std::vector<char> buf = std::vector<char>(1 << 16);
    ibv_mr *mr = nullptr;
    ibv_mr *ro_mr = nullptr;  // no remote access
    std::vector<char> ro = std::vector<char>(4096);
    ibv_mr *at_mr = nullptr;  // remote atomics allowed
    std::vector<std::uint64_t> at = std::vector<std::uint64_t>(512);
};

Nic open_nic() {
    Nic n;
    int count = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (!list || count < 1) die("no verbs device (run under softnic-run)");
    n.ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!n.ctx) die("ibv_open_device");
    n.pd = ibv_alloc_pd(n.ctx);
    n.channel = ibv_create_comp_channel(n.ctx);
    n.cq = ibv_create_cq(n.ctx, 256, nullptr, n.channel, 0);
    if (!n.pd || !n.channel || !n.cq) die("pd, channel or cq");
    n.mr = ibv_reg_mr(n.pd, n.buf.data(), n.buf.size(),
                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    n.ro_mr = ibv_reg_mr(n.pd, n.ro.data(), n.ro.size(), IBV_ACCESS_LOCAL_WRITE);
    n.at_mr = ibv_reg_mr(n.pd, n.at.data(), n.at.size() * sizeof n.at[0],
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
    if (!n.mr || !n.ro_mr || !n.at_mr) die("ibv_reg_mr");
    return n;
}

ibv_qp *make_qp(Nic &n, ibv_qp_type type) {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = n.cq;
    a.qp_type = type;
    a.cap.max_send_wr = 64;
    a.cap.max_recv_wr = 64;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    ibv_qp *qp = ibv_create_qp(n.pd, &a);
    if (!qp) die("ibv_create_qp");
    return qp;
}

constexpr int rdma_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

int to_init(ibv_qp *qp, bool ud, int access = rdma_access) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 0;
    a.qp_access_flags = static_cast<unsigned>(access);
    a.qkey = 0x11111111;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                     (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
}

// The path to port 1 of `ctx`'s device: its LID, or on Ethernet its GID.
void path_to(ibv_context *ctx, ibv_ah_attr &ah) {
    ibv_port_attr p{};
    if (ibv_query_port(ctx, 1, &p)) die("ibv_query_port");
    ah.dlid = p.lid;
    ah.port_num = 1;
    if (p.link_layer == IBV_LINK_LAYER_ETHERNET) {
        ah.is_global = 1;
        ah.grh.hop_limit = 64;
        if (ibv_query_gid(ctx, 1, 0, &ah.grh.dgid)) die("ibv_query_gid");
    }
}

int to_rtr_by(ibv_qp *qp, std::uint32_t dest, const ibv_ah_attr &path, int mask_drop = 0) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr = path;
    const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    return ibv_modify_qp(qp, &a, mask & ~mask_drop);
}

int to_rtr(ibv_qp *qp, std::uint32_t dest, int mask_drop = 0, ibv_context *peer = nullptr) {
    ibv_ah_attr path{};
    path_to(peer ? peer : qp->context, path);
    return to_rtr_by(qp, dest, path, mask_drop);
}

int to_rts(ibv_qp *qp, int rnr_retry = 7, int timeout = 14) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = static_cast<std::uint8_t>(timeout);
    a.retry_cnt = 1;
    a.rnr_retry = static_cast<std::uint8_t>(rnr_retry);
    a.sq_psn = 0;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

// A connected RC pair; `access`: what each lets the other do remotely.
void connect(ibv_qp *a, ibv_qp *b, int rnr_retry = 7, int timeout = 14, int access = rdma_access) {
    if (to_init(a, false, access) || to_init(b, false, access) || to_rtr(a, b->qp_num) || to_rtr(b, a->qp_num) ||
        to_rts(a, rnr_retry, timeout) || to_rts(b, rnr_retry, timeout))
        die("connecting two RC QPs");
}

int post_recv(ibv_qp *qp, Nic &n, std::size_t offset, std::uint32_t len, std::uint64_t id) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(n.buf.data() + offset), len, n.mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
}

// Posts one signaled work request of `op` from or into `local`; `remote`
// fills in its remote part (rdma or atomic).
template <class Remote>
int post_with(ibv_qp *qp, ibv_wr_opcode op, void *local, std::uint32_t len, std::uint32_t lkey, std::uint64_t id,
              Remote &&remote) {
    ibv_sge s{reinterpret_cast<std::uintptr_t>(local), len, lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    remote(wr);
    ibv_send_wr *bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

int post(ibv_qp *qp, ibv_wr_opcode op, void *local, std::uint32_t len, std::uint32_t lkey, std::uint64_t id,
         std::uint64_t raddr = 0, std::uint32_t rkey = 0, std::uint32_t imm = 0) {
    return post_with(qp, op, local, len, lkey, id, [&](ibv_send_wr &wr) {
        wr.imm_data = imm;
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
    });
}

// An atomic work request: the old value of the 8 bytes at `raddr` lands
// in `local` (`len` bytes, 8 for a valid one).
int post_atomic(ibv_qp *qp, ibv_wr_opcode op, void *local, std::uint32_t len, std::uint32_t lkey, std::uint64_t id,
                std::uint64_t raddr, std::uint32_t rkey, std::uint64_t compare_add, std::uint64_t swap = 0) {
    return post_with(qp, op, local, len, lkey, id, [&](ibv_send_wr &wr) {
        wr.wr.atomic.remote_addr = raddr;
        wr.wr.atomic.rkey = rkey;
        wr.wr.atomic.compare_add = compare_add;
        wr.wr.atomic.swap = swap;
    });
}

// Waits up to `seconds` for the completion with `id`; its status, or -1.
int wait_wc(Nic &n, std::uint64_t id, ibv_wc *out = nullptr, double seconds = 5) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    static std::vector<ibv_wc> seen;
    for (;;) {
        for (std::size_t i = 0; i < seen.size(); ++i)
            if (seen[i].wr_id == id) {
                if (out) *out = seen[i];
                const int st = seen[i].status;
                seen.erase(seen.begin() + static_cast<long>(i));
                return st;
            }
        ibv_wc wc[8];
        const int k = ibv_poll_cq(n.cq, 8, wc);
        for (int i = 0; i < k; ++i) seen.push_back(wc[i]);
        if (k == 0 && std::chrono::steady_clock::now() > end) return -1;
    }
}

std::string status(int st) { return st < 0 ? "none" : ibv_wc_status_str(static_cast<ibv_wc_status>(st)); }

// ---- between hosts (hosts.sh): `rules A DIR` on one host, `rules B DIR`
// on another, meeting through files in DIR ----

constexpr int far_qps = 4;

// What one side tells the other.
struct Far {
    std::uint32_t qpn[far_qps];
    ibv_ah_attr path;  // to its port
    std::uint64_t addr;
    std::uint32_t rkey;
};

// The folder's files (common/peer_channel.hpp), named by what they say.
void publish(const std::string &dir, const char *name, const Far &f) {
    if (!softnic_common::file_publish(dir + "/" + name, &f, sizeof f)) die("writing to the other host's folder");
}

// Waits (20 s at most) for the other side's file `name`.
Far await(const std::string &dir, const char *name) {
    Far f{};
    for (int i = 0; i < 2000; ++i) {
        if (softnic_common::file_read(dir + "/" + name, &f, sizeof f)) return f;
        ::usleep(10000);
    }
    die("waiting for the other host");
}

// Side A's rules, against side B's QPs: 0 takes writes and reads, 1 bad
// keys, 2 a send (its receive comes late); A's QP 3 names a QP that B
// does not have.
int across_hosts(const std::string &side, const std::string &dir) {
    Nic n = open_nic();
    Far mine{};
    ibv_qp *qp[far_qps];
    for (int i = 0; i < far_qps; ++i) {
        qp[i] = make_qp(n, IBV_QPT_RC);
        if (to_init(qp[i], false)) die("RESET to INIT");
        mine.qpn[i] = qp[i]->qp_num;
    }
    path_to(n.ctx, mine.path);
    mine.addr = reinterpret_cast<std::uintptr_t>(n.buf.data());
    mine.rkey = n.mr->rkey;
    char *base = n.buf.data();
    const bool a = side == "A";
    publish(dir, a ? "a" : "b", mine);
    const Far far = await(dir, a ? "b" : "a");
    for (int i = 0; i < far_qps; ++i)
        if (to_rtr_by(qp[i], far.qpn[i] + (a && i == 3 ? 100 : 0), far.path) || to_rts(qp[i], 7, a && i == 3 ? 10 : 14))
            die("connecting across hosts");
    if (!a) {
        publish(dir, "b-ready", mine);
        (void)await(dir, "a-sent");
        post_recv(qp[2], n, 1024, 64, 1);
        ibv_wc wc{};
        const int r = wait_wc(n, 1, &wc, 10);
        check(r == IBV_WC_SUCCESS && std::strcmp(base + 1024, "late") == 0 && wc.src_qp == far.qpn[2],
              "a send from another host, waiting for its receive, arrives", status(r));
        (void)await(dir, "a-done");
        return failures ? 1 : 0;
    }
    (void)await(dir, "b-ready");
    std::memcpy(base, "over the wire", 14);
    post(qp[0], IBV_WR_RDMA_WRITE, base, 14, n.mr->lkey, 1, far.addr + 4096, far.rkey);
    const int s1 = wait_wc(n, 1);
    post(qp[0], IBV_WR_RDMA_READ, base + 8192, 14, n.mr->lkey, 2, far.addr + 4096, far.rkey);
    ibv_wc wc{};
    const int s2 = wait_wc(n, 2, &wc);
    check(s1 == IBV_WC_SUCCESS && s2 == IBV_WC_SUCCESS && wc.byte_len == 14 &&
              std::strcmp(base + 8192, "over the wire") == 0,
          "RDMA_WRITE to another host, then RDMA_READ of it back", status(s1) + ", " + status(s2));
    post(qp[1], IBV_WR_RDMA_WRITE, base, 8, n.mr->lkey, 3, far.addr, far.rkey ^ 0x1000);
    const int s3 = wait_wc(n, 3);
    check(s3 == IBV_WC_REM_ACCESS_ERR, "RDMA_WRITE with a bad key of another host completes REM_ACCESS_ERR",
          status(s3));
    std::memcpy(base, "late", 5);
    post(qp[2], IBV_WR_SEND, base, 5, n.mr->lkey, 4);
    const int waiting = wait_wc(n, 4, nullptr, 0.2);
    publish(dir, "a-sent", mine);
    const int s4 = wait_wc(n, 4, nullptr, 10);
    check(waiting < 0 && s4 == IBV_WC_SUCCESS,
          "a SEND to another host waits for the receive (RNR), then completes", status(waiting) + ", " + status(s4));
    post(qp[3], IBV_WR_SEND, base, 5, n.mr->lkey, 5);
    const int s5 = wait_wc(n, 5);
    check(s5 == IBV_WC_RETRY_EXC_ERR, "a QP another host does not have: RETRY_EXC_ERR", status(s5));
    publish(dir, "a-done", mine);
    return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 3) return across_hosts(argv[1], argv[2]);
    Nic n = open_nic();
    char *base = n.buf.data();

    // Creation limits and bad arguments.
    {
        ibv_device_attr d{};
        check(ibv_query_device(n.ctx, &d) == 0 && d.max_sge >= 1 && d.max_cqe > 0, "ibv_query_device");
        check(ibv_create_cq(n.ctx, d.max_cqe + 1, nullptr, nullptr, 0) == nullptr && errno == EINVAL,
              "a CQ above max_cqe is refused with EINVAL");
        ibv_qp_init_attr a{};
        a.send_cq = a.recv_cq = n.cq;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = 1;
        a.cap.max_recv_wr = 1;
        a.cap.max_send_sge = static_cast<std::uint32_t>(d.max_sge) + 1;
        check(ibv_create_qp(n.pd, &a) == nullptr && errno == EINVAL, "a QP above max_sge is refused with EINVAL");
        std::vector<char> b(64);
        check(ibv_reg_mr(n.pd, b.data(), b.size(), IBV_ACCESS_REMOTE_WRITE) == nullptr && errno == EINVAL,
              "remote write without local write is refused with EINVAL");
        ibv_port_attr p{};
        check(ibv_query_port(n.ctx, 9, &p) != 0, "ibv_query_port of a port that does not exist fails");
    }

    // The region table: the device reports max_mr (SOFTNIC_MAX_MR when
    // set), and a registration beyond it is refused with ENOMEM until one
    // is deregistered.
    {
        ibv_device_attr d{};
        check(ibv_query_device(n.ctx, &d) == 0 && d.max_mr >= 1, "ibv_query_device reports max_mr");
        if (const char *want = std::getenv("SOFTNIC_MAX_MR")) {
            check(d.max_mr == std::atoi(want), "max_mr is SOFTNIC_MAX_MR", std::to_string(d.max_mr));
            std::vector<char> b(4096);
            std::vector<ibv_mr *> held;
            while (held.size() <= static_cast<std::size_t>(d.max_mr))
                if (ibv_mr *m = ibv_reg_mr(n.pd, b.data(), b.size(), IBV_ACCESS_LOCAL_WRITE)) held.push_back(m);
                else break;
            const int e = errno;
            check(held.size() < static_cast<std::size_t>(d.max_mr) && e == ENOMEM,
                  "a registration past max_mr is refused with ENOMEM",
                  std::to_string(held.size()) + " more regions taken, errno " + std::to_string(e));
            if (!held.empty()) {
                ibv_dereg_mr(held.back());
                held.pop_back();
            }
            ibv_mr *again = ibv_reg_mr(n.pd, b.data(), b.size(), IBV_ACCESS_LOCAL_WRITE);
            check(again != nullptr, "once a region is deregistered, another registers");
            if (again) held.push_back(again);
            for (ibv_mr *m : held) ibv_dereg_mr(m);
        }
    }

    // Outstanding reads and atomics: the device reports its limit
    // (SOFTNIC_MAX_QP_RD_ATOM when set), and a QP asking more, as target
    // (RTR) or as initiator (RTS), is refused with EINVAL.
    {
        ibv_device_attr d{};
        check(ibv_query_device(n.ctx, &d) == 0 && d.max_qp_rd_atom >= 1 && d.max_qp_init_rd_atom >= 1,
              "ibv_query_device reports max_qp_rd_atom and max_qp_init_rd_atom");
        if (const char *want = std::getenv("SOFTNIC_MAX_QP_RD_ATOM"))
            check(d.max_qp_rd_atom == std::atoi(want) && d.max_qp_init_rd_atom == std::atoi(want),
                  "max_qp_rd_atom is SOFTNIC_MAX_QP_RD_ATOM", std::to_string(d.max_qp_rd_atom));
        ibv_qp *a = make_qp(n, IBV_QPT_RC);
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        ibv_ah_attr path{};
        path_to(n.ctx, path);
        ibv_qp_attr r{};
        r.qp_state = IBV_QPS_RTR;
        r.path_mtu = IBV_MTU_1024;
        r.dest_qp_num = b->qp_num;
        r.min_rnr_timer = 1;
        r.ah_attr = path;
        const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        check(to_init(a, false) == 0, "RESET to INIT");
        r.max_dest_rd_atomic = static_cast<std::uint8_t>(d.max_qp_rd_atom + 1);
        check(ibv_modify_qp(a, &r, rtr_mask) == EINVAL, "max_dest_rd_atomic above max_qp_rd_atom is refused");
        r.max_dest_rd_atomic = static_cast<std::uint8_t>(d.max_qp_rd_atom);
        check(ibv_modify_qp(a, &r, rtr_mask) == 0, "max_dest_rd_atomic of max_qp_rd_atom is taken");
        ibv_qp_attr t{};
        t.qp_state = IBV_QPS_RTS;
        t.timeout = 14;
        t.retry_cnt = 1;
        t.rnr_retry = 7;
        const int rts_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC;
        t.max_rd_atomic = static_cast<std::uint8_t>(d.max_qp_init_rd_atom + 1);
        check(ibv_modify_qp(a, &t, rts_mask) == EINVAL, "max_rd_atomic above max_qp_init_rd_atom is refused");
        t.max_rd_atomic = static_cast<std::uint8_t>(d.max_qp_init_rd_atom);
        check(ibv_modify_qp(a, &t, rts_mask) == 0, "max_rd_atomic of max_qp_init_rd_atom is taken");
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
    }

    // The state machine.
    {
        ibv_qp *a = make_qp(n, IBV_QPT_RC);
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        check(post(a, IBV_WR_SEND, base, 8, n.mr->lkey, 1) == EINVAL, "a send in RESET is refused with EINVAL");
        check(post_recv(a, n, 0, 8, 1) == EINVAL, "a receive in RESET is refused with EINVAL");
        check(to_rtr(a, b->qp_num) == EINVAL, "RESET to RTR is refused with EINVAL");
        ibv_qp_attr at{};
        at.qp_state = IBV_QPS_INIT;
        at.port_num = 1;
        check(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_PORT) == EINVAL,
              "RESET to INIT without the P_Key index and access flags is refused");
        at.port_num = 7;
        at.qp_access_flags = 0;
        check(ibv_modify_qp(a, &at, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS) == EINVAL,
              "INIT on a port that does not exist is refused");
        check(to_init(a, false) == 0, "RESET to INIT");
        check(to_rtr(a, b->qp_num, IBV_QP_DEST_QPN) == EINVAL, "INIT to RTR without the destination QP is refused");
        check(to_rts(a) == EINVAL, "INIT to RTS is refused");
        check(to_rtr(a, b->qp_num) == 0 && to_rts(a) == 0, "INIT to RTR to RTS");
        ibv_qp_attr q{};
        ibv_qp_init_attr qi{};
        check(ibv_query_qp(a, &q, IBV_QP_STATE, &qi) == 0 && q.qp_state == IBV_QPS_RTS && q.dest_qp_num == b->qp_num,
              "ibv_query_qp reports RTS and the destination");
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
    }

    // Sends, writes, reads.
    {
        ibv_qp *a = make_qp(n, IBV_QPT_RC);
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        connect(a, b);
        std::memcpy(base, "hello, softnic", 15);
        post_recv(b, n, 1024, 64, 100);
        ibv_wc wc{};
        const bool sent = post(a, IBV_WR_SEND_WITH_IMM, base, 15, n.mr->lkey, 1, 0, 0, 0x1234) == 0;
        const int s1 = wait_wc(n, 1);
        const int r1 = wait_wc(n, 100, &wc);
        check(sent && s1 == IBV_WC_SUCCESS && r1 == IBV_WC_SUCCESS && wc.byte_len == 15 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
                  wc.imm_data == 0x1234 && wc.src_qp == a->qp_num && std::strcmp(base + 1024, "hello, softnic") == 0,
              "SEND_WITH_IMM arrives with its length, immediate and source QP");

        std::memcpy(base + 2048, "written", 8);
        post(a, IBV_WR_RDMA_WRITE, base + 2048, 8, n.mr->lkey, 2, reinterpret_cast<std::uintptr_t>(base + 4096),
             n.mr->rkey);
        check(wait_wc(n, 2) == IBV_WC_SUCCESS && std::strcmp(base + 4096, "written") == 0, "RDMA_WRITE");

        std::memcpy(base + 8192, "read me", 8);
        post(a, IBV_WR_RDMA_READ, base + 12288, 8, n.mr->lkey, 3, reinterpret_cast<std::uintptr_t>(base + 8192),
             n.mr->rkey);
        check(wait_wc(n, 3, &wc) == IBV_WC_SUCCESS && wc.byte_len == 8 && std::strcmp(base + 12288, "read me") == 0,
              "RDMA_READ completes with its length");

        post_recv(b, n, 16384, 64, 101);
        post(a, IBV_WR_RDMA_WRITE_WITH_IMM, base + 2048, 8, n.mr->lkey, 4,
             reinterpret_cast<std::uintptr_t>(base + 20480), n.mr->rkey, 77);
        const int s4 = wait_wc(n, 4);
        const int r4 = wait_wc(n, 101, &wc);
        check(s4 == IBV_WC_SUCCESS && r4 == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.imm_data == 77 &&
                  std::strcmp(base + 20480, "written") == 0,
              "RDMA_WRITE_WITH_IMM writes and consumes a receive");

        // Completion channel: an armed CQ's event names it.
        ibv_req_notify_cq(n.cq, 0);
        post(a, IBV_WR_RDMA_WRITE, base + 2048, 8, n.mr->lkey, 5, reinterpret_cast<std::uintptr_t>(base + 4096),
             n.mr->rkey);
        pollfd pfd{n.channel->fd, POLLIN, 0};
        ibv_cq *ev_cq = nullptr;
        void *ev_ctx = nullptr;
        const bool got = ::poll(&pfd, 1, 5000) == 1 && ibv_get_cq_event(n.channel, &ev_cq, &ev_ctx) == 0;
        if (got) ibv_ack_cq_events(ev_cq, 1);
        check(got && ev_cq == n.cq && wait_wc(n, 5) == IBV_WC_SUCCESS, "an armed CQ's channel names the CQ");

        // Errors: a bad local key, then flushes.
        post(a, IBV_WR_SEND, base, 8, n.mr->lkey + 1, 6);
        const int s6 = wait_wc(n, 6);
        check(s6 == IBV_WC_LOC_PROT_ERR, "a bad local key completes LOC_PROT_ERR", status(s6));
        post(a, IBV_WR_SEND, base, 8, n.mr->lkey, 7);
        const int s7 = wait_wc(n, 7);
        check(s7 == IBV_WC_WR_FLUSH_ERR, "after an error the QP flushes new work", status(s7));
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
    }
    // One error per fresh connected pair (an RC error ends the QP).
    const auto on_pair = [&](int rnr_retry, auto &&body) {
        ibv_qp *a = make_qp(n, IBV_QPT_RC);
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        connect(a, b, rnr_retry);
        body(a, b);
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
    };
    on_pair(7, [&](ibv_qp *a, ibv_qp *) {
        post(a, IBV_WR_RDMA_WRITE, base, 8, n.mr->lkey, 10, reinterpret_cast<std::uintptr_t>(base + 4096),
             n.mr->rkey ^ 0x1000);
        const int s = wait_wc(n, 10);
        check(s == IBV_WC_REM_ACCESS_ERR, "RDMA_WRITE with a bad remote key completes REM_ACCESS_ERR", status(s));
    });
    on_pair(7, [&](ibv_qp *a, ibv_qp *) {
        post(a, IBV_WR_RDMA_WRITE, base, 8, n.mr->lkey, 11, reinterpret_cast<std::uintptr_t>(n.ro.data()),
             n.ro_mr->rkey);
        const int s = wait_wc(n, 11);
        check(s == IBV_WC_REM_ACCESS_ERR, "RDMA_WRITE into a region without remote write completes REM_ACCESS_ERR",
              status(s));
    });
    on_pair(7, [&](ibv_qp *a, ibv_qp *b) {
        post_recv(b, n, 1024, 4, 200);
        post(a, IBV_WR_SEND, base, 64, n.mr->lkey, 12);
        const int s = wait_wc(n, 12);
        const int r = wait_wc(n, 200);
        check(s == IBV_WC_REM_OP_ERR && r == IBV_WC_LOC_LEN_ERR,
              "a receive too small: LOC_LEN_ERR there, REM_OP_ERR here", status(r) + ", " + status(s));
    });
    on_pair(0, [&](ibv_qp *a, ibv_qp *) {
        post(a, IBV_WR_SEND, base, 8, n.mr->lkey, 13);
        const int s = wait_wc(n, 13);
        check(s == IBV_WC_RNR_RETRY_EXC_ERR, "no receive posted and rnr_retry 0: RNR_RETRY_EXC_ERR", status(s));
    });
    {
        ibv_qp *a = make_qp(n, IBV_QPT_RC);
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        connect(a, b, 7, 10);
        ibv_destroy_qp(b);
        const auto t0 = std::chrono::steady_clock::now();
        post(a, IBV_WR_SEND, base, 8, n.mr->lkey, 14);
        const int s = wait_wc(n, 14);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        check(s == IBV_WC_RETRY_EXC_ERR && took >= 0.004 && took < 2,
              "a peer QP that is gone: RETRY_EXC_ERR after the transport timeout",
              status(s) + " after " + std::to_string(took) + " s");
        ibv_destroy_qp(a);
    }

    // Atomics (IBV_ATOMIC_HCA): fetch-and-add and compare-and-swap on an
    // aligned word of a region open to remote atomics, by a QP that allows
    // them; each way of getting one wrong, on a fresh pair (an error ends
    // an RC QP).
    {
        constexpr int atomic_access = rdma_access | IBV_ACCESS_REMOTE_ATOMIC;
        auto *word = &n.at[8];
        auto *old = &n.at[100];  // the local side: the old value lands here
        const auto raddr = reinterpret_cast<std::uintptr_t>(word);
        ibv_qp *a = make_qp(n, IBV_QPT_RC);
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        connect(a, b, 7, 14, atomic_access);
        ibv_wc wc{};
        *word = 40;
        *old = 0;
        post_atomic(a, IBV_WR_ATOMIC_FETCH_AND_ADD, old, 8, n.at_mr->lkey, 20, raddr, n.at_mr->rkey, 2);
        const int s1 = wait_wc(n, 20, &wc);
        check(s1 == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FETCH_ADD && *old == 40 && *word == 42,
              "ATOMIC_FETCH_AND_ADD returns the old value and adds",
              status(s1) + ", old " + std::to_string(*old) + ", word " + std::to_string(*word));
        post_atomic(a, IBV_WR_ATOMIC_CMP_AND_SWP, old, 8, n.at_mr->lkey, 21, raddr, n.at_mr->rkey, 42, 7);
        const int s2 = wait_wc(n, 21, &wc);
        check(s2 == IBV_WC_SUCCESS && wc.opcode == IBV_WC_COMP_SWAP && *old == 42 && *word == 7,
              "ATOMIC_CMP_AND_SWP that matches swaps and returns the old value",
              status(s2) + ", old " + std::to_string(*old) + ", word " + std::to_string(*word));
        post_atomic(a, IBV_WR_ATOMIC_CMP_AND_SWP, old, 8, n.at_mr->lkey, 22, raddr, n.at_mr->rkey, 42, 9);
        const int s3 = wait_wc(n, 22);
        check(s3 == IBV_WC_SUCCESS && *old == 7 && *word == 7,
              "ATOMIC_CMP_AND_SWP that does not match writes nothing and returns the value",
              status(s3) + ", old " + std::to_string(*old) + ", word " + std::to_string(*word));
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
        const auto atomic_pair = [&](int access, auto &&body) {
            ibv_qp *x = make_qp(n, IBV_QPT_RC);
            ibv_qp *y = make_qp(n, IBV_QPT_RC);
            connect(x, y, 7, 14, access);
            body(x);
            ibv_destroy_qp(x);
            ibv_destroy_qp(y);
        };
        atomic_pair(atomic_access, [&](ibv_qp *x) {
            post_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, old, 8, n.at_mr->lkey, 23, raddr + 4, n.at_mr->rkey, 1);
            const int s = wait_wc(n, 23);
            check(s == IBV_WC_REM_INV_REQ_ERR && *word == 7, "an atomic on an address not 8-byte aligned: REM_INV_REQ_ERR",
                  status(s));
        });
        atomic_pair(atomic_access, [&](ibv_qp *x) {
            post_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, old, 8, n.at_mr->lkey, 24,
                        reinterpret_cast<std::uintptr_t>(base + 8), n.mr->rkey, 1);
            const int s = wait_wc(n, 24);
            check(s == IBV_WC_REM_ACCESS_ERR, "an atomic into a region without remote atomic access: REM_ACCESS_ERR",
                  status(s));
        });
        atomic_pair(rdma_access, [&](ibv_qp *x) {
            post_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, old, 8, n.at_mr->lkey, 25, raddr, n.at_mr->rkey, 1);
            const int s = wait_wc(n, 25);
            check(s == IBV_WC_REM_ACCESS_ERR && *word == 7,
                  "an atomic to a QP whose access flags lack REMOTE_ATOMIC: REM_ACCESS_ERR", status(s));
        });
        atomic_pair(atomic_access, [&](ibv_qp *x) {
            post_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, old, 4, n.at_mr->lkey, 26, raddr, n.at_mr->rkey, 1);
            const int s = wait_wc(n, 26);
            check(s == IBV_WC_LOC_LEN_ERR && *word == 7, "an atomic whose local buffer is not 8 bytes: LOC_LEN_ERR",
                  status(s));
        });
    }

    // UD: a wrong Q_Key drops the datagram; the right one delivers it.
    {
        ibv_qp *a = make_qp(n, IBV_QPT_UD);
        ibv_qp *b = make_qp(n, IBV_QPT_UD);
        ibv_qp_attr at{};
        for (ibv_qp *q : {a, b}) {
            at.qp_state = IBV_QPS_RTR;
            if (to_init(q, true) || ibv_modify_qp(q, &at, IBV_QP_STATE)) die("UD to RTR");
            at.qp_state = IBV_QPS_RTS;
            at.sq_psn = 0;
            if (ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN)) die("UD to RTS");
        }
        ibv_ah_attr aa{};
        path_to(n.ctx, aa);
        ibv_ah *ah = ibv_create_ah(n.pd, &aa);
        post_recv(b, n, 32768, 256, 300);
        auto ud_send = [&](std::uint32_t qkey, std::uint64_t id) {
            ibv_sge s{reinterpret_cast<std::uintptr_t>(base), 16, n.mr->lkey};
            ibv_send_wr wr{};
            wr.wr_id = id;
            wr.sg_list = &s;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_SEND;
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.wr.ud.ah = ah;
            wr.wr.ud.remote_qpn = b->qp_num;
            wr.wr.ud.remote_qkey = qkey;
            ibv_send_wr *bad = nullptr;
            return ibv_post_send(a, &wr, &bad);
        };
        std::memcpy(base, "datagram", 9);
        ud_send(0x22222222, 20);
        const int s20 = wait_wc(n, 20);
        const int r_wrong = wait_wc(n, 300, nullptr, 0.2);
        check(s20 == IBV_WC_SUCCESS && r_wrong < 0, "UD with a wrong Q_Key: sent, never received");
        ud_send(0x11111111, 21);
        ibv_wc wc{};
        const int s21 = wait_wc(n, 21);
        const int r = wait_wc(n, 300, &wc);
        check(s21 == IBV_WC_SUCCESS && r == IBV_WC_SUCCESS && wc.byte_len == 16 + 40 &&
                  std::strcmp(base + 32768 + 40, "datagram") == 0 && wc.src_qp == a->qp_num,
              "UD delivers after the 40 bytes of the GRH");
        ibv_destroy_ah(ah);
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
    }

    // Two devices (SOFTNIC_DEVICES=2): RC between them; a path to the
    // wrong device never connects.
    int count = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (count >= 2) {
        ibv_context *ctx2 = ibv_open_device(list[1]);
        ibv_pd *pd2 = ctx2 ? ibv_alloc_pd(ctx2) : nullptr;
        ibv_cq *cq2 = ctx2 ? ibv_create_cq(ctx2, 16, nullptr, nullptr, 0) : nullptr;
        if (!pd2 || !cq2) die("the second device");
        ibv_port_attr p0{}, p1{};
        ibv_query_port(n.ctx, 1, &p0);
        ibv_query_port(ctx2, 1, &p1);
        check(std::strcmp(ibv_get_device_name(list[1]), "softnic1") == 0 &&
                  (p0.link_layer == IBV_LINK_LAYER_ETHERNET || p0.lid != p1.lid),
              "a second device, softnic1, with its own port address");
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = cq2;
        ia.qp_type = IBV_QPT_RC;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        ibv_qp *far = ibv_create_qp(pd2, &ia);
        ibv_qp *a = make_qp(n, IBV_QPT_RC);
        if (!far || to_init(a, false) || to_init(far, false) || to_rtr(a, far->qp_num, 0, ctx2) ||
            to_rtr(far, a->qp_num, 0, n.ctx) || to_rts(a) || to_rts(far))
            die("connecting across devices");
        ibv_mr *mr2 = ibv_reg_mr(pd2, base + 40000, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        std::memcpy(base, "across", 7);
        post(a, IBV_WR_RDMA_WRITE, base, 7, n.mr->lkey, 30, reinterpret_cast<std::uintptr_t>(base + 40000), mr2->rkey);
        check(wait_wc(n, 30) == IBV_WC_SUCCESS && std::strcmp(base + 40000, "across") == 0,
              "RDMA_WRITE from softnic0 to softnic1");
        ibv_destroy_qp(a);
        // A QP whose path names softnic0 while its peer sits on softnic1.
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        ibv_qp *far2 = ibv_create_qp(pd2, &ia);
        if (!far2 || to_init(b, false) || to_init(far2, false) || to_rtr(b, far2->qp_num, 0, n.ctx) ||
            to_rtr(far2, b->qp_num, 0, n.ctx) || to_rts(b, 7, 8) || to_rts(far2))
            die("connecting with a wrong path");
        post(b, IBV_WR_RDMA_WRITE, base, 7, n.mr->lkey, 31, reinterpret_cast<std::uintptr_t>(base + 40000), mr2->rkey);
        const int s31 = wait_wc(n, 31);
        check(s31 == IBV_WC_RETRY_EXC_ERR, "a path to the wrong device: RETRY_EXC_ERR", status(s31));
        ibv_destroy_qp(b);
        ibv_destroy_qp(far);
        ibv_destroy_qp(far2);
        ibv_dereg_mr(mr2);
        ibv_destroy_cq(cq2);
        ibv_dealloc_pd(pd2);
        ibv_close_device(ctx2);
    }
    ibv_free_device_list(list);

    // The send queue holds max_send_wr work requests (SOFTNIC_SQ_SLOTS,
    // when lower), each until a completion of it or of one after it is
    // polled; one more is refused with ENOMEM naming it.
    {
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = n.cq;
        ia.qp_type = IBV_QPT_RC;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        ibv_qp *a = ibv_create_qp(n.pd, &ia);
        ibv_qp *b = make_qp(n, IBV_QPT_RC);
        if (!a) die("ibv_create_qp of 4 sends");
        connect(a, b);
        const char *slots = std::getenv("SOFTNIC_SQ_SLOTS");
        const int depth = slots && std::atoi(slots) > 0 ? std::min(4, std::atoi(slots)) : 4;
        ibv_send_wr wr{}, *bad = nullptr;
        ibv_sge sg{reinterpret_cast<std::uintptr_t>(base), 8, n.mr->lkey};
        int rc = 0;
        auto write = [&](std::uint64_t id, bool signaled) {
            wr = ibv_send_wr{};
            wr.wr_id = id;
            wr.sg_list = &sg;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_RDMA_WRITE;
            wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
            wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(base + 4096);
            wr.wr.rdma.rkey = n.mr->rkey;
            bad = nullptr;
            return rc = ibv_post_send(a, &wr, &bad);
        };
        int taken = 0;
        while (taken < 8 && write(40 + static_cast<std::uint64_t>(taken), taken + 1 == depth) == 0) ++taken;
        check(taken == depth && rc == ENOMEM && bad == &wr,
              "the send queue takes its depth of work requests, then ENOMEM naming the one refused",
              std::to_string(taken) + " taken of " + std::to_string(depth) + ", then " + std::to_string(rc));
        const int last = wait_wc(n, 40 + static_cast<std::uint64_t>(depth) - 1);
        check(last == IBV_WC_SUCCESS && write(50, true) == 0 && wait_wc(n, 50) == IBV_WC_SUCCESS,
              "polling a signaled completion frees the slots of every work request up to it");
        taken = 0;
        while (taken < 8 && write(60 + static_cast<std::uint64_t>(taken), false) == 0) ++taken;
        ibv_wc none[4];
        const int polled = ibv_poll_cq(n.cq, 4, none);
        check(taken == depth && polled == 0 && write(70, true) == ENOMEM,
              "unsignaled work requests hold the queue: nothing to poll frees them",
              std::to_string(taken) + " taken, " + std::to_string(polled) + " polled");
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
    }

    // A CQ overrun: the completion is lost, the CQ's QPs go to error, and
    // the process hears IBV_EVENT_CQ_ERR naming the CQ on async_fd.
    {
        ibv_cq *small = ibv_create_cq(n.ctx, 2, nullptr, nullptr, 0);
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = small;
        ia.qp_type = IBV_QPT_RC;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        ibv_qp *a = small ? ibv_create_qp(n.pd, &ia) : nullptr;
        ibv_qp *b = small ? ibv_create_qp(n.pd, &ia) : nullptr;
        if (!a || !b) die("two QPs on a CQ of 2");
        connect(a, b);
        const int flags = fcntl(n.ctx->async_fd, F_GETFL);
        fcntl(n.ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
        ibv_async_event ev{};
        check(ibv_get_async_event(n.ctx, &ev) == -1 && errno == EAGAIN,
              "no asynchronous event before one happens (EAGAIN when non-blocking)");
        for (std::uint64_t id = 80; id < 83; ++id)  // two from a, one from b (SOFTNIC_SQ_SLOTS=2 takes no more)
            post(id < 82 ? a : b, IBV_WR_RDMA_WRITE, base, 8, n.mr->lkey, id, reinterpret_cast<std::uintptr_t>(base + 4096),
                 n.mr->rkey);
        pollfd pfd{n.ctx->async_fd, POLLIN, 0};
        const bool got = ::poll(&pfd, 1, 5000) == 1 && ibv_get_async_event(n.ctx, &ev) == 0;
        check(got && ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == small,
              "a third completion on a CQ of 2 raises IBV_EVENT_CQ_ERR naming the CQ",
              got ? ibv_event_type_str(ev.event_type) : "no event");
        if (got) ibv_ack_async_event(&ev);
        ibv_qp_attr qa{};
        ibv_qp_init_attr qi{};
        check(ibv_query_qp(a, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR,
              "the overrun puts the CQ's QPs in error");
        ibv_wc kept[4];
        check(ibv_poll_cq(small, 4, kept) == 2, "the completions before the overrun are still polled");
        fcntl(n.ctx->async_fd, F_SETFL, flags);
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
        ibv_destroy_cq(small);
    }

    check(ibv_destroy_cq(n.cq) == 0, "ibv_destroy_cq once its QPs are gone");
    ibv_dereg_mr(n.mr);
    ibv_dereg_mr(n.ro_mr);
    ibv_destroy_comp_channel(n.channel);
    ibv_dealloc_pd(n.pd);
    ibv_close_device(n.ctx);
    std::printf("%d rule(s) broken\n", failures);
    return failures ? 1 : 0;
}
