// src/conduits/firehose/main_pool.cpp - the main pool (main_pool.hpp).
#include "conduits/firehose/main_pool.hpp"

#include "base/knobs.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace sluice::rma::firehose {
namespace {

// The handlers' view: the engine they answer through and, by source rank,
// the pool of the transport that reaches it (one runtime per process).
am::AmEngine *move_am = nullptr;
std::vector<MainPool *> by_source;

} // namespace

MainPoolConfig main_pool_config_from_knobs() {
    MainPoolConfig c;
    c.region_bytes = base::knob_size(base::Knob::FIREHOSE_MAXREGION_SIZE);
    c.budget = base::knob_size(base::Knob::FIREHOSE_M);
    c.max_regions = static_cast<std::size_t>(base::knob_int(base::Knob::FIREHOSE_R));
    c.table_scale = base::knob_double(base::Knob::FIREHOSE_TABLE_SCALE);
    c.verbose = base::knob_bool(base::Knob::FIREHOSE_VERBOSE);
    c.put_in_move = base::knob_size(base::Knob::PUTINMOVE_LIMIT);
    return c;
}

MainPool::MainPool(conduit::Transport &t, am::AmEngine &am, const MainPoolConfig &c, void *my_base, std::size_t my_size,
                   std::size_t peers)
    : t_(t), am_(am), config_(c), my_base_(static_cast<char *>(my_base)), my_size_(my_size) {
    // The regions of the budget (at most SLUICE_FIREHOSE_R), shared out.
    std::size_t regions = c.budget / c.region_bytes;
    if (c.max_regions) regions = std::min(regions, c.max_regions);
    share_ = std::max<std::size_t>(1, regions / std::max<std::size_t>(1, peers));
    // The Put's bytes follow the one region a move request may release, in
    // one Medium.
    const std::size_t medium = std::min(am.max_medium(), t.capabilities().max_medium);
    carry_most_ = std::min(c.put_in_move, medium > sizeof(std::uint32_t) ? medium - sizeof(std::uint32_t) : 0);
    stats_.budget = c.budget;
    stats_.share_regions = share_;
    owned_.reserve(std::max<std::size_t>(8, static_cast<std::size_t>(static_cast<double>(regions) * c.table_scale)));
    if (c.verbose)
        std::fprintf(stderr,
                     "sluice[rank %d] firehose main pool on %s: %zu regions of %zu bytes of peers' segments (budget "
                     "%zu bytes, SLUICE_FIREHOSE_R %zu), %zu per peer of %zu; owner's table of %zu buckets "
                     "(SLUICE_FIREHOSE_TABLE_SCALE %g); a move request carries up to %zu bytes of a Put "
                     "(SLUICE_PUTINMOVE_LIMIT %zu)\n",
                     base::log_rank(), t.name(), regions, c.region_bytes, c.budget, c.max_regions, share_, peers,
                     owned_.bucket_count(), c.table_scale, carry_most_, c.put_in_move);
}

MainPool::~MainPool() { release_all(); }

void MainPool::segments_set(std::vector<std::pair<std::uint64_t, std::uint64_t>> segments) {
    std::lock_guard<std::mutex> guard(lock_);
    segments_ = std::move(segments);
    far_.assign(segments_.size(), Far{});
    for (Far &f : far_)
        f.entries.reserve(std::max<std::size_t>(4, static_cast<std::size_t>(static_cast<double>(share_) * config_.table_scale)));
}

std::size_t MainPool::region_size(std::uint64_t segment_size, std::uint32_t region) const {
    const std::uint64_t start = std::uint64_t{region} * config_.region_bytes;
    return static_cast<std::size_t>(std::min<std::uint64_t>(config_.region_bytes, segment_size - start));
}

// ---- requester ----

