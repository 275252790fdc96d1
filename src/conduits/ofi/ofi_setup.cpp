// src/conduits/ofi/ofi_setup.cpp - the ofi conduit's set-up and tear-down:
// which provider, the endpoint and its address vector, memory
// registrations in whatever mode the provider demands, the buffers,
// finalize and the counters.
#include "conduits/ofi/ofi.hpp"
#include "conduits/ofi/ofi_transport.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "base/status.hpp"
#include "spawners/bootstrap.hpp"

#include <strings.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

namespace sluice::conduit::ofi {

namespace detail {
namespace {

constexpr std::uint32_t fabric_version = FI_VERSION(1, 10);
// ofi_rxm's shared receive buffers (query, below), and libfabric's own
// defaults for its buffers (receive_buffer_bytes_impl).
constexpr const char *rxm_shared_receives = "256";
constexpr std::size_t rxm_buffer_default = 16384, rxm_per_connection_default = 128, rxm_shared_default = 4096;

// The default order: hardware providers first, then the software ones
// that run anywhere.
constexpr const char *provider_order[] = {"cxi", "verbs;ofi_rxm", "efa", "psm3", "psm2", "opx",
                                          "tcp;ofi_rxm", "sockets", "shm", "udp;ofi_rxd"};

// Reliable datagram endpoints with messages (multi-receive) and RMA, every
// memory-registration mode this conduit honours, each peer's messages in
// order.
fi_info *hints_make(const std::string &provider) {
    fi_info *h = fab().dupinfo(nullptr);
    if (!h) return nullptr;
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_MSG | FI_RMA | FI_MULTI_RECV;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    if (!provider.empty()) h->fabric_attr->prov_name = ::strdup(provider.c_str());
    return h;
}

int rank_of(const char *name) {
    for (std::size_t i = 0; i < std::size(provider_order); ++i)
        if (std::strcmp(name, provider_order[i]) == 0) return static_cast<int>(i);
    return static_cast<int>(std::size(provider_order));
}

// The entry to use among fi_getinfo's answers: the wanted provider (else
// the first in provider_order), then the wanted domain (else "lo" for a
// job on one host, else the first that is not "lo").
const fi_info *choose(const fi_info *list, const std::string &domain, bool one_host, std::string *provider = nullptr) {
    const fi_info *best = nullptr;
    for (const fi_info *i = list; i; i = i->next)
        if (!best || rank_of(i->fabric_attr->prov_name) < rank_of(best->fabric_attr->prov_name)) best = i;
    if (!best) return nullptr;
    const char *prov = best->fabric_attr->prov_name;
    if (provider) *provider = prov;
    const fi_info *pick = nullptr;
    for (const fi_info *i = list; i; i = i->next) {
        if (std::strcmp(i->fabric_attr->prov_name, prov) != 0) continue;
        const char *d = i->domain_attr->name ? i->domain_attr->name : "";
        if (!domain.empty()) {
            if (domain == d) return i;
            continue;
        }
        const bool lo = std::strcmp(d, "lo") == 0;
        if (one_host ? lo : !lo) return i;
        if (!pick) pick = i;
    }
    return domain.empty() ? pick : nullptr;
}

// fi_getinfo for `provider` (empty: every provider).  Null and `why` set
// when nothing answers.
fi_info *query(const std::string &provider, std::string &why) {
    if (api(&why) == nullptr) return nullptr;
    fi_info *h = hints_make(provider);
    if (!h) {
        why = "fi_allocinfo failed";
        return nullptr;
    }
    // udp;ofi_rxd reads its datagram queue at most this many times per
    // progress call (default 1000) and then sends; in libfabric 1.17 the
    // udp layer writes an arriving datagram's completion into that queue
    // even when its sends have filled it, overwriting completions and
    // losing receive buffers for good (the peer stalls, then times out).
    // Read it empty every time instead.  Providers read their variables
    // when libfabric first starts: a program that started it before
    // Sluice, or that sets the variable itself, keeps its own value.
    setenv("FI_OFI_RXD_SPIN_COUNT", "0", 0);
    // sockets' progress thread (FI_PROGRESS_AUTO: another library's sockets
    // domain in this process, such as the benchmark's bare reference; the
    // conduit's own progresses manually, open_fabric) spins this many ms
    // after each wake-up (default 10) on the CPU this rank polls on, and a
    // ping-pong there stalled in retransmissions of dropped segments.
    // Sleep as soon as it is idle instead, under the same rule as above.
    setenv("FI_SOCKETS_PE_WAITTIME", "0", 0);
    // ofi_rxm posts FI_OFI_RXM_MSG_RX_SIZE (128) buffers of
    // FI_OFI_RXM_BUFFER_SIZE (16 KiB) on each connection, 2 MiB for every
    // peer it connects to: memory that grows with the job.  One shared
    // receive context of 256 such buffers instead, 4 MiB at any size
    // (the pool's size only with the shared context chosen here: a program
    // that sets FI_OFI_RXM_USE_SRX keeps rxm's sizes for its choice).
    if (!std::getenv("FI_OFI_RXM_USE_SRX")) {
        setenv("FI_OFI_RXM_USE_SRX", "1", 0);
        setenv("FI_OFI_RXM_MSG_RX_SIZE", rxm_shared_receives, 0);
    }
    fi_info *list = nullptr;
    const int r = fab().getinfo(fabric_version, nullptr, nullptr, 0, h, &list);
    fab().freeinfo(h);
    if (r != 0 || !list) {
        why = provider.empty() ? std::string("no libfabric provider offers reliable datagram endpoints with messages "
                                             "and RMA (fi_getinfo: ") + fab().strerror(-r) + ")"
                               : "provider " + provider + " offers no reliable datagram endpoint with messages and "
                                 "RMA here (fi_getinfo: " + fab().strerror(-r) + ")";
        return nullptr;
    }
    return list;
}

struct AddressRecord {
    char provider[48];
    std::uint32_t name_length;
    std::uint8_t name[212];
};
static_assert(sizeof(AddressRecord) == 264);

} // namespace

OfiTransport::OfiTransport() : RdmaConduit("ofi", Capabilities{}) {}

OfiTransport::~OfiTransport() { close_all(); }

Status OfiTransport::init_impl() {
    const char *op = "ofi conduit init";
    Capabilities &c = capabilities_mutable();
    eager_limit_ = base::knob_size(knob(Knob::OFI_EAGER_LIMIT));
    std::size_t packed = base::knob_size(knob(Knob::OFI_PACKED_LONG));
    if (packed == 0 || packed > eager_limit_) packed = eager_limit_;
    if (Status s = open_fabric(); s != Status::ok) return s;
    c.max_medium = eager_limit_;
    c.max_long = std::numeric_limits<std::size_t>::max();
    c.max_packed_long = packed;
    c.native_rma = true;
    c.remote_completion = false;  // the wrapper writes, then sends the notification
    c.needs_registration = mr_.local;
    c.remote_keys = true;
    c.remote_offsets = !mr_.virt_addr;
    c.provider_keys = mr_.prov_key;
    c.key_per_endpoint = false;
    c.needs_credits = true;  // receive buffers are a fixed space
    c.inline_limit = inject_limit_;
    // With manual progress what this rank posted moves only while it polls
    // (sockets: an fi_inject waits in the provider's queue; rxd: its
    // handshakes and retransmissions), so the core polls for it while it
    // blocks in a bootstrap call (segment attach, finalize): a peer may
    // still wait there for this rank's last barrier signal.
    c.acknowledges = manual_progress_;
    if (Status s = exchange_addresses(); s != Status::ok) return s;
    if (Status s = buffers_create(); s != Status::ok) return s;
    if (Status s = connect_peers(); s != Status::ok) return s;
    base::say("ofi: provider %s, domain %s, inject %zu bytes, eager %zu bytes, packed Long %zu bytes%s%s%s%s", provider_.c_str(),
              domain_name_.c_str(), inject_limit_, eager_limit_, packed,
              multi_recv_ ? ", multi-receive buffers" : ", a ring of receive buffers",
              mr_.local ? ", FI_MR_LOCAL" : "",
              mr_.virt_addr ? ", virtual addresses" : ", offsets", mr_.prov_key ? ", provider keys" : "");
    (void)op;
    return Status::ok;
}

Status OfiTransport::open_fabric() {
    const char *op = "ofi conduit init";
    const std::string &wanted = base::knob_string(knob(Knob::OFI_PROVIDER));
    std::string why;
    fi_info *list = query(wanted, why);
    if (!list)
        return base::report(Status::transport, op,
                            wanted.empty() ? "install a libfabric provider, or use SLUICE_NETWORK=udp"
                                           : "fi_info -l lists the providers here; set SLUICE_OFI_PROVIDER to one",
                            "%s", why.c_str());
    bool one_host = true;
    for (std::uint32_t h : setup().host_of) one_host &= h == setup().host_of[setup().rank];
    const std::string &domain = base::knob_string(knob(Knob::OFI_DOMAIN));
    std::string provider;
    const fi_info *pick = choose(list, domain, one_host, &provider);
    if (!pick) {
        fab().freeinfo(list);
        return base::report(Status::transport, op, "fi_info -v lists each provider's domains; unset SLUICE_OFI_DOMAIN or set it to one",
                            "no domain %s for provider %s", domain.c_str(), provider.c_str());
    }
    info_ = fab().dupinfo(pick);
    fab().freeinfo(list);
    if (!info_) return base::report(Status::resource, op, nullptr, "fi_dupinfo failed");
    provider_ = info_->fabric_attr->prov_name;
    domain_name_ = info_->domain_attr->name ? info_->domain_attr->name : "";
    // NIC atomics for atomic domains, where the chosen provider offers them
    // on the chosen domain: asked separately, so they never change the choice.
    const bool shaky = provider_ == "sockets" || provider_ == "udp;ofi_rxd";
    if (!base::knob_switch(knob(Knob::OFI_ATOMICS), true)) atomics_off_ = "SLUICE_OFI_ATOMICS=0";
    else if (!base::knob_switch(knob(Knob::OFI_ATOMICS), !shaky))
        atomics_off_ = "SLUICE_OFI_ATOMICS=auto leaves " + provider_ +
                       " out (libfabric 1.17's atomics there lost completions or crashed a rank here; 1 forces them)";
    if (atomics_off_.empty()) {
        fi_info *h = hints_make(provider_);
        fi_info *with = nullptr;
        if (h) {
            h->caps |= FI_ATOMIC;
            if (fab().getinfo(fabric_version, nullptr, nullptr, 0, h, &with) != 0) with = nullptr;
            fab().freeinfo(h);
        }
        for (const fi_info *i = with; i; i = i->next) {
            const char *d = i->domain_attr->name ? i->domain_attr->name : "";
            if (domain_name_ != d || std::strcmp(i->fabric_attr->name, info_->fabric_attr->name) != 0) continue;
            if (fi_info *dup = fab().dupinfo(i)) {
                fab().freeinfo(info_);
                info_ = dup;
                atomics_ = true;
            }
            break;
        }
        if (with) fab().freeinfo(with);
    }

    const std::uint64_t mode = info_->domain_attr->mr_mode;
    if (mode & (FI_MR_RAW | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT))
        return base::report(Status::transport, op, "choose another provider with SLUICE_OFI_PROVIDER",
                            "provider %s demands a memory-registration mode this conduit does not implement (%s)",
                            provider_.c_str(), fab().tostr(&mode, FI_TYPE_MR_MODE));
    mr_.local = mode & FI_MR_LOCAL;
    mr_.virt_addr = mode & FI_MR_VIRT_ADDR;
    mr_.prov_key = mr_.real_prov_key = mode & FI_MR_PROV_KEY;
    mr_.endpoint = mr_.real_endpoint = mode & FI_MR_ENDPOINT;
    mr_.allocated = mode & FI_MR_ALLOCATED;
    std::stringstream add(base::knob_string(knob(Knob::OFI_MR_MODE_ADD)));
    for (std::string word; std::getline(add, word, ',');) {
        if (word == "local") mr_.local = true;
        else if (word == "prov_key") mr_.prov_key = true;
        else if (word == "endpoint") mr_.endpoint = true;
        else if (!word.empty())
            return base::report(Status::argument, op, "use local, prov_key or endpoint, separated by commas",
                                "SLUICE_OFI_MR_MODE_ADD: unknown mode '%s'", word.c_str());
    }

    const std::size_t inject_knob = base::knob_size(knob(Knob::OFI_INJECT_LIMIT));
    inject_limit_ = info_->tx_attr->inject_size;
    if (inject_knob) inject_limit_ = std::min(inject_limit_, inject_knob);
    inject_limit_ = std::min<std::size_t>(inject_limit_, 4096);  // send_impl's stack buffer
    rma_chunk_ = info_->ep_attr->max_msg_size;
    if (const std::size_t k = base::knob_size(knob(Knob::OFI_RMA_CHUNK)); k) rma_chunk_ = std::min(rma_chunk_, k);
    if (rma_chunk_ < 4096)
        return base::report(Status::transport, op, nullptr, "provider %s: max_msg_size %zu is too small", provider_.c_str(),
                            rma_chunk_);
    capabilities_mutable().rma_piece = rma_chunk_;
    peer_timeout_s_ = std::max(0.1, base::knob_double(knob(Knob::OFI_PEER_TIMEOUT)));
    if (base::knob_bool(base::Knob::RCV_THREAD)) receive_thread_want();
    tx_depth_ = std::max<std::size_t>(16, info_->tx_attr->size ? info_->tx_attr->size : 256);
    reap_every_ = std::max<std::size_t>(8, tx_depth_ / 8);
    // shm moves a write's bytes into the target before it completes it,
    // and in libfabric 1.17 never completes one asked FI_DELIVERY_COMPLETE.
    delivery_complete_ = base::knob_switch(knob(Knob::OFI_DELIVERY_COMPLETE), provider_ != "shm");

    auto check = [&](int r, const char *call) -> Status {
        if (r == 0) return Status::ok;
        return base::report(Status::transport, op, "SLUICE_OFI_PROVIDER chooses another provider",
                            "provider %s, domain %s: %s: %s", provider_.c_str(), domain_name_.c_str(), call, fab().strerror(-r));
    };
    // sockets progresses data from a thread of its own by default
    // (FI_PROGRESS_AUTO), which spins FI_SOCKETS_PE_WAITTIME (10 ms) after
    // each wake-up on the CPUs the polling ranks spin on: a round trip took
    // milliseconds.  Manual progress moves its data in this rank's polls.
    if (provider_ == "sockets") info_->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    manual_progress_ = info_->domain_attr->data_progress == FI_PROGRESS_MANUAL;
    if (Status s = check(fab().fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric"); s != Status::ok) return s;
    if (Status s = check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain"); s != Status::ok) return s;
    fi_av_attr av{};
    av.type = FI_AV_TABLE;
    av.count = setup().size;
    if (Status s = check(fi_av_open(domain_, &av, &av_, nullptr), "fi_av_open"); s != Status::ok) return s;
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_DATA;
    cq.wait_obj = FI_WAIT_NONE;
    cq.size = std::max<std::size_t>(4096, 2 * tx_depth_ + 2 * base::knob_int(knob(Knob::OFI_SEND_BUFFERS)));
    // The receive thread, and a rank waiting in block mode, sleep on a
    // file descriptor where the provider has one; without, they nap.
    if (base::knob_bool(base::Knob::RCV_THREAD) || base::idle_action == base::IdleAction::block) {
        cq.wait_obj = FI_WAIT_FD;
        if (fi_cq_open(domain_, &cq, &cq_, nullptr) == 0 && fi_control(&cq_->fid, FI_GETWAIT, &wait_fd_) != 0) wait_fd_ = -1;
        if (!cq_) cq.wait_obj = FI_WAIT_NONE;
    }
    if (!cq_)
        if (Status s = check(fi_cq_open(domain_, &cq, &cq_, nullptr), "fi_cq_open"); s != Status::ok) return s;
    if (Status s = check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint"); s != Status::ok) return s;
    if (Status s = check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)"); s != Status::ok) return s;
    if (Status s = check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)"); s != Status::ok) return s;
    if (provider_ == "shm") {
        // shm's region is a file in /dev/shm named after the endpoint:
        // named in the job's space, so the launcher (or an aborting rank)
        // removes it if this rank ends without closing the endpoint.
        const std::string name = "/sluice." + setup().job_id + ".ofi." + std::to_string(setup().rank);
        if (Status s = check(fi_setname(&ep_->fid, const_cast<char *>(name.c_str()), name.size() + 1), "fi_setname");
            s != Status::ok)
            return s;
        setup().bootstrap->cleanup_register_job("/sluice." + setup().job_id + ".");
        setup().bootstrap->cleanup_register(name);
    }
    if (Status s = check(fi_enable(ep_), "fi_enable"); s != Status::ok) return s;
    min_free_ = eager_limit_ + head_room;
    // libfabric 1.17's shm and sockets stop filling a multi-receive buffer
    // but never report it (FI_MULTI_RECV).  Where receives complete in
    // order, the conduit tells a released buffer by the bytes left in it
    // and by messages landing in the next one; elsewhere (tcp;ofi_rxm
    // completes a rendezvous message after later ones) only the flag says
    // that nothing more will land.
    in_order_receives_ = (info_->rx_attr->comp_order & FI_ORDER_STRICT) == FI_ORDER_STRICT;
    // Multi-receive only where a released buffer can be told: the rxm
    // providers report it, in-order ones are inferred.  Others (udp;ofi_rxd,
    // which does neither) get a ring of buffers of one message each.
    const std::string &recv_mode = base::knob_string(knob(Knob::OFI_RECV_MODE));  // auto, multi or ring
    multi_recv_ = recv_mode == "multi" || (recv_mode != "ring" && (in_order_receives_ || provider_.ends_with(";ofi_rxm")));
    if (!multi_recv_) return Status::ok;
    return check(fi_setopt(&ep_->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min_free_, sizeof min_free_),
                 "fi_setopt(FI_OPT_MIN_MULTI_RECV)");
}

// SLUICE_OFI_CONNECT: every rank greets every other and waits for each
// answer and each greeting, so that a provider which connects peers on
// first contact (rxd: a request to send, then the data once the peer
// has answered it, both moved by the sender's progress) has done so
// while all ranks poll.  Without it, a rank that sends its first message
// to a peer and then computes without polling leaves that message
// half-sent.  The greetings are control messages, outside the order of AMs.
Status OfiTransport::connect_peers() {
    const bool on = base::knob_switch(knob(Knob::OFI_CONNECT), provider_.ends_with(";ofi_rxd"));
    const Rank n = setup().size, me = setup().rank;
    if (!on || n == 1) return Status::ok;
    const std::uint64_t deadline = base::now_ns() + static_cast<std::uint64_t>(peer_timeout_s_ * 1e9);
    Guard g(*this);
    for (Rank r = 0; r < n; ++r)
        if (r != me) peer(r).greet_owed = true;
    for (;;) {
        Rank missing = n;
        for (Rank r = 0; r < n; ++r) {
            if (r == me) continue;
            Peer &o = peer(r);
            if (o.greet_owed) control_send(r, category_greet);
            if (o.answer_owed) control_send(r, category_greet_answer);
            if (missing == n && !(o.greeted && o.greet_answered && !o.answer_owed)) missing = r;
        }
        if (missing == n) return Status::ok;
        if (base::now_ns() > deadline) {
            const bool answered = peer(missing).greet_answered;
            return base::report(Status::transport, "ofi conduit init",
                                "check that every rank started, reaches this one over the provider and has the same "
                                "SLUICE_OFI_CONNECT",
                                "rank %u (over %s, domain %s) has %s within %.1f s (SLUICE_OFI_PEER_TIMEOUT=%g)", missing,
                                provider_.c_str(), domain_name_.c_str(),
                                answered ? "answered this rank's greeting but sent none" : "not answered this rank's greeting",
                                peer_timeout_s_, peer_timeout_s_);
        }
        reap();
    }
}

Status OfiTransport::exchange_addresses() {
    const char *op = "ofi conduit init";
    AddressRecord mine{};
    std::snprintf(mine.provider, sizeof mine.provider, "%s", provider_.c_str());
    std::size_t length = sizeof mine.name;
    if (int r = fi_getname(&ep_->fid, mine.name, &length); r != 0)
        return base::report(Status::transport, op, nullptr, "provider %s: fi_getname: %s (%zu bytes)", provider_.c_str(),
                            fab().strerror(-r), length);
    mine.name_length = static_cast<std::uint32_t>(length);
    std::vector<std::string> all;
    if (Status s = common::allgather_records(setup(), "ofi", "an address", &mine, sizeof mine, all); s != Status::ok)
        return s;
    const Rank n = setup().size;
    std::vector<std::uint8_t> names;
    for (Rank r = 0; r < n; ++r) {
        AddressRecord theirs{};
        std::memcpy(&theirs, all[r].data(), sizeof theirs);
        theirs.provider[sizeof theirs.provider - 1] = 0;
        if (provider_ != theirs.provider)
            return base::report(Status::state, op, "set SLUICE_OFI_PROVIDER to the same provider on every rank",
                                "this rank uses provider %s, rank %u uses %s", provider_.c_str(), r, theirs.provider);
        if (theirs.name_length != mine.name_length)
            return base::report(Status::state, op, "set SLUICE_OFI_PROVIDER and SLUICE_OFI_DOMAIN alike on every rank",
                                "rank %u's address is %u bytes, mine %u", r, theirs.name_length, mine.name_length);
        names.insert(names.end(), theirs.name, theirs.name + theirs.name_length);
    }
    addr_.assign(n, FI_ADDR_NOTAVAIL);
    const int inserted = fi_av_insert(av_, names.data(), n, addr_.data(), 0, nullptr);
    if (inserted != static_cast<int>(n))
        return base::report(Status::transport, op, "check that every rank reaches the others over this provider",
                            "fi_av_insert took %d of %u addresses (%s)", inserted, n,
                            inserted < 0 ? fab().strerror(-inserted) : "some refused");
    peer_key_.assign(n, 0);
    peers_.reset(n);
    liveness_setup(n, peer_timeout_s_, "SLUICE_OFI_PEER_TIMEOUT");
    return Status::ok;
}

Status OfiTransport::register_raw(void *base, std::size_t size, std::uint64_t access, std::uint64_t key, fid_mr *&mr,
                                  const char *what) {
    // Without FI_MR_VIRT_ADDR a remote address is the offset into the
    // registration (offset 0 at its start); with it the provider ignores this.
    const std::uint64_t offset = 0;
    // Keys the provider does not pick are unique in this process; when the
    // conduit only pretends the provider picks them, it still hands the
    // provider unique ones, and reads the key back like a real one.
    if (mr_.prov_key && !mr_.real_prov_key) key = next_key_++;
    int r = fi_mr_reg(domain_, base, size, access, offset, mr_.real_prov_key ? 0 : key, 0, &mr, nullptr);
    if (r == 0 && mr_.real_endpoint) {
        r = fi_mr_bind(mr, &ep_->fid, 0);
        if (r == 0) r = fi_mr_enable(mr);
    }
    if (r == 0) return Status::ok;
    if (mr) fi_close(&mr->fid);
    mr = nullptr;
    return base::report(Status::resource, "register memory", "check the locked-memory limit (ulimit -l)",
                        "ofi (%s): cannot register %zu bytes at %p for %s: %s", provider_.c_str(), size, base, what,
                        fab().strerror(-r));
}

Status OfiTransport::buffers_create() {
    const std::size_t slot = eager_limit_ + head_room;
    const std::size_t count = static_cast<std::size_t>(base::knob_int(knob(Knob::OFI_SEND_BUFFERS)));
    send_bytes_ = std::make_unique<std::byte[]>(slot * count);
    send_.assign(count, SendBuffer{});
    if (mr_.local) {
        if (Status s = register_raw(send_bytes_.get(), slot * count, FI_SEND, next_key_++, send_mr_, "send buffers");
            s != Status::ok)
            return s;
    }
    for (std::size_t i = 0; i < count; ++i) {
        send_[i].tag = Tag::send;
        send_[i].bytes = send_bytes_.get() + i * slot;
    }
    send_free_.fill(send_.data(), count);
    std::size_t recv_size = std::max(base::knob_size(knob(Knob::OFI_RECV_BUFFER_SIZE)), 4 * slot);
    std::size_t recv_count = static_cast<std::size_t>(base::knob_int(knob(Knob::OFI_RECV_BUFFERS)));
    if (!multi_recv_) {
        // The same memory as buffers of one message each.
        recv_count *= recv_size / slot;
        recv_size = slot;
    }
    Guard g(*this);
    for (std::size_t i = 0; i < recv_count; ++i) {
        auto b = std::make_unique<RecvBuffer>();
        b->tag = Tag::recv;
        b->size = recv_size;
        void *p = ::mmap(nullptr, recv_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return base::report(Status::resource, "ofi conduit init", "lower SLUICE_OFI_RECV_BUFFER_SIZE",
                                "cannot map a receive buffer of %zu bytes: %s", recv_size, std::strerror(errno));
        b->bytes = static_cast<std::byte *>(p);
        if (mr_.local) {
            if (Status s = register_raw(p, recv_size, FI_RECV, next_key_++, b->mr, "receive buffers"); s != Status::ok) {
                ::munmap(p, recv_size);
                return s;
            }
        }
        recv_.push_back(std::move(b));
        repost(recv_.back().get());
        if (!recv_.back()->posted) return Status::transport;  // reported
    }
    return Status::ok;
}

Status OfiTransport::segment_connected(const std::vector<SegmentRecord> &all) {
    if (setup().rank < peer_key_.size() && own_key(all, peer_key_[setup().rank])) {
        atomic_base_.resize(setup().size, 0);
        atomic_base_[setup().rank] = segment_base_;
    }
    return Status::ok;
}

Status OfiTransport::mem_register_impl(void *base, std::size_t size, std::uint64_t requested_key,
                                       std::uint64_t &handle, std::string &rkey) {
    fid_mr *mr = nullptr;
    Status s;
    {
        Guard g(*this);
        s = register_raw(base, size, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV,
                         requested_key ? requested_key : next_key_++, mr, "RDMA");
    }
    if (s != Status::ok) return s;
    handle = reinterpret_cast<std::uint64_t>(mr);
    const std::uint64_t key = fi_mr_key(mr);
    rkey.assign(reinterpret_cast<const char *>(&key), sizeof key);
    return Status::ok;
}

void OfiTransport::mem_deregister_impl(std::uint64_t handle) {
    if (!handle) return;
    Guard g(*this);
    fi_close(&reinterpret_cast<fid_mr *>(handle)->fid);
}

Status OfiTransport::key_unpack_impl(Rank peer, std::uint64_t base, std::uint64_t size, const std::string &rkey) {
    if (size == 0) return Status::ok;
    if (rkey.size() != sizeof(std::uint64_t))
        return base::report(Status::state, "segment_attach (ofi)", "run the same Sluice build on every rank",
                            "rank %u published an ofi key of %zu bytes", peer, rkey.size());
    std::memcpy(&peer_key_[peer], rkey.data(), sizeof(std::uint64_t));
    if (atomic_base_.size() <= peer) atomic_base_.resize(setup().size, 0);
    atomic_base_[peer] = base;
    return Status::ok;
}

std::string OfiTransport::receive_sleeps_on() const {
    return wait_fd_ >= 0 ? "the completion queue's descriptor" : "a timer: the provider has no wait descriptor";
}

void OfiTransport::fini_impl() {
    receive_thread_stop();
    stats_report();
    close_all();
}

// The process ends without fini: the shm provider's region is a named
// file in /dev/shm, unlinked when its endpoint closes, which _exit would
// leave.  Only if no thread is inside the conduit; the lock is kept, so
// none enters it again before the process is gone.
void OfiTransport::exit_release_impl() {
    if (common::in_conduit_lock || !lock_.try_lock()) return;
    if (ep_) fi_close(&ep_->fid);
}

void OfiTransport::close_all() {
    // The endpoint first: nothing lands in buffers being freed.
    if (ep_) fi_close(&ep_->fid);
    ep_ = nullptr;
    for (auto &b : recv_) {
        if (b->mr) fi_close(&b->mr->fid);
        ::munmap(b->bytes, b->size);
    }
    recv_.clear();
    posted_.clear();
    ready_.clear();
    peers_.clear();
    life_.clear();
    if (atomic_mr_) fi_close(&atomic_mr_->fid);
    atomic_mr_ = nullptr;
    atomic_.clear();
    if (send_mr_) fi_close(&send_mr_->fid);
    send_mr_ = nullptr;
    send_free_.clear();
    send_.clear();
    send_bytes_.reset();
    if (cq_) fi_close(&cq_->fid);
    cq_ = nullptr;
    if (av_) fi_close(&av_->fid);
    av_ = nullptr;
    if (domain_) fi_close(&domain_->fid);
    domain_ = nullptr;
    if (fabric_) fi_close(&fabric_->fid);
    fabric_ = nullptr;
    if (info_) fab().freeinfo(info_);
    info_ = nullptr;
    own_segment_.release();
}

bool OfiTransport::stats_wanted() const { return base::knob_bool(knob(Knob::OFI_STATS)); }

void OfiTransport::stats_print() {
    common::stats_line(setup().rank, "ofi", provider_, counters_, receive_wakeups(), "");
}

// The conduit's posted buffers, and under ofi_rxm the provider's own:
// FI_OFI_RXM_MSG_RX_SIZE buffers of FI_OFI_RXM_BUFFER_SIZE, once with a
// shared receive context, else on each connection (at most one per peer).
std::size_t OfiTransport::receive_buffer_bytes_impl() {
    std::size_t n = 0;
    for (const auto &b : recv_) n += b->size;
    if (provider_.ends_with(";ofi_rxm")) {
        auto number = [](const char *name, std::size_t fallback) {
            const char *v = std::getenv(name);
            std::size_t x = 0;
            return v && base::parse_size(v, x) ? x : fallback;
        };
        const char *srx = std::getenv("FI_OFI_RXM_USE_SRX");
        const bool shared = srx && (!std::strcmp(srx, "1") || !strcasecmp(srx, "on") || !strcasecmp(srx, "yes") ||
                                    !strcasecmp(srx, "true"));
        const std::size_t buffers =
            number("FI_OFI_RXM_MSG_RX_SIZE", shared ? rxm_shared_default : rxm_per_connection_default);
        const std::size_t bytes = buffers * number("FI_OFI_RXM_BUFFER_SIZE", rxm_buffer_default);
        n += shared ? bytes : bytes * (setup().size - 1);
    }
    return n;
}

} // namespace detail

std::unique_ptr<Transport> make_ofi_transport() { return std::make_unique<detail::OfiTransport>(); }

std::string probe() {
    std::string why;
    fi_info *list = detail::query(base::knob_string(knob(Knob::OFI_PROVIDER)), why);
    if (!list) return why;
    fab().freeinfo(list);
    return "";
}

std::string limits() {
    std::string why;
    const std::string &wanted = base::knob_string(knob(Knob::OFI_PROVIDER));
    fi_info *list = detail::query(wanted, why);
    if (!list) return "  ofi provider            none: " + why + "\n";
    const fi_info *pick = detail::choose(list, base::knob_string(knob(Knob::OFI_DOMAIN)), true);
    std::string out;
    if (pick) {
        char line[256];
        std::snprintf(line, sizeof line, "  ofi provider            %s (domain %s on one host), inject %zu bytes\n",
                      pick->fabric_attr->prov_name, pick->domain_attr->name ? pick->domain_attr->name : "?",
                      pick->tx_attr->inject_size);
        out = line;
    }
    fab().freeinfo(list);
    return out;
}

} // namespace sluice::conduit::ofi
