// tests/perf/gni-reference.cpp - the bare uGNI reference (gni-reference.hpp).
#include "tests/perf/gni-reference.hpp"

#include "tests/perf/bench_common.hpp"

#include <limits>

#if SLUICE_BENCH_HAVE_GNI
#include "conduits/common/run_time_library.hpp"

#include <gni_pub.h>

#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#endif

namespace sluice::perf {

namespace {
constexpr double nan_ns = std::numeric_limits<double>::quiet_NaN();
}

#if !SLUICE_BENCH_HAVE_GNI

struct GniReference::State {};
GniReference::GniReference() = default;
GniReference::~GniReference() = default;
bool GniReference::open(const std::string &, std::uint32_t, std::size_t) {
    error_ = "built without the gni conduit (configure --with-gni=DIR finds gni_pub.h)";
    return false;
}
GniCard GniReference::card() const { return {}; }
bool GniReference::connect(const GniCard &) { return false; }
void GniReference::close() {}
std::string GniReference::describe() const { return "no uGNI"; }
double GniReference::ping(std::uint32_t, std::uint32_t) { return nan_ns; }
bool GniReference::pong(std::uint32_t) { return false; }
double GniReference::rma(GniRma, std::size_t, std::uint32_t, std::uint32_t) { return nan_ns; }
bool GniReference::serve() { return false; }
bool GniReference::finish() { return false; }
char *GniReference::region() const { return nullptr; }

#else

namespace {

// The entry points the reference calls, bound by name from the library.
struct Ugni {
    decltype(&::GNI_CdmCreate) CdmCreate;
    decltype(&::GNI_CdmAttach) CdmAttach;
    decltype(&::GNI_CdmDestroy) CdmDestroy;
    decltype(&::GNI_CqCreate) CqCreate;
    decltype(&::GNI_CqDestroy) CqDestroy;
    decltype(&::GNI_CqGetEvent) CqGetEvent;
    decltype(&::GNI_EpCreate) EpCreate;
    decltype(&::GNI_EpBind) EpBind;
    decltype(&::GNI_EpUnbind) EpUnbind;
    decltype(&::GNI_EpDestroy) EpDestroy;
    decltype(&::GNI_MemRegister) MemRegister;
    decltype(&::GNI_MemDeregister) MemDeregister;
    decltype(&::GNI_SmsgBufferSizeNeeded) SmsgBufferSizeNeeded;
    decltype(&::GNI_SmsgInit) SmsgInit;
    decltype(&::GNI_SmsgSendWTag) SmsgSendWTag;
    decltype(&::GNI_SmsgGetNextWTag) SmsgGetNextWTag;
    decltype(&::GNI_SmsgRelease) SmsgRelease;
    decltype(&::GNI_PostFma) PostFma;
    decltype(&::GNI_PostRdma) PostRdma;
    decltype(&::GNI_GetCompleted) GetCompleted;
};

// The library stays open for the life of the process: the conduit may
// hold the same one, and a NIC library may run threads of its own (the
// software NIC's BTE).
bool ugni_load(const std::string &library, Ugni &u, std::string &why) {
    const std::string path = library.empty() ? "libugni.so.0" : library;
    void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char *e = ::dlerror();
        why = "cannot open the uGNI library: " + (e != nullptr ? std::string(e) : path) +
              " (run under tests/softnic/gni/softnic-run for the software NIC)";
        return false;
    }
    using conduit::common::dl_bind;
    const bool ok = dl_bind(lib, "GNI_CdmCreate", u.CdmCreate, why) & dl_bind(lib, "GNI_CdmAttach", u.CdmAttach, why) &
                    dl_bind(lib, "GNI_CdmDestroy", u.CdmDestroy, why) & dl_bind(lib, "GNI_CqCreate", u.CqCreate, why) &
                    dl_bind(lib, "GNI_CqDestroy", u.CqDestroy, why) &
                    dl_bind(lib, "GNI_CqGetEvent", u.CqGetEvent, why) & dl_bind(lib, "GNI_EpCreate", u.EpCreate, why) &
                    dl_bind(lib, "GNI_EpBind", u.EpBind, why) & dl_bind(lib, "GNI_EpUnbind", u.EpUnbind, why) &
                    dl_bind(lib, "GNI_EpDestroy", u.EpDestroy, why) &
                    dl_bind(lib, "GNI_MemRegister", u.MemRegister, why) &
                    dl_bind(lib, "GNI_MemDeregister", u.MemDeregister, why) &
                    dl_bind(lib, "GNI_SmsgBufferSizeNeeded", u.SmsgBufferSizeNeeded, why) &
                    dl_bind(lib, "GNI_SmsgInit", u.SmsgInit, why) &
                    dl_bind(lib, "GNI_SmsgSendWTag", u.SmsgSendWTag, why) &
                    dl_bind(lib, "GNI_SmsgGetNextWTag", u.SmsgGetNextWTag, why) &
                    dl_bind(lib, "GNI_SmsgRelease", u.SmsgRelease, why) & dl_bind(lib, "GNI_PostFma", u.PostFma, why) &
                    dl_bind(lib, "GNI_PostRdma", u.PostRdma, why) &
                    dl_bind(lib, "GNI_GetCompleted", u.GetCompleted, why);
    if (!ok) why = path + " is not a uGNI library: " + why;
    return ok;
}

const char *rc_name(gni_return_t rc) {
    switch (rc) {
    case GNI_RC_SUCCESS: return "GNI_RC_SUCCESS";
    case GNI_RC_NOT_DONE: return "GNI_RC_NOT_DONE";
    case GNI_RC_INVALID_PARAM: return "GNI_RC_INVALID_PARAM";
    case GNI_RC_ERROR_RESOURCE: return "GNI_RC_ERROR_RESOURCE";
    case GNI_RC_TIMEOUT: return "GNI_RC_TIMEOUT";
    case GNI_RC_PERMISSION_ERROR: return "GNI_RC_PERMISSION_ERROR";
    case GNI_RC_DESCRIPTOR_ERROR: return "GNI_RC_DESCRIPTOR_ERROR";
    case GNI_RC_ALIGNMENT_ERROR: return "GNI_RC_ALIGNMENT_ERROR";
    case GNI_RC_INVALID_STATE: return "GNI_RC_INVALID_STATE";
    case GNI_RC_NO_MATCH: return "GNI_RC_NO_MATCH";
    case GNI_RC_SIZE_ERROR: return "GNI_RC_SIZE_ERROR";
    case GNI_RC_TRANSACTION_ERROR: return "GNI_RC_TRANSACTION_ERROR";
    case GNI_RC_ILLEGAL_OP: return "GNI_RC_ILLEGAL_OP";
    case GNI_RC_ERROR_NOMEM: return "GNI_RC_ERROR_NOMEM";
    }
    return "an unknown gni_return_t";
}

// A PMI_GNI_* variable as ALPS sets it (a colon-separated list: the first
// entry is the job's).
bool credential(const char *name, std::uint32_t &out, std::string &why) {
    const char *v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
        why = std::string(name) + " is not set (run under tests/softnic/gni/softnic-run, or in a Cray job)";
        return false;
    }
    char *end = nullptr;
    errno = 0;
    const unsigned long n = std::strtoul(v, &end, 0);
    if (end == v || (*end != '\0' && *end != ':') || errno != 0 || n > std::numeric_limits<std::uint32_t>::max()) {
        why = std::string(name) + "='" + v + "' is not a number";
        return false;
    }
    out = static_cast<std::uint32_t>(n);
    return true;
}

