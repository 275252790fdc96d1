// src/conduits/ibv/memory.cpp - the ibv conduit's registered memory: its
// own buffers (AM send, receive and spare buffers, the bounce buffers of
// two-part Longs), and registrations for RDMA (the segment, firehose's
// regions and bounce buffers); each counted, as GASNet-EX's ibv conduit
// counts pinned regions against GASNET_PINNED_REGIONS_MAX: a host's share
// of the HCA's regions (max_mr), divided among its ranks, which firehose's
// pools must fit.  RDMA's bytes count against SLUICE_PHYSMEM_MAX
// (common/pin_limit.hpp).  README.md has the design.
#include "conduits/ibv/ibv_transport.hpp"

#include "base/knobs.hpp"
#include "base/status.hpp"
#include "conduits/common/pin_limit.hpp"
#include "conduits/knobs.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace sluice::conduit::ibv::detail {

// Every registration includes hcas_[0] (rail 0's HCA: the buffers and
// RDMA regions are registered with every HCA, the connection buffers and
// atomic slots with it alone), so its regions are the ones counted.
Status IbvTransport::register_raw(ibv_pd *pd, void *base, std::size_t size, int access, ibv_mr *&mr,
                                  const char *what) {
    const bool counted = pd == hcas_[0].pd;
    if (counted) {
        const std::size_t now = regions_.fetch_add(1) + 1;
        if (now > region_share_) {
            regions_.fetch_sub(1);
            mr = nullptr;
            return base::report(Status::resource, "register memory",
                                "raise SLUICE_PINNED_REGIONS_MAX, or lower SLUICE_FIREHOSE_MAXVICTIM_R",
                                "ibv (%s): registering %zu bytes at %p for %s would make %zu regions, more than the "
                                "%zu this rank may (%s)",
                                pd->context->device->name, size, base, what, now, region_share_, region_how_.c_str());
        }
        std::size_t peak = regions_peak_.load();
        while (now > peak && !regions_peak_.compare_exchange_weak(peak, now)) {
        }
    }
    mr = ibv_reg_mr(pd, base, size, access);
    if (mr) return Status::ok;
    const int e = errno;
    if (counted) regions_.fetch_sub(1);
    return base::report(Status::resource, "register memory",
                        e == ENOMEM ? "raise the locked-memory limit (ulimit -l, or memlock in limits.conf); when the "
                                      "HCA holds no more regions (max_mr), bound them with SLUICE_PINNED_REGIONS_MAX"
                                    : nullptr,
                        "ibv (%s): cannot register %zu bytes at %p for %s: %s", pd->context->device->name, size, base,
                        what, std::strerror(e));
}

void IbvTransport::mr_release(ibv_mr *&mr) {
    if (!mr) return;
    const bool counted = !hcas_.empty() && mr->pd == hcas_[0].pd;
    ibv_dereg_mr(mr);
    mr = nullptr;
    if (counted) regions_.fetch_sub(1);
}

// Maps `count` buffers of `slot` bytes for `what` (`bytes` in all, at
// `out`, one Buffer each in `buffers`) and registers them with every HCA,
// into the HCA's member `mr`.
Status IbvTransport::pool_map(std::size_t count, std::size_t slot, const char *what, const char *fix, std::byte *&out,
                              std::size_t &bytes, ibv_mr *Hca::*mr, std::vector<Buffer> &buffers) {
    bytes = count * slot;
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return base::report(Status::resource, "ibv conduit init", fix, "cannot map %zu bytes of %s: %s", bytes, what,
                            std::strerror(errno));
    out = static_cast<std::byte *>(p);
    for (Hca &h : hcas_)
        if (Status s = register_raw(h.pd, out, bytes, IBV_ACCESS_LOCAL_WRITE, h.*mr, what); s != Status::ok) return s;
    buffers.assign(count, Buffer{});
    for (std::size_t i = 0; i < count; ++i) buffers[i].bytes = out + i * slot;
    return Status::ok;
}

