// tests/perf/portals-reference.cpp - the bare Portals 4 reference (portals-reference.hpp).
#include "tests/perf/portals-reference.hpp"

#include "tests/perf/bench_common.hpp"

#include <limits>

#if SLUICE_BENCH_HAVE_PORTALS
#include <portals4.h>

#include <algorithm>
#include <arpa/inet.h>
#include <deque>
#include <initializer_list>
#include <netinet/in.h>
#endif

namespace sluice::perf {

namespace {
constexpr double nan_ns = std::numeric_limits<double>::quiet_NaN();
}

#if !SLUICE_BENCH_HAVE_PORTALS

struct PortalsReference::State {};
PortalsReference::PortalsReference() = default;
PortalsReference::~PortalsReference() = default;
bool PortalsReference::open(std::size_t, std::uint32_t) {
    error_ = "built without Portals 4 (configure --with-portals4=DIR, the portals conduit)";
    return false;
}
PortalsCard PortalsReference::card() const { return {}; }
bool PortalsReference::connect(const PortalsCard &) { return false; }
std::string PortalsReference::describe() const { return "no Portals 4"; }
double PortalsReference::ping(std::uint32_t, std::uint32_t, PortalsWait) { return nan_ns; }
bool PortalsReference::pong(std::uint32_t, PortalsWait) { return false; }
double PortalsReference::rma(PortalsRma, std::size_t, std::uint32_t, std::uint32_t, std::size_t) { return nan_ns; }
bool PortalsReference::serve() { return false; }
bool PortalsReference::finish() { return false; }
void PortalsReference::close() {}
char *PortalsReference::region() const { return nullptr; }

#else

namespace {
constexpr std::size_t slot_bytes = 64;     // the ping-pong entry
constexpr std::size_t memory_tail = 4096;  // slot and send word, after the region
constexpr unsigned queue_events = 2048;    // a window of W makes at most 2 W at a time (SEND and ACK)
static_assert(PortalsReference::largest_window <= queue_events / 2 - 8);
constexpr std::uint64_t finish_value = ~std::uint64_t{0};

std::string rc_text(const char *what, int rc) {
    return std::string(what) + " failed (return code " + std::to_string(rc) + ")";
}

const char *event_name(ptl_event_kind_t type) {
    switch (type) {
    case PTL_EVENT_PUT: return "PUT";
    case PTL_EVENT_GET: return "GET";
    case PTL_EVENT_SEND: return "SEND";
    case PTL_EVENT_ACK: return "ACK";
    case PTL_EVENT_REPLY: return "REPLY";
    default: return "an event";
    }
}

std::string ip_text(std::uint32_t nid) {
    in_addr a{};
    a.s_addr = htonl(nid);  // the reference implementation's nid is the interface's IPv4 address
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a, ip, sizeof ip);
    return ip;
}
} // namespace

struct PortalsReference::State {
    bool own_ni = false;  // no map when opened: the NI is not the conduit's
    bool initialized = false;
    ptl_handle_ni_t ni = PTL_INVALID_HANDLE;
    ptl_handle_eq_t eq = PTL_INVALID_HANDLE;
    ptl_pt_index_t message_pt = PTL_PT_ANY, rma_pt = PTL_PT_ANY;
    ptl_handle_me_t message_me = PTL_INVALID_HANDLE, rma_me = PTL_INVALID_HANDLE;
    ptl_handle_md_t md = PTL_INVALID_HANDLE;
    std::uint32_t rank = 0;
    ptl_process_t self{};  // physical
    ptl_process_t target{};  // logical: the peer's rank
    PortalsCard peer;
    bool connected = false;
    PageBuffer memory;
    ptl_iovec_t iov{};  // the descriptor's one element: the memory
    std::size_t region_bytes = 0;
    std::deque<std::uint64_t> arrived;  // pings received, not yet claimed by reap

    ~State() { release(); }

    std::size_t slot_offset() const { return region_bytes; }
    std::size_t send_offset() const { return region_bytes + slot_bytes; }

