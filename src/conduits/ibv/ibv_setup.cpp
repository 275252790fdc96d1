// src/conduits/ibv/ibv_setup.cpp - the ibv conduit's set-up and tear-down:
// which HCA port (GASNet-EX's port selection), the protection domain,
// completion queues (SLUICE_NETWORKDEPTH_TOTAL), shared receive queue and
// one RC queue pair per peer (GASNet-EX's static connections), finalize
// and the counters.  memory.cpp has the buffers and registrations.
#include "conduits/ibv/ibv.hpp"
#include "conduits/ibv/ibv_transport.hpp"
#include "conduits/common/pin_limit.hpp"
#include "core/topology.hpp"

#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "base/status.hpp"
#include "credit/knobs.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace sluice::conduit::ibv {

namespace detail {
namespace {

// One entry of SLUICE_IBV_PORTS: an HCA and the ports wanted (none: all).
struct PortSpec {
    std::string device;
    std::vector<unsigned> ports;
};

// GASNet-EX's syntax: HCA[:PORT[,PORT...]] joined by '+'.  False and `why`
// set when malformed.
bool ports_parse(const std::string &text, std::vector<PortSpec> &out, std::string &why) {
    out.clear();
    if (text.empty()) return true;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t plus = std::min(text.find('+', at), text.size());
        const std::string item = text.substr(at, plus - at);
        const std::size_t colon = item.find(':');
        PortSpec s;
        s.device = item.substr(0, colon);
        if (s.device.empty()) {
            why = "an empty HCA name in '" + text + "'";
            return false;
        }
        if (colon != std::string::npos) {
            const std::string list = item.substr(colon + 1);
            std::size_t p = 0;
            while (p <= list.size()) {
                const std::size_t comma = std::min(list.find(',', p), list.size());
                const std::string number = list.substr(p, comma - p);
                char *end = nullptr;
                const unsigned long port = std::strtoul(number.c_str(), &end, 10);
                if (number.empty() || *end || port < 1 || port > 255) {
                    why = "port '" + number + "' of " + s.device + " is not a port number (1-255)";
                    return false;
                }
                s.ports.push_back(static_cast<unsigned>(port));
                p = comma + 1;
            }
        }
        out.push_back(std::move(s));
        at = plus + 1;
    }
    return true;
}

// The socket this process is bound within, as hwloc reads the machine
// (core/topology.hpp; HWLOC_XMLFILE may name another), or, without hwloc,
// sysfs: every CPU of its affinity mask in one physical package.  -1:
// unbound, bound across sockets, or unknown.
int bound_socket() {
    if (core::topology::here().known) return core::topology::package();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int socket = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set)) continue;
        char path[96];
        std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
        std::FILE *f = std::fopen(path, "r");
        int id = -1;
        if (f) {
            if (std::fscanf(f, "%d", &id) != 1) id = -1;
            std::fclose(f);
        }
        if (id < 0 || (socket >= 0 && id != socket)) return -1;
        socket = id;
    }
    return socket;
}

// Whether `rank` is in `list`: ranks and ranges ("0,2-4,6"); empty and
// "*" list every rank.  False when the list does not parse.
bool rank_in_list(const std::string &list, Rank rank, bool &in) {
    in = list.empty() || list == "*";
    for (std::size_t at = 0; !in && at <= list.size();) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, comma - at);
        char *end = nullptr;
        const unsigned long low = std::strtoul(item.c_str(), &end, 10);
        unsigned long high = low;
        if (end == item.c_str()) return false;
        if (*end == '-') {
            const char *from = end + 1;
            high = std::strtoul(from, &end, 10);
            if (end == from || high < low) return false;
        }
        if (*end) return false;
        in = rank >= low && rank <= high;
        at = comma + 1;
    }
    return true;
}

// GASNet-EX's topology-aware family: SLUICE_IBV_PORTS_<socket> for a rank
// bound within that socket, when set; else SLUICE_IBV_PORTS.
struct PortsSetting {
    std::string name, value;
};
// The machine's topology (hwloc: a whole load, PCI devices included) is
// read only when some SLUICE_IBV_PORTS_<n> is set: every job with ibv
// compiled in probes it.
PortsSetting ports_setting() {
    if (const int socket = base::knob_family_any(knob(Knob::IBV_PORTS_n)) ? bound_socket() : -1; socket >= 0) {
        std::string v = base::knob_family_string(knob(Knob::IBV_PORTS_n), static_cast<unsigned>(socket));
        if (!v.empty()) return {"SLUICE_IBV_PORTS_" + std::to_string(socket), v};
    }
    return {"SLUICE_IBV_PORTS", base::knob_string(knob(Knob::IBV_PORTS))};
}

bool selected(const std::vector<PortSpec> &specs, const std::string &device, unsigned port) {
    if (specs.empty()) return true;
    for (const PortSpec &s : specs)
        if (s.device == device && (s.ports.empty() || std::find(s.ports.begin(), s.ports.end(), port) != s.ports.end()))
            return true;
    return false;
}

