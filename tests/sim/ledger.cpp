// tests/sim/ledger.cpp - the simulator's account of every credit (ledger.hpp).
#include "tests/sim/ledger.hpp"

#include <algorithm>

namespace sluice::sim {

using credit::Peer;
using credit::PeerCredits;

namespace {
inline std::uint64_t hash_key(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}
constexpr std::uint64_t empty_key = ~0ull;
inline std::string num(long long v) { return std::to_string(v); }
} // namespace

Ledger::Ledger(Peer nodes, const PeerCredits &untouched, std::uint64_t total)
    : nodes_(nodes), untouched_(untouched), total_(total), keys_(1024, empty_key), values_(1024, 0), mask_(1023),
      loans_(nodes, static_cast<std::uint64_t>(nodes - 1) * untouched.loan_credits),
      held_from_(nodes, static_cast<std::uint64_t>(nodes - 1) * untouched.send_credits) {}

std::uint32_t Ledger::slot_find(std::uint64_t key) const {
    std::uint64_t i = hash_key(key) & mask_;
    while (keys_[i] != key && keys_[i] != empty_key) i = (i + 1) & mask_;
    return static_cast<std::uint32_t>(i);
}

void Ledger::grow() {
    std::vector<std::uint64_t> keys(keys_.size() * 2, empty_key);
    std::vector<std::uint32_t> values(keys.size(), 0);
    keys_.swap(keys);
    values_.swap(values);
    mask_ = keys_.size() - 1;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (keys[i] == empty_key) continue;
        const std::uint32_t s = slot_find(keys[i]);
        keys_[s] = keys[i];
        values_[s] = values[i];
    }
}

std::uint32_t Ledger::pair(Peer a, Peer b) {
    const Peer low = std::min(a, b), high = std::max(a, b);
    const std::uint64_t key = static_cast<std::uint64_t>(low) << 32 | high;
    std::uint32_t s = slot_find(key);
    if (keys_[s] == key) return values_[s];
    if ((pairs_.size() + 1) * 2 > keys_.size()) {
        grow();
        s = slot_find(key);
    }
    PairState p;
    p.low = low;
    p.high = high;
    for (Direction &d : p.dir) {
        d.loan = untouched_.loan_credits;
        d.owed = untouched_.owed;
        d.busy = untouched_.loan_busy;
        d.send = untouched_.send_credits;
        d.inuse = untouched_.send_inuse;
    }
    keys_[s] = key;
    values_[s] = static_cast<std::uint32_t>(pairs_.size());
    pairs_.push_back(p);
    return values_[s];
}

void Ledger::refresh(std::uint32_t pair, Peer self, const PeerCredits &c) {
    PairState &s = pairs_[pair];
    const bool low = self == s.low;
    Direction &lent = s.dir[low ? 0 : 1];
    Direction &held = s.dir[low ? 1 : 0];
    const Peer other = low ? s.high : s.low;
    loans_[self] = loans_[self] + c.loan_credits - lent.loan;
    lent.loan = c.loan_credits;
    lent.owed = c.owed;
    lent.busy = c.loan_busy;
    held_from_[other] = held_from_[other] + c.send_credits - held.send;
    held.send = c.send_credits;
    held.inuse = c.send_inuse;
}

bool Ledger::direction_check(const PairState &s, unsigned d, std::string &why) const {
    const Direction &x = s.dir[d];
    const Peer lender = d == 0 ? s.low : s.high, borrower = d == 0 ? s.high : s.low;
    auto who = [&]() { return "lender " + num(lender) + " -> borrower " + num(borrower); };
    const long long credits = static_cast<long long>(x.send) + x.grants + x.gives - x.reclaims;
    if (x.loan != credits) {
        why = "credit conservation broken, " + who() + ": lender's loan_credits " + num(x.loan) +
              " != borrower's send_credits " + num(x.send) + " + grants in flight " + num(x.grants) +
              " + gives in flight " + num(x.gives) + " - reclaims in flight " + num(x.reclaims) + " (= " +
              num(credits) + ")";
        return false;
    }
    const long long inuse = static_cast<long long>(x.requested) + x.owed + x.returning;
    if (x.inuse != inuse) {
        why = "credits in use broken, " + who() + ": borrower's send_inuse " + num(x.inuse) +
              " != its request credits not yet answered " + num(x.requested) + " + lender's owed " + num(x.owed) +
              " + credits returning " + num(x.returning) + " (= " + num(inuse) + ")";
        return false;
    }
    if (x.busy != x.arrived) {
        why = "busy credits broken, " + who() + ": lender's loan_busy " + num(x.busy) +
              " != credits of requests it took in and has not answered " + num(x.arrived);
        return false;
    }
    if (x.grants < 0 || x.gives < 0 || x.reclaims < 0 || x.requested < 0 || x.arrived < 0 || x.returning < 0) {
        why = "negative in-flight count, " + who();
        return false;
    }
    return true;
}