// One pool, registered with every HCA: the receive buffers (with SRQs,
// recv_count_ for each HCA), the spares (SLUICE_RBUF_SPARES), then the
// send buffers.
Status IbvTransport::buffers_create() {
    const std::size_t slot = am_slot();
    send_count_ = static_cast<std::size_t>(base::knob_int(knob(Knob::IBV_SEND_BUFFERS)));
    spare_count_ = static_cast<std::size_t>(base::knob_int(knob(Knob::RBUF_SPARES)));
    const std::size_t receives = use_srq_ ? recv_count_ * hcas_.size() : recv_count_;
    if (Status s = pool_map(receives + spare_count_ + send_count_, slot, "AM buffers",
                            "lower SLUICE_RBUF_COUNT, SLUICE_RBUF_SPARES or SLUICE_IBV_BUFFER_SIZE", pool_, pool_bytes_,
                            &Hca::pool_mr, buffers_);
        s != Status::ok)
        return s;
    spare_free_.fill(&buffers_[receives], spare_count_);
    send_free_.fill(&buffers_[receives + spare_count_], send_count_);
    if (Status s = bounces_create(); s != Status::ok) return s;
    Guard g(*this);
    if (use_srq_) {
        for (std::size_t i = 0; i < receives; ++i) {
            buffers_[i].hca = static_cast<unsigned>(i / recv_count_);
            repost(&buffers_[i]);
        }
        return Status::ok;
    }
    // Each peer's share, posted when its queue pair is made (qp_create).
    recv_first_.assign(setup().size, 0);
    std::size_t i = 0;
    for (Rank r : setup().peers) {
        if (r == setup().rank) continue;
        recv_first_[r] = i;
        for (unsigned k = 0; k < recv_per_peer_; ++k) buffers_[i++].peer = r;
    }
    return Status::ok;
}

// The bounce buffers of two-part Longs (SLUICE_NONBULKPUT_BOUNCE_LIMIT).
Status IbvTransport::bounces_create() {
    constexpr std::size_t count = 16;
    bounce_limit_ = base::knob_size(knob(Knob::NONBULKPUT_BOUNCE_LIMIT));
    if (bounce_limit_ == 0) return Status::ok;
    if (Status s = pool_map(count, bounce_limit_, "bounce buffers", "lower SLUICE_NONBULKPUT_BOUNCE_LIMIT",
                            bounce_pool_, bounce_pool_bytes_, &Hca::bounce_mr, bounces_);
        s != Status::ok)
        return s;
    bounce_free_.fill(bounces_.data(), count);
    return Status::ok;
}

// Registrations for RDMA (the segment, firehose's regions and bounce
// buffers) count against the pinnable-memory limit.
Status IbvTransport::mem_register_impl(void *base, std::size_t size, std::uint64_t, std::uint64_t &handle,
                                       std::string &rkey) {
    if (Status s = pin_.take("ibv", base, size); s != Status::ok) return s;
    // One region per HCA; the key is theirs, 32 bits each, in 64.
    auto *set = new MrSet;
    set->length = size;
    set->base = base;
    std::uint64_t key = 0;
    for (unsigned h = 0; h < hcas_.size(); ++h) {
        if (Status s = register_raw(hcas_[h].pd, base, size, remote_access(h), set->mr[h], "RDMA"); s != Status::ok) {
            set->length = 0;
            mem_deregister_impl(reinterpret_cast<std::uint64_t>(set));
            pin_.give(size);
            return s;
        }
        key |= std::uint64_t{set->mr[h]->rkey} << (32 * h);
    }
    {
        Guard g(*this);
        last_registered_ = set;
    }
    handle = reinterpret_cast<std::uint64_t>(set);
    rkey.assign(reinterpret_cast<const char *>(&key), sizeof key);
    return Status::ok;
}

void IbvTransport::mem_deregister_impl(std::uint64_t handle) {
    if (!handle) return;
    auto *set = reinterpret_cast<MrSet *>(handle);
    {
        Guard g(*this);
        if (set == last_registered_) last_registered_ = nullptr;
        if (set == segment_mr_.load(std::memory_order_relaxed)) segment_mr_.store(nullptr, std::memory_order_relaxed);
    }
    pin_.give(set->length);
    for (ibv_mr *&mr : set->mr) mr_release(mr);
    delete set;
}

// This rank's segment key (NIC atomics on its own words), and its
// registration, the one just made for it, which AM payloads in the
// segment are gathered from (SLUICE_AM_GATHER_MIN).
Status IbvTransport::segment_connected(const std::vector<SegmentRecord> &all) {
    (void)own_key(all, peer_rkey_[setup().rank]);
    const SegmentRecord &mine = all[setup().rank];
    Guard g(*this);
    if (last_registered_ && reinterpret_cast<std::uint64_t>(last_registered_->base) == mine.base &&
        last_registered_->length >= mine.size)
        segment_mr_.store(last_registered_, std::memory_order_release);
    return Status::ok;
}