constexpr std::uint32_t cq_entries = 1024;     // each CQ; at most largest_window posts and a few messages
constexpr std::uint16_t mailbox_credits = 16;  // the ping-pong needs one
constexpr std::uint32_t message_bytes = 64;    // msg_maxsize; every message is 8 bytes
constexpr std::uint64_t finish_value = ~std::uint64_t{0};

gni_mem_handle_t handle_of(const std::uint64_t (&w)[2]) { return gni_mem_handle_t{w[0], w[1]}; }

// A spin loop's stall check: it reads the clock once every 1024 empty
// polls, so that the loop the reference times is the NIC's calls alone.
class Stall {
public:
    bool over() {
        if (++polls_ % 1024 != 0) return false;
        if (start_ == 0) start_ = now_ns();
        return now_ns() - start_ > GniReference::stall_ns;
    }

private:
    std::uint64_t polls_ = 0;
    double start_ = 0;
};

} // namespace

struct GniReference::State {
    Ugni u{};
    std::string library;
    std::uint32_t ptag = 0, cookie = 0, dev_id = 0, nic_address = 0, inst_id = 0;
    gni_cdm_handle_t cdm = nullptr;
    gni_nic_handle_t nic = nullptr;
    gni_cq_handle_t cq = nullptr;     // posts' and SMSG sends' completions
    gni_cq_handle_t rx_cq = nullptr;  // SMSG arrivals in the mailbox
    PageBuffer region, mailbox;
    gni_mem_handle_t region_handle{}, mailbox_handle{};
    bool region_registered = false, mailbox_registered = false;
    std::uint32_t mailbox_bytes = 0;
    gni_ep_handle_t ep = nullptr;
    bool smsg = false;
    GniCard peer;
    std::vector<gni_post_descriptor_t> posts;  // a window's, alive until GNI_GetCompleted

