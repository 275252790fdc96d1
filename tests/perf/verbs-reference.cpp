// tests/perf/verbs-reference.cpp - the bare verbs reference (verbs-reference.hpp).
#include "tests/perf/verbs-reference.hpp"

#include "tests/perf/bench_common.hpp"

#include <limits>

#if SLUICE_BENCH_HAVE_VERBS
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <deque>
#endif

namespace sluice::perf {

namespace {
constexpr double nan_ns = std::numeric_limits<double>::quiet_NaN();
}

#if !SLUICE_BENCH_HAVE_VERBS

struct VerbsReference::State {};
VerbsReference::VerbsReference() = default;
VerbsReference::~VerbsReference() = default;
bool VerbsReference::open(const std::string &, std::size_t) {
    error_ = "built without libibverbs (configure found no libibverbs.pc, or no <infiniband/verbs.h>)";
    return false;
}
VerbsCard VerbsReference::card() const { return {}; }
bool VerbsReference::connect(const VerbsCard &) { return false; }
std::string VerbsReference::describe() const { return "no libibverbs"; }
double VerbsReference::ping(std::uint32_t, std::uint32_t) { return nan_ns; }
bool VerbsReference::pong(std::uint32_t) { return false; }
double VerbsReference::rma(VerbsRma, std::size_t, std::uint32_t, std::uint32_t) { return nan_ns; }
bool VerbsReference::serve() { return false; }
bool VerbsReference::finish() { return false; }
char *VerbsReference::region() const { return nullptr; }

#else

namespace {
constexpr std::uint32_t slots = 64;  // receives kept posted
constexpr std::uint32_t slot_bytes = 64;
constexpr std::uint64_t send_id = ~std::uint64_t{0};
constexpr std::uint64_t finish_value = ~std::uint64_t{0};
} // namespace

struct VerbsReference::State {
    ibv_context *ctx = nullptr;
    ibv_pd *pd = nullptr;
    ibv_cq *cq = nullptr;
    ibv_qp *qp = nullptr;
    ibv_mr *mr = nullptr;      // the region
    ibv_mr *slot_mr = nullptr; // receive slots and the send word
    PageBuffer region, slot_bytes_;
    std::size_t region_bytes = 0;
    ibv_port_attr port{};
    ibv_gid gid{};
    std::string device;
    VerbsCard peer;
    std::deque<std::uint64_t> arrived;  // received, not yet claimed by reap

    ~State() {
        if (qp) ibv_destroy_qp(qp);
        if (mr) ibv_dereg_mr(mr);
        if (slot_mr) ibv_dereg_mr(slot_mr);
        if (cq) ibv_destroy_cq(cq);
        if (pd) ibv_dealloc_pd(pd);
        if (ctx) ibv_close_device(ctx);
    }

    char *slot(std::uint32_t i) const { return slot_bytes_.data() + std::size_t{i} * slot_bytes; }
    char *send_word() const { return slot(slots); }