    // Reverse order of creation.  The descriptor may still carry the last
    // Put of a pong until its SEND event: the queue is drained meanwhile.
    void release() {
        if (rma_me != PTL_INVALID_HANDLE) PtlMEUnlink(rma_me);
        if (message_me != PTL_INVALID_HANDLE) PtlMEUnlink(message_me);
        if (rma_pt != PTL_PT_ANY) PtlPTFree(ni, rma_pt);
        if (message_pt != PTL_PT_ANY) PtlPTFree(ni, message_pt);
        if (md != PTL_INVALID_HANDLE) {
            const double start = now_ns();
            ptl_event_t e;
            while (PtlMDRelease(md) == PTL_IN_USE && now_ns() - start < 1e9)
                (void)PtlEQGet(eq, &e);
        }
        if (eq != PTL_INVALID_HANDLE) PtlEQFree(eq);
        if (ni != PTL_INVALID_HANDLE && own_ni) PtlNIFini(ni);
        if (initialized) PtlFini();
        rma_me = message_me = md = eq = ni = PTL_INVALID_HANDLE;
        rma_pt = message_pt = PTL_PT_ANY;
        initialized = false;
    }

    bool append(ptl_pt_index_t pt, std::size_t offset, std::size_t bytes, unsigned options, ptl_handle_me_t &me) {
        ptl_me_t e{};
        e.start = memory.data() + offset;
        e.length = bytes;
        e.ct_handle = PTL_CT_NONE;
        e.uid = PTL_UID_ANY;
        e.options = PTL_ME_OP_PUT | PTL_ME_OP_GET | options;
        e.match_id.rank = PTL_RANK_ANY;
        e.match_bits = 0;
        e.ignore_bits = ~ptl_match_bits_t{0};
        ptl_handle_me_t handle;
        if (PtlMEAppend(ni, pt, &e, PTL_PRIORITY_LIST, nullptr, &handle) != PTL_OK) return false;
        me = handle;
        return true;
    }

    // A ping (or the finish word): 8 B into the peer's slot, `value` in
    // the header data.
    int put_message(std::uint64_t value, ptl_ack_req_t ack) {
        return PtlPut(md, send_offset(), sizeof value, ack, target, peer.message_pt, 0, 0, nullptr, value);
    }

    // Reads the queue (`wait`) until `acks` ACKs, `replies` REPLYs and
    // `puts` pings have arrived (a ping that arrives early, while only ACKs
    // are awaited, is kept for the next call); the last ping's value in
    // `value`.  SEND and other events pass.  False on a failed event, a
    // lost event or a stall.
    bool reap(PortalsWait wait, std::uint32_t acks, std::uint32_t replies, std::uint32_t puts, std::uint64_t *value,
              std::string &error) {
        const double start = now_ns();
        const auto claim = [&] {
            while (puts && !arrived.empty()) {
                if (value) *value = arrived.front();
                arrived.pop_front();
                --puts;
            }
        };
        claim();
        while (acks || replies || puts) {
            ptl_event_t e;
            unsigned which = 0;
            const int rc = wait == PortalsWait::spin ? PtlEQGet(eq, &e) : PtlEQPoll(&eq, 1, 100, &e, &which);
            if (rc == PTL_EQ_EMPTY) {
                if (now_ns() - start > stall_ns) {
                    error = "the peer stopped answering";
                    return false;
                }
                continue;
            }
            if (rc != PTL_OK) {
                error = rc == PTL_EQ_DROPPED ? "the event queue overflowed" : rc_text("PtlEQGet", rc);
                return false;
            }
            if (e.ni_fail_type != PTL_NI_OK) {
                error = std::string(event_name(e.type)) + " event failed (ni_fail_type " +
                        std::to_string(e.ni_fail_type) + ")";
                return false;
            }
            if (e.type == PTL_EVENT_PUT)
                arrived.push_back(e.hdr_data);
            else if (e.type == PTL_EVENT_ACK && acks)
                --acks;
            else if (e.type == PTL_EVENT_REPLY && replies)
                --replies;
            claim();
        }
        return true;
    }
};

PortalsReference::PortalsReference() = default;
PortalsReference::~PortalsReference() = default;