// Every port of every HCA here, with whether SLUICE_IBV_PORTS selects it;
// `ignored` lists the knob's entries that match nothing here.  False and
// `why` set when the knob is malformed or there is no device.
bool port_list(std::vector<PortInfo> &out, std::string &why, std::string &ignored) {
    out.clear();
    std::vector<PortSpec> specs;
    const PortsSetting setting = ports_setting();
    if (!ports_parse(setting.value, specs, why)) {
        why = setting.name + ": " + why;
        return false;
    }
    int count = 0;
    ibv_device **list = ibv_get_device_list(&count);
    if (!list) {
        why = std::string("no InfiniBand or RoCE device here (ibv_get_device_list: ") + std::strerror(errno) + ")";
        return false;
    }
    for (int i = 0; i < count; ++i) {
        const std::string name = ibv_get_device_name(list[i]);
        ibv_context *ctx = ibv_open_device(list[i]);
        if (!ctx) continue;
        ibv_device_attr attr{};
        if (ibv_query_device(ctx, &attr) == 0)
            for (unsigned p = 1; p <= attr.phys_port_cnt; ++p) {
                PortInfo info;
                info.device = name;
                info.port = static_cast<std::uint8_t>(p);
                if (ibv_query_port(ctx, info.port, &info.attr) != 0) continue;
                info.active = info.attr.state == IBV_PORT_ACTIVE;
                info.selected = selected(specs, name, p);
                info.named = std::any_of(specs.begin(), specs.end(), [&](const PortSpec &s) {
                    return s.device == name && std::find(s.ports.begin(), s.ports.end(), p) != s.ports.end();
                });
                out.push_back(info);
            }
        ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    // GASNet-EX's filter: entries naming an HCA or port that is not here
    // are ignored (one setting can serve nodes of several kinds); they are
    // named in `ignored`, and in the error when nothing is left.
    ignored.clear();
    for (const PortSpec &s : specs) {
        const auto found = [&](unsigned port) {
            return std::any_of(out.begin(), out.end(),
                               [&](const PortInfo &p) { return p.device == s.device && (port == 0 || p.port == port); });
        };
        if (!found(0)) ignored += (ignored.empty() ? "" : ", ") + s.device;
        for (unsigned port : s.ports)
            if (found(0) && !found(port)) ignored += (ignored.empty() ? "" : ", ") + s.device + ":" + std::to_string(port);
    }
    if (out.empty()) why = "no InfiniBand or RoCE device here (ibv_get_device_list found none)";
    return !out.empty();
}

// GASNet-EX's rails: on each HCA in the order found, the active ports
// SLUICE_IBV_PORTS names for it, else the first active port it selects;
// on at most max_hcas HCAs (`dropped` names the others); then
// SLUICE_NUM_QPS of them, the ports again in turn when it is more.  Empty,
// with `why`, when no active port is selected.
std::vector<PortInfo> rails_choose(const std::vector<PortInfo> &ports, const std::string &ignored, std::string &why,
                                   std::string &dropped) {
    std::vector<PortInfo> rails;
    std::vector<std::string> hcas;
    dropped.clear();
    for (const PortInfo &p : ports) {
        if (!p.active || !p.selected) continue;
        const bool known = std::find(hcas.begin(), hcas.end(), p.device) != hcas.end();
        if (!known && hcas.size() == max_hcas) {
            if (dropped.find(p.device) == std::string::npos) dropped += (dropped.empty() ? "" : ", ") + p.device;
            continue;
        }
        if (known && !p.named) continue;  // its HCA's first active port is in already
        if (!known) hcas.push_back(p.device);
        rails.push_back(p);
    }
    if (const auto n = static_cast<std::size_t>(base::knob_int(knob(Knob::NUM_QPS))); n && !rails.empty()) {
        const std::vector<PortInfo> ports_chosen = rails;
        rails.clear();
        for (std::size_t i = 0; i < n; ++i) rails.push_back(ports_chosen[i % ports_chosen.size()]);
    }
    if (!rails.empty()) return rails;
    std::string here;
    for (const PortInfo &p : ports)
        here += (here.empty() ? "" : ", ") + p.device + ":" + std::to_string(p.port) + (p.active ? "" : " (down)");
    why = "no active port";
    if (const PortsSetting setting = ports_setting(); !setting.value.empty())
        why += " among those " + setting.name + "=" + setting.value + " selects";
    if (!ignored.empty()) why += " (it names " + ignored + ", not here)";
    why += "; ports here: " + (here.empty() ? std::string("none") : here);
    return rails;
}

const char *mtu_text(ibv_mtu m) {
    switch (m) {
    case IBV_MTU_256: return "256";
    case IBV_MTU_512: return "512";
    case IBV_MTU_1024: return "1024";
    case IBV_MTU_2048: return "2048";
    case IBV_MTU_4096: return "4096";
    }
    return "?";
}

} // namespace

IbvTransport::IbvTransport() : RdmaConduit("ibv", Capabilities{}) {}

IbvTransport::~IbvTransport() { close_all(); }

// Peers write and read the segment; where the HCA has atomics they may
// apply them too (NIC atomics, atomics.cpp).
int IbvTransport::remote_access(unsigned hca) const {
    const int rdma = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    return hcas_[hca].attr.atomic_cap == IBV_ATOMIC_NONE ? rdma : rdma | IBV_ACCESS_REMOTE_ATOMIC;
}

