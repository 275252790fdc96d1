// src/conduits/portals/portals_setup.cpp - the portals conduit's set-up and
// tear-down: the network interface (matching, physical addresses), the
// three event queues, the portal table entries and their buffers, the
// exchange of process ids over the bootstrap, registrations (memory
// descriptors), statistics.  README.md has the design.
#include "conduits/portals/portals.hpp"
#include "conduits/portals/portals_transport.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "base/status.hpp"
#include "credit/knobs.hpp"
#include "spawners/bootstrap.hpp"

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace sluice::conduit::portals {

namespace detail {

namespace {

// This process's IP datagram sockets (file descriptors), from /proc/self/fd.
std::vector<int> datagram_sockets() {
    std::vector<int> out;
    DIR *d = ::opendir("/proc/self/fd");
    if (!d) return out;
    while (const dirent *e = ::readdir(d)) {
        char *end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        struct stat st{};
        if (end == e->d_name || *end || fd == ::dirfd(d) || ::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        int type = 0, domain = 0;
        socklen_t n = sizeof type;
        if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &n) != 0 || type != SOCK_DGRAM) continue;
        n = sizeof domain;
        if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &n) != 0 ||
            (domain != AF_INET && domain != AF_INET6))
            continue;
        out.push_back(static_cast<int>(fd));
    }
    ::closedir(d);
    return out;
}

} // namespace

PortalsTransport::PortalsTransport() : RdmaConduit("portals", Capabilities{}) {}

PortalsTransport::~PortalsTransport() { close_all(); }

// SLUICE_PORTALS_FLOW_CONTROL, _DYNAMIC_CREDITS, _MAX_CRED_PER_NODE and
// _EPOCH_DURATION, for src/am's credit engine (the SLUICE_CREDIT_* knob
// each stands for wins when set).
void PortalsTransport::credit_preferences() {
    credit::Preferences &p = capabilities_mutable().credit_prefs;
    p.set = true;
    p.flow = base::knob_bool(knob(Knob::PORTALS_FLOW_CONTROL));
    p.policy = base::knob_bool(knob(Knob::PORTALS_DYNAMIC_CREDITS)) ? credit::Policy::dynamic : credit::Policy::fixed;
    p.max_per_peer = static_cast<unsigned>(base::knob_int(knob(Knob::PORTALS_MAX_CRED_PER_NODE)));
    p.epoch_length = static_cast<unsigned>(base::knob_int(knob(Knob::PORTALS_EPOCH_DURATION)));
}

// GASNet's rule: the credits this rank lends, at 256 bytes each, fill
// all request buffers but one (a buffer is recycled only once every
// request in it was processed), each less one chunk (a buffer is unlinked
// when less than a chunk is left).
std::size_t PortalsTransport::reqrb_count() const {
    const std::size_t least = static_cast<std::size_t>(base::knob_int(knob(Knob::PORTALS_REQRB_MIN)));
    const credit::Preferences &p = capabilities().credit_prefs;
    if (credit::flow_from_knobs(&p) == credit::Flow::disabled) return least;
    std::vector<std::string> notes;
    const credit::Config c = credit::config_from_knobs(setup().size, setup().rank, max_message_ + 16, notes, &p);
    const std::size_t bytes = c.receive_bytes();
    const std::size_t per = reqrb_size_ - max_message_;
    return std::max(least, (bytes + per - 1) / per + 1);
}

