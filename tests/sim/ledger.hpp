// tests/sim/ledger.hpp - the simulator's own account of every credit, kept
// beside the engines and compared with them after every engine call.
//
// For each ordered pair (lender Y, borrower X) the ledger caches what Y's
// engine says it lent X and what X's engine says it holds from Y, and counts
// what is between them on the wire.  The laws it checks:
//   credits   Y.loan_credits == X.send_credits + grants in flight Y->X
//             + gives in flight X->Y - reclaims in flight Y->X
//   in use    X.send_inuse == X's request credits not yet answered or banked
//             at Y + Y.owed + credits on their way back (reply NNNN, and
//             a request's XXX from Y, unless it is a want)
//   busy      Y.loan_busy == credits of X's requests Y has taken in
//             (request_arrived) and not yet answered or banked
//   node      sum of Y's loans + Y.bank() == Y.config().total_credits()
//   buffer    credits of requests in Y's buffer <= what peers hold from Y,
//             and <= Y.config().total_credits()
// An engine call can only change the pair it names and the pairs of the
// system messages it queues; the ledger refreshes exactly those, so each
// check is O(1).  sweep() re-reads every pair to catch any other change.
#pragma once

#include "credit/credit.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::sim {

struct Direction {
    // The lender's engine, peer(borrower):
    std::uint16_t loan = 0, owed = 0, busy = 0;
    // The borrower's engine, peer(lender):
    std::uint16_t send = 0, inuse = 0;
    // On the wire or in a queue:
    std::int32_t grants = 0;     // lender -> borrower: reply XXX 1..6, SysKind::grant
    std::int32_t gives = 0;      // borrower -> lender: SysKind::give
    std::int32_t reclaims = 0;   // lender -> borrower: NNNN of replies with XXX 7
    std::int32_t requested = 0;  // borrower's request credits from request_begin until answered or banked
    std::int32_t arrived = 0;    // of those, past request_arrived at the lender
    std::int32_t returning = 0;  // back to the borrower: reply NNNN, the lender's request XXX
};

struct PairState {
    credit::Peer low = 0, high = 0;
    Direction dir[2];  // [0]: low lends high, [1]: high lends low
};

struct LedgerCounts {
    std::uint64_t pair_checks = 0, node_checks = 0, buffer_checks = 0, accounted_checks = 0, sweeps = 0;
};

class Ledger {
public:
    static constexpr std::uint32_t none = 0xffffffffu;

    // `untouched`: what an engine reports for a peer it never dealt with;
    // `total`: every node's config().total_credits().
    Ledger(credit::Peer nodes, const credit::PeerCredits &untouched, std::uint64_t total);

    // The pair {a, b}, added with untouched values on first use.
    std::uint32_t pair(credit::Peer a, credit::Peer b);
    std::size_t pairs() const { return pairs_.size(); }
    const PairState &state(std::uint32_t pair) const { return pairs_[pair]; }
    // The direction in which `lender` lends.
    Direction &lent_by(std::uint32_t pair, credit::Peer lender) {
        PairState &s = pairs_[pair];
        return s.dir[lender == s.low ? 0 : 1];
    }
    const Direction &lent_by(std::uint32_t pair, credit::Peer lender) const {
        const PairState &s = pairs_[pair];
        return s.dir[lender == s.low ? 0 : 1];
    }

    // What `self`'s engine now says about the other member of the pair.
    void refresh(std::uint32_t pair, credit::Peer self, const credit::PeerCredits &c);
    // The three pair laws in both directions; false and `why` on a violation.
    bool pair_check(std::uint32_t pair, std::string &why);
    bool node_check(credit::Peer n, std::uint32_t bank, std::string &why);
    bool buffer_check(credit::Peer n, std::uint64_t buffered, std::string &why);
    // The engine's own sum against the ledger's (O(pages) in the engine).
    bool accounted_check(credit::Peer n, const credit::Engine &e, std::string &why);
    // Re-reads every pair from both engines: a value that differs from the
    // cache changed outside the calls that name the pair.
    bool sweep(const std::vector<const credit::Engine *> &engines, std::string &why);
    // Every in-flight count is zero (end of run).
    bool quiet_check(std::string &why) const;

    std::uint64_t loans(credit::Peer n) const { return loans_[n]; }
    std::uint64_t held_from(credit::Peer n) const { return held_from_[n]; }
    const LedgerCounts &counts() const { return counts_; }
    std::size_t bytes() const;

private:
    std::uint32_t slot_find(std::uint64_t key) const;
    void grow();
    bool direction_check(const PairState &s, unsigned d, std::string &why) const;

    credit::Peer nodes_;
    credit::PeerCredits untouched_;
    std::uint64_t total_;
    std::vector<PairState> pairs_;
    // Open addressing, linear probing: key (low << 32 | high) -> index in pairs_.
    std::vector<std::uint64_t> keys_;
    std::vector<std::uint32_t> values_;
    std::uint64_t mask_ = 0;
    std::vector<std::uint64_t> loans_;      // sum of each node's loan_credits
    std::vector<std::uint64_t> held_from_;  // sum of what every peer holds from each node
    LedgerCounts counts_;
};

} // namespace sluice::sim