Status IbvTransport::init_impl() {
    buffer_size_ = base::knob_size(knob(Knob::IBV_BUFFER_SIZE));
    std::size_t packed = base::knob_size(knob(Knob::PACKEDLONG_LIMIT));
    if (packed == 0 || packed > buffer_size_) packed = buffer_size_;
    send_depth_ = static_cast<unsigned>(base::knob_int(knob(Knob::IBV_SEND_DEPTH)));
    use_srq_ = base::knob_bool(knob(Knob::USE_SRQ));
    // GASNet-EX's receive-thread poll modes mean nothing without the thread.
    exclusive_ = base::knob_bool(base::Knob::RCV_THREAD) &&
                 base::knob_string(knob(Knob::RCV_THREAD_POLL_MODE)) == "exclusive";
    if (Status s = open_port(); s != Status::ok) return s;
    if (Status s = atomics_setup(); s != Status::ok) return s;
    std::size_t local = 0;
    for (std::uint32_t h : setup().host_of) local += h == setup().host_of[setup().rank];
    if (Status s = pin_.init("ibv", local,
                             [&](void *p, std::size_t n) {
                                 ibv_mr *mr = ibv_reg_mr(hcas_[0].pd, p, n, IBV_ACCESS_LOCAL_WRITE);
                                 return mr && ibv_dereg_mr(mr) == 0;
                             });
        s != Status::ok)
        return s;
    Capabilities &c = capabilities_mutable();
    c.max_medium = buffer_size_;
    c.max_long = std::numeric_limits<std::size_t>::max();
    c.max_packed_long = packed;
    c.native_rma = true;
    c.remote_completion = true;   // put_rc: the write, then the header on the same queue pair
    c.needs_registration = true;  // every local buffer needs an lkey
    c.remote_keys = true;
    c.remote_offsets = false;     // remote virtual addresses
    c.provider_keys = true;
    c.key_per_endpoint = false;
    c.needs_credits = true;       // receive buffers are a fixed number
    c.inline_limit = inline_limit_;
    // Half the buffers for requests (what credits bound), half for the
    // replies to this rank's own.
    if (use_srq_) c.request_slots = recv_count_ / 2;
    else c.request_slots_per_peer = recv_per_peer_ / 2;
    if (Status s = buffers_create(); s != Status::ok) return s;
    if (Status s = connect_all(); s != Status::ok) return s;
    if (Status s = regions_check(local); s != Status::ok) return s;
    const PortsSetting setting = ports_setting();
    const PortInfo &first = rails_[0].port;
    std::string more;
    for (unsigned k = 1; k < rails_.size(); ++k) more += ", " + rail_name(k);
    base::say("ibv: %s port %u%s (%s, MTU %s%s%s), %s of %zu receive buffers, inline %zu bytes, Medium %zu bytes, "
              "packed Long %zu bytes; P_Key index %u, QP timeout %u, retry count %u",
              first.device.c_str(), first.port, more.c_str(),
              first.attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", mtu_text(rails_[0].mtu),
              setting.value.empty() ? "" : ", chosen by ", setting.value.empty() ? "" : setting.name.c_str(),
              use_srq_ ? (hcas_.size() > 1 ? "an SRQ per HCA" : "an SRQ") : "per-peer queues", recv_count_,
              inline_limit_, buffer_size_, packed, rails_[0].pkey_index, qp_timeout_, qp_retries_);
    if (rails_.size() > 1)
        base::say("ibv: %zu rails (SLUICE_NUM_QPS=%lld) on %zu HCA(s): AMs to a peer on one rail, RDMA of %zu bytes or "
                  "more striped over all%s",
                  rails_.size(), static_cast<long long>(base::knob_int(knob(Knob::NUM_QPS))), hcas_.size(), stripe_min_,
                  fenced_puts_ ? ", Puts fenced (SLUICE_USE_FENCED_PUTS)" : "");
    return Status::ok;
}

std::string IbvTransport::rail_name(unsigned rail) const {
    return rails_[rail].port.device + ":" + std::to_string(rails_[rail].port.port);
}

// The queue pairs' path settings, GASNet-EX's ibv knobs: the MTU
// (SLUICE_MAX_MTU: the lesser of it and the port's active MTU; 0 and -1,
// the port's), the partition (SLUICE_IBV_PKEY: its index in each rail's
// port's table; unset, index 0), the transport timeout and retries
// (SLUICE_QP_TIMEOUT, SLUICE_QP_RETRY_COUNT: an HCA waits 4.096 us x
// 2^timeout for an acknowledgement, and gives up after that many
// retransmissions).
Status IbvTransport::rails_path() {
    const char *op = "ibv conduit init";
    const long long max_mtu = base::knob_int(knob(Knob::MAX_MTU));
    ibv_mtu cap = IBV_MTU_4096;
    if (max_mtu > 0) {
        const long long sizes[] = {256, 512, 1024, 2048, 4096};
        const ibv_mtu enums[] = {IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096};
        std::size_t i = 0;
        while (i < 5 && sizes[i] != max_mtu) ++i;
        if (i == 5)
            return base::report(Status::argument, op, "set SLUICE_MAX_MTU to -1, 0, 256, 512, 1024, 2048 or 4096",
                                "SLUICE_MAX_MTU=%lld is not an InfiniBand MTU", max_mtu);
        cap = enums[i];
    }
    const std::string &pkey_text = base::knob_string(knob(Knob::IBV_PKEY));
    long pkey = -1;
    if (!pkey_text.empty()) {
        char *end = nullptr;
        pkey = std::strtol(pkey_text.c_str(), &end, 0) & 0x7fff;  // the membership bit is ignored
        if (!end || *end || end == pkey_text.c_str() || pkey < 2)
            return base::report(Status::argument, op, "set SLUICE_IBV_PKEY to a partition key from 2 to 0x7fff",
                                "SLUICE_IBV_PKEY=%s is not a partition key", pkey_text.c_str());
    }
    for (Rail &r : rails_) {
        r.mtu = std::min(r.port.attr.active_mtu, cap);
        if (pkey < 0) continue;
        ibv_context *ctx = hcas_[r.hca].ctx;
        std::string table;
        bool found = false;
        for (int i = 0; i < r.port.attr.pkey_tbl_len && !found; ++i) {
            __be16 raw = 0;
            if (ibv_query_pkey(ctx, r.port.port, i, &raw) != 0) continue;
            const unsigned value = be16toh(raw) & 0x7fffu;
            char hex[16];
            std::snprintf(hex, sizeof hex, "%s0x%04x", table.empty() ? "" : ", ", value);
            table += hex;
            if (value == static_cast<unsigned>(pkey)) {
                r.pkey_index = static_cast<std::uint16_t>(i);
                found = true;
            }
        }
        if (!found)
            return base::report(Status::transport, op, "set SLUICE_IBV_PKEY to a partition key of the port's table",
                                "ibv: SLUICE_IBV_PKEY=%s (0x%04lx) is not in %s port %u's partition table (%s)",
                                pkey_text.c_str(), pkey, r.port.device.c_str(), r.port.port,
                                table.empty() ? "empty" : table.c_str());
    }
    qp_timeout_ = static_cast<std::uint8_t>(base::knob_int(knob(Knob::QP_TIMEOUT)));
    qp_retries_ = static_cast<std::uint8_t>(base::knob_int(knob(Knob::QP_RETRY_COUNT)));
    return Status::ok;
}

