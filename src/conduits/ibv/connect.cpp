// src/conduits/ibv/connect.cpp - connections to peers, static and dynamic,
// as GASNet-EX's ibv conduit makes them.
//
// Static connections: at start-up every rank connects to every peer, or to
// those a connect file lists (SLUICE_CONNECTFILE_IN; a connection either
// side lists is made).  Dynamic connections: a peer not connected at
// start-up is connected on first use.  The rank that needs it makes an RC
// queue pair and sends its number in a request over an unreliable datagram
// (UD) queue pair whose number every rank published at start-up; the peer
// makes and connects its own, answers with its number, and the asker
// connects and sends a first message (RTU) over the new queue pair, after
// which the peer may send too.  Requests are retransmitted after
// SLUICE_CONNECT_RETRANS_MIN, the wait doubling up to
// SLUICE_CONNECT_RETRANS_MAX; lost answers are sent again when the repeated
// request comes.  When two ranks ask each other at once, the lower rank's
// request wins.  A thread sleeping on the UD queue pair's completion
// channel answers requests while the application does not poll.  At
// finalize SLUICE_CONNECTFILE_OUT receives the connections this run used.
#include "conduits/common/connect_file.hpp"
#include "conduits/ibv/ibv_transport.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "base/status.hpp"
#include "spawners/bootstrap.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>