// GASNet-EX's GASNET_PINNED_REGIONS_MAX, at the end of init, once the
// conduit's own buffers are registered: this rank's share of the host's
// regions must hold them, what is registered later at most (the segment,
// the atomic slots, firehose's bounce buffers) and firehose's pools (its
// victim pool's SLUICE_FIREHOSE_MAXVICTIM_R, and under SLUICE_SEGMENT=large
// the regions of this rank's segment its peers may have it register, about
// its main pool's bound); from then on a registration past it is refused.
Status IbvTransport::regions_check(std::size_t local_ranks) {
    const char *op = "ibv conduit init";
    const std::string &text = base::knob_string(knob(Knob::PINNED_REGIONS_MAX));
    if (text.empty()) return Status::ok;
    int max_mr = INT_MAX;
    for (const Hca &h : hcas_) max_mr = std::min(max_mr, h.attr.max_mr);
    std::uint64_t host = 0;
    std::string why;
    if (max_mr <= 0 || !common::physmem_parse(text, static_cast<std::uint64_t>(max_mr), host, why) || host == 0)
        return base::report(Status::argument, op,
                            "set SLUICE_PINNED_REGIONS_MAX to a fraction below 1 of the HCA's regions (0.5, 5/8) or "
                            "to a count of regions (4096)",
                            "SLUICE_PINNED_REGIONS_MAX=%s is neither a fraction below 1 nor a count of regions (the "
                            "HCA's max_mr is %d)",
                            text.c_str(), max_mr);
    if (host > static_cast<std::uint64_t>(max_mr)) {
        base::say("ibv: SLUICE_PINNED_REGIONS_MAX=%s is more than the HCA's max_mr (%d): cut to it", text.c_str(),
                  max_mr);
        host = static_cast<std::uint64_t>(max_mr);
    }
    const std::size_t share = static_cast<std::size_t>(host) / std::max<std::size_t>(1, local_ranks);
    const bool fraction = text.find('/') != std::string::npos || std::strtod(text.c_str(), nullptr) < 1;
    region_how_ = "SLUICE_PINNED_REGIONS_MAX=" + text + (fraction ? " of the HCA's max_mr " : " (the HCA's max_mr ") +
                  std::to_string(max_mr) + (fraction ? ", " : "), ") + std::to_string(local_ranks) +
                  " rank(s) on this host";
    // Firehose's bounds, from its knobs (docs/firehose.md): its bounce
    // buffers are one region, its victim pool holds at most
    // SLUICE_FIREHOSE_MAXVICTIM_R.
    const bool large = base::knob_string(base::Knob::SEGMENT) == "large";
    const std::size_t own = regions_.load() + (large ? 0 : 1) + (atomics_off_.empty() ? 1 : 0) + 1;
    const std::size_t victim = base::knob_bool(base::Knob::USE_FIREHOSE)
                                   ? static_cast<std::size_t>(base::knob_int(base::Knob::FIREHOSE_MAXVICTIM_R))
                                   : 0;
    std::size_t main = 0;
    if (large) {
        const std::size_t region = base::knob_size(base::Knob::FIREHOSE_MAXREGION_SIZE);
        main = base::knob_size(base::Knob::FIREHOSE_M) / std::max<std::size_t>(1, region);
        if (const auto r = static_cast<std::size_t>(base::knob_int(base::Knob::FIREHOSE_R)); r) main = std::min(main, r);
    }
    if (own > share)
        return base::report(Status::resource, op, "raise SLUICE_PINNED_REGIONS_MAX",
                            "ibv: %s leaves %zu registered regions to this rank; it needs %zu of its own (AM and "
                            "bounce buffers, connection requests, the segment, NIC atomics, firehose's bounce buffers)",
                            region_how_.c_str(), share, own);
    if (victim + main > share - own) {
        const std::string pools = large ? "SLUICE_FIREHOSE_MAXVICTIM_R and SLUICE_FIREHOSE_R" : "SLUICE_FIREHOSE_MAXVICTIM_R";
        const std::string fix = "lower " + pools + " to at most " + std::to_string(share - own) +
                                (large ? " together" : "") + ", or raise SLUICE_PINNED_REGIONS_MAX";
        return base::report(Status::resource, op, fix.c_str(),
                            "ibv: %s leaves %zu registered regions to this rank, %zu of them for firehose's pools "
                            "(%zu taken by the conduit), and they may hold %zu (SLUICE_FIREHOSE_MAXVICTIM_R=%zu%s%s)",
                            region_how_.c_str(), share, share - own, own, victim + main, victim,
                            large ? ", the main pool's " : "", large ? std::to_string(main).c_str() : "");
    }
    region_share_ = share;
    base::say("ibv: registered regions: at most %zu per rank (%s): %zu for the conduit, up to %zu for firehose's pools",
              share, region_how_.c_str(), own, victim + main);
    return Status::ok;
}

// The receive buffers and the spares of the AM pool (buffers_create).
std::size_t IbvTransport::receive_buffer_bytes_impl() {
    if (buffers_.empty()) return 0;
    return ((use_srq_ ? recv_count_ * hcas_.size() : recv_count_) + spare_count_) * am_slot();
}

} // namespace sluice::conduit::ibv::detail