Status MainPool::pin(Rank peer, std::uint64_t remote, std::size_t n, const void *put, const void *carrier,
                     Lease &lease) {
    std::uint32_t region = 0;
    std::vector<std::uint32_t> releases;
    std::size_t carry = 0, offset = 0;
    {
        std::lock_guard<std::mutex> guard(lock_);
        if (closed_ || peer >= segments_.size() || !segments_[peer].second)
            return base::report(Status::state, "firehose pin", "this is a Sluice bug",
                                "%s: no segment of rank %u to pin (after fini?)", t_.name(), peer);
        const auto [base, size] = segments_[peer];
        region = static_cast<std::uint32_t>((remote - base) / config_.region_bytes);
        const std::uint64_t start = base + std::uint64_t{region} * config_.region_bytes;
        lease.n = static_cast<std::size_t>(std::min<std::uint64_t>(n, start + region_size(size, region) - remote));
        lease.base = start;
        Far &f = far_[peer];
        if (auto it = f.entries.find(region); it != f.entries.end()) {
            Entry &e = it->second;
            if (e.state == Entry::State::pending) {
                ++stats_.waits;
                return Status::not_ready;
            }
            if (e.state == Entry::State::failed) return e.failure;  // reported when the answer came
            if (carrier && e.carrier == carrier) {
                // Its move carried these; the region was kept in use for it.
                lease.carried = e.carried;
                e.carrier = nullptr;
                e.carried = 0;
            } else {
                if (e.in_use++ == 0) f.idle.erase(e.idle_at);
                ++stats_.hits;
            }
            lease.key = e.key;
            lease.token = &e;
            return Status::ok;
        }
        if (f.entries.size() >= share_) {
            if (f.idle.empty()) {  // every region of the share is in use or on its way
                ++stats_.waits;
                return Status::not_ready;
            }
            const std::uint32_t victim = f.idle.front();
            f.idle.pop_front();
            f.entries.erase(victim);
            releases.push_back(victim);
            ++stats_.evictions;
            stats_.pinned_bytes -= region_size(size, victim);
        }
        Entry &e = f.entries[region];
        e.peer = peer;
        e.region = region;
        if (put && carrier && carry_most_) {
            carry = std::min(lease.n, carry_most_);
            offset = static_cast<std::size_t>(remote - start);
            e.carrier = carrier;
            e.carried = carry;
            ++stats_.put_moves;
            stats_.put_move_bytes += carry;
        }
        ++stats_.misses;
        ++stats_.move_requests;
        stats_.pinned_bytes += region_size(size, region);
        stats_.peak_pinned_bytes = std::max(stats_.peak_pinned_bytes, stats_.pinned_bytes);
    }
    // The move request: args the region to pin, how many regions it
    // releases and where in the region the Put's bytes go; payload the
    // regions released, then those bytes.
    const std::uint32_t args[3] = {region, static_cast<std::uint32_t>(releases.size()),
                                   static_cast<std::uint32_t>(offset)};
    std::vector<char> payload(releases.size() * sizeof(std::uint32_t) + carry);
    if (!releases.empty()) std::memcpy(payload.data(), releases.data(), releases.size() * sizeof(std::uint32_t));
    if (carry) std::memcpy(payload.data() + releases.size() * sizeof(std::uint32_t), put, carry);
    const am::Send m = am::make_send(am::AmCategory::medium, am::sys_firehose_move, payload.data(), payload.size(),
                                     nullptr, args, 3);
    if (Status s = am_.system_request(peer, m); s != Status::ok) {
        std::lock_guard<std::mutex> guard(lock_);
        if (auto it = far_[peer].entries.find(region); it != far_[peer].entries.end()) {
            it->second.state = Entry::State::failed;
            it->second.failure = s;
            it->second.carrier = nullptr;
        }
        return base::report(s, "firehose move", "check that the peer is alive",
                            "%s: the move request to rank %u (region %u of its segment) was not sent", t_.name(), peer,
                            region);
    }
    return Status::not_ready;
}

void MainPool::unpin(void *token) {
    std::lock_guard<std::mutex> guard(lock_);
    if (closed_) return;  // released at fini already
    auto *e = static_cast<Entry *>(token);
    if (--e->in_use == 0) {
        Far &f = far_[e->peer];
        e->idle_at = f.idle.insert(f.idle.end(), e->region);
    }
}

