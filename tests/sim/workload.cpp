// tests/sim/workload.cpp - the traffic patterns (workload.hpp).
#include "tests/sim/workload.hpp"

#include <algorithm>
#include <bit>

namespace sluice::sim {

using credit::Peer;

Workload::Workload(const RunParams &p)
    : pattern_(p.pattern), nodes_(p.nodes), messages_(p.messages), shift_every_(std::max<std::uint64_t>(p.shift_every, 1)),
      stencil_random_(p.stencil_random) {
    if (pattern_ == Pattern::stencil) {
        dims_ = grid(nodes_);
        for (unsigned d = 0; d < 3; ++d) {
            if (dims_[d] >= 2) moves_.emplace_back(d, +1);
            if (dims_[d] >= 3) moves_.emplace_back(d, -1);
        }
    }
    if (pattern_ == Pattern::shifting) {
        partner_count_ = std::min<unsigned>(shift_partners, nodes_ - 1);
        partners_.assign(static_cast<std::size_t>(nodes_) * partner_count_, 0);
        left_.assign(nodes_, 0);
    }
}

std::array<Peer, 3> Workload::grid(Peer n) {
    std::array<Peer, 3> best{n, 1, 1};
    for (Peer c = 1; static_cast<std::uint64_t>(c) * c * c <= n; ++c) {
        if (n % c) continue;
        const Peer rest = n / c;
        for (Peer b = c; static_cast<std::uint64_t>(b) * b <= rest; ++b) {
            if (rest % b) continue;
            const Peer a = rest / b;
            if (a < best[0]) best = {a, b, c};
        }
    }
    return best;
}

std::uint64_t Workload::messages_for(Peer n) const {
    if (pattern_ == Pattern::hotspot && n == 0) return 0;  // the hot node only serves
    return messages_;
}

Peer Workload::stencil_neighbour(Peer n, unsigned which) const {
    Peer coord[3] = {n % dims_[0], n / dims_[0] % dims_[1], n / dims_[0] / dims_[1]};
    const auto [d, step] = moves_[which];
    coord[d] = (coord[d] + (step > 0 ? 1 : dims_[d] - 1)) % dims_[d];
    return coord[0] + dims_[0] * (coord[1] + dims_[1] * coord[2]);
}

// Binomial tree rooted at 0: the parent clears the lowest set bit; the
// children add each lower power of two.
Peer Workload::tree_partner(Peer n, Rng &rng) const {
    const unsigned low = n ? static_cast<unsigned>(std::countr_zero(n)) : 32;
    unsigned children = 0;
    while (children < low && children < 32 && static_cast<std::uint64_t>(n) + (1ull << children) < nodes_) ++children;
    const unsigned partners = children + (n ? 1 : 0);
    const unsigned pick = rng.below(partners);
    if (n && pick == children) return n & (n - 1);
    return static_cast<Peer>(n + (1u << pick));
}

void Workload::partners_draw(Peer n, Rng &rng) {
    Peer *set = &partners_[static_cast<std::size_t>(n) * partner_count_];
    for (unsigned i = 0; i < partner_count_; ++i) {
        for (;;) {
            Peer q = rng.below(nodes_ - 1);
            if (q >= n) ++q;
            if (std::find(set, set + i, q) == set + i) {
                set[i] = q;
                break;
            }
        }
    }
    left_[n] = static_cast<std::uint32_t>(std::min<std::uint64_t>(shift_every_, 0xffffffffu));
}

Peer Workload::draw(Peer n, std::uint64_t seq, Rng &rng) {
    switch (pattern_) {
    case Pattern::uniform: {
        Peer q = rng.below(nodes_ - 1);
        return q >= n ? q + 1 : q;
    }
    case Pattern::hotspot:
        return 0;
    case Pattern::stencil:
        if (stencil_random_) return stencil_neighbour(n, rng.below(static_cast<std::uint32_t>(moves_.size())));
        // A halo exchange: the neighbours in turn, each node starting at its own.
        return stencil_neighbour(n, static_cast<unsigned>((seq + n) % moves_.size()));
    case Pattern::tree:
        return tree_partner(n, rng);
    case Pattern::shifting:
        if (left_[n] == 0) partners_draw(n, rng);
        --left_[n];
        return partners_[static_cast<std::size_t>(n) * partner_count_ + rng.below(partner_count_)];
    }
    return 0;
}

std::string Workload::describe() const {
    switch (pattern_) {
    case Pattern::uniform: return "random destination";
    case Pattern::hotspot: return "all to node 0";
    case Pattern::stencil:
        return "grid " + std::to_string(dims_[0]) + "x" + std::to_string(dims_[1]) + "x" + std::to_string(dims_[2]) +
               ", " + std::to_string(moves_.size()) + (stencil_random_ ? " neighbours at random" : " neighbours in turn");
    case Pattern::tree: return "binomial tree partners";
    case Pattern::shifting:
        return std::to_string(partner_count_) + " partners, new every " + std::to_string(shift_every_);
    }
    return "";
}

} // namespace sluice::sim
