// src/rma/vis_impl.hpp - what vis.cpp and vis_am.cpp share: the engine's
// state, the cursor over one side's pieces and the walk over both sides.
#pragma once

#include "rma/vis.hpp"

#include <algorithm>
#include <vector>

namespace sluice::rma::vis {

struct VisState {
    am::AmEngine *am = nullptr;
    RmaEngine *rma = nullptr;
    std::size_t rma_min = 4096;  // SLUICE_VIS_RMA_MIN
};
extern VisState state;

// The pieces of one side in order, zero-length ones skipped; leading
// strided dimensions whose elements touch come out as one piece.
class Cursor {
public:
    explicit Cursor(const VisSide &side) : side_(side) {
        if (side.kind == VisSide::Kind::strided) strided_start();
    }
    bool next(char *&addr, std::size_t &len) {
        if (end_) return false;
        switch (side_.kind) {
        case VisSide::Kind::vector:
            while (i_ < side_.count) {
                const sluice_memvec_t &v = side_.vec[i_++];
                if (v.len) {
                    addr = static_cast<char *>(v.addr);
                    len = v.len;
                    return true;
                }
            }
            break;
        case VisSide::Kind::indexed:
            if (side_.len && i_ < side_.count) {
                addr = static_cast<char *>(side_.list[i_++]);
                len = side_.len;
                return true;
            }
            break;
        case VisSide::Kind::strided:
            return strided_next(addr, len);
        }
        end_ = true;
        return false;
    }

private:
    void strided_start();
    bool strided_next(char *&addr, std::size_t &len);

    const VisSide &side_;
    std::size_t i_ = 0;
    bool end_ = false, started_ = false;
    // strided
    std::size_t elem_ = 0, dim0_ = 0;
    std::vector<std::size_t> index_;
    char *at_ = nullptr;
};

// Calls f(remote, local, length) for each run where the two sides' pieces
// overlap, in order, until f returns false.  The totals are equal.
template <class F>
void walk(const VisSide &remote, const VisSide &local, F &&f) {
    Cursor cr(remote), cl(local);
    char *r = nullptr, *l = nullptr;
    std::size_t nr = 0, nl = 0;
    for (;;) {
        if (!nr && !cr.next(r, nr)) return;
        if (!nl && !cl.next(l, nl)) return;
        const std::size_t n = std::min(nr, nl);
        if (!f(r, l, n)) return;
        r += n;
        l += n;
        nr -= n;
        nl -= n;
    }
}

// vis_am.cpp: the transfer to a peer whose segment is not mapped here,
// every piece counted on `counter`.
Status send(bool put, Rank r, const VisSide &remote, const VisSide &local, std::atomic<std::uint64_t> &counter,
            const char *op);
void handlers_register(am::AmEngine &am);

} // namespace sluice::rma::vis