    bool post_slot(std::uint32_t i) {
        ibv_sge s{reinterpret_cast<std::uintptr_t>(slot(i)), slot_bytes, slot_mr->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = i;
        wr.sg_list = &s;
        wr.num_sge = 1;
        ibv_recv_wr *bad = nullptr;
        return ibv_post_recv(qp, &wr, &bad) == 0;
    }

    // An 8 B inline SEND of `value`, signaled.
    bool send(std::uint64_t value) {
        std::memcpy(send_word(), &value, sizeof value);
        ibv_sge s{reinterpret_cast<std::uintptr_t>(send_word()), sizeof value, slot_mr->lkey};
        ibv_send_wr wr{};
        wr.wr_id = send_id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        ibv_send_wr *bad = nullptr;
        return ibv_post_send(qp, &wr, &bad) == 0;
    }

    // Spins on the CQ until `sends` send completions (or RDMA ones) and
    // `receives` receives have arrived (one that arrives early, while only
    // sends are awaited, is kept for the next call); the last receive's
    // 8 B in `value`.  Slots are posted again at once.  False on an error
    // completion or a stall.
    bool reap(std::uint32_t sends, std::uint32_t receives, std::uint64_t *value, std::string &error) {
        const double start = now_ns();
        ibv_wc wc[16];
        const auto claim = [&] {
            while (receives && !arrived.empty()) {
                if (value) *value = arrived.front();
                arrived.pop_front();
                --receives;
            }
        };
        claim();
        while (sends || receives) {
            const int n = ibv_poll_cq(cq, 16, wc);
            if (n < 0) {
                error = "ibv_poll_cq failed";
                return false;
            }
            if (n == 0) {
                if (now_ns() - start > stall_ns) {
                    error = "the peer stopped answering";
                    return false;
                }
                continue;
            }
            for (int i = 0; i < n; ++i) {
                if (wc[i].status != IBV_WC_SUCCESS) {
                    error = std::string("completion error: ") + ibv_wc_status_str(wc[i].status);
                    return false;
                }
                if (wc[i].opcode & IBV_WC_RECV) {
                    const auto k = static_cast<std::uint32_t>(wc[i].wr_id);
                    std::uint64_t v;
                    std::memcpy(&v, slot(k), sizeof v);
                    arrived.push_back(v);
                    if (!post_slot(k)) {
                        error = "ibv_post_recv failed";
                        return false;
                    }
                } else if (sends) {
                    --sends;
                }
            }
            claim();
        }
        return true;
    }
};

VerbsReference::VerbsReference() = default;
VerbsReference::~VerbsReference() = default;

bool VerbsReference::open(const std::string &device, std::size_t region_bytes) {
    state_ = std::make_unique<State>();
    State &s = *state_;
    int count = 0;
    ibv_device **list = ibv_get_device_list(&count);
    ibv_device *chosen = nullptr;
    for (int i = 0; list && i < count && !chosen; ++i)
        if (device.empty() || device == ibv_get_device_name(list[i])) chosen = list[i];
    if (chosen) {
        s.device = ibv_get_device_name(chosen);
        s.ctx = ibv_open_device(chosen);
    }
    if (list) ibv_free_device_list(list);
    if (!s.ctx) {
        error_ = device.empty() ? "no verbs device here" : "no verbs device " + device;
        return false;
    }
    if (ibv_query_port(s.ctx, 1, &s.port) || ibv_query_gid(s.ctx, 1, 0, &s.gid)) {
        error_ = "ibv_query_port/gid failed";
        return false;
    }
    s.region_bytes = region_bytes;
    if (!s.region.assign(region_bytes, 0) || !s.slot_bytes_.assign((slots + 1) * slot_bytes, 0)) {
        error_ = "no memory for the region";
        return false;
    }
    s.pd = ibv_alloc_pd(s.ctx);
    s.cq = s.pd ? ibv_create_cq(s.ctx, 2 * slots + 256, nullptr, nullptr, 0) : nullptr;
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    s.mr = s.cq ? ibv_reg_mr(s.pd, s.region.data(), region_bytes, access) : nullptr;
    s.slot_mr = s.mr ? ibv_reg_mr(s.pd, s.slot_bytes_.data(), (slots + 1) * slot_bytes, IBV_ACCESS_LOCAL_WRITE) : nullptr;
    if (!s.slot_mr) {
        error_ = std::string("allocating the PD, CQ or memory regions failed: ") + std::strerror(errno);
        return false;
    }
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = s.cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = 256;
    a.cap.max_recv_wr = slots;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = 64;
    s.qp = ibv_create_qp(s.pd, &a);
    if (!s.qp) {
        error_ = std::string("ibv_create_qp failed: ") + std::strerror(errno);
        return false;
    }
    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.port_num = 1;
    init.qp_access_flags = access;
    if (ibv_modify_qp(s.qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        error_ = "ibv_modify_qp to INIT failed";
        return false;
    }
    for (std::uint32_t i = 0; i < slots; ++i)
        if (!s.post_slot(i)) {
            error_ = "ibv_post_recv failed";
            return false;
        }
    return true;
}

VerbsCard VerbsReference::card() const {
    VerbsCard c;
    if (!state_ || !state_->qp) return c;
    c.addr = reinterpret_cast<std::uintptr_t>(state_->region.data());
    c.rkey = state_->mr->rkey;
    c.qpn = state_->qp->qp_num;
    c.lid = state_->port.lid;
    c.global = state_->port.link_layer == IBV_LINK_LAYER_ETHERNET;
    std::memcpy(c.gid, state_->gid.raw, sizeof c.gid);
    return c;
}

bool VerbsReference::connect(const VerbsCard &peer) {
    if (!state_ || !state_->qp) return false;
    State &s = *state_;
    s.peer = peer;
    ibv_qp_attr rtr{};
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = IBV_MTU_4096;
    rtr.dest_qp_num = peer.qpn;
    rtr.max_dest_rd_atomic = 16;
    rtr.min_rnr_timer = 1;
    rtr.ah_attr.dlid = peer.lid;
    rtr.ah_attr.port_num = 1;
    if (peer.global) {
        rtr.ah_attr.is_global = 1;
        rtr.ah_attr.grh.hop_limit = 64;
        std::memcpy(rtr.ah_attr.grh.dgid.raw, peer.gid, sizeof peer.gid);
    }
    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    rts.timeout = 14;
    rts.retry_cnt = 7;
    rts.rnr_retry = 7;
    rts.max_rd_atomic = 16;
    if (ibv_modify_qp(s.qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
        ibv_modify_qp(s.qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                      IBV_QP_MAX_QP_RD_ATOMIC)) {
        error_ = "ibv_modify_qp to RTR/RTS failed";
        return false;
    }
    return true;
}

std::string VerbsReference::describe() const {
    if (!state_ || !state_->ctx) return "not open";
    const bool eth = state_->port.link_layer == IBV_LINK_LAYER_ETHERNET;
    return state_->device + " port 1, " + (eth ? "Ethernet" : "InfiniBand, LID " + std::to_string(state_->port.lid));
}

double VerbsReference::ping(std::uint32_t n, std::uint32_t lead) {
    if (!state_ || !state_->qp) return nan_ns;
    double start = now_ns();
    for (std::uint32_t i = 0; i < n; ++i) {
        if (i == lead) start = now_ns();
        if (!state_->send(i) || !state_->reap(1, 1, nullptr, error_)) return nan_ns;
    }
    return (now_ns() - start) / static_cast<double>(n - lead);
}

bool VerbsReference::pong(std::uint32_t n) {
    if (!state_ || !state_->qp) return false;
    for (std::uint32_t i = 0; i < n; ++i)
        if (!state_->reap(0, 1, nullptr, error_) || !state_->send(i) || !state_->reap(1, 0, nullptr, error_))
            return false;
    return true;
}

double VerbsReference::rma(VerbsRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window) {
    if (!state_ || !state_->qp || bytes > state_->region_bytes || window == 0) return nan_ns;
    State &s = *state_;
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(s.region.data()), static_cast<std::uint32_t>(bytes), s.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op == VerbsRma::write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = s.peer.addr;
    wr.wr.rdma.rkey = s.peer.rkey;
    const double start = now_ns();
    std::uint32_t issued = 0;
    while (issued < count) {
        const std::uint32_t k = std::min(window, count - issued);
        for (std::uint32_t i = 0; i < k; ++i) {
            wr.wr_id = issued + i;
            ibv_send_wr *bad = nullptr;
            if (ibv_post_send(s.qp, &wr, &bad)) {
                error_ = "ibv_post_send failed";
                return nan_ns;
            }
        }
        if (!s.reap(k, 0, nullptr, error_)) return nan_ns;
        issued += k;
    }
    return now_ns() - start;
}

bool VerbsReference::serve() {
    if (!state_ || !state_->qp) return false;
    for (;;) {
        std::uint64_t v = 0;
        if (!state_->reap(0, 1, &v, error_)) return false;
        if (v == finish_value) return true;
    }
}

bool VerbsReference::finish() {
    return state_ && state_->qp && state_->send(finish_value) && state_->reap(1, 0, nullptr, error_);
}

char *VerbsReference::region() const { return state_ ? state_->region.data() : nullptr; }

#endif

} // namespace sluice::perf
