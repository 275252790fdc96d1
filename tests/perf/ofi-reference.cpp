// tests/perf/ofi-reference.cpp - the bare libfabric reference (ofi-reference.hpp).
#include "tests/perf/ofi-reference.hpp"

#include "tests/perf/bench_common.hpp"
#include "tests/perf/driver.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#if SLUICE_BENCH_HAVE_OFI
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/uio.h>

#include <cstring>
#include <sys/mman.h>
#include <utility>
#endif

namespace sluice::perf {

std::string ofi_tag(std::string_view provider) {
    std::string tag;
    for (char c : provider.substr(0, provider.find(';')))
        if (std::isalnum(static_cast<unsigned char>(c)))
            tag += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return tag.empty() ? "default" : tag;
}

bool ofi_delivery_complete(const std::string &provider) {
    const char *v = std::getenv("SLUICE_OFI_DELIVERY_COMPLETE");
    const std::string s = v ? v : "";
    if (s == "1" || s == "yes" || s == "on")
        return true;
    if (s == "0" || s == "no" || s == "off")
        return false;
    return provider != "shm";
}

#if !SLUICE_BENCH_HAVE_OFI

namespace {
const char *const no_libfabric = "sluice-bench was built without libfabric (configure found "
                                 "no libfabric.pc, or no <rdma/fabric.h>)";
}
std::string ofi_probe(const std::string &) { return no_libfabric; }
struct OfiReference::State {};
OfiReference::OfiReference() = default;
OfiReference::~OfiReference() = default;
bool OfiReference::open(const std::string &, std::size_t, bool) {
    error_ = no_libfabric;
    return false;
}
bool OfiReference::connect(const OfiCard &) { return false; }
OfiCard OfiReference::card() const { return {}; }
std::string OfiReference::describe() const { return "no libfabric"; }
double OfiReference::ping(std::uint32_t, std::uint32_t, bool) { return nan_value; }
bool OfiReference::pong(std::uint32_t, bool) { return false; }
double OfiReference::rma(OfiRma, std::size_t, std::uint32_t, std::uint32_t) { return nan_value; }
bool OfiReference::serve() { return false; }
bool OfiReference::finish() { return false; }
char *OfiReference::target_region() const { return nullptr; }
char *OfiReference::local_region() const { return nullptr; }

#else

namespace {

constexpr std::uint64_t mr_modes_we_honour =
    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
constexpr std::uint64_t finish_value = ~std::uint64_t{0};
constexpr std::size_t message_slots = 16; // receives kept posted
constexpr std::size_t slot_bytes = 64;
constexpr std::uint32_t max_window = 256;

std::string fi_text(const char *what, long rc) {
    return std::string(what) + ": " + fi_strerror(static_cast<int>(-rc));
}

// The conduit's hints (src/conduits/ofi), so fi_getinfo answers with the
// entry the conduit gets: FI_MULTI_RECV is asked for though the reference
// posts plain receives.
constexpr std::uint32_t fabric_version = FI_VERSION(1, 10);
fi_info *hints_for(const std::string &provider) {
    fi_info *hints = fi_allocinfo();
    if (!hints)
        return nullptr;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | FI_MULTI_RECV;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = static_cast<int>(mr_modes_we_honour);
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->fabric_attr->prov_name = strdup(provider.c_str());
    return hints;
}
// Both ranks are on this host: the loopback domain where the provider has
// one (tcp's "lo", as the conduit picks on one host), else the first.
fi_info *loopback_or_first(fi_info *list) {
    for (fi_info *i = list; i; i = i->next)
        if (i->domain_attr->name && std::strcmp(i->domain_attr->name, "lo") == 0)
            return i;
    return list;
}

// An anonymous mapping: page-aligned and allocated, as FI_MR_ALLOCATED asks,
// and touched, so no first-touch fault lands in a timed loop.
template <class T> void close_fid(T *&p) {
    if (p)
        fi_close(&p->fid);
    p = nullptr;
}

} // namespace

std::string ofi_probe(const std::string &provider) {
    fi_info *hints = hints_for(provider);
    if (!hints)
        return "fi_allocinfo failed";
    fi_info *info = nullptr;
    const int rc = fi_getinfo(fabric_version, nullptr, nullptr, 0, hints, &info);
    fi_freeinfo(hints);
    if (info)
        fi_freeinfo(info);
    return rc == 0 ? std::string() : fi_text(("fi_getinfo(" + provider + ")").c_str(), rc);
}

struct OfiReference::State {
    fi_info *list = nullptr; // fi_getinfo's answers
    fi_info *info = nullptr; // the one used
    fid_fabric *fabric = nullptr;
    fid_domain *domain = nullptr;
    fid_cq *cq = nullptr;
    fid_av *av = nullptr;
    fid_ep *ep = nullptr;
    fid_mr *target_mr = nullptr;   // the peer's RMA lands here
    fid_mr *local_mr = nullptr;    // this side's RMA source / destination
    fid_mr *message_mr = nullptr;  // receive slots and the send buffer
    PageBuffer target, local, messages;
    fi_addr_t peer = FI_ADDR_UNSPEC;
    std::uint64_t peer_base = 0, peer_key = 0;
    std::uint64_t mr_mode = 0;
    std::uint64_t write_flags = FI_COMPLETION;