    ~State() { close(); }

    void close() {
        if (ep) {
            u.EpUnbind(ep);
            u.EpDestroy(ep);
        }
        ep = nullptr;
        smsg = false;
        if (region_registered) u.MemDeregister(nic, &region_handle);
        if (mailbox_registered) u.MemDeregister(nic, &mailbox_handle);
        region_registered = mailbox_registered = false;
        if (rx_cq) u.CqDestroy(rx_cq);
        if (cq) u.CqDestroy(cq);
        rx_cq = cq = nullptr;
        if (cdm) u.CdmDestroy(cdm);  // detaches the NIC too
        cdm = nullptr;
        nic = nullptr;
    }

    bool failed(std::string &error, const char *call, gni_return_t rc) {
        error = std::string(call) + ": " + rc_name(rc);
        return false;
    }

    // One 8 B message; a mailbox without credit (the peer has not released
    // enough) is tried again.
    bool send(std::uint64_t value, std::string &error) {
        Stall stall;
        for (;;) {
            const gni_return_t rc = u.SmsgSendWTag(ep, &value, sizeof value, nullptr, 0, 0, 0);
            if (rc == GNI_RC_SUCCESS) return true;
            if (rc != GNI_RC_NOT_DONE) return failed(error, "GNI_SmsgSendWTag", rc);
            if (stall.over()) {
                error = "the peer's mailbox stayed full for 60 s";
                return false;
            }
        }
    }

    // Spins on the local CQ until `posts` post completions (each handed
    // back by GNI_GetCompleted) and `sends` SMSG send completions came.
    bool reap(std::uint32_t posts_left, std::uint32_t sends_left, std::string &error) {
        Stall stall;
        while (posts_left || sends_left) {
            gni_cq_entry_t e = 0;
            const gni_return_t rc = u.CqGetEvent(cq, &e);
            if (rc == GNI_RC_NOT_DONE) {
                if (stall.over()) {
                    error = "no completion came for 60 s";
                    return false;
                }
                continue;
            }
            if (rc == GNI_RC_ERROR_RESOURCE) {
                error = "the local CQ overran";
                return false;
            }
            if (rc != GNI_RC_SUCCESS && rc != GNI_RC_TRANSACTION_ERROR) return failed(error, "GNI_CqGetEvent", rc);
            if (GNI_CQ_GET_TYPE(e) == GNI_CQ_EVENT_TYPE_POST) {
                gni_post_descriptor_t *d = nullptr;
                const gni_return_t done = u.GetCompleted(cq, e, &d);
                if (done != GNI_RC_SUCCESS || !GNI_CQ_STATUS_OK(e)) {
                    error = std::string("a transfer completed in error (") + rc_name(done) + ")";
                    return false;
                }
                if (posts_left) --posts_left;
            } else if (sends_left) {
                --sends_left;
            }
        }
        return true;
    }

