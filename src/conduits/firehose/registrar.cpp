// src/conduits/firehose/registrar.cpp - the local registrar (registrar.hpp).
#include "conduits/firehose/registrar.hpp"

#include "base/knobs.hpp"
#include "conduits/firehose/monitor.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sluice::rma::firehose {

using base::Status;

RegistrarConfig config_from_knobs() {
    RegistrarConfig c;
    c.victim.region_bytes = base::knob_size(base::Knob::FIREHOSE_MAXREGION_SIZE);
    c.victim.max_bytes = base::knob_size(base::Knob::FIREHOSE_MAXVICTIM_M);
    c.victim.max_regions = static_cast<std::size_t>(base::knob_int(base::Knob::FIREHOSE_MAXVICTIM_R));
    // Each limit set itself wins over SLUICE_PUTGET_BOUNCE_LIMIT, which
    // wins over their defaults.
    const bool both = base::knob_is_set(base::Knob::PUTGET_BOUNCE_LIMIT);
    const auto limit = [&](base::Knob own) {
        return base::knob_size(!both || base::knob_is_set(own) ? own : base::Knob::PUTGET_BOUNCE_LIMIT);
    };
    c.put_bounce_limit = limit(base::Knob::PUT_BOUNCE_LIMIT);
    c.get_bounce_limit = limit(base::Knob::GET_BOUNCE_LIMIT);
    c.monitor = base::knob_bool(base::Knob::FIREHOSE_MEMHOOKS);
    c.victim.table_scale = base::knob_double(base::Knob::FIREHOSE_TABLE_SCALE);
    c.use_firehose = base::knob_bool(base::Knob::USE_FIREHOSE);
    c.verbose = base::knob_bool(base::Knob::FIREHOSE_VERBOSE);
    return c;
}

// One lease: a pin in the victim pool, or a bounce buffer (with the
// caller's buffer, for a Get's copy out).
struct Registrar::Held {
    VictimPool::Pin pin;
    int bounce = -1;
    void *user = nullptr;
    std::size_t n = 0;
    bool get = false;
};

Status Registrar::create(conduit::Transport &t, const RegistrarConfig &c, std::unique_ptr<Registrar> &out) {
    std::unique_ptr<Registrar> r(new Registrar(t, c));
    if (Status s = VictimPool::create(t, c.victim, r->pool_); s != Status::ok) return s;
    r->bounce_bytes_ = std::max(c.put_bounce_limit, c.get_bounce_limit);
    if (!r->bounce_bytes_) r->config_.bounce_buffers = 0;
    if (!c.use_firehose && !r->bounce_bytes_)
        return base::report(Status::argument, "firehose",
                            "give SLUICE_PUT_BOUNCE_LIMIT or SLUICE_GET_BOUNCE_LIMIT a size, or unset SLUICE_USE_FIREHOSE",
                            "SLUICE_USE_FIREHOSE=0 sends every transfer outside the segment through bounce buffers, "
                            "and both bounce limits are 0");
    if (c.monitor) {
        const char *why = "";
        r->caching_ = monitor::install(&why);
        if (!r->caching_)
            base::say("firehose on %s: no memory monitor (%s): registrations are dropped after each transfer",
                      t.name(), why);
    }
    r->seen_ = monitor::position();
    r->stats_.caching = r->caching_;
    if (c.verbose)
        std::fprintf(stderr,
                     "sluice[rank %d] firehose on %s: %s; victim pool of %zu regions of %zu bytes at most (%zu bytes), "
                     "table of %zu buckets (SLUICE_FIREHOSE_TABLE_SCALE %g); %zu bounce buffers of %zu bytes (Puts up "
                     "to %zu, Gets up to %zu bytes); memory monitor %s\n",
                     base::log_rank(), t.name(),
                     c.use_firehose ? "registers memory outside the segment on demand"
                                    : "SLUICE_USE_FIREHOSE=0: memory outside the segment through bounce buffers only",
                     c.victim.max_regions, c.victim.region_bytes, c.victim.max_bytes, r->pool_->table_buckets(),
                     c.victim.table_scale, r->config_.bounce_buffers, r->bounce_bytes_, c.put_bounce_limit,
                     c.get_bounce_limit, r->caching_ ? "on: registrations are cached" : "off: nothing is cached");
    out = std::move(r);
    return Status::ok;
}

Registrar::~Registrar() {
    release_all();
    if (t_.local_registrar() == this) t_.local_registrar_set(nullptr);
}

// What the program unmapped since the last pin.
void Registrar::invalidate_unmapped() {
    monitor::drain(
        seen_,
        [](void *self, std::uintptr_t addr, std::size_t len) {
            static_cast<Registrar *>(self)->pool_->invalidate(reinterpret_cast<const void *>(addr), len);
        },
        this);
}