// GASNet-EX's HCA and port selection and multi-rail: the rails
// rails_choose picks; SLUICE_IBV_LIST_PORTS prints every port, on the
// ranks SLUICE_IBV_LIST_PORTS_NODES lists.
Status IbvTransport::open_port() {
    const char *op = "ibv conduit init";
    std::vector<PortInfo> ports;
    std::string why, ignored, dropped;
    const bool listed = port_list(ports, why, ignored);
    bool lists = false;
    if (!rank_in_list(base::knob_string(knob(Knob::IBV_LIST_PORTS_NODES)), setup().rank, lists))
        return base::report(Status::argument, op, "give SLUICE_IBV_LIST_PORTS_NODES ranks and ranges, as 0,2-4,6, or *",
                            "SLUICE_IBV_LIST_PORTS_NODES=%s is not a list of ranks",
                            base::knob_string(knob(Knob::IBV_LIST_PORTS_NODES)).c_str());
    if (base::knob_bool(knob(Knob::IBV_LIST_PORTS)) && lists) {
        const std::string by = ", selected by " + ports_setting().name;
        for (const PortInfo &p : ports)
            std::fprintf(stderr, "sluice[rank %u] ibv port %s:%u: %s, %s, LID %u%s\n", setup().rank, p.device.c_str(),
                         p.port, p.active ? "active" : "down",
                         p.attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand", p.attr.lid,
                         p.selected ? by.c_str() : ", not selected");
    }
    if (!listed)
        return base::report(Status::transport, op,
                            "set SLUICE_IBV_PORTS to HCAs and ports that ibv_devinfo lists, or use another network "
                            "conduit (SLUICE_NETWORK)",
                            "%s", why.c_str());
    const std::vector<PortInfo> chosen = rails_choose(ports, ignored, why, dropped);
    if (chosen.empty())
        return base::report(Status::transport, op,
                            "set SLUICE_IBV_PORTS to an active port listed here (SLUICE_IBV_LIST_PORTS=1, ibv_devinfo)",
                            "%s", why.c_str());
    if (!ignored.empty())
        base::say("ibv: %s names %s, not here: ignored (a filter)", ports_setting().name.c_str(),
                  ignored.c_str());
    // GASNet-EX's GASNET_IBV_PORTS_VERBOSE: HCAs left out for a reason other
    // than SLUICE_IBV_PORTS are a warning at 1 (rank 0's), silent at 0.
    if (!dropped.empty() && base::knob_int(knob(Knob::IBV_PORTS_VERBOSE)) >= 1 && setup().rank == 0)
        std::fprintf(stderr,
                     "sluice[rank 0] warning: ibv: rails on at most %u HCAs: %s not used (name the HCAs wanted in "
                     "SLUICE_IBV_PORTS; SLUICE_IBV_PORTS_VERBOSE=0 silences this)\n",
                     max_hcas, dropped.c_str());
    for (const PortInfo &p : chosen) {
        Rail r;
        r.port = p;
        while (r.hca < hcas_.size() && hcas_[r.hca].name != p.device) ++r.hca;
        if (r.hca == hcas_.size()) {
            hcas_.emplace_back();
            hcas_.back().name = p.device;
            if (Status s = hca_open(hcas_.back()); s != Status::ok) return s;
        }
        if (ibv_query_gid(hcas_[r.hca].ctx, p.port, 0, &r.gid) != 0)
            return fatal(op, setup().rank, "ibv_query_gid failed", errno);
        rails_.push_back(r);
    }
    if (Status s = rails_path(); s != Status::ok) return s;
    for (const Rail &r : rails_)
        if ((r.port.attr.link_layer == IBV_LINK_LAYER_ETHERNET) != (rails_[0].port.attr.link_layer == IBV_LINK_LAYER_ETHERNET))
            return base::report(Status::transport, op, "set SLUICE_IBV_PORTS to ports of one kind",
                                "ibv: rails %s and %s are of different kinds (InfiniBand and RoCE)", rail_name(0).c_str(),
                                r.port.device.c_str());
    fenced_puts_ = hcas_.size() > 1 && base::knob_bool(knob(Knob::USE_FENCED_PUTS));
    stripe_min_ = base::knob_size(knob(Knob::IBV_STRIPE_MIN));
    const ibv_device_attr &attr = hcas_[0].attr;

    std::size_t peers = 0;  // other ranks: the rank itself needs no queue pair
    for (Rank r : setup().peers) peers += r != setup().rank;
    recv_count_ = static_cast<std::size_t>(base::knob_int(knob(Knob::RBUF_COUNT)));
    if (recv_count_ == 0) {
        // As src/am sizes credits: a min_credits-th of the largest request.
        std::vector<std::string> notes;
        const credit::Config cc = credit::config_from_knobs(setup().size, setup().rank,
                                                            16 + 4 * common::packed_max_args + buffer_size_, notes);
        recv_count_ = std::clamp<std::size_t>(2 * cc.total_credits(), 64, 65536);
    }
    for (const Hca &h : hcas_)
        if (use_srq_ && h.attr.max_srq == 0) {
            base::say("ibv: %s has no shared receive queues; per-peer receive buffers instead", h.name.c_str());
            use_srq_ = false;
        }
    if (use_srq_) {
        recv_count_ = std::min<std::size_t>(recv_count_, static_cast<std::size_t>(attr.max_srq_wr));
    } else {
        recv_per_peer_ = static_cast<unsigned>(std::clamp<std::size_t>(recv_count_ / std::max<std::size_t>(1, peers), 16,
                                                                        static_cast<std::size_t>(attr.max_qp_wr)));
        recv_count_ = recv_per_peer_ * peers;
    }
    send_depth_ = std::min<unsigned>(send_depth_, static_cast<unsigned>(attr.max_qp_wr));
    if (Status s = cqs_create(peers); s != Status::ok) return s;
    rma_chunk_ = std::size_t{1} << 30;
    for (const Rail &r : rails_)
        if (r.port.attr.max_msg_sz) rma_chunk_ = std::min<std::size_t>(rma_chunk_, r.port.attr.max_msg_sz);
    if (const std::size_t k = base::knob_size(knob(Knob::IBV_RMA_CHUNK)); k) rma_chunk_ = std::min(rma_chunk_, k);
    capabilities_mutable().rma_piece = rma_chunk_;
    inline_limit_ = base::knob_size(knob(Knob::INLINESEND_LIMIT));
    // GASNet-EX's multi-segment gather needs a second scatter-gather entry.
    gather_min_ = base::knob_int(knob(Knob::AM_GATHER_MIN));
    for (const Hca &h : hcas_)
        if (gather_min_ >= 0 && h.attr.max_sge < 2) {
            base::say("ibv: %s takes one scatter-gather entry per work request: AM payloads are copied "
                      "(SLUICE_AM_GATHER_MIN)", h.name.c_str());
            gather_min_ = -1;
        }
    if (Status s = inline_probe(); s != Status::ok) return s;
    peers_.reset(setup().size);
    peer_rkey_.assign(setup().size, 0);
    liveness_setup(setup().size, std::max(0.1, base::knob_double(knob(Knob::IBV_PEER_TIMEOUT))),
                   "SLUICE_IBV_PEER_TIMEOUT");
    connected_ = std::make_unique<std::atomic<bool>[]>(setup().size);
    Guard g(*this);
    up_ = true;
    return Status::ok;
}