    // Spins on the rx CQ until a message arrived, then takes it from the
    // mailbox: its 8 bytes in `value`.
    bool receive(std::uint64_t &value, std::string &error) {
        Stall stall;
        for (;;) {
            gni_cq_entry_t e = 0;
            const gni_return_t rc = u.CqGetEvent(rx_cq, &e);
            if (rc == GNI_RC_NOT_DONE) {
                if (stall.over()) {
                    error = "the peer went silent (no message for 60 s)";
                    return false;
                }
                continue;
            }
            if (rc == GNI_RC_ERROR_RESOURCE) {
                error = "the rx CQ overran";
                return false;
            }
            if (rc != GNI_RC_SUCCESS) return failed(error, "GNI_CqGetEvent (rx)", rc);
            if (GNI_CQ_GET_TYPE(e) == GNI_CQ_EVENT_TYPE_SMSG) break;
        }
        void *header = nullptr;
        std::uint8_t tag = GNI_SMSG_ANY_TAG;
        const gni_return_t rc = u.SmsgGetNextWTag(ep, &header, &tag);
        if (rc != GNI_RC_SUCCESS) return failed(error, "GNI_SmsgGetNextWTag", rc);
        std::memcpy(&value, header, sizeof value);
        const gni_return_t released = u.SmsgRelease(ep);
        if (released != GNI_RC_SUCCESS) return failed(error, "GNI_SmsgRelease", released);
        return true;
    }
};

GniReference::GniReference() = default;
GniReference::~GniReference() = default;

bool GniReference::open(const std::string &library, std::uint32_t inst_id, std::size_t region_bytes) {
    state_ = std::make_unique<State>();
    State &s = *state_;
    Ugni &u = s.u;
    if (!ugni_load(library, u, error_)) {
        state_.reset();  // nothing to close
        return false;
    }
    s.library = library.empty() ? "libugni.so.0" : library;
    if (!credential("PMI_GNI_PTAG", s.ptag, error_) || !credential("PMI_GNI_COOKIE", s.cookie, error_) ||
        !credential("PMI_GNI_DEV_ID", s.dev_id, error_))
        return false;
    s.inst_id = inst_id;
    gni_return_t rc =
        u.CdmCreate(inst_id, static_cast<std::uint8_t>(s.ptag), s.cookie, GNI_CDM_MODE_ERR_NO_KILL, &s.cdm);
    if (rc != GNI_RC_SUCCESS) {
        s.cdm = nullptr;
        return s.failed(error_, "GNI_CdmCreate", rc);
    }
    if ((rc = u.CdmAttach(s.cdm, s.dev_id, &s.nic_address, &s.nic)) != GNI_RC_SUCCESS) {
        s.nic = nullptr;
        return s.failed(error_, "GNI_CdmAttach", rc);
    }
    if ((rc = u.CqCreate(s.nic, cq_entries, 0, GNI_CQ_NOBLOCK, nullptr, nullptr, &s.cq)) != GNI_RC_SUCCESS) {
        s.cq = nullptr;
        return s.failed(error_, "GNI_CqCreate (local)", rc);
    }
    if ((rc = u.CqCreate(s.nic, cq_entries, 0, GNI_CQ_NOBLOCK, nullptr, nullptr, &s.rx_cq)) != GNI_RC_SUCCESS) {
        s.rx_cq = nullptr;
        return s.failed(error_, "GNI_CqCreate (rx)", rc);
    }
    gni_smsg_attr_t a{};
    a.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    a.mbox_maxcredit = mailbox_credits;
    a.msg_maxsize = message_bytes;
    unsigned need = 0;
    if ((rc = u.SmsgBufferSizeNeeded(&a, &need)) != GNI_RC_SUCCESS)
        return s.failed(error_, "GNI_SmsgBufferSizeNeeded", rc);
    s.mailbox_bytes = (need + 63) / 64 * 64;
    if (!s.region.assign(region_bytes, 0) || !s.mailbox.assign(s.mailbox_bytes, 0)) {
        error_ = std::string("no memory for the region: ") + std::strerror(errno);
        return false;
    }
    if ((rc = u.MemRegister(s.nic, reinterpret_cast<std::uint64_t>(s.region.data()), region_bytes, nullptr,
                            GNI_MEM_READWRITE, static_cast<std::uint32_t>(-1), &s.region_handle)) != GNI_RC_SUCCESS)
        return s.failed(error_, "GNI_MemRegister (region)", rc);
    s.region_registered = true;
    if ((rc = u.MemRegister(s.nic, reinterpret_cast<std::uint64_t>(s.mailbox.data()), s.mailbox_bytes, s.rx_cq,
                            GNI_MEM_READWRITE, static_cast<std::uint32_t>(-1), &s.mailbox_handle)) != GNI_RC_SUCCESS)
        return s.failed(error_, "GNI_MemRegister (mailbox)", rc);
    s.mailbox_registered = true;
    s.posts.assign(largest_window, gni_post_descriptor_t{});
    return true;
}