// The owner's answer to the move request for `region`.
void MainPool::answered(Rank owner, std::uint32_t region, Status s, const char *key, std::size_t n) {
    std::lock_guard<std::mutex> guard(lock_);
    if (closed_ || owner >= far_.size()) return;
    Far &f = far_[owner];
    auto it = f.entries.find(region);
    if (it == f.entries.end() || it->second.state != Entry::State::pending) {
        base::report(Status::state, "firehose move", "this is a Sluice bug",
                     "%s: rank %u answered a move of region %u this rank was not waiting for", t_.name(), owner, region);
        return;
    }
    Entry &e = it->second;
    if (s == Status::ok) s = t_.region_key_unpack(owner, std::string(key, n), e.key);
    if (s != Status::ok) {
        e.state = Entry::State::failed;
        e.failure = s;
        e.carrier = nullptr;
        base::report(s, "firehose move", "raise the owner's registration limits, or lower SLUICE_FIREHOSE_M",
                     "%s: rank %u could not register region %u of its segment for RDMA from this rank", t_.name(),
                     owner, region);
        return;
    }
    e.state = Entry::State::ready;
    if (e.carrier) e.in_use = 1;  // until the Put it carried asks again (pin)
    else e.idle_at = f.idle.insert(f.idle.end(), region);
}

// ---- owner ----

Status MainPool::serve(Rank peer, std::uint32_t region, const std::uint32_t *releases, std::size_t nreleases,
                       const void *put, std::size_t offset, std::size_t n, std::string &key) {
    std::lock_guard<std::mutex> guard(lock_);
    if (closed_) return Status::state;
    ++stats_.moves_served;
    for (std::size_t i = 0; i < nreleases; ++i) {
        const std::uint32_t r = releases[i];
        if (!held_.erase(std::uint64_t{peer} << 32 | r)) {
            base::report(Status::state, "firehose move", "this is a Sluice bug",
                         "%s: rank %u released region %u of this rank's segment, which it does not hold", t_.name(),
                         peer, r);
            continue;
        }
        auto it = owned_.find(r);
        if (it != owned_.end() && --it->second.holders == 0) region_drop(r);
    }
    if (std::uint64_t{region} * config_.region_bytes >= my_size_)
        return base::report(Status::segment, "firehose move", "this is a Sluice bug",
                            "%s: rank %u asked for region %u, beyond this rank's segment of %zu bytes", t_.name(),
                            peer, region, my_size_);
    const std::size_t len = region_size(my_size_, region);
    if (n && (offset >= len || n > len - offset))
        return base::report(Status::segment, "firehose move", "this is a Sluice bug",
                            "%s: rank %u sent %zu bytes of a Put for offset %zu of region %u, of %zu bytes", t_.name(),
                            peer, n, offset, region, len);
    char *at = my_base_ + std::size_t{region} * config_.region_bytes;
    Owned &o = owned_[region];
    if (held_.insert(std::uint64_t{peer} << 32 | region).second && o.holders++ == 0) {
        if (Status s = t_.mem_register(at, len, o.region); s != Status::ok) {
            held_.erase(std::uint64_t{peer} << 32 | region);
            owned_.erase(region);
            return s;
        }
        ++stats_.owner_regions;
        stats_.owner_bytes += len;
        stats_.peak_owner_bytes = std::max(stats_.peak_owner_bytes, stats_.owner_bytes);
    }
    key = o.region.rkey;
    // The Put's bytes once the region is the peer's: they land before the
    // reply that completes the Put leaves.
    if (n) {
        std::memcpy(at + offset, put, n);
        stats_.put_bytes_written += n;
    }
    return Status::ok;
}

// Under lock_: no peer holds `region` any more.
void MainPool::region_drop(std::uint32_t region) {
    auto it = owned_.find(region);
    if (it == owned_.end()) return;
    stats_.owner_bytes -= it->second.region.size;
    --stats_.owner_regions;
    t_.mem_deregister(it->second.region);
    owned_.erase(it);
}