Status Registrar::pin(void *local, std::size_t n, bool get, Lease &lease) {
    std::unique_lock<std::mutex> guard(lock_);
    if (!pool_)
        return base::report(Status::state, "firehose pin", "this is a Sluice bug", "%s: RDMA after the transport's fini",
                            t_.name());
    if (caching_) invalidate_unmapped();
    // SLUICE_USE_FIREHOSE=0: a bounce buffer's worth at a time, the
    // transport cutting the rest off.
    if (!config_.use_firehose) {
        const Status s = bounce(local, std::min(n, bounce_bytes_), get, lease);
        if (s == Status::not_ready) ++stats_.bounce_busy;
        return s;
    }
    if (n <= (get ? config_.get_bounce_limit : config_.put_bounce_limit)) {
        if (Status s = bounce(local, n, get, lease); s != Status::not_ready) return s;
    }
    guard.unlock();
    const std::size_t window = config_.victim.region_bytes;
    const std::size_t m = std::min(n, window - (reinterpret_cast<std::uintptr_t>(local) & (window - 1)));
    auto held = std::make_unique<Held>();
    Status s = pool_->acquire(local, m, held->pin);
    if (s == Status::ok) {
        held->user = local;
        held->n = m;
        lease = Lease{m, local, held->pin.region->handle, held.release()};
        leases_.fetch_add(1, std::memory_order_relaxed);
        return Status::ok;
    }
    if (s != Status::not_ready) return s;
    guard.lock();
    s = bounce(local, std::min(n, bounce_bytes_), get, lease);
    if (s == Status::not_ready) ++stats_.bounce_busy;
    return s;
}

// Through a bounce buffer, mapped and registered on first use; not_ready
// when none is free (or there are none).
Status Registrar::bounce(void *local, std::size_t n, bool get, Lease &lease) {
    if (!config_.bounce_buffers || !n) return Status::not_ready;
    if (!bounce_base_) {
        const std::size_t bytes = bounce_bytes_ * config_.bounce_buffers;
        void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return base::report(Status::resource, "firehose bounce buffers", "lower SLUICE_PUT_BOUNCE_LIMIT and _GET_",
                                "mmap of %zu bytes: %s", bytes, std::strerror(errno));
        if (Status s = t_.mem_register(p, bytes, bounce_region_); s != Status::ok) {
            ::munmap(p, bytes);
            return s;
        }
        bounce_base_ = static_cast<char *>(p);
        for (unsigned i = static_cast<unsigned>(config_.bounce_buffers); i-- > 0;) bounce_free_.push_back(i);
    }
    if (bounce_free_.empty()) return Status::not_ready;
    auto held = std::make_unique<Held>();
    held->bounce = static_cast<int>(bounce_free_.back());
    bounce_free_.pop_back();
    held->user = local;
    held->n = n;
    held->get = get;
    char *buffer = bounce_base_ + static_cast<std::size_t>(held->bounce) * bounce_bytes_;
    if (!get) std::memcpy(buffer, local, n);
    ++(get ? stats_.bounced_gets : stats_.bounced_puts);
    lease = Lease{n, buffer, bounce_region_.handle, held.release()};
    leases_.fetch_add(1, std::memory_order_relaxed);
    return Status::ok;
}

void Registrar::unpin(void *token, bool completed) {
    std::unique_ptr<Held> held(static_cast<Held *>(token));
    leases_.fetch_sub(1, std::memory_order_relaxed);
    if (held->bounce >= 0) {
        std::lock_guard<std::mutex> guard(lock_);
        if (held->get && completed && bounce_base_)
            std::memcpy(held->user, bounce_base_ + static_cast<std::size_t>(held->bounce) * bounce_bytes_, held->n);
        if (bounce_base_) bounce_free_.push_back(static_cast<unsigned>(held->bounce));
        return;
    }
    if (!pool_) return;  // released at fini already
    pool_->release(held->pin);
    if (!caching_) pool_->invalidate(held->user, held->n);  // nobody would tell us it went away
}

void Registrar::release_all() {
    std::lock_guard<std::mutex> guard(lock_);
    if (pool_) {
        stats_.victim = pool_->stats();
        pool_.reset();  // deregisters every registration
        stats_.victim.regions = 0;
        stats_.victim.pinned_bytes = 0;
    }
    if (bounce_base_) {
        t_.mem_deregister(bounce_region_);
        ::munmap(bounce_base_, bounce_bytes_ * config_.bounce_buffers);
        bounce_base_ = nullptr;
        bounce_free_.clear();
    }
}

RegistrarStats Registrar::stats() const {
    std::lock_guard<std::mutex> guard(lock_);
    RegistrarStats s = stats_;
    s.leases = leases_.load(std::memory_order_relaxed);
    if (pool_) s.victim = pool_->stats();
    return s;
}

std::string Registrar::stats_line() const {
    const RegistrarStats s = stats();
    char line[512];
    std::snprintf(line, sizeof line,
                  "firehose %s: %llu hits, %llu misses, %llu evictions, %llu busy, %llu invalidated; "
                  "%llu Puts and %llu Gets bounced, %llu waits; %zu regions of %zu bytes pinned now, %zu at most%s",
                  t_.name(), static_cast<unsigned long long>(s.victim.hits),
                  static_cast<unsigned long long>(s.victim.misses), static_cast<unsigned long long>(s.victim.evictions),
                  static_cast<unsigned long long>(s.victim.busy), static_cast<unsigned long long>(s.victim.invalidated),
                  static_cast<unsigned long long>(s.bounced_puts), static_cast<unsigned long long>(s.bounced_gets),
                  static_cast<unsigned long long>(s.bounce_busy), s.victim.regions, s.victim.pinned_bytes,
                  s.victim.peak_pinned_bytes, s.caching ? "" : " (not caching: no memory monitor)");
    return line;
}

} // namespace sluice::rma::firehose