Status PortalsTransport::init_impl() {
    Capabilities &c = capabilities_mutable();
    msg_limit_ = static_cast<unsigned>(base::knob_int(knob(Knob::PORTALS_MSG_LIMIT)));
    tickets_ = msg_limit_;
    safe_limit_ = static_cast<unsigned>(base::knob_int(knob(Knob::PORTALS_SAFE_LIMIT)));
    am_limit_ = static_cast<unsigned>(base::knob_int(knob(Knob::PORTALS_AM_LIMIT)));
    sys_limit_ = static_cast<unsigned>(base::knob_int(knob(Knob::PORTALS_SYS_LIMIT)));
    packed_long_ = base::knob_bool(knob(Knob::PORTALS_PACKED_LONG));
    reqrb_size_ = base::knob_size(knob(Knob::PORTALS_REQRB_SIZE));
    peer_timeout_s_ = base::knob_double(knob(Knob::PORTALS_PEER_TIMEOUT));
    max_message_ = base::knob_size(knob(Knob::PORTALS_MAX_MESSAGE)) & ~std::size_t{7};
    max_medium_ = max_message_ - body_room;
    slot_ = ((max_message_ + 16) / 4 + 7) & ~std::size_t{7};
    credit_preferences();
    // GASNet's Portals conduit: a share of physical memory may be pinned
    // (SLUICE_PHYSMEM_PINNABLE_RATIO, 0.75), no probe (on a Cray it was the
    // OOM killer that answered), and no RLIMIT_MEMLOCK: a Portals NIC pins
    // through its own driver, the reference implementation not at all.
    std::size_t local = 0;
    for (std::uint32_t h : setup().host_of) local += h == setup().host_of[setup().rank];
    if (Status s = pin_.init("portals", local, nullptr, common::PinPolicy{0.75, false}); s != Status::ok) return s;
    c.max_medium = max_medium_;
    c.max_long = std::numeric_limits<std::size_t>::max();
    c.max_packed_long = packed_long_ ? max_message_ - 8 - 4 * 16 : 0;  // after the address and 16 arguments
    c.native_rma = true;
    c.remote_completion = true;  // the notification rides in the last Put's match bits (pt_long)
    c.rc_notify_max_args = 1;
    c.needs_registration = true; // memory descriptors: the segment's, firehose's for the rest
    c.remote_keys = false;       // one match entry over each segment, reached by offset
    c.remote_offsets = true;
    c.needs_credits = true;      // the request buffers are a fixed space
    c.inline_limit = 0;
    if (base::knob_string(knob(Knob::PORTALS_ATOMICS)) == "0") atomics_off_ = "SLUICE_PORTALS_ATOMICS=0";
    if (Status s = open_interface(); s != Status::ok) return s;
    if (Status s = exchange_ids(); s != Status::ok) return s;
    if (Status s = buffers_create(); s != Status::ok) return s;
    // GASNet's start-up barrier: every rank's entries are in place
    // before anyone sends.
    if (!setup().bootstrap->barrier())
        return base::report(Status::bootstrap, "portals conduit init", "check that every rank started",
                            "the barrier after setting up Portals failed");
    if (credit::flow_from_knobs(&c.credit_prefs) != credit::Flow::disabled)
        c.request_slots = (reqrb_.size() - 1) * (reqrb_size_ - max_message_) / slot_;
    base::say("portals: nid %u pid %u, largest volatile message %llu bytes, %zu request buffers of %zu bytes, %zu SYS buffers, %u send tickets, "
              "packed Long %s, largest Put %zu bytes",
              physical_[setup().rank].phys.nid, physical_[setup().rank].phys.pid,
              static_cast<unsigned long long>(limits_.max_volatile_size), reqrb_.size(), reqrb_size_, sysrb_.size(),
              msg_limit_, packed_long_ ? "on" : "off", rma_chunk_);
    return Status::ok;
}