GniCard GniReference::card() const {
    GniCard c;
    if (!state_ || !state_->mailbox_registered) return c;
    const State &s = *state_;
    c.nic_address = s.nic_address;
    c.inst_id = s.inst_id;
    c.mailbox = reinterpret_cast<std::uint64_t>(s.mailbox.data());
    c.mailbox_handle[0] = s.mailbox_handle.qword1;
    c.mailbox_handle[1] = s.mailbox_handle.qword2;
    c.mailbox_bytes = s.mailbox_bytes;
    c.region = reinterpret_cast<std::uint64_t>(s.region.data());
    c.region_handle[0] = s.region_handle.qword1;
    c.region_handle[1] = s.region_handle.qword2;
    return c;
}

bool GniReference::connect(const GniCard &peer) {
    if (!state_ || !state_->mailbox_registered) return false;
    State &s = *state_;
    s.peer = peer;
    gni_return_t rc = s.u.EpCreate(s.nic, s.cq, &s.ep);
    if (rc != GNI_RC_SUCCESS) {
        s.ep = nullptr;
        return s.failed(error_, "GNI_EpCreate", rc);
    }
    if ((rc = s.u.EpBind(s.ep, peer.nic_address, peer.inst_id)) != GNI_RC_SUCCESS)
        return s.failed(error_, "GNI_EpBind", rc);
    gni_smsg_attr_t local{}, remote{};
    local.msg_type = remote.msg_type = GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT;
    local.mbox_maxcredit = remote.mbox_maxcredit = mailbox_credits;
    local.msg_maxsize = remote.msg_maxsize = message_bytes;
    local.msg_buffer = s.mailbox.data();
    local.buff_size = s.mailbox_bytes;
    local.mem_hndl = s.mailbox_handle;
    remote.msg_buffer = reinterpret_cast<void *>(peer.mailbox);
    remote.buff_size = peer.mailbox_bytes;
    remote.mem_hndl = handle_of(peer.mailbox_handle);
    if ((rc = s.u.SmsgInit(s.ep, &local, &remote)) != GNI_RC_SUCCESS) return s.failed(error_, "GNI_SmsgInit", rc);
    s.smsg = true;
    return true;
}

void GniReference::close() {
    if (state_) state_->close();
}