bool PortalsReference::open(std::size_t region_bytes, std::uint32_t rank) {
    state_ = std::make_unique<State>();
    State &s = *state_;
    s.rank = rank;
    s.region_bytes = region_bytes;
    if (!s.memory.assign(region_bytes + memory_tail, 0)) {
        error_ = "no memory for the region";
        return false;
    }
    int rc = PtlInit();
    if (rc != PTL_OK) {
        error_ = rc_text("PtlInit", rc);
        return false;
    }
    s.initialized = true;
    ptl_ni_limits_t limits;
    ptl_handle_ni_t ni_handle;
    rc = PtlNIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, nullptr, &limits, &ni_handle);
    if (rc != PTL_OK) {
        error_ = rc_text("PtlNIInit (matching, logical)", rc);
        return false;
    }
    s.ni = ni_handle;
    // The conduit maps the job's ranks when it opens the NI.
    ptl_size_t mapped = 0;
    s.own_ni = PtlGetMap(s.ni, 0, nullptr, &mapped) != PTL_OK || mapped == 0;
    if (!s.own_ni) {
        ptl_process_t id{};
        if ((rc = PtlGetId(s.ni, &id)) != PTL_OK) {
            error_ = rc_text("PtlGetId", rc);
            return false;
        }
        if (id.rank != rank) {
            error_ = "the NI's map ranks this process " + std::to_string(id.rank) + ", not " + std::to_string(rank);
            return false;
        }
    }
    if (region_bytes > limits.max_msg_size) {
        error_ = "the region is larger than the NI's largest message (" + std::to_string(limits.max_msg_size) + " B)";
        return false;
    }
    if ((rc = PtlGetPhysId(s.ni, &s.self)) != PTL_OK) {
        error_ = rc_text("PtlGetPhysId", rc);
        return false;
    }
    ptl_handle_eq_t eq;
    if ((rc = PtlEQAlloc(s.ni, queue_events, &eq)) != PTL_OK) {
        error_ = rc_text("PtlEQAlloc", rc);
        return false;
    }
    s.eq = eq;
    // Entries the NI's other user (the conduit) does not hold: PTL_PT_ANY.
    for (ptl_pt_index_t *pt : {&s.message_pt, &s.rma_pt}) {
        ptl_pt_index_t got = PTL_PT_ANY;
        if ((rc = PtlPTAlloc(s.ni, 0, s.eq, PTL_PT_ANY, &got)) != PTL_OK) {
            error_ = rc_text("PtlPTAlloc", rc);
            return false;
        }
        *pt = got;
    }
    // The region's entry makes no target events, as an RDMA target makes
    // no completion.
    if (!s.append(s.message_pt, s.slot_offset(), slot_bytes, 0, s.message_me) ||
        !s.append(s.rma_pt, 0, region_bytes, PTL_ME_EVENT_COMM_DISABLE | PTL_ME_EVENT_LINK_DISABLE, s.rma_me)) {
        error_ = "PtlMEAppend failed";
        return false;
    }
    // One-element vector, as the conduit binds its descriptors: the
    // reference implementation looks a plain descriptor's memory up at
    // every inline transfer and leaks the lookup (src/conduits/portals/
    // README.md, Limits).
    s.iov.iov_base = s.memory.data();
    s.iov.iov_len = region_bytes + memory_tail;
    ptl_md_t md{};
    md.start = &s.iov;
    md.length = 1;
    md.options = PTL_IOVEC;
    md.eq_handle = s.eq;
    md.ct_handle = PTL_CT_NONE;
    ptl_handle_md_t md_handle;
    if ((rc = PtlMDBind(s.ni, &md, &md_handle)) != PTL_OK) {
        error_ = rc_text("PtlMDBind", rc);
        return false;
    }
    s.md = md_handle;
    return true;
}

PortalsCard PortalsReference::card() const {
    PortalsCard c;
    if (!state_ || state_->md == PTL_INVALID_HANDLE) return c;
    c.rank = state_->rank;
    c.nid = state_->self.phys.nid;
    c.pid = state_->self.phys.pid;
    c.message_pt = state_->message_pt;
    c.rma_pt = state_->rma_pt;
    return c;
}

bool PortalsReference::connect(const PortalsCard &peer) {
    if (!state_ || state_->md == PTL_INVALID_HANDLE) return false;
    State &s = *state_;
    if (peer.rank > 1 || peer.rank == s.rank) {
        error_ = "the peer's rank " + std::to_string(peer.rank) + " beside this one's " + std::to_string(s.rank);
        return false;
    }
    ptl_process_t map[2] = {};
    if (s.own_ni) {
        map[s.rank] = s.self;
        map[peer.rank].phys.nid = peer.nid;
        map[peer.rank].phys.pid = peer.pid;
        if (const int rc = PtlSetMap(s.ni, 2, map); rc != PTL_OK) {
            error_ = rc_text("PtlSetMap", rc);
            return false;
        }
    } else {
        ptl_size_t mapped = 0;
        if (const int rc = PtlGetMap(s.ni, 2, map, &mapped); rc != PTL_OK || mapped < 2) {
            error_ = "the conduit's NI maps fewer than 2 ranks";
            return false;
        }
        if (map[peer.rank].phys.nid != peer.nid || map[peer.rank].phys.pid != peer.pid) {
            error_ = "the conduit's NI maps rank " + std::to_string(peer.rank) + " to nid " +
                     ip_text(map[peer.rank].phys.nid) + " pid " + std::to_string(map[peer.rank].phys.pid) +
                     ", the peer is pid " + std::to_string(peer.pid);
            return false;
        }
    }
    s.peer = peer;
    s.target.rank = peer.rank;
    s.connected = true;
    return true;
}