// A Portals library that carries its messages as UDP datagrams (the
// reference implementation does, and never retransmits one) loses one for
// good when its socket's receive buffer is full, and the job hangs.  A
// burst towards this rank is at most every peer's send tickets and its
// lent credits, a datagram each (about 4 KiB of buffer apiece, with the
// kernel's overhead): a socket that cannot take that is named at start-up
// with the sysctl that sizes it.  Rank 0 says it, for every rank.
void PortalsTransport::udp_buffer_check(const std::vector<int> &sockets) const {
    if (sockets.empty() || setup().rank != 0 || setup().size < 2) return;
    constexpr std::size_t per_datagram = 4096;
    const std::size_t burst =
        (setup().size - 1) *
        (msg_limit_ + static_cast<std::size_t>(base::knob_int(knob(Knob::PORTALS_MAX_CRED_PER_NODE))));
    const std::size_t need = burst * per_datagram;
    int have = 0;
    socklen_t n = sizeof have;
    if (::getsockopt(sockets.front(), SOL_SOCKET, SO_RCVBUF, &have, &n) != 0 || have < 0 ||
        static_cast<std::size_t>(have) >= need)
        return;
    std::fprintf(stderr,
                 "sluice[rank 0] warning: portals: the Portals library receives its UDP datagrams into a socket "
                 "buffer of %d bytes (net.core.rmem_default), and a burst of this job's datagrams (%zu: the "
                 "SLUICE_PORTALS_MSG_LIMIT and lent credits of %u peer(s)) needs about %zu; a datagram dropped for "
                 "want of room is lost for good and the job hangs.  Raise it: sysctl -w net.core.rmem_max=%zu "
                 "net.core.rmem_default=%zu\n",
                 have, burst, setup().size - 1, need, need, need);
}

Status PortalsTransport::open_interface() {
    const char *op = "portals conduit init";
    // One PtlInit held for the life of the process, under the conduit's own
    // pair: the reference implementation cannot initialize again after its
    // last PtlFini, and a process may init Sluice more than once.
    const std::vector<int> sockets_before = datagram_sockets();
    static const int held = ptl().Init();
    if (int rc = held != PTL_OK ? held : ptl().Init(); rc != PTL_OK)
        return base::report(Status::transport, op,
                            "check the Portals 4 installation; on the reference implementation, that "
                            "PTL_IFACE_NAME (default: eth0 to eth99) names an interface with an IPv4 address",
                            "portals: PtlInit failed (return code %d)", rc);
    initialized_ = true;
    if (int rc = ptl().NIInit(PTL_IFACE_DEFAULT, PTL_NI_MATCHING | PTL_NI_LOGICAL, PTL_PID_ANY, nullptr, &limits_, &ni_);
        rc != PTL_OK)
        return base::report(Status::transport, op, "check the Portals 4 interface (PTL_IFACE_NAME names it)",
                            "portals: PtlNIInit (matching, logical addresses) failed (return code %d)", rc);
    ni_open_ = true;
    std::vector<int> library_sockets = datagram_sockets();
    std::erase_if(library_sockets, [&](int fd) {
        return std::find(sockets_before.begin(), sockets_before.end(), fd) != sockets_before.end();
    });
    udp_buffer_check(library_sockets);
    const std::size_t largest = std::min<std::size_t>(limits_.max_msg_size, std::size_t{1} << 30);
    rma_chunk_ = base::knob_size(knob(Knob::PORTALS_RMA_PIECE));
    if (rma_chunk_ == 0 || rma_chunk_ > largest) rma_chunk_ = largest;
    // Above the largest message, no piece between it and rma_min_large.
    if (rma_chunk_ > max_message_ && rma_chunk_ < 2 * rma_min_large) rma_chunk_ = 2 * rma_min_large;
    Capabilities &c = capabilities_mutable();
    c.rma_piece = rma_chunk_;
    if (rma_chunk_ > max_message_) {
        c.rma_piece_gap_low = max_message_;
        c.rma_piece_gap_high = rma_min_large;
    }
    return Status::ok;
}