std::string GniReference::describe() const {
    if (!state_ || !state_->nic) return "not open";
    const State &s = *state_;
    char b[200];
    std::snprintf(b, sizeof b, "uGNI device %u, NIC address %u, ptag %u, cookie 0x%x, instance %u (%s)", s.dev_id,
                  s.nic_address, s.ptag, s.cookie, s.inst_id, s.library.c_str());
    return b;
}

double GniReference::ping(std::uint32_t n, std::uint32_t lead) {
    if (!state_ || !state_->smsg || n <= lead) return nan_ns;
    State &s = *state_;
    double start = now_ns();
    for (std::uint32_t i = 0; i < n; ++i) {
        if (i == lead) start = now_ns();
        std::uint64_t v = 0;
        if (!s.send(i, error_) || !s.reap(0, 1, error_) || !s.receive(v, error_)) return nan_ns;
    }
    return (now_ns() - start) / static_cast<double>(n - lead);
}

bool GniReference::pong(std::uint32_t n) {
    if (!state_ || !state_->smsg) return false;
    State &s = *state_;
    for (std::uint32_t i = 0; i < n; ++i) {
        std::uint64_t v = 0;
        if (!s.receive(v, error_) || !s.send(v, error_) || !s.reap(0, 1, error_)) return false;
    }
    return true;
}

double GniReference::rma(GniRma op, std::size_t bytes, std::uint32_t count, std::uint32_t window) {
    if (!state_ || !state_->smsg) return nan_ns;
    State &s = *state_;
    if (bytes == 0 || bytes > s.region.size() || window == 0 || window > largest_window) {
        error_ = "rma: a size or window out of range";
        return nan_ns;
    }
    const bool bte = op == GniRma::bte_put || op == GniRma::bte_get;
    gni_post_descriptor_t d{};
    d.type = op == GniRma::fma_put   ? GNI_POST_FMA_PUT
             : op == GniRma::fma_get ? GNI_POST_FMA_GET
             : op == GniRma::bte_put ? GNI_POST_RDMA_PUT
                                     : GNI_POST_RDMA_GET;
    d.cq_mode = GNI_CQMODE_GLOBAL_EVENT;  // as the conduit posts
    d.dlvr_mode = GNI_DLVMODE_PERFORMANCE;
    d.local_addr = reinterpret_cast<std::uint64_t>(s.region.data());
    d.local_mem_hndl = s.region_handle;
    d.remote_addr = s.peer.region;
    d.remote_mem_hndl = handle_of(s.peer.region_handle);
    d.length = bytes;
    d.src_cq_hndl = s.cq;
    const double start = now_ns();
    std::uint32_t issued = 0;
    while (issued < count) {
        const std::uint32_t k = std::min(window, count - issued);
        for (std::uint32_t i = 0; i < k; ++i) {
            gni_post_descriptor_t &p = s.posts[i];
            p = d;
            p.post_id = issued + i;
            const gni_return_t rc = bte ? s.u.PostRdma(s.ep, &p) : s.u.PostFma(s.ep, &p);
            if (rc != GNI_RC_SUCCESS) {
                // Those already posted complete before the descriptors go.
                std::string ignored;
                (void)s.reap(i, 0, ignored);
                s.failed(error_, bte ? "GNI_PostRdma" : "GNI_PostFma", rc);
                return nan_ns;
            }
        }
        if (!s.reap(k, 0, error_)) return nan_ns;
        issued += k;
    }
    return now_ns() - start;
}

bool GniReference::serve() {
    if (!state_ || !state_->smsg) return false;
    for (;;) {
        std::uint64_t v = 0;
        if (!state_->receive(v, error_)) return false;
        if (v == finish_value) return true;
    }
}

bool GniReference::finish() {
    return state_ && state_->smsg && state_->send(finish_value, error_) && state_->reap(0, 1, error_);
}

char *GniReference::region() const { return state_ ? state_->region.data() : nullptr; }

#endif

} // namespace sluice::perf