bool Ledger::pair_check(std::uint32_t pair, std::string &why) {
    ++counts_.pair_checks;
    const PairState &s = pairs_[pair];
    return direction_check(s, 0, why) && direction_check(s, 1, why);
}

bool Ledger::node_check(Peer n, std::uint32_t bank, std::string &why) {
    ++counts_.node_checks;
    if (loans_[n] + bank == total_) return true;
    why = "node " + num(n) + " accounts for " + num(static_cast<long long>(loans_[n] + bank)) +
          " credits (loans " + num(static_cast<long long>(loans_[n])) + " + bank " + num(bank) +
          ") != total_credits " + num(static_cast<long long>(total_));
    return false;
}

bool Ledger::buffer_check(Peer n, std::uint64_t buffered, std::string &why) {
    ++counts_.buffer_checks;
    if (buffered <= held_from_[n] && buffered <= total_) return true;
    why = "receive buffer overflow at node " + num(n) + ": requests in the buffer hold " +
          num(static_cast<long long>(buffered)) + " credits, peers hold " +
          num(static_cast<long long>(held_from_[n])) + " from it, its buffer is " +
          num(static_cast<long long>(total_)) + " credits";
    return false;
}

bool Ledger::accounted_check(Peer n, const credit::Engine &e, std::string &why) {
    ++counts_.accounted_checks;
    const std::uint64_t engine_sum = e.credits_accounted();
    const std::uint64_t mine = loans_[n] + e.bank();
    if (engine_sum == e.config().total_credits() && engine_sum == mine) return true;
    why = "node " + num(n) + ": credits_accounted() " + num(static_cast<long long>(engine_sum)) +
          ", total_credits " + num(static_cast<long long>(e.config().total_credits())) +
          ", the simulator's loans + bank " + num(static_cast<long long>(mine));
    return false;
}

bool Ledger::sweep(const std::vector<const credit::Engine *> &engines, std::string &why) {
    ++counts_.sweeps;
    for (std::uint32_t i = 0; i < pairs_.size(); ++i) {
        const PairState before = pairs_[i];
        for (Peer self : {before.low, before.high}) {
            const Peer other = self == before.low ? before.high : before.low;
            const PeerCredits c = engines[self]->peer(other);
            const Direction &lent = lent_by(i, self), &held = lent_by(i, other);
            if (c.loan_credits != lent.loan || c.owed != lent.owed || c.loan_busy != lent.busy ||
                c.send_credits != held.send || c.send_inuse != held.inuse) {
                why = "node " + num(self) + "'s state for peer " + num(other) +
                      " changed outside the engine calls that name that peer: loan_credits " + num(lent.loan) +
                      " -> " + num(c.loan_credits) + ", owed " + num(lent.owed) + " -> " + num(c.owed) +
                      ", loan_busy " + num(lent.busy) + " -> " + num(c.loan_busy) + ", send_credits " +
                      num(held.send) + " -> " + num(c.send_credits) + ", send_inuse " + num(held.inuse) + " -> " +
                      num(c.send_inuse);
                return false;
            }
        }
        if (!direction_check(pairs_[i], 0, why) || !direction_check(pairs_[i], 1, why)) return false;
    }
    for (Peer n = 0; n < nodes_; ++n) {
        if (!node_check(n, engines[n]->bank(), why)) return false;
    }
    return true;
}

bool Ledger::quiet_check(std::string &why) const {
    for (const PairState &s : pairs_) {
        for (unsigned d = 0; d < 2; ++d) {
            const Direction &x = s.dir[d];
            if (x.grants || x.gives || x.reclaims || x.requested || x.arrived || x.returning) {
                const Peer lender = d == 0 ? s.low : s.high, borrower = d == 0 ? s.high : s.low;
                why = "at the end, lender " + num(lender) + " -> borrower " + num(borrower) +
                      " still has credits in flight: grants " + num(x.grants) + ", gives " + num(x.gives) +
                      ", reclaims " + num(x.reclaims) + ", requests " + num(x.requested) + ", returning " +
                      num(x.returning);
                return false;
            }
        }
    }
    return true;
}

std::size_t Ledger::bytes() const {
    return pairs_.capacity() * sizeof(PairState) + keys_.capacity() * sizeof(std::uint64_t) +
           values_.capacity() * sizeof(std::uint32_t) + (loans_.capacity() + held_from_.capacity()) * 8;
}

} // namespace sluice::sim