// Each HCA's completion queues: one for the receives (its SRQ's buffers,
// or its rails' share of the per-peer ones), one for the sends of its
// rails' queue pairs (and, on rail 0's, the pair carrying this rank's
// atomics on its own words), as deep as SLUICE_NETWORKDEPTH_TOTAL lets
// them fill (GASNet-EX: min(NETWORKDEPTH_TOTAL, NETWORKDEPTH_PP x peers));
// 0 or more than that: as deep as the HCAs' queues allow.  With
// SLUICE_RCV_THREAD the receive queues get a completion channel.
Status IbvTransport::cqs_create(std::size_t peers) {
    const char *op = "ibv conduit init";
    std::vector<std::size_t> most(hcas_.size());  // each HCA's sends in flight at most
    std::size_t all = 0, limit = SIZE_MAX;
    for (unsigned h = 0; h < hcas_.size(); ++h) {
        const auto on_it = static_cast<std::size_t>(
            std::count_if(rails_.begin(), rails_.end(), [&](const Rail &r) { return r.hca == h; }));
        most[h] = std::size_t{send_depth_} * (peers * on_it + (h == 0 ? 2 : 0));
        all += most[h];
        const auto cqe = static_cast<std::size_t>(std::max(hcas_[h].attr.max_cqe, 65));
        if (most[h] + 64 > cqe) limit = std::min(limit, cqe - 64);
    }
    limit = std::min(limit, all);
    const auto wanted = static_cast<std::size_t>(base::knob_int(knob(Knob::NETWORKDEPTH_TOTAL)));
    total_depth_ = static_cast<unsigned>(wanted == 0 ? limit : std::min(wanted, limit));
    if (wanted > limit)
        base::say("ibv: SLUICE_NETWORKDEPTH_TOTAL=%zu is more than the queue pairs and completion queues take: %u",
                  wanted, total_depth_);
    for (unsigned h = 0; h < hcas_.size(); ++h) {
        Hca &hca = hcas_[h];
        const std::size_t recv_cqe = recv_count_ + 64;
        if (recv_cqe > static_cast<std::size_t>(hca.attr.max_cqe))
            return base::report(Status::resource, op, "lower SLUICE_RBUF_COUNT",
                                "ibv: %s: a receive completion queue of %zu entries is needed (%zu receive buffers), "
                                "the HCA allows %d",
                                hca.name.c_str(), recv_cqe, recv_count_, hca.attr.max_cqe);
        // The receive CQ's channel: the receive thread's (SLUICE_RCV_THREAD),
        // else a sleeping rank's wake-up in block mode (wake_arm), for the
        // send CQ as well and read without blocking.
        const bool rcv_thread = base::knob_bool(base::Knob::RCV_THREAD);
        hca.channel = ibv_create_comp_channel(hca.ctx);
        if (!hca.channel) return fatal(op, setup().rank, "ibv_create_comp_channel failed", errno);
        if (!rcv_thread) {
            const int flags = ::fcntl(hca.channel->fd, F_GETFL);
            if (flags < 0 || ::fcntl(hca.channel->fd, F_SETFL, flags | O_NONBLOCK) != 0)
                return fatal(op, setup().rank, "making the completion channel non-blocking failed", errno);
            wake_channels_ = true;
        }
        hca.send_cq = ibv_create_cq(hca.ctx, static_cast<int>(std::min<std::size_t>(total_depth_, most[h]) + 64),
                                    nullptr, rcv_thread ? nullptr : hca.channel, 0);
        if (!hca.send_cq) return fatal(op, setup().rank, "ibv_create_cq (sends) failed", errno);
        hca.recv_cq = ibv_create_cq(hca.ctx, static_cast<int>(recv_cqe), nullptr, hca.channel, 0);
        if (!hca.recv_cq) return fatal(op, setup().rank, "ibv_create_cq (receives) failed", errno);
        if (rcv_thread) {
            if (const int r = ibv_req_notify_cq(hca.recv_cq, 0); r != 0)
                return fatal(op, setup().rank, "ibv_req_notify_cq failed (SLUICE_RCV_THREAD)", r);
            receive_thread_want();
        }
        if (use_srq_) {
            ibv_srq_init_attr sa{};
            sa.attr.max_wr = static_cast<std::uint32_t>(recv_count_);
            sa.attr.max_sge = 1;
            hca.srq = ibv_create_srq(hca.pd, &sa);
            if (!hca.srq) return fatal(op, setup().rank, "ibv_create_srq failed", errno);
        }
    }
    base::say("ibv: at most %u work requests in flight over every queue pair (SLUICE_NETWORKDEPTH_TOTAL), %u per "
              "queue pair (SLUICE_IBV_SEND_DEPTH)",
              total_depth_, send_depth_);
    return Status::ok;
}