    // FI_CONTEXT: every outstanding operation owns one fi_context.
    fi_context2 receive_context[message_slots];
    fi_context2 send_context;
    fi_context2 rma_context[max_window];
    // Values received and not yet taken, in order (a read of the queue
    // may return several).
    std::uint64_t values[message_slots] = {};
    std::uint64_t received = 0, taken = 0;
    std::uint64_t sends_done = 0, rma_done = 0;
    std::uint64_t seq = 0; // both sides count the same ping sequence

    ~State() {
        // Reverse order of creation.
        close_fid(ep);
        close_fid(message_mr);
        close_fid(local_mr);
        close_fid(target_mr);
        close_fid(av);
        close_fid(cq);
        close_fid(domain);
        close_fid(fabric);
        if (list)
            fi_freeinfo(list);
    }
    bool local_desc_needed() const { return (mr_mode & FI_MR_LOCAL) != 0; }
    void *desc(fid_mr *mr) const { return local_desc_needed() ? fi_mr_desc(mr) : nullptr; }
    char *slot(std::size_t i) const { return messages.data() + i * slot_bytes; }
    char *send_buffer() const { return slot(message_slots); }

    long post_receive(std::size_t i) {
        long rc;
        while ((rc = fi_recv(ep, slot(i), slot_bytes, desc(message_mr), FI_ADDR_UNSPEC,
                             &receive_context[i])) == -FI_EAGAIN)
            (void)fi_cq_read(cq, nullptr, 0);
        return rc;
    }
    // One read of the completion queue; false (and `error`) on a failed
    // operation.  A receive's 8 B value is kept and its slot posted again.
    bool progress(std::string &error) {
        fi_cq_entry entries[16];
        const ssize_t n = fi_cq_read(cq, entries, 16);
        if (n == -FI_EAGAIN)
            return true;
        if (n < 0) {
            fi_cq_err_entry e{};
            if (n == -FI_EAVAIL && fi_cq_readerr(cq, &e, 0) > 0)
                error = std::string("completion error: ") +
                        fi_cq_strerror(cq, e.prov_errno, e.err_data, nullptr, 0);
            else
                error = fi_text("fi_cq_read", n);
            return false;
        }
        for (ssize_t k = 0; k < n; ++k) {
            auto *c = static_cast<fi_context2 *>(entries[k].op_context);
            if (c >= receive_context && c < receive_context + message_slots) {
                const auto i = static_cast<std::size_t>(c - receive_context);
                std::memcpy(&values[received % message_slots], slot(i), sizeof values[0]);
                ++received;
                if (const long rc = post_receive(i); rc != 0) {
                    error = fi_text("fi_recv", rc);
                    return false;
                }
            } else if (c == &send_context) {
                ++sends_done;
            } else {
                ++rma_done;
            }
        }
        return true;
    }
    // Reads the queue until `done()`; false on an error or a stall.
    template <class Done> bool wait(Done done, std::string &error) {
        double since = 0;
        for (std::uint32_t spins = 0; !done(); ++spins) {
            if (!progress(error))
                return false;
            if ((spins & 0xffff) == 0xffff) { // the clock only now and then
                const double t = now_ns();
                if (since == 0)
                    since = t;
                else if (t - since > stall_ns) {
                    error = "the peer went silent (no completion for 60 s)";
                    return false;
                }
            }
        }
        return true;
    }
    // Sends `value` (8 B): fi_inject (no completion), or fi_send and its
    // completion reaped before the call returns.
    bool send(std::uint64_t value, bool inject, std::string &error) {
        std::memcpy(send_buffer(), &value, sizeof value);
        const std::uint64_t want = sends_done + 1;
        for (;;) {
            const long rc = inject ? fi_inject(ep, send_buffer(), sizeof value, peer)
                                   : fi_send(ep, send_buffer(), sizeof value, desc(message_mr),
                                             peer, &send_context);
            if (rc == 0)
                break;
            if (rc != -FI_EAGAIN) {
                error = fi_text(inject ? "fi_inject" : "fi_send", rc);
                return false;
            }
            if (!progress(error))
                return false;
        }
        return inject || wait([&] { return sends_done >= want; }, error);
    }
    bool receive(std::uint64_t expect, std::string &error) {
        if (!wait([&] { return received > taken; }, error))
            return false;
        const std::uint64_t value = values[taken++ % message_slots];
        if (value != expect) {
            error = "unexpected message " + std::to_string(value) + ", wanted " +
                    std::to_string(expect);
            return false;
        }
        return true;
    }
};

OfiReference::OfiReference() = default;
OfiReference::~OfiReference() = default;

bool OfiReference::open(const std::string &provider, std::size_t region_bytes,
                        bool delivery_complete) {
    auto s = std::make_unique<State>();
    fi_info *hints = hints_for(provider);
    if (!hints) {
        error_ = "fi_allocinfo failed";
        return false;
    }
    int rc = fi_getinfo(fabric_version, nullptr, nullptr, 0, hints, &s->list);
    fi_freeinfo(hints);
    if (rc != 0) {
        error_ = fi_text(("fi_getinfo(" + provider + ")").c_str(), rc);
        return false;
    }
    fi_info *info = s->info = loopback_or_first(s->list);
    if (delivery_complete)
        s->write_flags |= FI_DELIVERY_COMPLETE;
    s->mr_mode = static_cast<std::uint64_t>(info->domain_attr->mr_mode);
    if ((rc = fi_fabric(info->fabric_attr, &s->fabric, nullptr)) != 0 ||
        (rc = fi_domain(s->fabric, info, &s->domain, nullptr)) != 0) {
        error_ = fi_text("fi_fabric/fi_domain", rc);
        return false;
    }
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.wait_obj = FI_WAIT_NONE;
    cq_attr.size = 4 * max_window;
    fi_av_attr av_attr{};
    av_attr.type = info->domain_attr->av_type == FI_AV_UNSPEC ? FI_AV_TABLE
                                                               : info->domain_attr->av_type;
    av_attr.count = 2;
    if ((rc = fi_cq_open(s->domain, &cq_attr, &s->cq, nullptr)) != 0 ||
        (rc = fi_av_open(s->domain, &av_attr, &s->av, nullptr)) != 0 ||
        (rc = fi_endpoint(s->domain, info, &s->ep, nullptr)) != 0 ||
        (rc = fi_ep_bind(s->ep, &s->av->fid, 0)) != 0 ||
        (rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV)) != 0 ||
        (rc = fi_enable(s->ep)) != 0) {
        error_ = fi_text("endpoint set-up", rc);
        return false;
    }
    if (!s->target.assign(region_bytes, 1) || !s->local.assign(region_bytes, 1) ||
        !s->messages.assign((message_slots + 1) * slot_bytes, 1)) {
        error_ = "cannot map the reference's buffers";
        return false;
    }
    // Keys chosen here unless the provider picks them (FI_MR_PROV_KEY);
    // bound to the endpoint where it asks (FI_MR_ENDPOINT).
    std::uint64_t requested_key = 1;
    auto reg = [&](const PageBuffer &r, std::uint64_t access, fid_mr *&mr) {
        rc = fi_mr_reg(s->domain, r.data(), r.size(), access, 0, requested_key++, 0, &mr, nullptr);
        if (rc == 0 && (s->mr_mode & FI_MR_ENDPOINT)) {
            rc = fi_mr_bind(mr, &s->ep->fid, 0);
            if (rc == 0)
                rc = fi_mr_enable(mr);
        }
        return rc == 0;
    };
    if (!reg(s->target, FI_REMOTE_READ | FI_REMOTE_WRITE, s->target_mr) ||
        !reg(s->local, FI_READ | FI_WRITE, s->local_mr) ||
        !reg(s->messages, FI_SEND | FI_RECV, s->message_mr)) {
        error_ = fi_text("fi_mr_reg", rc);
        return false;
    }
    for (std::size_t i = 0; i < message_slots; ++i)
        if (const long r = s->post_receive(i); r != 0) {
            error_ = fi_text("fi_recv", r);
            return false;
        }
    state_ = std::move(s);
    return true;
}

