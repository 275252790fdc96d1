// src/conduits/firehose/main_pool.hpp - firehose's main pool: peers' segments
// registered on demand (SLUICE_SEGMENT=large), as the transport's remote
// registrar (conduit::RemoteRegistrar).  README.md in this folder,
// docs/firehose.md.
//
// A rank that attaches a large segment registers none of it.  A peer that
// puts to or gets from it pins the region (SLUICE_FIREHOSE_MAXREGION_SIZE,
// aligned from the segment's base) its transfer starts in:
//
// - requester: a region it holds and has ready is a hit; otherwise it sends
//   the owner a move request (a system AM) naming the region to pin and,
//   when it holds its whole share already, the least recently used idle
//   region(s) to release; the transfer waits on the transport's backlog
//   until the reply brings the region's key.  Each rank holds at most
//   SLUICE_FIREHOSE_M / (peers) bytes of each peer's segment.  A Put's
//   first bytes (SLUICE_PUTINMOVE_LIMIT) travel in its move request; when
//   it asks again, the region is held for it and the lease says how many
//   were written (GASNet's put-in-move).
// - owner: registers a region when the first peer pins it, counts the
//   peers holding it, deregisters it when the last one releases it, and
//   writes the Put bytes a move request carries once the region is pinned.
//
// A peer's requests reach its owner in order and are answered in order
// (every conduit delivers one peer's requests in order), so a release and a
// later pin of the same region never cross.
#pragma once

#include "am/am.hpp"
#include "conduits/transport.hpp"

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace sluice::rma::firehose {

using base::Status;
using conduit::Rank;

struct MainPoolConfig {
    std::size_t region_bytes = std::size_t{128} << 10;  // SLUICE_FIREHOSE_MAXREGION_SIZE
    std::size_t budget = std::size_t{256} << 20;        // SLUICE_FIREHOSE_M: over every peer
    std::size_t max_regions = 0;                        // SLUICE_FIREHOSE_R (0: budget / region_bytes)
    double table_scale = 1;                             // SLUICE_FIREHOSE_TABLE_SCALE
    bool verbose = false;                               // SLUICE_FIREHOSE_VERBOSE
    std::size_t put_in_move = 3072;                     // SLUICE_PUTINMOVE_LIMIT (0: off)
};
// From the knobs: SLUICE_FIREHOSE_MAXREGION_SIZE, SLUICE_FIREHOSE_M,
// SLUICE_FIREHOSE_R, _TABLE_SCALE, _VERBOSE, SLUICE_PUTINMOVE_LIMIT.
MainPoolConfig main_pool_config_from_knobs();

struct MainPoolStats {
    // Requester side: pins of peers' regions.
    std::uint64_t hits = 0;          // the region was held and ready
    std::uint64_t misses = 0;        // a move request pinned it
    std::uint64_t evictions = 0;     // idle regions released to make room
    std::uint64_t waits = 0;         // pins answered "not yet" (move in flight, or share all in use)
    std::uint64_t move_requests = 0; // sent
    std::uint64_t put_moves = 0;     // of those, carrying the front of a Put
    std::uint64_t put_move_bytes = 0;
    std::uint64_t put_done = 0;      // Puts the transport completed with their move (TransportStats)
    std::size_t pinned_bytes = 0;    // of peers' segments held now (requested or ready)
    std::size_t peak_pinned_bytes = 0;
    std::size_t budget = 0;          // SLUICE_FIREHOSE_M
    std::size_t share_regions = 0;   // most regions held per peer
    // Owner side: moves served, regions registered for peers.
    std::uint64_t moves_served = 0;
    std::uint64_t put_bytes_written = 0;  // carried by moves served
    std::size_t owner_regions = 0;
    std::size_t owner_bytes = 0;
    std::size_t peak_owner_bytes = 0;
};

class MainPool final : public conduit::RemoteRegistrar {
public:
    // `my_base`/`my_size`: this rank's segment (unregistered); `peers`: how
    // many ranks the transport reaches (the budget's divisor).
    MainPool(conduit::Transport &t, am::AmEngine &am, const MainPoolConfig &c, void *my_base, std::size_t my_size,
             std::size_t peers);
    ~MainPool() override;
    MainPool(const MainPool &) = delete;
    MainPool &operator=(const MainPool &) = delete;

    // Every rank's segment (base, size), once the attach exchanged them.
    void segments_set(std::vector<std::pair<std::uint64_t, std::uint64_t>> segments);

    // conduit::RemoteRegistrar
    Status pin(Rank peer, std::uint64_t remote, std::size_t n, const void *put, const void *carrier,
               Lease &lease) override;
    void unpin(void *token) override;
    void release_all() override;

    conduit::Transport &transport() const { return t_; }
    MainPoolStats stats() const;
    std::string stats_line() const;

    // The move request and its reply: system handlers, and the pool each
    // source rank's messages are for (by the transport that routes it).
    static void handlers_register(am::AmEngine &am);
    static void route_set(std::vector<MainPool *> by_source);

private:
    struct Entry {
        enum class State : std::uint8_t { pending, ready, failed };
        State state = State::pending;
        Status failure = Status::ok;
        Rank peer = 0;
        std::uint32_t region = 0;
        std::uint64_t key = 0;
        unsigned in_use = 0;
        std::list<std::uint32_t>::iterator idle_at;  // in Far::idle while in_use == 0 and ready
        // The operation whose first `carried` bytes the move request
        // carries; once ready, the region is in use for it (in_use counts
        // it) until it asks again and learns so.
        const void *carrier = nullptr;
        std::size_t carried = 0;
    };
    // What this rank holds of one peer's segment.
    struct Far {
        std::unordered_map<std::uint32_t, Entry> entries;
        std::list<std::uint32_t> idle;  // ready and unused, least recently used first
    };
    // A region of this rank's segment registered for peers.
    struct Owned {
        conduit::MemRegion region;
        unsigned holders = 0;
    };

    static void on_move(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args, unsigned);
    static void on_move_reply(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args,
                              unsigned nargs);
    // Owner: the releases, then the pin of `region`, whose packed key goes
    // back in the reply, then the `n` bytes of a Put at `offset` in it.
    // Requester: that reply.
    Status serve(Rank peer, std::uint32_t region, const std::uint32_t *releases, std::size_t nreleases,
                 const void *put, std::size_t offset, std::size_t n, std::string &key);
    void answered(Rank owner, std::uint32_t region, Status s, const char *key, std::size_t n);
    void region_drop(std::uint32_t region);  // owner, under lock_
    std::size_t region_size(std::uint64_t segment_size, std::uint32_t region) const;

    conduit::Transport &t_;
    am::AmEngine &am_;
    MainPoolConfig config_;
    char *my_base_;
    std::size_t my_size_;
    std::size_t share_;  // regions per peer
    std::size_t carry_most_;  // Put bytes a move request carries at most
    mutable std::mutex lock_;
    bool closed_ = false;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> segments_;
    std::vector<Far> far_;
    std::unordered_map<std::uint32_t, Owned> owned_;
    std::unordered_set<std::uint64_t> held_;  // (peer << 32 | region) pins served
    MainPoolStats stats_;
};

} // namespace sluice::rma::firehose
