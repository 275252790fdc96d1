// src/rma/vis.cpp - VIS: argument and bounds checks, the walk over both
// sides, copies to mapped peers.  The AM and RMA path is vis_am.cpp.
#include "sluice_config.h"

#include "rma/vis.hpp"
#include "rma/vis_impl.hpp"

#include "base/knobs.hpp"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace sluice::rma {
namespace vis {

VisState state;

void Cursor::strided_start() {
    const VisSide &s = side_;
    elem_ = s.elem;
    std::size_t total = elem_;
    for (std::size_t d = 0; d < s.levels; ++d) total = s.counts[d] ? total : 0;
    if (total == 0) {
        end_ = true;
        return;
    }
    // Leading dimensions whose blocks touch form one longer piece.
    dim0_ = 0;
    while (dim0_ < s.levels && s.strides[dim0_] == static_cast<std::ptrdiff_t>(elem_)) elem_ *= s.counts[dim0_++];
    index_.assign(s.levels, 0);
    at_ = s.base;
}

bool Cursor::strided_next(char *&addr, std::size_t &len) {
    const VisSide &s = side_;
    if (started_) {
        std::size_t d = dim0_;
        for (;; ++d) {
            if (d >= s.levels) {
                end_ = true;
                return false;
            }
            if (++index_[d] < s.counts[d]) {
                at_ += s.strides[d];
                break;
            }
            at_ -= s.strides[d] * static_cast<std::ptrdiff_t>(s.counts[d] - 1);
            index_[d] = 0;
        }
    }
    started_ = true;
    addr = at_;
    len = elem_;
    return true;
}

namespace {

// Strided copy with no cursor: the loop nest of the shape, contiguous
// leading dimensions merged, one memcpy per piece.
// One row of `n` elements.  The element sizes programs use most are moves
// of a size the compiler knows, not a memcpy call per piece: with 64-byte
// pieces the call alone would cost as much as the copy.
template <std::size_t E>
void row_copy_fixed(char *d, std::ptrdiff_t di, const char *s, std::ptrdiff_t si, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i, d += di, s += si) std::memcpy(d, s, E);
}
void row_copy(char *d, std::ptrdiff_t di, const char *s, std::ptrdiff_t si, std::size_t elem, std::size_t n) {
    switch (elem) {
    case 4: return row_copy_fixed<4>(d, di, s, si, n);
    case 8: return row_copy_fixed<8>(d, di, s, si, n);
    case 16: return row_copy_fixed<16>(d, di, s, si, n);
    case 32: return row_copy_fixed<32>(d, di, s, si, n);
    case 64: return row_copy_fixed<64>(d, di, s, si, n);
    case 128: return row_copy_fixed<128>(d, di, s, si, n);
    default:
        for (std::size_t i = 0; i < n; ++i, d += di, s += si) std::memcpy(d, s, elem);
    }
}

void strided_copy(char *dst, const std::ptrdiff_t *ds, const char *src, const std::ptrdiff_t *ss, std::size_t elem,
                  const std::size_t *count, std::size_t levels) {
    std::size_t d0 = 0;
    while (d0 < levels && ds[d0] == static_cast<std::ptrdiff_t>(elem) && ss[d0] == static_cast<std::ptrdiff_t>(elem))
        elem *= count[d0++];
    if (d0 == levels) {
        std::memcpy(dst, src, elem);
        return;
    }
    const std::size_t inner = count[d0];
    const std::ptrdiff_t di = ds[d0], si = ss[d0];
    std::size_t outer_dims = levels - d0 - 1;
    std::vector<std::size_t> index(outer_dims, 0);
    for (;;) {
        char *d = dst;
        const char *s = src;
        row_copy(d, di, s, si, elem, inner);
        std::size_t k = 0;
        for (; k < outer_dims; ++k) {
            const std::size_t dim = d0 + 1 + k;
            if (++index[k] < count[dim]) {
                dst += ds[dim];
                src += ss[dim];
                break;
            }
            dst -= ds[dim] * static_cast<std::ptrdiff_t>(count[dim] - 1);
            src -= ss[dim] * static_cast<std::ptrdiff_t>(count[dim] - 1);
            index[k] = 0;
        }
        if (k == outer_dims) return;
    }
}

const char *side_name(bool remote) { return remote ? "remote" : "local"; }

// Total bytes of a side, its local pointers non-null, and with `rank` set
// (the remote side) every piece inside that rank's segment.
Status side_check(const VisSide &s, const am::SegmentTable &segments, bool remote, Rank rank, const char *op,
                  std::size_t &total) {
    const char *which = side_name(remote);
    std::size_t sum = 0;
    auto piece_check = [&](std::size_t i, const void *addr, std::size_t len) -> Status {
        if (!len) return Status::ok;
        if (sum + len < sum)
            return base::report(Status::argument, op, "keep each side's total below SIZE_MAX",
                                "the %s side's lengths overflow at piece %zu", which, i);
        sum += len;
        if (!remote && !addr)
            return base::report(Status::argument, op, "pass an address for every piece of nonzero length",
                                "%s piece %zu (%zu bytes) has a null address", which, i, len);
        if (remote && !segments.contains(rank, reinterpret_cast<std::uint64_t>(addr), len))
            return base::report(Status::segment, op,
                                "keep every remote piece inside the target's segment (sluice_segment_info)",
                                "remote piece %zu (%zu bytes at %p) is outside the segment of rank %u; nothing was sent",
                                i, len, addr, rank);
        return Status::ok;
    };
    switch (s.kind) {
    case VisSide::Kind::vector:
        if (s.count && !s.vec)
            return base::report(Status::argument, op, "pass the list (or a count of 0)", "null %s list of %zu pieces",
                                which, s.count);
        for (std::size_t i = 0; i < s.count; ++i)
            if (Status st = piece_check(i, s.vec[i].addr, s.vec[i].len); st != Status::ok) return st;
        break;
    case VisSide::Kind::indexed:
        if (s.count && !s.list)
            return base::report(Status::argument, op, "pass the list (or a count of 0)", "null %s list of %zu pieces",
                                which, s.count);
        if (s.len && s.count > SIZE_MAX / s.len)
            return base::report(Status::argument, op, "keep each side's total below SIZE_MAX",
                                "%zu %s pieces of %zu bytes overflow", s.count, which, s.len);
        for (std::size_t i = 0; i < s.count; ++i)
            if (Status st = piece_check(i, s.list[i], s.len); st != Status::ok) return st;
        break;
    case VisSide::Kind::strided: {
        if (s.levels && (!s.counts || !s.strides))
            return base::report(Status::argument, op, "pass counts and strides with one entry per level",
                                "null %s of %zu levels", !s.counts ? "count" : "strides", s.levels);
        unsigned __int128 bytes = s.elem;
        __int128 lo = 0, hi = static_cast<__int128>(s.elem);
        for (std::size_t d = 0; d < s.levels; ++d) {
            bytes *= s.counts[d];
            if (bytes > SIZE_MAX) bytes = static_cast<unsigned __int128>(SIZE_MAX) + 1;
            if (s.counts[d] == 0) continue;
            const __int128 span = static_cast<__int128>(s.strides[d]) * static_cast<__int128>(s.counts[d] - 1);
            (span < 0 ? lo : hi) += span;
        }
        if (bytes > SIZE_MAX)
            return base::report(Status::argument, op, "keep the total below SIZE_MAX", "the shape's total overflows");
        sum = static_cast<std::size_t>(bytes);
        if (!sum) break;
        if (!remote && !s.base)
            return base::report(Status::argument, op, "pass the local address", "null %s address", which);
        if (remote) {
            const am::SegmentTable::Entry &e = segments.entries[rank];
            const __int128 first = static_cast<__int128>(reinterpret_cast<std::uintptr_t>(s.base)) + lo;
            const __int128 end = static_cast<__int128>(reinterpret_cast<std::uintptr_t>(s.base)) + hi;
            if (first < static_cast<__int128>(e.base) || end > static_cast<__int128>(e.base + e.size))
                return base::report(Status::segment, op,
                                    "keep every remote piece inside the target's segment (sluice_segment_info)",
                                    "the remote shape at %p spans [%+lld, %+lld) bytes, outside the segment of rank "
                                    "%u; nothing was sent",
                                    static_cast<void *>(s.base), static_cast<long long>(lo),
                                    static_cast<long long>(hi), rank);
        }
        break;
    }
    }
    total = sum;
    return Status::ok;
}

// Above this many pieces a strided destination whose strides interleave
// is refused rather than sorted.
constexpr std::size_t overlap_enumerate_max = std::size_t{1} << 22;

Status overlap_report(const char *op, bool remote, const char *a, const char *b, std::size_t na) {
    return base::report(Status::argument, op, "make the destination pieces disjoint (sources may overlap)",
                        "%s destination pieces overlap: %zu bytes at %p and a piece at %p", side_name(remote), na,
                        static_cast<const void *>(a), static_cast<const void *>(b));
}

// Destinations must be disjoint: sorted pieces, neighbours compared.
Status overlap_check(const VisSide &s, bool remote, const char *op) {
    if (s.kind == VisSide::Kind::strided) {
        // Sufficient: with the dimensions in order of stride, each block
        // of the lower ones fits between two of the next.
        std::vector<std::pair<std::size_t, std::size_t>> dims;  // |stride|, count
        std::size_t pieces = 1;
        for (std::size_t d = 0; d < s.levels; ++d) {
            if (s.counts[d] == 0) return Status::ok;
            pieces = pieces > SIZE_MAX / s.counts[d] ? SIZE_MAX : pieces * s.counts[d];
            if (s.counts[d] > 1)
                dims.emplace_back(static_cast<std::size_t>(s.strides[d] < 0 ? -s.strides[d] : s.strides[d]),
                                  s.counts[d]);
        }
        if (s.elem == 0) return Status::ok;
        std::sort(dims.begin(), dims.end());
        unsigned __int128 span = s.elem;
        bool nested = true;
        for (auto [stride, count] : dims) {
            if (stride < span) nested = false;
            span = static_cast<unsigned __int128>(stride) * (count - 1) + span;
        }
        if (nested) return Status::ok;
        if (pieces > overlap_enumerate_max)
            return base::report(Status::argument, op,
                                "use strides that nest (each at least the extent of the dimensions below it)",
                                "the %s destination's strides interleave over %zu pieces, more than the %zu VIS "
                                "checks for overlap",
                                side_name(remote), pieces, overlap_enumerate_max);
    }
    std::vector<std::pair<char *, std::size_t>> pieces;
    Cursor c(s);
    char *addr;
    std::size_t len;
    while (c.next(addr, len)) pieces.emplace_back(addr, len);
    std::sort(pieces.begin(), pieces.end());
    for (std::size_t i = 1; i < pieces.size(); ++i)
        if (pieces[i - 1].first + pieces[i - 1].second > pieces[i].first)
            return overlap_report(op, remote, pieces[i - 1].first, pieces[i].first, pieces[i - 1].second);
    return Status::ok;
}

// The whole transfer as copies through the mapping of the peer's segment.
void copy_mapped(bool put, const VisSide &remote, const VisSide &local, std::ptrdiff_t delta) {
    if (remote.kind == VisSide::Kind::strided && local.kind == VisSide::Kind::strided) {
        char *view = remote.base + delta;
        if (put) strided_copy(view, remote.strides, local.base, local.strides, remote.elem, remote.counts, remote.levels);
        else strided_copy(local.base, local.strides, view, remote.strides, remote.elem, remote.counts, remote.levels);
        return;
    }
    walk(remote, local, [&](char *r, char *l, std::size_t n) {
        if (put) std::memcpy(r + delta, l, n);
        else std::memcpy(l, r + delta, n);
        return true;
    });
}

} // namespace
} // namespace vis