// Every rank's physical id (nid, pid) by the bootstrap's allgather, made
// the interface's map of logical ranks (PtlSetMap): Sluice needs no
// Portals launcher, and addresses peers by rank.  (Physical addressing
// names a peer by nid and pid, but the reference implementation tells
// the processes of one host apart by nid alone on parts of its path.)
Status PortalsTransport::exchange_ids() {
    const char *op = "portals conduit init";
    ptl_process_t mine{};
    if (int rc = ptl().GetPhysId(ni_, &mine); rc != PTL_OK)
        return base::report(Status::transport, op, nullptr, "portals: PtlGetPhysId failed (return code %d)", rc);
    std::vector<std::string> all;
    if (Status s = common::allgather_records(setup(), "portals", "a Portals id", &mine, sizeof mine, all); s != Status::ok)
        return s;
    const Rank n = setup().size;
    id_.assign(n, ptl_process_t{});
    for (Rank r = 0; r < n; ++r) std::memcpy(&id_[r], all[r].data(), sizeof mine);
    if (int rc = ptl().SetMap(ni_, n, id_.data()); rc != PTL_OK)
        return base::report(Status::transport, op, nullptr, "portals: PtlSetMap of %u ranks failed (return code %d)", n, rc);
    physical_ = id_;
    for (Rank r = 0; r < n; ++r) id_[r].rank = r;
    order_.reset(n);
    liveness_setup(n, peer_timeout_s_, "SLUICE_PORTALS_PEER_TIMEOUT");
    return Status::ok;
}

// Event queues, portal table entries, send buffers and their descriptors,
// request and SYS receive buffers with their catch-basins.
Status PortalsTransport::buffers_create() {
    const char *op = "portals conduit init";
    const std::size_t sb = static_cast<std::size_t>(base::knob_int(knob(Knob::PORTALS_SB_CHUNKS)));
    const std::size_t rpl = static_cast<std::size_t>(base::knob_int(knob(Knob::PORTALS_RPL_CHUNKS)));
    const std::size_t nreq = reqrb_count();
    const std::size_t nsys = std::max<std::size_t>(2, base::knob_size(knob(Knob::PORTALS_SYS_SPACE)) / reqrb_size_);
    // Room for every event that can be pending.  SAFE: one per send ticket,
    // one per reply landing in a ReqSB chunk.  AM and SYS: a message per
    // slot of their buffers (every message takes at least one) and an
    // unlink per buffer; AM also a notification per send ticket of the
    // peers (pt_long).
    safe_eq_size_ = msg_limit_ + sb + 64;
    am_eq_size_ = nreq * (reqrb_size_ / slot_ + 2) + 4 * std::size_t{msg_limit_} + 64;
    sys_eq_size_ = nsys * (reqrb_size_ / slot_ + 2) + 64;
    const struct {
        std::size_t n;
        ptl_handle_eq_t *eq;
        const char *name;
    } queues[] = {{safe_eq_size_, &safe_eq_, "SAFE"}, {am_eq_size_, &am_eq_, "AM"}, {sys_eq_size_, &sys_eq_, "SYS"}};
    for (const auto &q : queues)
        if (int rc = ptl().EQAlloc(ni_, q.n, q.eq); rc != PTL_OK)
            return base::report(Status::resource, op, nullptr, "portals: the %s event queue of %zu events (return code %d)",
                                q.name, q.n, rc);
    eqs_ = true;
    const struct {
        ptl_pt_index_t pt;
        ptl_handle_eq_t eq;
    } entries[] = {{pt_am, am_eq_}, {pt_sys, sys_eq_}, {pt_rpl, safe_eq_}, {pt_rma, PTL_EQ_NONE}, {pt_long, am_eq_}};
    for (const auto &e : entries) {
        ptl_pt_index_t got = 0;
        if (int rc = ptl().PTAlloc(ni_, 0, e.eq, e.pt, &got); rc != PTL_OK || got != e.pt)
            return base::report(Status::resource, op, "run one Sluice job per Portals interface",
                                "portals: portal table entry %u (return code %d)", e.pt, rc);
        pts_[e.pt] = true;
    }
    // Send buffers: the ReqSB (a descriptor to send from, a match entry
    // for replies to land in) and the RplSB.
    reqsb_bytes_ = std::make_unique<std::byte[]>(sb * chunk_bytes);
    rplsb_bytes_ = std::make_unique<std::byte[]>(rpl * chunk_bytes);
    reqsb_.resize(sb);
    rplsb_.resize(rpl);
    for (std::size_t i = sb; i-- > 0;) {
        reqsb_[i].tag = Tag::req_chunk;
        reqsb_[i].index = static_cast<std::uint32_t>(i);
        chunk_free(&reqsb_[i]);
    }
    for (std::size_t i = rpl; i-- > 0;) {
        rplsb_[i].tag = Tag::rpl_chunk;
        rplsb_[i].index = static_cast<std::uint32_t>(i);
        chunk_free(&rplsb_[i]);
    }
    auto bind = [&](void *start, std::size_t length, ptl_iovec_t &iov, ptl_handle_md_t &md, const char *what) {
        // AMs report their ack only, control messages their send.
        const int rc = md_bind(start, length, start == control_bytes_ ? 0 : PTL_MD_EVENT_SEND_DISABLE, iov, md);
        if (rc != PTL_OK)
            return base::report(Status::resource, op, nullptr, "portals: binding the %s (%zu bytes, return code %d)", what,
                                length, rc);
        return Status::ok;
    };
    if (Status s = bind(reqsb_bytes_.get(), sb * chunk_bytes, reqsb_iov_, reqsb_md_, "request send buffer"); s != Status::ok) return s;
    if (Status s = bind(rplsb_bytes_.get(), rpl * chunk_bytes, rplsb_iov_, rplsb_md_, "reply send buffer"); s != Status::ok) return s;
    // Over a few real bytes: the reference implementation looks up the
    // memory of even an empty Put and aborts on a null one.
    if (Status s = bind(control_bytes_, sizeof control_bytes_, control_iov_, control_md_, "control descriptor"); s != Status::ok) return s;
    mds_ = true;
    if (atomics_off_.empty())
        if (Status s = atomics_create(); s != Status::ok) return s;
    ptl_me_t me{};
    me.start = reqsb_bytes_.get();
    me.length = sb * chunk_bytes;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_NO_TRUNCATE;
    me.match_id.rank = PTL_RANK_ANY;
    me.ignore_bits = ~ptl_match_bits_t{0};
    if (int rc = ptl().MEAppend(ni_, pt_rpl, &me, PTL_PRIORITY_LIST, nullptr, &reqsb_me_); rc != PTL_OK)
        return base::report(Status::resource, op, nullptr, "portals: the reply entry over the ReqSB (return code %d)", rc);
    if (Status s = receive_buffers(pt_am, nreq, reqrb_); s != Status::ok) return s;
    if (Status s = receive_buffers(pt_sys, nsys, sysrb_); s != Status::ok) return s;
    if (Status s = catch_basin(pt_am); s != Status::ok) return s;
    return catch_basin(pt_sys);
}

