// src/conduits/common/liveness.hpp - telling a silent peer from a slow one,
// for conduits whose network keeps a stopped or hung process reachable
// (its connections stay open, its NIC still acknowledges): ofi, ibv,
// portals.
//
// Every 20 ms of polling (LivenessTimer) the conduit runs liveness_check:
// a peer that was sent an AM and has said nothing since is pinged after
// half the peer timeout (a control message its conduit answers from its poll, with a
// pong) and taken for dead after the other half.  A rank that computes
// without polling for longer than the timeout is taken for dead too: the
// knob's documentation says to raise it or run a progress thread.
#pragma once

#include "base/status.hpp"
#include "conduits/common/peer_table.hpp"
#include "conduits/transport.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace sluice::conduit::common {

// When a poll runs liveness_check: once `liveness_period_ns` passed since
// the last one, the clock read every `clock_every` polls.  By time, not by
// a count of polls: a poll that yields the core (more ranks than cores, a
// library's progress thread spinning) can take milliseconds.
class LivenessTimer {
public:
    static constexpr unsigned clock_every = 32;
    static constexpr std::uint64_t liveness_period_ns = 20'000'000;

    // `clock` is base::now_ns but for the unit test's own clock.
    bool due(std::uint64_t (*clock)() = base::now_ns) {
        // A relaxed load and store, not a locked add: polls racing on
        // several threads may lose a count, which only delays a check.
        const unsigned polls = polls_.load(std::memory_order_relaxed) + 1;
        polls_.store(polls, std::memory_order_relaxed);
        if (polls % clock_every != 0) return false;
        const std::uint64_t now = clock();
        std::uint64_t last = last_ns_.load(std::memory_order_relaxed);
        return now - last >= liveness_period_ns &&
               last_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed);
    }

private:
    std::atomic<unsigned> polls_{0};
    std::atomic<std::uint64_t> last_ns_{0};
};

struct PeerLife {
    bool sent = false;       // an AM went to it since the last check
    bool heard = false;      // something came from it since the last check
    bool pong_owed = false;  // a pong the network had no room for
    std::uint64_t owed_since = 0, pinged_at = 0;
};

// One check over the peers touched in `peers` (by rank; one never sent to
// nor owed a pong has no entry) at `now` (base::now_ns): `ping(r)` sends
// rank r a ping, `pong(r)` sends it the pong it is owed.  Returns the rank
// found silent, or peers.size().
template <class Ping, class Pong>
Rank liveness_check(PeerTable<PeerLife> &peers, Rank me, std::uint64_t now, double timeout_s, Ping ping, Pong pong) {
    const auto half = static_cast<std::uint64_t>(timeout_s * 0.5e9);
    Rank silent = static_cast<Rank>(peers.size());
    for (Rank r : peers.touched()) {
        PeerLife &o = *peers.find(r);
        if (o.pong_owed) pong(r);
        if (o.heard) {
            o.heard = false;
            o.owed_since = o.pinged_at = 0;
        }
        // Sent and heard in one period: which came last is unknown, so an
        // answer is owed from now (a peer that answered, then stopped, is
        // still found).
        if (o.sent && o.owed_since == 0) o.owed_since = now;
        o.sent = false;
        if (!o.owed_since || r == me) continue;
        if (o.pinged_at && now - o.pinged_at > half) silent = r;
        else if (!o.pinged_at && now - o.owed_since > half) {
            ping(r);
            o.pinged_at = now;
        }
    }
    return silent;
}

// Ends the job: rank `r`, reached over `path`, answered nothing within
// `timeout_s` (the value of the knob `knob`, e.g. SLUICE_OFI_PEER_TIMEOUT).
[[noreturn]] inline void peer_silent(const char *conduit, Rank r, const char *path, const char *knob, double timeout_s) {
    char fix[240];
    std::snprintf(fix, sizeof fix,
                  "check that rank %u is alive and polls; a rank that computes without polling for longer "
                  "needs a larger %s or SLUICE_PROGRESS_THREAD=1", r, knob);
    base::fatal(conduit, fix, "rank %u (over %s) has answered nothing for %.1f s (%s=%g): taking it for dead", r, path,
                timeout_s, knob, timeout_s);
}

} // namespace sluice::conduit::common