namespace sluice::conduit::ibv::detail {
namespace {

constexpr std::uint32_t conn_qkey = 0x51c3e0d1;
constexpr std::uint32_t conn_magic = 0x736c6376;  // "vcls"
constexpr std::uint32_t kind_request = 1, kind_reply = 2;
constexpr std::size_t grh = 40;           // a UD receive's first bytes
constexpr std::size_t conn_slot = 128;    // one buffer: room for the GRH and a message

struct ConnMessage {
    std::uint32_t magic, kind, from, to, rails;
    std::uint32_t qpn[max_rails];  // the sender's queue pair of each rail
};

const char *op_connect = "connect (ibv)";

} // namespace

// The peers to connect at start-up, before the exchange that adds those
// that list this rank: every one, those of the connect file, or none.
Status IbvTransport::connect_wanted(std::vector<bool> &wanted) {
    const Rank n = setup().size, me = setup().rank;
    std::vector<bool> here(n, false);
    for (Rank r : setup().peers) here[r] = r != me;
    wanted.assign(n, false);
    if (!base::knob_bool(knob(Knob::CONNECT_STATIC))) return Status::ok;
    const std::string pattern = base::knob_string(knob(Knob::CONNECTFILE_IN));
    if (pattern.empty()) {
        wanted = here;
        return Status::ok;
    }
    const std::string path = common::connect_file_name(pattern, me);
    std::ifstream in(path);
    if (!in)
        return base::report(Status::argument, "ibv conduit init", "check SLUICE_CONNECTFILE_IN (a % is the rank)",
                            "cannot read the connect file %s: %s", path.c_str(), std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    std::vector<bool> listed;
    std::string why;
    if (!common::connect_file_peers(text.str(), n, me, listed, why))
        return base::report(Status::argument, "ibv conduit init", "fix the file, or unset SLUICE_CONNECTFILE_IN",
                            "connect file %s: %s", path.c_str(), why.c_str());
    for (Rank r = 0; r < n; ++r) wanted[r] = listed[r] && here[r];
    return Status::ok;
}

// The UD queue pair, its completion queue, channel and buffers.
Status IbvTransport::connect_setup() {
    const char *op = "ibv conduit init";
    std::size_t remote = 0;
    for (Rank r : setup().peers) remote += r != setup().rank;
    conn_rcvs_ = static_cast<unsigned>(base::knob_int(knob(Knob::CONNECT_RCVS)));
    if (conn_rcvs_ == 0)
        conn_rcvs_ = std::max(6u, 4u + 2u * static_cast<unsigned>(std::bit_width(remote > 1 ? remote - 1 : 0)));
    const auto snds = static_cast<unsigned>(base::knob_int(knob(Knob::CONNECT_SNDS)));
    retrans_min_ns_ = static_cast<std::uint64_t>(base::knob_int(knob(Knob::CONNECT_RETRANS_MIN))) * 1000;
    retrans_max_ns_ = static_cast<std::uint64_t>(base::knob_int(knob(Knob::CONNECT_RETRANS_MAX))) * 1000;
    if (retrans_max_ns_ < retrans_min_ns_)
        return base::report(Status::argument, op, "make SLUICE_CONNECT_RETRANS_MAX at least SLUICE_CONNECT_RETRANS_MIN",
                            "SLUICE_CONNECT_RETRANS_MAX (%llu us) is below SLUICE_CONNECT_RETRANS_MIN (%llu us)",
                            static_cast<unsigned long long>(retrans_max_ns_ / 1000),
                            static_cast<unsigned long long>(retrans_min_ns_ / 1000));
    conn_pool_bytes_ = (conn_rcvs_ + snds) * conn_slot;
    void *p = ::mmap(nullptr, conn_pool_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return fatal(op, setup().rank, "mapping the connection buffers failed", errno);
    conn_pool_ = static_cast<std::byte *>(p);
    // On rail 0's HCA and port, whatever the rails.
    const Hca &h = hca_of(0);
    if (Status s = register_raw(h.pd, conn_pool_, conn_pool_bytes_, IBV_ACCESS_LOCAL_WRITE, conn_mr_, "connection requests");
        s != Status::ok)
        return s;
    conn_channel_ = ibv_create_comp_channel(h.ctx);
    if (!conn_channel_) return fatal(op, setup().rank, "ibv_create_comp_channel failed (dynamic connections)", errno);
    conn_cq_ = ibv_create_cq(h.ctx, static_cast<int>(conn_rcvs_ + snds + 8), nullptr, conn_channel_, 0);
    if (!conn_cq_) return fatal(op, setup().rank, "ibv_create_cq failed (dynamic connections)", errno);
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = conn_cq_;
    a.qp_type = IBV_QPT_UD;
    a.cap.max_send_wr = snds;
    a.cap.max_recv_wr = conn_rcvs_;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    conn_qp_ = ibv_create_qp(h.pd, &a);
    if (!conn_qp_) return fatal(op, setup().rank, "ibv_create_qp (UD, dynamic connections) failed", errno);
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.pkey_index = rails_[0].pkey_index;
    m.port_num = rails_[0].port.port;
    m.qkey = conn_qkey;
    if (const int rc = ibv_modify_qp(conn_qp_, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY); rc != 0)
        return fatal(op, setup().rank, "moving the UD queue pair to INIT failed", rc);
    m = ibv_qp_attr{};
    m.qp_state = IBV_QPS_RTR;
    if (const int rc = ibv_modify_qp(conn_qp_, &m, IBV_QP_STATE); rc != 0)
        return fatal(op, setup().rank, "moving the UD queue pair to RTR failed", rc);
    m.qp_state = IBV_QPS_RTS;
    m.sq_psn = 0;
    if (const int rc = ibv_modify_qp(conn_qp_, &m, IBV_QP_STATE | IBV_QP_SQ_PSN); rc != 0)
        return fatal(op, setup().rank, "moving the UD queue pair to RTS failed", rc);
    Guard g(*this);
    for (unsigned i = 0; i < conn_rcvs_; ++i) connect_recv_post(i);
    for (unsigned i = 0; i < snds; ++i) conn_send_free_.push_back(conn_rcvs_ + i);
    if (const int r = ibv_req_notify_cq(conn_cq_, 0); r != 0)
        return fatal(op, setup().rank, "ibv_req_notify_cq failed (dynamic connections)", r);
    return Status::ok;
}

// Every rank publishes its port's address, its UD queue pair and the RC
// queue pair it made for each rank it connects at start-up; with a connect
// file, an exchange of the wanted peers comes first, so that a connection
// either side lists is made on both.
Status IbvTransport::connect_all() {
    const char *op = "ibv conduit init";
    const Rank n = setup().size, me = setup().rank;
    std::vector<bool> wanted;
    if (Status s = connect_wanted(wanted); s != Status::ok) return s;
    const std::string file = base::knob_string(knob(Knob::CONNECTFILE_IN));
    const bool everyone = base::knob_bool(knob(Knob::CONNECT_STATIC)) && file.empty();
    dynamic_ = base::knob_bool(knob(Knob::CONNECT_DYNAMIC)) && !everyone;
    if (dynamic_)
        if (Status s = connect_setup(); s != Status::ok) return s;
    ConnectHead head{};
    head.ranks = n;
    head.ud_qpn = conn_qp_ ? conn_qp_->qp_num : 0;
    head.rails = static_cast<std::uint32_t>(rails_.size());
    for (unsigned k = 0; k < rails_.size(); ++k) head.rail[k] = rail_address(k);
    const unsigned rails = head.rails;
    std::vector<std::string> all;
    const auto exchange = [&](const std::string &mine, const char *what) {
        return common::allgather_records(setup(), "ibv", what, mine.data(), mine.size(), all,
                                         "run the same Sluice build with the same SLUICE_CONNECT* knobs on every rank");
    };
    if (!file.empty()) {
        std::string bits((n + 7) / 8, '\0');
        for (Rank r = 0; r < n; ++r)
            if (wanted[r]) bits[r / 8] = static_cast<char>(bits[r / 8] | (1 << (r % 8)));
        if (Status s = exchange(bits, "connect-file peers"); s != Status::ok) return s;
        for (Rank r : setup().peers)
            if (r != me && (all[r][me / 8] >> (me % 8)) & 1) wanted[r] = true;
    }
    for (Rank r = 0; r < n; ++r)
        if (wanted[r])
            if (Status s = qp_create(r); s != Status::ok) return s;
    // The head, then (rank, its queue pairs by rail) for each rank this one
    // connects at start-up, by rank: as long as the connections, not the
    // job (a job of dynamic connections exchanges heads alone).
    const std::size_t entry = 4u * (1 + rails);
    std::string mine(reinterpret_cast<const char *>(&head), sizeof head);
    for (Rank r = 0; r < n; ++r)
        if (const Peer *p = peers_.find(r); p && p->qp[0]) {
            std::uint32_t e[1 + max_rails] = {r};
            for (unsigned k = 0; k < rails; ++k) e[1 + k] = p->qp[k] ? p->qp[k]->qp_num : 0;
            mine.append(reinterpret_cast<const char *>(e), entry);
        }
    if (!setup().bootstrap->allgather(mine.data(), mine.size(), all))
        return base::report(Status::bootstrap, op, "check that every rank started", "allgather of ibv addresses failed");
    for (Rank r = 0; r < n; ++r) {
        ConnectHead theirs;
        if (all[r].size() >= sizeof theirs) std::memcpy(&theirs, all[r].data(), sizeof theirs);
        if (all[r].size() >= sizeof theirs && theirs.rails != rails)
            return base::report(Status::state, op, "set SLUICE_NUM_QPS to the same number on every rank",
                                "rank %u has %u rails, this rank %u", r, theirs.rails, rails);
        if (all[r].size() < sizeof head || (all[r].size() - sizeof head) % entry != 0)
            return base::report(Status::state, op, "run the same Sluice build with the same SLUICE_CONNECT* knobs on every rank",
                                "rank %u sent ibv addresses of %zu bytes (a head of %zu bytes, then entries of %zu)", r,
                                all[r].size(), sizeof head, entry);
    }
    // Rank r's queue pairs for this rank (qpn[0] 0: none), by bisection of its list.
    const auto theirs_for_me = [&](Rank r, std::uint32_t *qpn) {
        const char *list = all[r].data() + sizeof head;
        std::size_t lo = 0, hi = (all[r].size() - sizeof head) / entry;
        qpn[0] = 0;
        while (lo < hi) {
            const std::size_t mid = (lo + hi) / 2;
            std::uint32_t at;
            std::memcpy(&at, list + mid * entry, 4);
            if (at == me) {
                std::memcpy(qpn, list + mid * entry + 4, 4u * rails);
                return;
            }
            if (at < me) lo = mid + 1;
            else hi = mid;
        }
    };
    heads_.assign(n, PeerHead{});  // rails 0: not a peer over ibv
    rail_sets_.clear();
    std::unordered_map<std::string, std::uint32_t> sets;  // a rail set's bytes: its index + 1
    std::size_t remote = 0, made = 0;
    for (Rank r : setup().peers) {
        if (r == me) continue;
        ++remote;
        ConnectHead theirs;
        std::memcpy(&theirs, all[r].data(), sizeof theirs);
        if (theirs.rail[0].global != head.rail[0].global)
            return base::report(Status::transport, op, "set SLUICE_IBV_PORTS to ports of one kind on every rank",
                                "rank %u uses a %s port, this rank a %s one", r,
                                theirs.rail[0].global ? "RoCE" : "InfiniBand", head.rail[0].global ? "RoCE" : "InfiniBand");
        std::string key(reinterpret_cast<const char *>(theirs.rail), sizeof(RailAddress) * rails);
        auto [set, added] = sets.try_emplace(std::move(key), static_cast<std::uint32_t>(rail_sets_.size() + 1));
        if (added) {
            rail_sets_.emplace_back();
            std::copy(theirs.rail, theirs.rail + rails, rail_sets_.back().begin());
        }
        heads_[r] = PeerHead{theirs.ud_qpn, set->second};
        std::uint32_t qpn[max_rails];
        theirs_for_me(r, qpn);
        if (!wanted[r] && qpn[0] == 0) continue;
        if (!wanted[r] || qpn[0] == 0)
            return base::report(Status::state, op,
                                "route the same ranks over ibv (SLUICE_ROUTE) with the same SLUICE_CONNECT* knobs on "
                                "every rank",
                                "rank %u %s a start-up connection with this rank, this rank %s", r,
                                qpn[0] ? "made" : "did not make", wanted[r] ? "did" : "did not");
        if (Status s = qp_connect_rails(r, qpn); s != Status::ok) return s;
        peer(r).conn = Conn::ready;
        connected_[r].store(true, std::memory_order_release);
        ++made;
    }
    ibv_counters_.connect_static = made;
    if (made == remote) dynamic_ = false;  // as in GASNet-EX: a fully connected rank needs none
    if (dynamic_) conn_thread_.start([this] { connect_thread_wait(); }, [this] {
        Guard g(*this);
        if (conn_cq_) connect_serve();
    });
    if (!everyone)
        base::say("ibv: connected at start-up to %zu of %zu peers%s%s; dynamic connections %s", made, remote,
                  file.empty() ? "" : " (SLUICE_CONNECTFILE_IN=", file.empty() ? "" : (file + ")").c_str(),
                  dynamic_ ? "on" : made == remote ? "not needed" : "off");
    const std::string out = base::knob_string(knob(Knob::CONNECTFILE_OUT));
    if (!out.empty() && out.find('%') == std::string::npos && me == 0) {
        // One file for every rank: emptied here, before any rank appends.
        const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return base::report(Status::argument, op, "check SLUICE_CONNECTFILE_OUT", "cannot write %s: %s",
                                out.c_str(), std::strerror(errno));
        ::close(fd);
    }
    return Status::ok;
}

RailAddress IbvTransport::rail_address(unsigned rail) const {
    RailAddress a{};
    const PortInfo &port = rails_[rail].port;
    std::snprintf(a.device, sizeof a.device, "%s", port.device.c_str());
    a.lid = port.attr.lid;
    a.port = port.port;
    a.global = port.attr.link_layer == IBV_LINK_LAYER_ETHERNET;
    std::memcpy(a.gid, rails_[rail].gid.raw, 16);
    a.mtu = rails_[rail].mtu;
    return a;
}

// Connects this rank's queue pair of every rail to the peer's, `qpn` (by
// rail), and remembers its rail-0 number (a repeated request names it).
Status IbvTransport::qp_connect_rails(Rank peer, const std::uint32_t *qpn) {
    for (unsigned k = 0; k < rails_.size(); ++k)
        if (Status s = qp_connect(peer, k, peer_rail(peer, k), qpn[k]); s != Status::ok) return s;
    this->peer(peer).remote_qpn = qpn[0];
    return Status::ok;
}

// Whether `peer` can be sent to: Status::ok when connected, not_ready while
// a connection is being made (starting one if none is: the caller retries
// from its poll, or returns "would block" under SLUICE_FLAG_IMMEDIATE), an
// error (reported) when none can be.
Status IbvTransport::connect_need(Rank peer) {
    Peer &p = this->peer(peer);
    switch (p.conn) {
    case Conn::ready: return Status::ok;
    case Conn::requesting:
    case Conn::accepted: return Status::not_ready;
    case Conn::failed: return Status::transport;
    case Conn::none: break;
    }
    p.conn = Conn::failed;  // unless a request goes out below
    if (!dynamic_ || heads_[peer].ud_qpn == 0)
        return base::report(Status::state, op_connect,
                            "list the pair in SLUICE_CONNECTFILE_IN, or set SLUICE_CONNECT_DYNAMIC=1 on every rank",
                            "ibv: rank %u is not connected to rank %u: no start-up connection, and %s takes no dynamic "
                            "connections",
                            setup().rank, peer, dynamic_ ? "that rank" : "this rank");
    if (!p.qp[0] && qp_create(peer) != Status::ok) return Status::transport;
    p.conn = Conn::requesting;
    p.interval = retrans_min_ns_;
    p.retry_at = base::now_ns() + p.interval;
    p.tries = 1;
    conn_pending_.push_back(peer);
    ++ibv_counters_.connect_asked;
    connect_send(peer, kind_request);
    return Status::not_ready;
}

void IbvTransport::connect_recv_post(unsigned slot) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(conn_pool_ + slot * conn_slot), conn_slot, conn_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = std::uint64_t{slot} << 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr *bad = nullptr;
    if (const int r = ibv_post_recv(conn_qp_, &wr, &bad); r != 0)
        (void)fatal(op_connect, setup().rank, "posting a connection receive failed", r);
}

// A request or answer to `peer`'s UD queue pair, with this rank's queue
// pair for it.  Without a free send buffer it is not sent: a request goes
// again at its retransmission, an answer when the repeated request comes.
void IbvTransport::connect_send(Rank peer, std::uint32_t kind) {
    Peer &p = this->peer(peer);
    if (conn_send_free_.empty()) connect_serve();
    if (conn_send_free_.empty()) return;
    if (!p.ah) {
        const RailAddress &h = peer_rail(peer, 0);
        ibv_ah_attr a{};
        a.dlid = h.lid;
        a.port_num = rails_[0].port.port;
        if (h.global) {
            a.is_global = 1;
            a.grh.hop_limit = 64;
            std::memcpy(a.grh.dgid.raw, h.gid, 16);
        }
        p.ah = ibv_create_ah(hca_of(0).pd, &a);
        if (!p.ah) {
            (void)fatal(op_connect, peer, "ibv_create_ah failed", errno);
            return;
        }
    }
    const unsigned slot = conn_send_free_.back();
    ConnMessage m{conn_magic, kind, setup().rank, peer, static_cast<std::uint32_t>(rails_.size()), {}};
    for (unsigned k = 0; k < rails_.size(); ++k) m.qpn[k] = p.qp[k]->qp_num;
    std::memcpy(conn_pool_ + slot * conn_slot, &m, sizeof m);
    ibv_sge sge{reinterpret_cast<std::uint64_t>(conn_pool_ + slot * conn_slot), sizeof m, conn_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = std::uint64_t{slot} << 1 | 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = p.ah;
    wr.wr.ud.remote_qpn = heads_[peer].ud_qpn;
    wr.wr.ud.remote_qkey = conn_qkey;
    ibv_send_wr *bad = nullptr;
    if (const int r = ibv_post_send(conn_qp_, &wr, &bad); r != 0) {
        (void)fatal(op_connect, peer, "sending a connection request failed", r);
        return;
    }
    conn_send_free_.pop_back();
}

void IbvTransport::connect_ready(Rank peer) {
    this->peer(peer).conn = Conn::ready;
    connected_[peer].store(true, std::memory_order_release);
}

// Requests and answers that arrived, the RTUs owed, then the
// retransmissions due.
void IbvTransport::connect_serve() {
    if (!conn_cq_) return;
    ibv_wc wc[8];
    int n;
    while ((n = ibv_poll_cq(conn_cq_, 8, wc)) > 0)
        for (int i = 0; i < n; ++i) {
            const auto slot = static_cast<unsigned>(wc[i].wr_id >> 1);
            if (wc[i].wr_id & 1) {
                conn_send_free_.push_back(slot);
                continue;
            }
            if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len >= grh + sizeof(ConnMessage))
                connect_answer(conn_pool_ + slot * conn_slot + grh);
            if (wc[i].status != IBV_WC_WR_FLUSH_ERR) connect_recv_post(slot);
        }
    std::erase_if(conn_rtu_owed_, [&](Rank r) {
        control_send(r, category_rtu);
        if (!peer(r).rtu_owed) ++ibv_counters_.rtu_resent;
        return !peer(r).rtu_owed;
    });
    if (conn_pending_.empty()) return;
    const std::uint64_t now = base::now_ns();
    std::erase_if(conn_pending_, [&](Rank r) {
        Peer &p = peer(r);
        if (p.conn != Conn::requesting) return true;
        if (now < p.retry_at) return false;
        if (p.interval * 2 > retrans_max_ns_) {
            p.conn = Conn::failed;
            base::report(Status::transport, op_connect,
                         "check that the peer is alive; on a network that loses datagrams raise "
                         "SLUICE_CONNECT_RETRANS_MAX",
                         "ibv: rank %u did not answer rank %u's connection request: %u tries in %.3f s "
                         "(SLUICE_CONNECT_RETRANS_MIN %llu us, _MAX %llu us)",
                         r, setup().rank, p.tries, static_cast<double>(2 * p.interval - retrans_min_ns_) / 1e9,
                         static_cast<unsigned long long>(retrans_min_ns_ / 1000),
                         static_cast<unsigned long long>(retrans_max_ns_ / 1000));
            return true;
        }
        p.interval *= 2;
        p.retry_at = now + p.interval;
        ++p.tries;
        ++ibv_counters_.connect_retransmits;
        connect_send(r, kind_request);
        return false;
    });
}

void IbvTransport::connect_answer(const void *bytes) {
    ConnMessage m;
    std::memcpy(&m, bytes, sizeof m);
    const Rank me = setup().rank;
    if (m.magic != conn_magic || m.to != me || m.from >= peers_.size() || m.from == me || heads_[m.from].rails == 0 ||
        m.rails != rails_.size())
        return;
    const Rank r = m.from;
    Peer &p = peer(r);
    if (m.kind == kind_reply) {
        if (p.conn != Conn::requesting) return;  // a repeated answer
        if (qp_connect_rails(r, m.qpn) != Status::ok) {
            p.conn = Conn::failed;
            return;
        }
        connect_ready(r);
        control_send(r, category_rtu);
        return;
    }
    if (m.kind != kind_request) return;
    if (p.conn == Conn::ready || p.conn == Conn::accepted) {
        if (p.remote_qpn == m.qpn[0]) connect_send(r, kind_reply);  // the answer was lost
        return;
    }
    if (p.conn == Conn::requesting && me < r) return;  // this rank's request wins; r answers it
    if (!p.qp[0] && qp_create(r) != Status::ok) return;
    if (qp_connect_rails(r, m.qpn) != Status::ok) {
        p.conn = Conn::failed;
        return;
    }
    p.conn = Conn::accepted;
    ++ibv_counters_.connect_accepted;
    connect_send(r, kind_reply);
}

// Sleeps until the UD queue pair's channel has an event (at most 100 ms),
// and arms it again before the serve that follows.
void IbvTransport::connect_thread_wait() {
    channel_wait(&conn_channel_, 1);
    Guard g(*this);
    if (conn_cq_) (void)ibv_req_notify_cq(conn_cq_, 0);
}

// SLUICE_CONNECTFILE_OUT: this rank's line of the peers it used.
void IbvTransport::connect_file_write() {
    const std::string pattern = base::knob_string(knob(Knob::CONNECTFILE_OUT));
    if (pattern.empty()) return;
    std::vector<bool> used(setup().size, false);
    peers_.each([&](Rank r, const Peer &p) { used[r] = p.used; });
    const std::string text = common::connect_file_text(setup().rank, setup().size,
                                               static_cast<unsigned>(base::knob_int(knob(Knob::CONNECTFILE_BASE))), used);
    const bool shared = pattern.find('%') == std::string::npos;
    const std::string path = common::connect_file_name(pattern, setup().rank);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (shared ? O_APPEND : O_TRUNC), 0644);
    // One write: the lines of ranks appending to one file do not interleave.
    if (fd < 0 || ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        base::report(Status::argument, "finalize (ibv)", "check SLUICE_CONNECTFILE_OUT", "cannot write %s: %s",
                     path.c_str(), std::strerror(errno));
    if (fd >= 0) ::close(fd);
}

void IbvTransport::connect_close() {
    conn_thread_.stop();
    peers_.each([](Rank, Peer &p) {
        if (p.ah) ibv_destroy_ah(p.ah);
    });
    if (conn_qp_) ibv_destroy_qp(conn_qp_);
    conn_qp_ = nullptr;
    if (conn_cq_) ibv_destroy_cq(conn_cq_);
    conn_cq_ = nullptr;
    if (conn_channel_) ibv_destroy_comp_channel(conn_channel_);
    conn_channel_ = nullptr;
    mr_release(conn_mr_);
    if (conn_pool_) ::munmap(conn_pool_, conn_pool_bytes_);
    conn_pool_ = nullptr;
    conn_send_free_.clear();
    conn_pending_.clear();
    conn_rtu_owed_.clear();
}

} // namespace sluice::conduit::ibv::detail