Status IbvTransport::hca_open(Hca &h) {
    const char *op = "ibv conduit init";
    int count = 0;
    ibv_device **list = ibv_get_device_list(&count);
    for (int i = 0; list && i < count && !h.ctx; ++i)
        if (h.name == ibv_get_device_name(list[i])) h.ctx = ibv_open_device(list[i]);
    if (list) ibv_free_device_list(list);
    if (!h.ctx) return fatal(op, setup().rank, "ibv_open_device failed", errno);
    // Asynchronous events are read while polling (ibv.cpp, async_events).
    if (const int flags = fcntl(h.ctx->async_fd, F_GETFL); flags < 0 || fcntl(h.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) != 0)
        return fatal(op, setup().rank, "making the HCA's asynchronous-event descriptor non-blocking failed", errno);
    if (ibv_query_device(h.ctx, &h.attr) != 0) return fatal(op, setup().rank, "ibv_query_device failed", errno);
    // Reads and atomics outstanding per queue pair: SLUICE_QP_RD_ATOM, at
    // most what the HCA takes as initiator and as target.
    const int device = std::min(h.attr.max_qp_rd_atom, h.attr.max_qp_init_rd_atom);
    const auto wanted = static_cast<int>(base::knob_int(knob(Knob::QP_RD_ATOM)));
    if (device < 1)
        return base::report(Status::resource, op, "use an HCA that serves RDMA reads",
                            "ibv: %s allows no outstanding RDMA reads or atomics per queue pair (max_qp_rd_atom %d, "
                            "max_qp_init_rd_atom %d): Get cannot work",
                            h.name.c_str(), h.attr.max_qp_rd_atom, h.attr.max_qp_init_rd_atom);
    h.rd_atom = static_cast<std::uint8_t>(wanted > 0 ? std::min(wanted, device) : std::min(device, 255));
    h.pd = ibv_alloc_pd(h.ctx);
    if (!h.pd) return fatal(op, setup().rank, "ibv_alloc_pd failed", errno);
    return Status::ok;
}

// The inline data every queue pair gets, settled once at init (queue
// pairs made later, on first use, must not change what sends rely on): a
// queue pair asking for SLUICE_INLINESEND_LIMIT on each HCA, or for none
// when the HCA refuses, keeps what the HCA grants.
Status IbvTransport::inline_probe() {
    for (const Hca &h : hcas_) {
        ibv_qp_init_attr a{};
        a.send_cq = h.send_cq;
        a.recv_cq = h.recv_cq;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = send_depth_;
        a.cap.max_recv_wr = 1;
        a.cap.max_send_sge = gather_min_ >= 0 ? 2 : 1;
        a.cap.max_recv_sge = 1;
        a.cap.max_inline_data = static_cast<std::uint32_t>(inline_limit_);
        ibv_qp *qp = ibv_create_qp(h.pd, &a);
        if (!qp && inline_limit_) {
            a.cap.max_inline_data = 0;
            qp = ibv_create_qp(h.pd, &a);
        }
        if (!qp) return fatal("ibv conduit init", setup().rank, "ibv_create_qp failed (SLUICE_IBV_SEND_DEPTH)", errno);
        inline_limit_ = std::min<std::size_t>(inline_limit_, a.cap.max_inline_data);
        ibv_destroy_qp(qp);
    }
    return Status::ok;
}