OfiCard OfiReference::card() const {
    OfiCard c;
    if (!state_)
        return c;
    std::size_t len = sizeof c.address;
    if (fi_getname(&state_->ep->fid, c.address, &len) != 0)
        return c; // address_bytes 0: connect() on the other side fails
    c.address_bytes = static_cast<std::uint32_t>(len);
    c.key = fi_mr_key(state_->target_mr);
    c.base = (state_->mr_mode & FI_MR_VIRT_ADDR)
                 ? reinterpret_cast<std::uintptr_t>(state_->target.data())
                 : 0;
    return c;
}

bool OfiReference::connect(const OfiCard &peer) {
    if (!state_ || peer.address_bytes == 0) {
        error_ = "no endpoint, or the peer's card has no address";
        return false;
    }
    const int n = fi_av_insert(state_->av, peer.address, 1, &state_->peer, 0, nullptr);
    if (n != 1) {
        error_ = fi_text("fi_av_insert", n < 0 ? n : -FI_EINVAL);
        return false;
    }
    state_->peer_base = peer.base;
    state_->peer_key = peer.key;
    return true;
}

std::string OfiReference::describe() const {
    if (!state_)
        return "not open";
    std::string modes;
    const std::pair<std::uint64_t, const char *> names[] = {
        {FI_MR_LOCAL, "LOCAL"}, {FI_MR_VIRT_ADDR, "VIRT_ADDR"}, {FI_MR_ALLOCATED, "ALLOCATED"},
        {FI_MR_PROV_KEY, "PROV_KEY"}, {FI_MR_ENDPOINT, "ENDPOINT"}};
    for (auto [bit, name] : names)
        if (state_->mr_mode & bit)
            modes += (modes.empty() ? "" : "|") + std::string(name);
    const fi_info *i = state_->info;
    return std::string(i->fabric_attr->prov_name) + " domain " + i->domain_attr->name +
           ", mr_mode " + (modes.empty() ? "none" : modes) + ", data progress " +
           (i->domain_attr->data_progress == FI_PROGRESS_MANUAL ? "manual" : "auto") +
           ", writes " +
           ((state_->write_flags & FI_DELIVERY_COMPLETE) ? "delivery" : "transmit") +
           "-complete";
}