Status PortalsTransport::receive_buffers(ptl_pt_index_t pt, std::size_t count,
                                         std::vector<std::unique_ptr<RecvBuffer>> &out) {
    for (std::size_t i = 0; i < count; ++i) {
        auto b = std::make_unique<RecvBuffer>();
        b->size = reqrb_size_;
        b->bytes = static_cast<std::byte *>(::operator new(reqrb_size_, std::align_val_t{64}));
        b->pt = pt;
        relink(b.get());
        if (!b->linked) return Status::resource;
        out.push_back(std::move(b));
    }
    return Status::ok;
}

// The catch-basin: an empty entry on the overflow list that takes (and
// truncates to nothing) whatever no buffer had room for.  GASNet made
// that a fatal error; here the sender's ack shows nothing was matched and
// the sender puts the message again, so no AM is ever lost (and says so
// once).
Status PortalsTransport::catch_basin(ptl_pt_index_t pt) {
    ptl_me_t me{};
    me.start = nullptr;
    me.length = 0;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_UNEXPECTED_HDR_DISABLE | PTL_ME_EVENT_COMM_DISABLE;
    me.match_id.rank = PTL_RANK_ANY;
    me.ignore_bits = ~ptl_match_bits_t{0};
    if (int rc = ptl().MEAppend(ni_, pt, &me, PTL_OVERFLOW_LIST, nullptr, pt == pt_am ? &am_cb_ : &sys_cb_); rc != PTL_OK)
        return base::report(Status::resource, "portals conduit init", nullptr,
                            "portals: the catch-basin of entry %u (return code %d)", pt, rc);
    return Status::ok;
}