void MainPool::release_all() {
    std::lock_guard<std::mutex> guard(lock_);
    if (closed_) return;
    closed_ = true;
    for (auto &[region, o] : owned_) t_.mem_deregister(o.region);
    owned_.clear();
    held_.clear();
    for (Far &f : far_) {
        f.entries.clear();
        f.idle.clear();
    }
    stats_.owner_regions = 0;
    stats_.owner_bytes = 0;
    stats_.pinned_bytes = 0;
}

// ---- the messages ----

void MainPool::on_move(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args, unsigned nargs) {
    const Rank peer = token->source;
    MainPool *pool = peer < by_source.size() ? by_source[peer] : nullptr;
    std::string key;
    Status s = Status::state;
    if (nargs != 3 || n < std::size_t{args[1]} * sizeof(std::uint32_t)) {
        base::report(s, "firehose move", "run the same Sluice build on every rank",
                     "a malformed move request from rank %u (%u arguments, %zu bytes)", peer, nargs, n);
    } else if (!pool) {
        base::report(s, "firehose move", "set SLUICE_SEGMENT alike on every rank",
                     "rank %u asked to pin this rank's segment, which is registered whole (or not attached)", peer);
    } else {
        std::vector<std::uint32_t> releases(args[1]);
        const std::size_t released = releases.size() * sizeof(std::uint32_t);
        if (released) std::memcpy(releases.data(), payload, released);
        s = pool->serve(peer, args[0], releases.data(), releases.size(), static_cast<const char *>(payload) + released,
                        args[2], n - released, key);
    }
    const std::uint32_t out[2] = {args[0], static_cast<std::uint32_t>(s)};
    (void)move_am->system_reply(
        token, am::make_send(am::AmCategory::medium, am::sys_firehose_move_reply, key.data(),
                             s == Status::ok ? key.size() : 0, nullptr, out, 2));
}

void MainPool::on_move_reply(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args,
                             unsigned nargs) {
    const Rank owner = token->source;
    MainPool *pool = owner < by_source.size() ? by_source[owner] : nullptr;
    if (nargs != 2 || !pool) {
        base::report(Status::state, "firehose move", "this is a Sluice bug", "an unexpected move reply from rank %u",
                     owner);
        return;
    }
    pool->answered(owner, args[0], static_cast<Status>(args[1]), static_cast<const char *>(payload), n);
}

void MainPool::handlers_register(am::AmEngine &am) {
    move_am = &am;
    am.system_register(am::sys_firehose_move, on_move);
    am.system_register(am::sys_firehose_move_reply, on_move_reply);
}

void MainPool::route_set(std::vector<MainPool *> pools) { by_source = std::move(pools); }

// ---- statistics ----

MainPoolStats MainPool::stats() const {
    std::lock_guard<std::mutex> guard(lock_);
    MainPoolStats s = stats_;
    s.put_done = t_.stats().rma_put_in_move.load(std::memory_order_relaxed);
    return s;
}

std::string MainPool::stats_line() const {
    const MainPoolStats s = stats();
    char line[640];
    std::snprintf(line, sizeof line,
                  "firehose main pool %s: %" PRIu64 " move requests (%" PRIu64 " carrying %" PRIu64
                  " bytes of Puts, %" PRIu64 " Puts done by them), %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
                  " evictions, %" PRIu64 " waits; holds %zu bytes of peers' segments (peak %zu, budget %zu, %zu "
                  "regions per peer); %" PRIu64 " moves served (%" PRIu64 " bytes of Puts written), %zu regions of "
                  "%zu bytes registered for peers (peak %zu)",
                  t_.name(), s.move_requests, s.put_moves, s.put_move_bytes, s.put_done, s.hits, s.misses,
                  s.evictions, s.waits, s.pinned_bytes, s.peak_pinned_bytes, s.budget, s.share_regions,
                  s.moves_served, s.put_bytes_written, s.owner_regions, s.owner_bytes, s.peak_owner_bytes);
    return line;
}

} // namespace sluice::rma::firehose