double OfiReference::ping(std::uint32_t n, std::uint32_t lead, bool inject) {
    State &s = *state_;
    double t0 = now_ns();
    for (std::uint32_t i = 0; i < n; ++i) {
        if (i == lead)
            t0 = now_ns();
        ++s.seq;
        if (!s.send(s.seq, inject, error_) || !s.receive(s.seq, error_))
            return nan_value;
    }
    return now_ns() - t0;
}

bool OfiReference::pong(std::uint32_t n, bool inject) {
    State &s = *state_;
    for (std::uint32_t i = 0; i < n; ++i) {
        ++s.seq;
        if (!s.receive(s.seq, error_) || !s.send(s.seq, inject, error_))
            return false;
    }
    return true;
}

double OfiReference::rma(OfiRma op, std::size_t bytes, std::uint32_t count,
                         std::uint32_t window) {
    State &s = *state_;
    if (bytes > s.local.size() || window == 0 || window > max_window) {
        error_ = "rma: size or window out of range";
        return nan_value;
    }
    void *desc = s.desc(s.local_mr);
    const double t0 = now_ns();
    std::uint32_t posted = 0;
    while (posted < count) {
        const std::uint64_t base = s.rma_done;
        const std::uint32_t batch = std::min(window, count - posted);
        for (std::uint32_t k = 0; k < batch; ++k) {
            // As the conduit posts them: fi_writemsg with its completion
            // flags, fi_readmsg with FI_COMPLETION.
            iovec iov{s.local.data(), bytes};
            fi_rma_iov remote{s.peer_base, bytes, s.peer_key};
            fi_msg_rma msg{};
            msg.msg_iov = &iov;
            msg.desc = &desc;
            msg.iov_count = 1;
            msg.addr = s.peer;
            msg.rma_iov = &remote;
            msg.rma_iov_count = 1;
            msg.context = &s.rma_context[k];
            for (;;) {
                const long rc = op == OfiRma::write ? fi_writemsg(s.ep, &msg, s.write_flags)
                                                    : fi_readmsg(s.ep, &msg, FI_COMPLETION);
                if (rc == 0)
                    break;
                if (rc != -FI_EAGAIN) {
                    error_ = fi_text(op == OfiRma::write ? "fi_write" : "fi_read", rc);
                    return nan_value;
                }
                if (!s.progress(error_))
                    return nan_value;
            }
        }
        posted += batch;
        if (!s.wait([&] { return s.rma_done >= base + batch; }, error_))
            return nan_value;
    }
    return now_ns() - t0;
}

bool OfiReference::serve() {
    State &s = *state_;
    return s.receive(finish_value, error_);
}

bool OfiReference::finish() { return state_->send(finish_value, false, error_); }

char *OfiReference::target_region() const { return state_ ? state_->target.data() : nullptr; }
char *OfiReference::local_region() const { return state_ ? state_->local.data() : nullptr; }

#endif

} // namespace sluice::perf