std::string PortalsReference::describe() const {
    if (!state_ || state_->md == PTL_INVALID_HANDLE) return "not open";
    const State &s = *state_;
    return "rank " + std::to_string(s.rank) + ", nid " + ip_text(s.self.phys.nid) + " pid " +
           std::to_string(s.self.phys.pid) + ", portal table entries " + std::to_string(s.message_pt) + " and " +
           std::to_string(s.rma_pt) + (s.own_ni ? ", an NI of its own" : ", the conduit's NI");
}

double PortalsReference::ping(std::uint32_t n, std::uint32_t lead, PortalsWait wait) {
    if (!state_ || !state_->connected) return nan_ns;
    State &s = *state_;
    double start = now_ns();
    for (std::uint32_t i = 0; i < n; ++i) {
        if (i == lead) start = now_ns();
        if (const int rc = s.put_message(i, PTL_NO_ACK_REQ); rc != PTL_OK) {
            error_ = rc_text("PtlPut", rc);
            return nan_ns;
        }
        if (!s.reap(wait, 0, 0, 1, nullptr, error_)) return nan_ns;
    }
    return (now_ns() - start) / static_cast<double>(n - lead);
}

bool PortalsReference::pong(std::uint32_t n, PortalsWait wait) {
    if (!state_ || !state_->connected) return false;
    State &s = *state_;
    for (std::uint32_t i = 0; i < n; ++i) {
        if (!s.reap(wait, 0, 0, 1, nullptr, error_)) return false;
        if (const int rc = s.put_message(i, PTL_NO_ACK_REQ); rc != PTL_OK) {
            error_ = rc_text("PtlPut", rc);
            return false;
        }
    }
    return true;
}

double PortalsReference::rma(PortalsRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window,
                             std::size_t piece) {
    if (!state_ || !state_->connected || bytes > state_->region_bytes || window == 0 || piece == 0) return nan_ns;
    if (window > largest_window) {
        error_ = "a window of " + std::to_string(window) + " would overflow the event queue";
        return nan_ns;
    }
    State &s = *state_;
    const bool put = op == PortalsRma::put;
    const std::size_t per_op = bytes == 0 ? 1 : (bytes - 1) / piece + 1;
    const std::size_t total = per_op * count;
    const double start = now_ns();
    std::size_t outstanding = 0;
    for (std::size_t i = 0; i < total; ++i) {
        if (outstanding == window) {
            if (!s.reap(PortalsWait::spin, put ? 1 : 0, put ? 0 : 1, 0, nullptr, error_)) return nan_ns;
            --outstanding;
        }
        const std::size_t offset = i % per_op * piece;
        const std::size_t length = std::min(piece, bytes - offset);
        const int rc = put ? PtlPut(s.md, offset, length, PTL_ACK_REQ, s.target, s.peer.rma_pt, 0, offset, nullptr, 0)
                           : PtlGet(s.md, offset, length, s.target, s.peer.rma_pt, 0, offset, nullptr);
        if (rc != PTL_OK) {
            error_ = rc_text(put ? "PtlPut" : "PtlGet", rc);
            return nan_ns;
        }
        ++outstanding;
    }
    const auto left = static_cast<std::uint32_t>(outstanding);
    if (!s.reap(PortalsWait::spin, put ? left : 0, put ? 0 : left, 0, nullptr, error_)) return nan_ns;
    return now_ns() - start;
}

bool PortalsReference::serve() {
    if (!state_ || !state_->connected) return false;
    for (;;) {
        std::uint64_t v = 0;
        if (!state_->reap(PortalsWait::spin, 0, 0, 1, &v, error_)) return false;
        if (v == finish_value) return true;
    }
}

bool PortalsReference::finish() {
    if (!state_ || !state_->connected) return false;
    if (const int rc = state_->put_message(finish_value, PTL_ACK_REQ); rc != PTL_OK) {
        error_ = rc_text("PtlPut", rc);
        return false;
    }
    return state_->reap(PortalsWait::spin, 1, 0, 0, nullptr, error_);
}

void PortalsReference::close() { state_.reset(); }

char *PortalsReference::region() const { return state_ ? state_->memory.data() : nullptr; }

#endif

} // namespace sluice::perf