// The segment's two match entries: pt_rma for Put and Get (no events),
// pt_long for payloads with a notification (events on the AM queue).
Status PortalsTransport::segment_connected(const std::vector<SegmentRecord> &) {
    Guard g(*this);
    ptl_me_t me{};
    me.start = reinterpret_cast<void *>(segment_base_);
    me.length = segment_bytes_;
    me.ct_handle = PTL_CT_NONE;
    me.uid = PTL_UID_ANY;
    me.match_id.rank = PTL_RANK_ANY;
    me.ignore_bits = ~ptl_match_bits_t{0};
    me.options = PTL_ME_OP_PUT | PTL_ME_OP_GET | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_EVENT_COMM_DISABLE |
                 PTL_ME_NO_TRUNCATE;
    int rc = ptl().MEAppend(ni_, pt_rma, &me, PTL_PRIORITY_LIST, nullptr, &rma_me_);
    if (rc == PTL_OK) {
        me.options = PTL_ME_OP_PUT | PTL_ME_EVENT_LINK_DISABLE | PTL_ME_NO_TRUNCATE;
        rc = ptl().MEAppend(ni_, pt_long, &me, PTL_PRIORITY_LIST, nullptr, &long_me_);
        if (rc != PTL_OK) ptl().MEUnlink(rma_me_);
    }
    if (rc != PTL_OK)
        return base::report(Status::resource, "segment_attach (portals)", nullptr,
                            "portals: the match entries over the segment (%llu bytes, return code %d)",
                            static_cast<unsigned long long>(segment_bytes_), rc);
    segment_mes_ = true;
    return Status::ok;
}

// A descriptor over [start, start+length) with its events on the SAFE
// queue, as a vector of one element (`iov`, which must live as long):
// the reference implementation then registers the memory once, at bind,
// where for a plain descriptor it looks the memory up at every Put and
// Get within its inline limit and never lets that go (after some
// thousands of transfers it aborts).
int PortalsTransport::md_bind(void *start, std::size_t length, unsigned options, ptl_iovec_t &iov,
                              ptl_handle_md_t &md) {
    iov.iov_base = start;
    iov.iov_len = length;
    ptl_md_t d{};
    d.start = &iov;
    d.length = 1;
    d.options = options | PTL_IOVEC;
    d.eq_handle = safe_eq_;
    d.ct_handle = PTL_CT_NONE;
    return ptl().MDBind(ni_, &d, &md);
}

// A memory descriptor over the region: the segment's (what local_handle
// gives for buffers in it), or firehose's for buffers outside it.  Its
// events go to the SAFE queue; a Put reports only its ack.
Status PortalsTransport::mem_register_impl(void *base, std::size_t size, std::uint64_t, std::uint64_t &handle,
                                           std::string &rkey) {
    auto r = std::make_unique<Region>();
    r->base = reinterpret_cast<std::uint64_t>(base);
    if (Status s = pin_.take("portals", base, size); s != Status::ok) return s;
    int rc;
    {
        Guard g(*this);
        rc = ni_open_ ? md_bind(base, size, PTL_MD_EVENT_SEND_DISABLE, r->iov, r->md) : PTL_FAIL;
    }
    if (rc != PTL_OK) {
        pin_.give(size);
        return base::report(Status::resource, "register (portals)", "register less memory at once",
                            "portals: PtlMDBind of %zu bytes at %p failed (return code %d)", size, base, rc);
    }
    handle = reinterpret_cast<std::uint64_t>(r.release());
    rkey.clear();
    return Status::ok;
}

void PortalsTransport::mem_deregister_impl(std::uint64_t handle) {
    auto *r = reinterpret_cast<Region *>(handle);
    {
        Guard g(*this);
        if (ni_open_) ptl().MDRelease(r->md);
    }
    pin_.give(r->iov.iov_len);
    delete r;
}

void PortalsTransport::fini_impl() {
    stats_report();
    close_all();
}

