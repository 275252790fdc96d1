// src/conduits/gni/gni_setup.cpp - the gni conduit's set-up and tear-down:
// the job's credentials, the communication domain and its CQs, the
// mailboxes and their exchange, one endpoint per peer, registrations,
// finalize and the counters.
#include "conduits/gni/gni.hpp"
#include "conduits/gni/gni_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"
#include "conduits/knobs.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <limits>

namespace sluice::conduit::gni {

namespace detail {
namespace {

// The job's uGNI credentials as ALPS sets them: PMI_GNI_PTAG and
// PMI_GNI_COOKIE (colon-separated lists; the first entry is the job's),
// PMI_GNI_DEV_ID.  False and `why` naming the variable when one is
// missing or not a number.
struct Credentials {
    std::uint32_t ptag = 0, cookie = 0, dev_id = 0;
};

bool number(const char *name, std::uint32_t &out, std::string &why) {
    const char *v = std::getenv(name);
    if (!v || !*v) {
        why = std::string(name) + " is not set (ALPS sets it for a job's processes; run under aprun or srun)";
        return false;
    }
    char *end = nullptr;
    errno = 0;
    const unsigned long n = std::strtoul(v, &end, 0);
    if (end == v || (*end != '\0' && *end != ':') || errno || n > std::numeric_limits<std::uint32_t>::max()) {
        why = std::string(name) + "='" + v + "' is not a number";
        return false;
    }
    out = static_cast<std::uint32_t>(n);
    return true;
}

bool credentials(Credentials &c, std::string &why) {
    return number("PMI_GNI_PTAG", c.ptag, why) && number("PMI_GNI_COOKIE", c.cookie, why) &&
           number("PMI_GNI_DEV_ID", c.dev_id, why);
}

} // namespace

GniTransport::GniTransport() : RdmaConduit("gni", Capabilities{}) {}

GniTransport::~GniTransport() { close_all(); }

Status GniTransport::failed(const char *op, const char *call, gni_return_t rc, const char *fix) {
    return base::report(Status::transport, op, fix, "gni (device %u): %s: %s", dev_id_, call, rc_name(rc));
}

Status GniTransport::init_impl() {
    const char *op = "gni conduit init";
    std::string why;
    if (!api(&why)) return base::report(Status::transport, op, "set SLUICE_GNI_LIBRARY, or use another SLUICE_NETWORK", "%s", why.c_str());
    max_medium_ = base::knob_size(knob(Knob::GNI_MAX_MEDIUM));
    if (max_medium_ % 64)
        return base::report(Status::argument, op, "use a multiple of 64", "SLUICE_GNI_MAX_MEDIUM=%zu is not a multiple of 64",
                            max_medium_);
    credits_ = static_cast<std::uint16_t>(base::knob_int(knob(Knob::GNI_MBOX_CREDITS)));
    put_cutover_ = base::knob_size(knob(Knob::GNI_PUT_FMA_RDMA_CUTOVER));
    get_cutover_ = base::knob_size(knob(Knob::GNI_GET_FMA_RDMA_CUTOVER));
    put_bounce_ = base::knob_size(knob(Knob::GNI_PUT_BOUNCE_REGISTER_CUTOVER));
    get_bounce_ = base::knob_size(knob(Knob::GNI_GET_BOUNCE_REGISTER_CUTOVER));
    const std::size_t bounce_total = base::knob_size(knob(Knob::GNI_BOUNCE_SIZE));
    bounce_bytes_ = (std::max(put_bounce_, get_bounce_) + 63) / 64 * 64;
    if (bounce_bytes_ > bounce_total)
        return base::report(Status::argument, op, "raise SLUICE_GNI_BOUNCE_SIZE or lower the bounce cutovers",
                            "SLUICE_GNI_BOUNCE_SIZE=%zu holds no buffer of the %zu bytes SLUICE_GNI_PUT_BOUNCE_REGISTER_CUTOVER "
                            "and SLUICE_GNI_GET_BOUNCE_REGISTER_CUTOVER ask for", bounce_total, bounce_bytes_);
    bounce_count_ = bounce_bytes_ ? bounce_total / bounce_bytes_ : 0;
    num_pd_ = static_cast<std::size_t>(base::knob_int(knob(Knob::GNI_NUM_PD)));
    memreg_ = static_cast<std::size_t>(base::knob_int(knob(Knob::GNI_MEMREG)));
    const std::string &consistency = base::knob_string(knob(Knob::GNI_MEM_CONSISTENCY));
    dlvr_mode_ = consistency == "strict" ? GNI_DLVMODE_IN_ORDER : GNI_DLVMODE_PERFORMANCE;
    msg_max_ = max_medium_ + head_room;
    send_buffer_words_ = std::make_unique<std::uint64_t[]>((msg_max_ + 7) / 8);
    peer_timeout_s_ = std::max(0.1, base::knob_double(knob(Knob::GNI_PEER_TIMEOUT)));
    if (base::knob_bool(base::Knob::RCV_THREAD)) receive_thread_want();

    if (Status s = open_domain(); s != Status::ok) return s;
    std::size_t local = 0;
    for (std::uint32_t h : setup().host_of) local += h == setup().host_of[setup().rank];
    if (Status s = pin_.init("gni", local,
                             [&](void *p, std::size_t n) {
                                 gni_mem_handle_t h{};
                                 if (ugni().MemRegister(nic_, reinterpret_cast<std::uint64_t>(p), n, nullptr,
                                                        GNI_MEM_READWRITE, static_cast<std::uint32_t>(-1), &h) != GNI_RC_SUCCESS)
                                     return false;
                                 ugni().MemDeregister(nic_, &h);
                                 return true;
                             },
                             common::PinPolicy{0.80, true});  // GASNet's gemini/aries ratio
        s != Status::ok)
        return s;
    if (Status s = scratch_create(); s != Status::ok) return s;
    if (Status s = records_exchange(); s != Status::ok) return s;
    posts_.assign(num_pd_, RmaPost{});
    for (std::size_t i = 0; i < num_pd_; ++i) posts_[i].immediate = immediates_ + i * immediate_bytes;
    post_free_.fill(posts_.data(), posts_.size());
    bounce_free_.clear();
    for (std::size_t i = 0; i < bounce_count_; ++i) bounce_free_.push_back(bounce_ + i * bounce_bytes_);

    Capabilities &c = capabilities_mutable();
    c.max_medium = max_medium_;
    c.max_long = std::numeric_limits<std::size_t>::max();
    c.max_packed_long = max_medium_;  // the Long's address is in head_room
    c.native_rma = true;
    c.remote_completion = false;      // the wrapper writes, then sends the header
    c.needs_registration = false;     // the conduit registers what lies outside the segment itself
    c.remote_keys = false;            // the segment is registered whole and its handle published
    c.remote_offsets = false;         // remote virtual addresses
    c.provider_keys = true;
    c.key_per_endpoint = false;
    c.needs_credits = false;          // arrivals are copied out of the mailboxes at every poll
    c.rma_piece = std::size_t{1} << 20;  // larger transfers in pieces of 1 MiB
    c.native_barrier = true;          // FMA writes of flags (barrier_impl), when gni reaches every peer
    liveness_setup(setup().size, peer_timeout_s_, "SLUICE_GNI_PEER_TIMEOUT");
    if (Status s = wildcard_post(); s != Status::ok) return s;
    base::say("gni: device %u, NIC address %u, ptag %u, cookie 0x%x; SMSG messages of %zu bytes, %u credits per "
              "mailbox; FMA up to %zu (put) and %zu (get) bytes, the BTE above; %zu post descriptors, %zu bounce "
              "buffers of %zu bytes, %zu transient registrations at most",
              dev_id_, nic_address_, ptag_, cookie_, msg_max_, credits_, put_cutover_, get_cutover_, num_pd_,
              bounce_count_, bounce_bytes_, memreg_);
    return Status::ok;
}

// The communication domain (instance id = rank) on the job's credentials,
// attached to PMI_GNI_DEV_ID, and its two CQs.
Status GniTransport::open_domain() {
    const char *op = "gni conduit init";
    Credentials cr;
    std::string why;
    if (!credentials(cr, why)) return base::report(Status::transport, op, "run the job under ALPS (aprun) or Slurm on the Cray", "%s", why.c_str());
    ptag_ = cr.ptag;
    cookie_ = cr.cookie;
    dev_id_ = cr.dev_id;
    const Api &u = ugni();
    gni_return_t rc = u.CdmCreate(setup().rank, static_cast<std::uint8_t>(ptag_), cookie_, GNI_CDM_MODE_ERR_NO_KILL, &cdm_);
    if (rc != GNI_RC_SUCCESS)
        return failed(op, "GNI_CdmCreate", rc, "check PMI_GNI_PTAG and PMI_GNI_COOKIE: they must be the job's");
    rc = u.CdmAttach(cdm_, dev_id_, &nic_address_, &nic_);
    if (rc != GNI_RC_SUCCESS) {
        nic_ = nullptr;
        return failed(op, "GNI_CdmAttach", rc, "check PMI_GNI_DEV_ID, and that no other rank of the job has this rank's number");
    }
    // Room for an event of every post and atomic in flight and of the
    // SMSG sends between two reaps.
    const auto local_entries = static_cast<std::uint32_t>(num_pd_ + common::AtomicSlots<GniAtomicSlot>::count +
                                                          reap_every + 64);
    if ((rc = u.CqCreate(nic_, local_entries, 0, GNI_CQ_NOBLOCK, nullptr, nullptr, &cq_)) != GNI_RC_SUCCESS)
        return failed(op, "GNI_CqCreate (local)", rc);
    // An event per message the mailboxes can hold, unless the user asked
    // for fewer (an overrun then empties every mailbox: reap_arrivals).
    std::uint64_t rx_entries = static_cast<std::uint64_t>(base::knob_int(knob(Knob::GNI_RX_CQ_SIZE)));
    if (rx_entries == 0) rx_entries = std::max<std::uint64_t>(rx_cq_least, std::uint64_t{setup().size} * credits_);
    if ((rc = u.CqCreate(nic_, static_cast<std::uint32_t>(rx_entries), 0, GNI_CQ_NOBLOCK, nullptr, nullptr, &rx_cq_)) !=
        GNI_RC_SUCCESS)
        return failed(op, "GNI_CqCreate (rx)", rc,
                      "set SLUICE_GNI_RX_CQ_SIZE to what the NIC allows (or lower SLUICE_GNI_MBOX_CREDITS)");
    return Status::ok;
}

// The scratch region (gni_transport.hpp): one mapping, one registration
// (one memory domain descriptor) whose SMSG arrivals raise events on the
// rx CQ.  It holds the first chunk of mailboxes; more come when a rank
// connects more peers (mailbox_take).
Status GniTransport::scratch_create() {
    const char *op = "gni conduit init";
    gni_smsg_attr_t a{};
    a.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    a.mbox_maxcredit = credits_;
    a.msg_maxsize = static_cast<std::uint32_t>(msg_max_);
    unsigned size = 0;
    if (gni_return_t rc = ugni().SmsgBufferSizeNeeded(&a, &size); rc != GNI_RC_SUCCESS)
        return failed(op, "GNI_SmsgBufferSizeNeeded", rc, "lower SLUICE_GNI_MAX_MEDIUM or SLUICE_GNI_MBOX_CREDITS");
    mbox_bytes_ = (size + 63) / 64 * 64;
    const auto round = [](std::size_t n) { return (n + 4095) / 4096 * 4096; };
    const std::size_t mboxes = round(std::size_t{mbox_bytes_} * chunk_first);
    const std::size_t immediates = round(num_pd_ * immediate_bytes);
    const std::size_t landings = round(common::AtomicSlots<GniAtomicSlot>::count * sizeof(std::uint64_t));
    const std::size_t bounce = round(bounce_count_ * bounce_bytes_);
    const std::size_t flags = round(max_barrier_rounds * 64);
    scratch_total_ = mboxes + immediates + landings + bounce + flags;
    void *p = ::mmap(nullptr, scratch_total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        const std::size_t wanted = scratch_total_;
        scratch_total_ = 0;
        return base::report(Status::resource, op,
                            "lower SLUICE_GNI_MAX_MEDIUM, SLUICE_GNI_MBOX_CREDITS, SLUICE_GNI_NUM_PD or SLUICE_GNI_BOUNCE_SIZE",
                            "gni: cannot map %zu bytes of mailboxes and buffers: %s", wanted, std::strerror(errno));
    }
    scratch_ = static_cast<std::byte *>(p);
    immediates_ = scratch_ + mboxes;
    landings_ = reinterpret_cast<std::uint64_t *>(immediates_ + immediates);
    bounce_ = immediates_ + immediates + landings;
    flags_ = reinterpret_cast<std::uint64_t *>(bounce_ + bounce);
    if (Status s = pin_.take("gni", scratch_, scratch_total_); s != Status::ok) return s;
    if (gni_return_t rc = ugni().MemRegister(nic_, reinterpret_cast<std::uint64_t>(scratch_), scratch_total_, rx_cq_,
                                             GNI_MEM_READWRITE, static_cast<std::uint32_t>(-1), &scratch_handle_);
        rc != GNI_RC_SUCCESS) {
        pin_.give(scratch_total_);
        return failed(op, "GNI_MemRegister (mailboxes and buffers)", rc);
    }
    scratch_registered_ = true;
    chunks_.assign(1, MailboxChunk{scratch_, mboxes, chunk_first, scratch_handle_, false});
    chunk_used_ = 0;
    mailbox_bytes_ = mboxes;
    return Status::ok;
}

// Every rank's record: the NIC address of each host (a peer's endpoint
// is bound to its host's address and its rank, the instance id), and the
// mailbox geometry every rank must share.  Nothing else is kept of a peer
// until it is touched.
Status GniTransport::records_exchange() {
    const char *op = "gni conduit init";
    const Rank n = setup().size, me = setup().rank;
    Record mine{};
    mine.nic_address = nic_address_;
    mine.inst_id = me;
    mine.mbox_bytes = mbox_bytes_;
    mine.credits = credits_;
    mine.msg_maxsize = static_cast<std::uint32_t>(msg_max_);
    std::vector<std::string> all;
    if (Status s = common::allgather_records(setup(), "gni", "a mailbox record", &mine, sizeof mine, all); s != Status::ok)
        return s;
    std::uint32_t hosts = 0;
    for (std::uint32_t h : setup().host_of) hosts = std::max(hosts, h + 1);
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    nic_of_host_.assign(hosts, none);
    nic_of_rank_.clear();
    std::vector<std::uint32_t> address(n);
    for (Rank r = 0; r < n; ++r) {
        Record theirs;
        std::memcpy(&theirs, all[r].data(), sizeof theirs);
        if (theirs.credits != mine.credits || theirs.msg_maxsize != mine.msg_maxsize || theirs.mbox_bytes != mine.mbox_bytes)
            return base::report(Status::state, op, "set SLUICE_GNI_MBOX_CREDITS and SLUICE_GNI_MAX_MEDIUM alike on every rank",
                                "rank %u's mailboxes hold %u messages of %u bytes, this rank's %u of %u", r,
                                theirs.credits, theirs.msg_maxsize, mine.credits, mine.msg_maxsize);
        if (theirs.inst_id != r)
            return base::report(Status::state, op, "run the same Sluice build on every rank",
                                "rank %u published instance id %u", r, theirs.inst_id);
        address[r] = theirs.nic_address;
        std::uint32_t &host = nic_of_host_[setup().host_of[r]];
        if (host == none) host = theirs.nic_address;
        else if (host != theirs.nic_address) nic_of_rank_.assign(1, 0);  // a host with two NICs: keep every rank's
    }
    if (!nic_of_rank_.empty()) nic_of_rank_ = std::move(address);
    peers_.reset(n);
    peer_segment_.assign(n, gni_mem_handle_t{});
    return Status::ok;
}

// One more mailbox, from the last chunk or a new one (mapped and
// registered with the rx CQ as its destination: SMSG arrivals raise
// events there).
Status GniTransport::mailbox_take(Mailbox &box) {
    if (chunks_.empty() || chunk_used_ == chunks_.back().count) {
        const char *op = "gni connection";
        std::uint32_t made = 0;
        for (const MailboxChunk &c : chunks_) made += c.count;
        MailboxChunk c;
        c.separate = true;
        c.count = std::clamp(made, chunk_first, chunk_most);
        c.bytes = (std::size_t{c.count} * mbox_bytes_ + 4095) / 4096 * 4096;
        void *p = ::mmap(nullptr, c.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return base::report(Status::resource, op, "lower SLUICE_GNI_MAX_MEDIUM or SLUICE_GNI_MBOX_CREDITS",
                                "gni: cannot map %zu bytes of mailboxes: %s", c.bytes, std::strerror(errno));
        c.base = static_cast<std::byte *>(p);
        if (Status s = pin_.take("gni", c.base, c.bytes); s != Status::ok) {
            ::munmap(p, c.bytes);
            return s;
        }
        if (gni_return_t rc = ugni().MemRegister(nic_, reinterpret_cast<std::uint64_t>(p), c.bytes, rx_cq_,
                                                 GNI_MEM_READWRITE, static_cast<std::uint32_t>(-1), &c.handle);
            rc != GNI_RC_SUCCESS) {
            pin_.give(c.bytes);
            ::munmap(p, c.bytes);
            return failed(op, "GNI_MemRegister (mailboxes)", rc,
                          "check the NIC's memory domain descriptors (GNI_RC_ERROR_RESOURCE: all in use)");
        }
        chunks_.push_back(c);
        chunk_used_ = 0;
        mailbox_bytes_ += c.bytes;
    }
    const MailboxChunk &c = chunks_.back();
    box = Mailbox{c.base, c.handle, mbox_bytes_ * chunk_used_++};
    return Status::ok;
}

// The wildcard datagram on an unbound endpoint, offering the next mailbox:
// a peer's connection request lands here unless this rank asked it first.
Status GniTransport::wildcard_post() {
    const char *op = "gni connection";
    Channel c;
    if (Status s = mailbox_take(c.box); s != Status::ok) return s;
    gni_return_t rc = ugni().EpCreate(nic_, cq_, &c.ep);
    if (rc != GNI_RC_SUCCESS) return failed(op, "GNI_EpCreate (wildcard)", rc);
    wild_ep_ = c.ep;
    wild_channel_ = static_cast<std::uint32_t>(channels_.size());
    channels_.push_back(c);
    wild_out_ = hello(wild_channel_);
    if ((rc = ugni().EpPostDataWId(wild_ep_, &wild_out_, sizeof wild_out_, &wild_in_, sizeof wild_in_, wildcard_id)) !=
        GNI_RC_SUCCESS)
        return failed(op, "GNI_EpPostDataWId (wildcard)", rc);
    return Status::ok;
}

Status GniTransport::mem_register_impl(void *base, std::size_t size, std::uint64_t, std::uint64_t &handle,
                                       std::string &rkey) {
    gni_mem_handle_t h{};
    Guard g(*this);
    if (!up()) return Status::transport;
    if (Status s = pin_.take("gni", base, size); s != Status::ok) return s;
    const gni_return_t rc = ugni().MemRegister(nic_, reinterpret_cast<std::uint64_t>(base), size, nullptr,
                                               GNI_MEM_READWRITE, static_cast<std::uint32_t>(-1), &h);
    if (rc != GNI_RC_SUCCESS) {
        pin_.give(size);
        return base::report(Status::resource, "register memory", "check the NIC's memory domain descriptors (GNI_RC_ERROR_RESOURCE: all in use)",
                            "gni: cannot register %zu bytes at %p: %s", size, base, rc_name(rc));
    }
    std::size_t i = 0;
    while (i < regs_.size() && regs_[i].live) ++i;
    if (i == regs_.size()) regs_.emplace_back();
    regs_[i] = Registration{reinterpret_cast<std::uint64_t>(base), size, h, true};
    handle = i + 1;
    rkey.assign(reinterpret_cast<const char *>(&h), sizeof h);
    return Status::ok;
}

void GniTransport::mem_deregister_impl(std::uint64_t handle) {
    Guard g(*this);
    if (handle == 0 || handle > regs_.size() || !regs_[handle - 1].live) return;
    Registration &r = regs_[handle - 1];
    if (nic_) ugni().MemDeregister(nic_, &r.handle);
    pin_.give(r.size);
    r.live = false;
}

Status GniTransport::key_unpack_impl(Rank peer, std::uint64_t, std::uint64_t size, const std::string &rkey) {
    if (size == 0) return Status::ok;
    if (rkey.size() != sizeof(gni_mem_handle_t))
        return base::report(Status::state, "segment_attach (gni)", "run the same Sluice build on every rank",
                            "rank %u published a gni memory handle of %zu bytes", peer, rkey.size());
    std::memcpy(&peer_segment_[peer], rkey.data(), sizeof(gni_mem_handle_t));
    return Status::ok;
}

void GniTransport::fini_impl() {
    receive_thread_stop();
    stats_report();
    close_all();
}

// In reverse order of creation: endpoints, registrations, mailboxes, CQs,
// the domain.
void GniTransport::close_all() {
    if (api() == nullptr) return;
    const Api &u = ugni();
    // Every endpoint is a channel's (the wildcard's and each request's
    // too); destroying one cancels its datagram.
    for (Channel &c : channels_)
        if (c.ep) {
            u.EpUnbind(c.ep);
            u.EpDestroy(c.ep);
        }
    channels_.clear();
    peers_.clear();
    peer_segment_.clear();
    wild_ep_ = nullptr;
    dials_ = 0;
    if (ep_self_) {
        u.EpUnbind(ep_self_);
        u.EpDestroy(ep_self_);
        ep_self_ = nullptr;
    }
    if (nic_) {
        for (RmaPost &p : posts_)
            if (p.local == Local::transient && p.op) u.MemDeregister(nic_, &p.d.local_mem_hndl);
        for (Registration &r : regs_)
            if (r.live) u.MemDeregister(nic_, &r.handle);
        if (scratch_registered_) u.MemDeregister(nic_, &scratch_handle_);
        for (MailboxChunk &c : chunks_)
            if (c.separate) u.MemDeregister(nic_, &c.handle);
    }
    for (MailboxChunk &c : chunks_)
        if (c.separate) {
            pin_.give(c.bytes);
            ::munmap(c.base, c.bytes);
        }
    chunks_.clear();
    chunk_used_ = 0;
    mailbox_bytes_ = 0;
    regs_.clear();
    posts_.clear();
    post_free_.clear();
    bounce_free_.clear();
    atomic_.clear();
    transients_ = 0;
    scratch_registered_ = false;
    if (scratch_) ::munmap(scratch_, scratch_total_);
    scratch_ = immediates_ = bounce_ = nullptr;
    landings_ = flags_ = nullptr;
    if (rx_cq_) u.CqDestroy(rx_cq_);
    rx_cq_ = nullptr;
    if (cq_) u.CqDestroy(cq_);
    cq_ = nullptr;
    if (cdm_) u.CdmDestroy(cdm_);  // detaches the NIC too
    cdm_ = nullptr;
    nic_ = nullptr;
    ready_.clear();
    life_.clear();
    spare_.clear();
    owned_.clear();
    own_segment_.release();
}

bool GniTransport::stats_wanted() const { return base::knob_bool(knob(Knob::GNI_STATS)); }

void GniTransport::stats_print() {
    const GniCounters &g = gni_counters_;
    std::size_t connected = 0;
    peers_.each([&](Rank, const GniPeer &p) { connected += p.send != nullptr; });
    const std::string extra = "FMA posts " + std::to_string(g.fma) + ", BTE posts " + std::to_string(g.bte) +
                              ", AMOs " + std::to_string(g.amo) + ", immediate " + std::to_string(g.immediate) +
                              ", bounced " + std::to_string(g.bounced) + ", transient registrations " +
                              std::to_string(g.transient) + " (refused " + std::to_string(g.transient_refused) + "), rx overruns " +
                              std::to_string(g.rx_overruns) + ", peers connected " + std::to_string(connected) +
                              ", connections asked " + std::to_string(g.dials) +
                              ", accepted " + std::to_string(g.accepts) + ", sends waiting for one " +
                              std::to_string(g.connect_waits);
    common::stats_line(setup().rank, "gni", path(setup().rank), counters_, receive_wakeups(), extra);
}

} // namespace detail

std::unique_ptr<Transport> make_gni_transport() { return std::make_unique<detail::GniTransport>(); }

std::string probe() {
    detail::Credentials c;
    std::string why;
    if (!detail::credentials(c, why)) return why;
    if (!api(&why)) return why;
    return "";
}

std::string limits() {
    std::string why;
    const bool opened = api(&why) != nullptr;
    const std::string &lib = base::knob_string(knob(Knob::GNI_LIBRARY));
    std::string out = "  gni library             " + (lib.empty() ? std::string("libugni.so.0") : lib) +
                      (opened ? ": opens\n" : ": " + why + "\n");
    detail::Credentials c;
    if (detail::credentials(c, why)) {
        char line[160];
        std::snprintf(line, sizeof line, "  gni credentials         ptag %u, cookie 0x%x, device %u\n", c.ptag, c.cookie,
                      c.dev_id);
        out += line;
    } else {
        out += "  gni credentials         none: " + why + "\n";
    }
    return out;
}

} // namespace sluice::conduit::gni