// An RC queue pair for `peer` on every rail, moved to INIT, with the
// peer's receive buffers posted on its AM rail (without an SRQ).
Status IbvTransport::qp_create(Rank peer) {
    for (unsigned k = 0; k < rails_.size(); ++k) {
        const bool am = k == am_rail(peer);
        ibv_qp *&qp = this->peer(peer).qp[k];
        if (Status s = qp_new(peer, k, hca_of(k).srq || !am ? 0 : recv_per_peer_, qp); s != Status::ok) return s;
        qp_rail_[qp->qp_num] = {peer, k};
    }
    if (!use_srq_)
        for (unsigned k = 0; k < recv_per_peer_; ++k) repost(&buffers_[recv_first_[peer] + k]);
    return Status::ok;
}

// An RC queue pair on `rail` (for `peer`, named in errors) with room for
// `receives` of its own, moved to INIT.
Status IbvTransport::qp_new(Rank peer, unsigned rail, unsigned receives, ibv_qp *&qp) {
    const char *op = "ibv conduit init";
    const Hca &h = hca_of(rail);
    ibv_qp_init_attr a{};
    a.send_cq = h.send_cq;
    a.recv_cq = h.recv_cq;
    a.srq = h.srq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = send_depth_;
    a.cap.max_recv_wr = receives;
    a.cap.max_send_sge = gather_min_ >= 0 ? 2 : 1;  // the second: a payload gathered in place
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = static_cast<std::uint32_t>(inline_limit_);
    qp = ibv_create_qp(h.pd, &a);
    if (!qp) return fatal(op, peer, "ibv_create_qp failed (SLUICE_IBV_SEND_DEPTH, SLUICE_RBUF_COUNT)", errno);
    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.port_num = rails_[rail].port.port;
    init.pkey_index = rails_[rail].pkey_index;
    init.qp_access_flags = remote_access(rails_[rail].hca);
    if (const int rc = ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS); rc != 0)
        return fatal(op, peer, "moving a queue pair to INIT failed", rc);
    return Status::ok;
}

Status IbvTransport::qp_connect(Rank peer, unsigned rail, const RailAddress &theirs, std::uint32_t qpn) {
    return qp_ready(this->peer(peer).qp[rail], peer, rail, theirs, qpn);
}

// RTR then RTS towards the queue pair `qpn` at `theirs`.  RNR retries
// are endless (7): a message that finds no receive posted waits, it is
// never dropped; the transport retries bound an absent peer.
Status IbvTransport::qp_ready(ibv_qp *qp, Rank peer, unsigned rail, const RailAddress &theirs, std::uint32_t qpn) {
    const char *op = "connect (ibv)";
    const PortInfo &port = rails_[rail].port;
    ibv_qp_attr rtr{};
    rtr.qp_state = IBV_QPS_RTR;
    rtr.path_mtu = std::min(rails_[rail].mtu, static_cast<ibv_mtu>(theirs.mtu));
    rtr.dest_qp_num = qpn;
    rtr.rq_psn = 0;
    rtr.max_dest_rd_atomic = hca_of(rail).rd_atom;
    rtr.min_rnr_timer = 1;
    rtr.ah_attr.dlid = theirs.lid;
    rtr.ah_attr.port_num = port.port;
    if (theirs.global) {
        rtr.ah_attr.is_global = 1;
        rtr.ah_attr.grh.hop_limit = 64;
        std::memcpy(rtr.ah_attr.grh.dgid.raw, theirs.gid, 16);
    }
    if (const int rc = ibv_modify_qp(qp, &rtr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER); rc != 0)
        return fatal(op, peer, "moving the queue pair to RTR failed", rc);
    ibv_qp_attr rts{};
    rts.qp_state = IBV_QPS_RTS;
    rts.timeout = qp_timeout_;
    rts.retry_cnt = qp_retries_;
    rts.rnr_retry = 7;
    rts.sq_psn = 0;
    rts.max_rd_atomic = hca_of(rail).rd_atom;
    if (const int rc = ibv_modify_qp(qp, &rts,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC); rc != 0)
        return fatal(op, peer, "moving the queue pair to RTS failed", rc);
    return Status::ok;
}

Status IbvTransport::key_unpack_impl(Rank peer, std::uint64_t, std::uint64_t size, const std::string &rkey) {
    if (size == 0 || rkey.empty()) return Status::ok;
    std::uint64_t key = 0;
    if (Status s = region_key_unpack_impl(peer, rkey, key); s != Status::ok) return s;
    peer_rkey_[peer] = key;
    return Status::ok;
}

Status IbvTransport::region_key_unpack_impl(Rank peer, const std::string &rkey, std::uint64_t &key) {
    if (rkey.size() != sizeof key)
        return base::report(Status::state, "segment_attach (ibv)", "run the same Sluice build on every rank",
                            "rank %u published an ibv key of %zu bytes", peer, rkey.size());
    std::memcpy(&key, rkey.data(), sizeof key);
    return Status::ok;
}