// The process ends without fini: Portals' own threads and sockets end
// with it; nothing named is left behind.
void PortalsTransport::exit_release_impl() {}

void PortalsTransport::close_all() {
    if (ni_open_) {
        Guard g(*this);
        if (segment_mes_) {
            ptl().MEUnlink(long_me_);
            ptl().MEUnlink(rma_me_);
            segment_mes_ = false;
        }
        for (auto *list : {&reqrb_, &sysrb_})
            for (auto &b : *list)
                if (b->linked) {
                    ptl().MEUnlink(b->me);
                    b->linked = false;
                }
        if (atomic_md_bound_) {
            ptl().MDRelease(atomic_md_);
            atomic_md_bound_ = false;
        }
        if (mds_) {
            ptl().MEUnlink(reqsb_me_);
            ptl().MEUnlink(am_cb_);
            ptl().MEUnlink(sys_cb_);
            ptl().MDRelease(control_md_);
            ptl().MDRelease(rplsb_md_);
            ptl().MDRelease(reqsb_md_);
            mds_ = false;
        }
        for (ptl_pt_index_t pt = 0; pt < 5; ++pt)
            if (pts_[pt]) {
                ptl().PTFree(ni_, pt);
                pts_[pt] = false;
            }
        if (eqs_) {
            ptl().EQFree(sys_eq_);
            ptl().EQFree(am_eq_);
            ptl().EQFree(safe_eq_);
            eqs_ = false;
        }
        ptl().NIFini(ni_);
        ni_open_ = false;
    }
    for (auto *list : {&reqrb_, &sysrb_}) {
        for (auto &b : *list) ::operator delete(b->bytes, std::align_val_t{64});
        list->clear();
    }
    if (initialized_) {
        ptl().Fini();
        initialized_ = false;
    }
    atomic_.clear();
}

// The request and SYS buffers and the event queues.
std::size_t PortalsTransport::receive_memory() const {
    return (reqrb_.size() + sysrb_.size()) * reqrb_size_ + (am_eq_size_ + safe_eq_size_ + sys_eq_size_) * sizeof(ptl_event_t);
}

bool PortalsTransport::stats_wanted() const { return base::knob_bool(knob(Knob::PORTALS_STATS)); }

// The layer's line (common::stats_line) with portals' own counters after
// it, then the receive memory.
void PortalsTransport::stats_print() {
    const PortalsCounters &o = own_counters_;
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    char extra[256];
    std::snprintf(extra, sizeof extra, "replies %llu, SYS %llu, notified %llu, no chunk %llu, relinked %llu, resent %llu",
                  u(o.replies), u(o.sys), u(o.notified), u(o.no_chunk), u(o.relinked), u(o.resent));
    common::stats_line(setup().rank, "portals", path(setup().rank), counters_, 0, extra);
    const std::size_t event = sizeof(ptl_event_t);
    std::fprintf(stderr,
                 "[%u] portals: receive memory %zu bytes: request buffers %zu x %zu, SYS buffers %zu x %zu, "
                 "events %zu x %zu (AM %zu, SAFE %zu, SYS %zu); send buffers %zu bytes\n",
                 setup().rank, receive_memory(),
                 reqrb_.size(), reqrb_size_, sysrb_.size(), reqrb_size_, am_eq_size_ + safe_eq_size_ + sys_eq_size_,
                 event, am_eq_size_, safe_eq_size_, sys_eq_size_, (reqsb_.size() + rplsb_.size()) * chunk_bytes);
}

} // namespace detail

std::unique_ptr<Transport> make_portals_transport() { return std::make_unique<detail::PortalsTransport>(); }

// Without side effects (the registry's rule): the library opens and has
// every entry point.  PtlInit starts the library's progress thread, so it
// waits for the conduit's init (after Sluice installed its memory hooks).
std::string probe() {
    std::string why;
    if (api(&why) == nullptr) return why + "; SLUICE_PORTALS_LIBRARY names the library";
    return "";
}

} // namespace sluice::conduit::portals