void vis_init(am::AmEngine &am, RmaEngine &rma) {
    vis::state.am = &am;
    vis::state.rma = &rma;
    vis::state.rma_min = std::max<std::size_t>(1, base::knob_size(base::Knob::VIS_RMA_MIN));
    vis::handlers_register(am);
}

Status vis_transfer(bool put, Rank r, const VisSide &remote, const VisSide &local, VisCompletion how,
                    sluice_event **ev, const char *op) {
    RmaEngine &rma = *vis::state.rma;
    if (r >= rma.size())
        return base::report(Status::rank, op, "use a rank below sluice_size()", "rank %u, but the job has %u ranks", r,
                            rma.size());
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "do VIS after the handler returns", "VIS from inside a handler");
    if (how == VisCompletion::nb && !ev)
        return base::report(Status::argument, op, "pass where to store the event", "null event pointer");
    const am::SegmentTable &segments = rma.segments();
    if (!segments.attached)
        return base::report(Status::segment, op, "call sluice_segment_attach (collective, on every rank) before VIS",
                            "no segment is attached yet (transfer with rank %u)", r);
    std::size_t remote_total = 0, local_total = 0;
    if (Status s = vis::side_check(remote, segments, true, r, op, remote_total); s != Status::ok) return s;
    if (Status s = vis::side_check(local, segments, false, r, op, local_total); s != Status::ok) return s;
    if (remote_total != local_total)
        return base::report(Status::argument, op, "describe the same number of bytes on both sides",
                            "the remote side holds %zu bytes, the local side %zu", remote_total, local_total);
    if (remote_total && (put ? vis::overlap_check(remote, true, op) : vis::overlap_check(local, false, op)) != Status::ok)
        return Status::argument;

    if (remote_total == 0 || rma.mapped_segment(r)) {
        if (remote_total) {
            const auto delta = reinterpret_cast<std::intptr_t>(rma.mapped_segment(r)) -
                               static_cast<std::intptr_t>(segments.entries[r].base);
            vis::copy_mapped(put, remote, local, delta);
        }
        if (how == VisCompletion::nb) *ev = SLUICE_EVENT_DONE;
        return Status::ok;
    }

    std::atomic<std::uint64_t> blocking_counter{0};
    sluice_event *e = nullptr;
    std::atomic<std::uint64_t> *counter = &blocking_counter;
    if (how == VisCompletion::nb) {
        e = new sluice_event;
        counter = &e->pending;
    } else if (how == VisCompletion::nbi) {
        counter = &nbi_counter(put ? NbiCategory::puts : NbiCategory::gets);
    }
    Status s = vis::send(put, r, remote, local, *counter, op);
    if (how != VisCompletion::nbi && (how == VisCompletion::blocking || s != Status::ok)) rma.wait_counter(*counter);
    if (e) {
        if (s != Status::ok) delete e;
        else *ev = e;
    }
    return s;
}

} // namespace sluice::rma