void IbvTransport::fini_impl() {
    {
        Guard g(*this);
        rcv_polling_.store(false);  // every thread takes arrivals again
    }
    receive_thread_stop();
    conn_thread_.stop();
    if (!hcas_.empty()) connect_file_write();
    stats_report();
    close_all();
}

void IbvTransport::close_all() {
    receive_thread_stop();
    {
        Guard g(*this);
        up_ = false;
    }
    // Queue pairs first: nothing lands in buffers being freed.
    connect_close();
    peers_.each([](Rank, Peer &p) {
        for (ibv_qp *qp : p.qp)
            if (qp) ibv_destroy_qp(qp);
    });
    peers_.clear();
    qp_rail_.clear();
    for (ibv_qp *&qp : loop_qp_) {
        if (qp) ibv_destroy_qp(qp);
        qp = nullptr;
    }
    for (Hca &h : hcas_) {
        if (h.srq) ibv_destroy_srq(h.srq);
        h.srq = nullptr;
    }
    copies_free();
    for (Hca &h : hcas_) {
        mr_release(h.pool_mr);
        mr_release(h.bounce_mr);
    }
    mr_release(atomic_mr_);
    atomic_.clear();
    if (bounce_pool_) ::munmap(bounce_pool_, bounce_pool_bytes_);
    bounce_pool_ = nullptr;
    bounces_.clear();
    bounce_free_.clear();
    if (pool_) ::munmap(pool_, pool_bytes_);
    pool_ = nullptr;
    buffers_.clear();
    send_free_.clear();
    spare_free_.clear();
    for (Hca &h : hcas_) {
        if (h.send_cq) ibv_destroy_cq(h.send_cq);
        if (h.recv_cq) ibv_destroy_cq(h.recv_cq);
        if (h.channel) ibv_destroy_comp_channel(h.channel);
        if (h.pd) ibv_dealloc_pd(h.pd);
        if (h.ctx) ibv_close_device(h.ctx);
    }
    hcas_.clear();
    rails_.clear();
    own_segment_.release();
}

bool IbvTransport::stats_wanted() const { return base::knob_bool(knob(Knob::IBV_STATS)); }

// The layer's counters, then ibv's own (IbvCounters).
void IbvTransport::stats_print() {
    const IbvCounters &c = ibv_counters_;
    std::string extra = "two-part Longs " + std::to_string(c.long_two_part) + " (bounced " +
                        std::to_string(c.long_bounced) + "), ";
    for (unsigned k = 0; k < rails_.size() && rails_.size() > 1; ++k)
        extra += (k ? ", " : "RDMA bytes by rail: ") + std::to_string(k) + " (" + rail_name(k) + ") " +
                 std::to_string(c.rail_bytes[k]);
    if (rails_.size() > 1) extra += ", fenced reads " + std::to_string(c.fences) + ", ";
    extra += "connections: " + std::to_string(c.connect_static) + " at start-up, " + std::to_string(c.connect_asked) +
             " asked, " + std::to_string(c.connect_accepted) + " accepted, " + std::to_string(c.connect_retransmits) +
             " retransmitted requests, " + std::to_string(c.rtu_resent) +
             " RTUs sent again, compare-and-swap retries " + std::to_string(c.atomic_retries) +
             ", posts the HCA refused (send queue full) " + std::to_string(c.hca_full) + ", gathered sends " +
             std::to_string(c.gathered) + ", arrivals in place " + std::to_string(c.in_place) + " (spares " +
             std::to_string(spare_count_) + ", at most " + std::to_string(c.spares_peak) + " in use), copied " +
             std::to_string(c.copied) + ", arrivals taken while the receive thread ran: by it " + std::to_string(c.reaped_thread) +
             ", by other threads " + std::to_string(c.reaped_other) + ", work requests in flight at most " +
             std::to_string(c.depth_peak) + " (SLUICE_NETWORKDEPTH_TOTAL " + std::to_string(total_depth_) +
             ", reached " + std::to_string(c.depth_full) + " times), registered regions at most " +
             std::to_string(regions_peak_.load()) +
             (region_share_ == SIZE_MAX ? std::string() : " (SLUICE_PINNED_REGIONS_MAX: " + std::to_string(region_share_) + ")");
    common::stats_line(setup().rank, "ibv", rail_name(0), counters_, receive_wakeups(), extra);
}

} // namespace detail

std::unique_ptr<Transport> make_ibv_transport() { return std::make_unique<detail::IbvTransport>(); }

std::string probe() {
    std::vector<detail::PortInfo> ports;
    std::string why, ignored, dropped;
    if (!detail::port_list(ports, why, ignored)) return why;
    return detail::rails_choose(ports, ignored, why, dropped).empty() ? why : "";
}

std::string limits() {
    std::vector<detail::PortInfo> ports;
    std::string why, ignored, dropped;
    if (!detail::port_list(ports, why, ignored)) return "  ibv port                none: " + why + "\n";
    const std::vector<detail::PortInfo> rails = detail::rails_choose(ports, ignored, why, dropped);
    if (rails.empty()) return "  ibv port                none: " + why + "\n";
    std::string out;
    for (const detail::PortInfo &p : rails) {
        char line[256];
        std::snprintf(line, sizeof line, "  ibv %s %s:%u (%s, MTU %s, largest message %u bytes)\n",
                      out.empty() ? "port               " : "rail               ", p.device.c_str(), p.port,
                      p.attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand",
                      detail::mtu_text(p.attr.active_mtu), p.attr.max_msg_sz);
        out += line;
    }
    return out;
}

} // namespace sluice::conduit::ibv
