// tests/sim/workload.hpp - who sends to whom: the five traffic patterns and
// the per-node random streams that draw destinations and request sizes.
#pragma once

#include "tests/sim/params.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::sim {

// splitmix64: one word of state per node, so 100,000 nodes cost 800 KB.
struct Rng {
    std::uint64_t state = 0;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, n), n > 0 (multiply-shift; the bias is below 2^-32).
    std::uint32_t below(std::uint32_t n) {
        return static_cast<std::uint32_t>(((next() >> 32) * static_cast<std::uint64_t>(n)) >> 32);
    }
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

class Workload {
public:
    explicit Workload(const RunParams &p);

    // Requests node `n` sends in the whole run.
    std::uint64_t messages_for(credit::Peer n) const;
    // The destination of node `n`'s request number `seq` (0, 1, ...);
    // never `n` itself.
    credit::Peer draw(credit::Peer n, std::uint64_t seq, Rng &rng);
    // "grid 25x20x20", "binomial tree", ...
    std::string describe() const;
    std::size_t bytes() const { return partners_.capacity() * sizeof(credit::Peer) + left_.capacity() * 4; }

    // The 3-D grid the stencil uses: the most cubic a*b*c == n, a >= b >= c.
    static std::array<credit::Peer, 3> grid(credit::Peer n);

private:
    credit::Peer stencil_neighbour(credit::Peer n, unsigned which) const;
    credit::Peer tree_partner(credit::Peer n, Rng &rng) const;
    void partners_draw(credit::Peer n, Rng &rng);

    Pattern pattern_;
    credit::Peer nodes_;
    std::uint64_t messages_;
    std::uint64_t shift_every_;
    bool stencil_random_;
    std::array<credit::Peer, 3> dims_{1, 1, 1};
    // Stencil moves: (dimension, +1 or -1), without duplicates on short axes.
    std::vector<std::pair<unsigned, int>> moves_;
    // Shifting partners: `shift_partners` per node, and messages left before the next draw.
    static constexpr unsigned shift_partners = 6;
    std::vector<credit::Peer> partners_;
    std::vector<std::uint32_t> left_;
    unsigned partner_count_ = 0;
};

} // namespace sluice::sim
