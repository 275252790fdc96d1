// src/conduits/firehose/registrar.hpp - firehose as the transport's local
// registrar (conduit::LocalRegistrar): how an RDMA operation whose local
// buffer lies outside the segment gets a registration, on a conduit that
// sets needs_registration.  README.md in this folder, docs/firehose.md.
//
// Per operation (pin):
// - at most the bounce limit (SLUICE_PUT_BOUNCE_LIMIT for a Put's source,
//   SLUICE_GET_BOUNCE_LIMIT for a Get's destination): through one of a
//   few pre-registered bounce buffers, copied in at issue (Put) or out at
//   completion (Get), when one is free;
// - otherwise the part within one window, pinned in the victim pool; the
//   transport cuts the rest off and pins it next;
// - when the victim pool answers not_ready (every registration in use),
//   a bounce buffer's worth through a bounce buffer; with none free,
//   not_ready: the transport retries after completions.
// Before each pin it reads the memory monitor (monitor.hpp) and
// invalidates what the program unmapped.  Without the monitor (it cannot
// be installed, or SLUICE_FIREHOSE_MEMHOOKS=0) a registration is dropped
// when its last transfer ends: correct, and nothing is cached.
#pragma once

#include "conduits/firehose/victim.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::rma::firehose {

struct RegistrarConfig {
    VictimConfig victim;
    std::size_t put_bounce_limit = std::size_t{16} << 10;  // 0: never bounce small Puts
    std::size_t get_bounce_limit = std::size_t{8} << 10;   // 0: never bounce small Gets
    std::size_t bounce_buffers = 32;  // each of the larger limit; none if both limits are 0
    bool monitor = true;              // use the memory monitor (else cache nothing)
    bool use_firehose = true;         // false: every transfer outside the segment through bounce buffers
    bool verbose = false;             // say the configuration at create (stderr)
};
// From the knobs: SLUICE_FIREHOSE_MAXREGION_SIZE, _MAXVICTIM_M, _MAXVICTIM_R,
// _TABLE_SCALE, _MEMHOOKS, _VERBOSE, SLUICE_PUT_BOUNCE_LIMIT,
// SLUICE_GET_BOUNCE_LIMIT, SLUICE_USE_FIREHOSE.
RegistrarConfig config_from_knobs();

struct RegistrarStats {
    VictimStats victim;
    std::uint64_t bounced_puts = 0;
    std::uint64_t bounced_gets = 0;
    std::uint64_t bounce_busy = 0;      // pins refused: no registration and no bounce buffer free
    std::size_t leases = 0;             // held now by operations not yet finished
    bool caching = false;               // the monitor is in: registrations outlive transfers
};

class Registrar final : public conduit::LocalRegistrar {
public:
    // Refuses (reported) what VictimPool::create refuses, and bounce
    // buffers that cannot be mapped.  Installs the memory monitor when
    // `c.monitor`.  Does not install itself: t.local_registrar_set().
    static base::Status create(conduit::Transport &t, const RegistrarConfig &c, std::unique_ptr<Registrar> &out);
    ~Registrar() override;  // release_all(), and off the transport

    base::Status pin(void *local, std::size_t n, bool get, Lease &lease) override;
    void unpin(void *token, bool completed) override;
    void release_all() override;

    RegistrarStats stats() const;
    // One line: "firehose <transport>: hits ... misses ..." for finalize.
    std::string stats_line() const;

private:
    Registrar(conduit::Transport &t, const RegistrarConfig &c) : t_(t), config_(c) {}
    struct Held;  // one lease
    base::Status bounce(void *local, std::size_t n, bool get, Lease &lease);  // lock_ held
    void invalidate_unmapped();                                                 // lock_ held

    conduit::Transport &t_;
    RegistrarConfig config_;
    std::unique_ptr<VictimPool> pool_;
    bool caching_ = false;
    std::uint64_t seen_ = 0;  // monitor position read
    std::atomic<std::size_t> leases_{0};
    mutable std::mutex lock_;
    // Bounce buffers: one mapping, registered on first use.
    std::size_t bounce_bytes_ = 0;  // each
    char *bounce_base_ = nullptr;
    conduit::MemRegion bounce_region_;
    std::vector<unsigned> bounce_free_;
    RegistrarStats stats_;
};

} // namespace sluice::rma::firehose
