// tests/mp/mp_vis.cpp - VIS and the completion extras.
//
// vis: random vector, indexed and strided shapes (0..4 dimensions, strides
// with gaps, negative local strides, sources that overlap, unaligned
// addresses and lengths, zero-length pieces) put into and got from the
// next rank in every completion mode, each checked byte for byte against
// the same pieces moved by a loop of contiguous Puts/Gets and against a
// local model, guard bytes included; then every bad input, each of which
// must leave the target unchanged.  `vis bench` times the strided Put of
// 1024 pieces of 64 B against memcpy and against 1024 blocking Puts.
//
// completion: test_some / wait_some over mixes of done and pending events,
// NBI sync by category, access regions, local-completion events.  With
// SLUICE_NATIVE_RMA=0 the target sleeps without polling while rank 0
// checks what must and must not wait for it.
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace sluice_test::mp {
namespace {

using Piece = std::pair<std::size_t, std::size_t>;  // offset, length

// The pieces of a strided side, dimension 0 fastest, as offsets from its base.
std::vector<Piece> strided_pieces(const std::vector<std::ptrdiff_t> &strides, const std::vector<std::size_t> &counts,
                                  std::size_t elem, std::ptrdiff_t origin) {
    std::vector<Piece> out;
    std::size_t total = elem;
    for (std::size_t c : counts) total *= c;
    if (!total) return out;
    std::vector<std::size_t> idx(counts.size(), 0);
    for (;;) {
        std::ptrdiff_t off = origin;
        for (std::size_t d = 0; d < counts.size(); ++d) off += static_cast<std::ptrdiff_t>(idx[d]) * strides[d];
        out.emplace_back(static_cast<std::size_t>(off), elem);
        std::size_t d = 0;
        for (; d < counts.size(); ++d) {
            if (++idx[d] < counts[d]) break;
            idx[d] = 0;
        }
        if (d == counts.size()) return out;
    }
}

enum class Kind { vector, indexed, strided };
const char *kind_name(Kind k) { return k == Kind::vector ? "vector" : k == Kind::indexed ? "indexed" : "strided"; }
enum class Mode { blocking, nb_wait, nb_test_some, nbi, region, cpp };
const char *mode_name(Mode m) {
    switch (m) {
    case Mode::blocking: return "blocking";
    case Mode::nb_wait: return "nb+wait";
    case Mode::nb_test_some: return "nb+test_some";
    case Mode::nbi: return "nbi+sync_cat";
    case Mode::region: return "nbi in a region";
    case Mode::cpp: return "C++ blocking";
    }
    return "?";
}
constexpr int mode_count = 6;

// One random transfer: the remote side's pieces are offsets into a window
// of the peer's segment, the local side's into a local buffer.
struct Shape {
    Kind kind = Kind::vector;
    std::vector<Piece> remote, local;  // in order, as the call sees them
    // strided
    std::size_t elem = 0;
    std::vector<std::size_t> counts;
    std::vector<std::ptrdiff_t> rstrides, lstrides;
    std::size_t rorigin = 0, lorigin = 0;
    // indexed
    std::size_t rlen = 0, llen = 0;
    std::string describe() const {
        std::string s = kind_name(kind);
        s += " remote pieces " + std::to_string(remote.size()) + " local " + std::to_string(local.size());
        if (kind == Kind::strided) {
            s += " elem " + std::to_string(elem) + " counts";
            for (auto c : counts) s += " " + std::to_string(c);
            s += " rstrides";
            for (auto c : rstrides) s += " " + std::to_string(c);
            s += " lstrides";
            for (auto c : lstrides) s += " " + std::to_string(c);
        }
        return s;
    }
};

std::size_t total_of(const std::vector<Piece> &p) {
    std::size_t t = 0;
    for (auto &x : p) t += x.second;
    return t;
}

// Cuts `total` bytes into `n` random lengths (zeros allowed).
std::vector<std::size_t> cut(std::mt19937 &rng, std::size_t total, std::size_t n) {
    std::vector<std::size_t> marks = {0, total};
    for (std::size_t i = 1; i < n; ++i) marks.push_back(total ? rng() % (total + 1) : 0);
    std::sort(marks.begin(), marks.end());
    std::vector<std::size_t> out;
    for (std::size_t i = 1; i < marks.size(); ++i) out.push_back(marks[i] - marks[i - 1]);
    return out;
}

// Disjoint pieces of the given lengths in a window of `room` bytes, in
// random order, with gaps.
std::vector<Piece> scatter_disjoint(std::mt19937 &rng, const std::vector<std::size_t> &lens, std::size_t room) {
    std::vector<std::size_t> order(lens.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<Piece> out(lens.size());
    std::size_t at = rng() % 8;
    for (std::size_t i : order) {
        out[i] = {at, lens[i]};
        at += lens[i] + rng() % 9;
    }
    TCHECK(at <= room, "shape needs %zu bytes, window holds %zu", at, room);
    return out;
}
// Pieces anywhere in `room` bytes (a source: they may overlap).
std::vector<Piece> scatter_any(std::mt19937 &rng, const std::vector<std::size_t> &lens, std::size_t room) {
    std::vector<Piece> out;
    for (std::size_t len : lens) out.emplace_back(len < room ? rng() % (room - len) : 0, len);
    return out;
}

// Strides for `counts`: nested with gaps (a destination), or any (a
// source: may overlap, may be negative).  Returns the origin offset that
// keeps every piece at or above 0, and the extent.
std::size_t make_strides(std::mt19937 &rng, std::size_t elem, const std::vector<std::size_t> &counts, bool source,
                         std::vector<std::ptrdiff_t> &strides, std::size_t &origin) {
    strides.clear();
    std::ptrdiff_t extent = static_cast<std::ptrdiff_t>(elem);
    std::ptrdiff_t lo = 0, hi = static_cast<std::ptrdiff_t>(elem);
    for (std::size_t c : counts) {
        std::ptrdiff_t s;
        if (source && rng() % 3 == 0) s = static_cast<std::ptrdiff_t>(rng() % (extent + 1));  // overlapping
        else s = extent + static_cast<std::ptrdiff_t>(rng() % 5 == 0 ? 0 : rng() % 13);
        if (source && rng() % 4 == 0) s = -s;
        strides.push_back(s);
        const std::ptrdiff_t span = s * static_cast<std::ptrdiff_t>(c ? c - 1 : 0);
        (span < 0 ? lo : hi) += span;
        extent = hi - lo;
    }
    origin = static_cast<std::size_t>(-lo);
    return static_cast<std::size_t>(hi - lo);
}

Shape random_shape(std::mt19937 &rng, Kind kind, std::size_t room) {
    Shape s;
    s.kind = kind;
    if (kind == Kind::strided) {
        const std::size_t levels = rng() % 5;
        s.elem = rng() % 8 == 0 ? 1 : 1 + rng() % 40;
        for (std::size_t d = 0; d < levels; ++d) s.counts.push_back(rng() % 12 == 0 ? 1 : 1 + rng() % (levels > 2 ? 4 : 9));
        if (rng() % 40 == 0 && levels) s.counts[rng() % levels] = 0;  // an empty shape: a no-op
        std::size_t rext, lext;
        for (int tries = 0;; ++tries) {
            rext = make_strides(rng, s.elem, s.counts, false, s.rstrides, s.rorigin);
            lext = make_strides(rng, s.elem, s.counts, true, s.lstrides, s.lorigin);
            if (rext + 16 <= room && lext + 16 <= room) break;
            TCHECK(tries < 1000, "no strided shape fits %zu bytes", room);
            for (auto &c : s.counts) c = std::max<std::size_t>(1, c / 2);
            s.elem = std::max<std::size_t>(1, s.elem / 2);
        }
        s.rorigin += rng() % 8;  // unaligned
        s.lorigin += rng() % 8;
        s.remote = strided_pieces(s.rstrides, s.counts, s.elem, static_cast<std::ptrdiff_t>(s.rorigin));
        s.local = strided_pieces(s.lstrides, s.counts, s.elem, static_cast<std::ptrdiff_t>(s.lorigin));
        return s;
    }
    if (kind == Kind::vector) {
        const std::size_t total = rng() % 10 == 0 ? 0 : rng() % std::min<std::size_t>(room / 3, 9000);
        const std::size_t nr = rng() % 40, nl = rng() % 40;
        const auto rl = cut(rng, total, nr ? nr : 1), ll = cut(rng, total, nl ? nl : 1);
        s.remote = scatter_disjoint(rng, rl, room);
        s.local = scatter_any(rng, ll, room);
        return s;
    }
    // indexed: a * la == b * lb
    const std::size_t la = 1 + rng() % 64, a = rng() % 30;
    const std::size_t total = la * a;
    std::vector<std::size_t> divisors;
    for (std::size_t d = 1; d <= std::max<std::size_t>(total, 1) && d <= 256; ++d)
        if (total % d == 0) divisors.push_back(d);
    const std::size_t lb = total ? divisors[rng() % divisors.size()] : 1 + rng() % 7;
    const std::size_t b = total / lb;
    s.rlen = la;
    s.llen = lb;
    s.remote = scatter_disjoint(rng, std::vector<std::size_t>(a, la), room);
    s.local = scatter_any(rng, std::vector<std::size_t>(b, lb), room);
    return s;
}

// Matched runs of the two sides, as the reference loop moves them.
template <class F>
void runs(const Shape &s, F f) {
    std::size_t i = 0, j = 0, ui = 0, uj = 0;
    while (i < s.remote.size() && j < s.local.size()) {
        const std::size_t ri = s.remote[i].second - ui, lj = s.local[j].second - uj;
        if (!ri) { ++i; ui = 0; continue; }
        if (!lj) { ++j; uj = 0; continue; }
        const std::size_t n = std::min(ri, lj);
        f(s.remote[i].first + ui, s.local[j].first + uj, n);
        ui += n;
        uj += n;
    }
}

struct Lists {
    std::vector<sluice_memvec_t> rv, lv;
    std::vector<void *> ri, li;
};
Lists lists_for(const Shape &s, std::uint8_t *remote, std::uint8_t *local) {
    Lists l;
    for (auto &p : s.remote) {
        l.rv.push_back({remote + p.first, p.second});
        l.ri.push_back(remote + p.first);
    }
    for (auto &p : s.local) {
        l.lv.push_back({local + p.first, p.second});
        l.li.push_back(local + p.first);
    }
    return l;
}

void finish(Mode mode, sluice_event_t ev, bool put) {
    switch (mode) {
    case Mode::nb_wait: TOK(sluice_event_wait(ev)); break;
    case Mode::nb_test_some: {
        sluice_event_t list[3] = {SLUICE_EVENT_DONE, ev, SLUICE_EVENT_DONE};
        double deadline = now_seconds() + rank_timeout();
        for (;;) {
            sluice_status_t st = sluice_event_test_some(list, 3);
            if (st == SLUICE_OK) break;
            TCHECK(st == SLUICE_NOT_READY, "test_some returned %d", st);
            TCHECK(list[1] == ev, "test_some changed a pending entry");
            TCHECK(now_seconds() < deadline, "VIS event never completed");
        }
        TCHECK(list[1] == SLUICE_EVENT_DONE, "test_some said OK but left the event");
        break;
    }
    case Mode::nbi: TOK(sluice_nbi_sync_cat(put ? SLUICE_NBI_PUTS : SLUICE_NBI_GETS)); break;
    case Mode::region: {
        sluice_event_t rev = reinterpret_cast<sluice_event_t>(0x1);
        TOK(sluice_nbi_region_end(&rev));
        TCHECK(rev != reinterpret_cast<sluice_event_t>(0x1), "region_end wrote no event");
        TOK(sluice_event_wait(rev));
        break;
    }
    default: break;
    }
}

// One VIS transfer of shape `s` in `mode`.
void vis_call(bool put, Mode mode, const Shape &s, sluice_rank_t peer, std::uint8_t *remote, std::uint8_t *local) {
    Lists l = lists_for(s, remote, local);
    sluice_event_t ev = reinterpret_cast<sluice_event_t>(0x1);
    const bool nb = mode == Mode::nb_wait || mode == Mode::nb_test_some;
    const bool nbi = mode == Mode::nbi || mode == Mode::region;
    if (mode == Mode::region) TOK(sluice_nbi_region_begin());
    const std::size_t levels = s.counts.size();
    void *rbase = remote + s.rorigin;
    void *lbase = local + s.lorigin;
    if (mode == Mode::cpp) {
        sluice::Status st = sluice::Status::ok;
        switch (s.kind) {
        case Kind::vector:
            st = put ? sluice::putv(peer, l.rv, l.lv) : sluice::getv(l.lv, peer, l.rv);
            break;
        case Kind::indexed:
            st = put ? sluice::puti(peer, l.ri, s.rlen, l.li, s.llen) : sluice::geti(l.li, s.llen, peer, l.ri, s.rlen);
            break;
        case Kind::strided:
            st = put ? sluice::puts(peer, rbase, s.rstrides, lbase, s.lstrides, s.elem, s.counts)
                     : sluice::gets(lbase, s.lstrides, peer, rbase, s.rstrides, s.elem, s.counts);
            break;
        }
        TCHECK(st == sluice::Status::ok, "C++ VIS returned %d: %s", static_cast<int>(st), sluice_last_error());
        return;
    }
    switch (s.kind) {
    case Kind::vector:
        if (put) {
            if (nb) TOK(sluice_putv_nb(peer, l.rv.size(), l.rv.data(), l.lv.size(), l.lv.data(), &ev));
            else if (nbi) TOK(sluice_putv_nbi(peer, l.rv.size(), l.rv.data(), l.lv.size(), l.lv.data()));
            else TOK(sluice_putv(peer, l.rv.size(), l.rv.data(), l.lv.size(), l.lv.data()));
        } else {
            if (nb) TOK(sluice_getv_nb(l.lv.size(), l.lv.data(), peer, l.rv.size(), l.rv.data(), &ev));
            else if (nbi) TOK(sluice_getv_nbi(l.lv.size(), l.lv.data(), peer, l.rv.size(), l.rv.data()));
            else TOK(sluice_getv(l.lv.size(), l.lv.data(), peer, l.rv.size(), l.rv.data()));
        }
        break;
    case Kind::indexed:
        if (put) {
            if (nb) TOK(sluice_puti_nb(peer, l.ri.size(), l.ri.data(), s.rlen, l.li.size(), l.li.data(), s.llen, &ev));
            else if (nbi) TOK(sluice_puti_nbi(peer, l.ri.size(), l.ri.data(), s.rlen, l.li.size(), l.li.data(), s.llen));
            else TOK(sluice_puti(peer, l.ri.size(), l.ri.data(), s.rlen, l.li.size(), l.li.data(), s.llen));
        } else {
            if (nb) TOK(sluice_geti_nb(l.li.size(), l.li.data(), s.llen, peer, l.ri.size(), l.ri.data(), s.rlen, &ev));
            else if (nbi) TOK(sluice_geti_nbi(l.li.size(), l.li.data(), s.llen, peer, l.ri.size(), l.ri.data(), s.rlen));
            else TOK(sluice_geti(l.li.size(), l.li.data(), s.llen, peer, l.ri.size(), l.ri.data(), s.rlen));
        }
        break;
    case Kind::strided:
        if (put) {
            if (nb) TOK(sluice_puts_nb(peer, rbase, s.rstrides.data(), lbase, s.lstrides.data(), s.elem, s.counts.data(), levels, &ev));
            else if (nbi) TOK(sluice_puts_nbi(peer, rbase, s.rstrides.data(), lbase, s.lstrides.data(), s.elem, s.counts.data(), levels));
            else TOK(sluice_puts(peer, rbase, s.rstrides.data(), lbase, s.lstrides.data(), s.elem, s.counts.data(), levels));
        } else {
            if (nb) TOK(sluice_gets_nb(lbase, s.lstrides.data(), peer, rbase, s.rstrides.data(), s.elem, s.counts.data(), levels, &ev));
            else if (nbi) TOK(sluice_gets_nbi(lbase, s.lstrides.data(), peer, rbase, s.rstrides.data(), s.elem, s.counts.data(), levels));
            else TOK(sluice_gets(lbase, s.lstrides.data(), peer, rbase, s.rstrides.data(), s.elem, s.counts.data(), levels));
        }
        break;
    }
    if (nb) TCHECK(ev != reinterpret_cast<sluice_event_t>(0x1), "no event written");
    finish(mode, ev, put);
}

// The byte at `i` of the fill of window `w` before each transfer.
std::uint8_t fill_byte(std::size_t i, unsigned w) { return static_cast<std::uint8_t>(i * 7 + w * 13 + 5); }

void first_mismatch(const std::uint8_t *a, const std::uint8_t *b, std::size_t n, const char *what, const Shape &s,
                    unsigned iter, Mode mode) {
    for (std::size_t i = 0; i < n; ++i)
        TCHECK(a[i] == b[i], "%s: byte %zu is 0x%02x, expected 0x%02x (shape %u, %s, %s)", what, i, a[i], b[i], iter,
               mode_name(mode), s.describe().c_str());
}

// Random shapes, each put by VIS into window A of the peer's segment and
// by a loop of contiguous Puts into window B, then got back both ways.
void random_shapes(unsigned shapes, std::uint32_t seed) {
    const sluice_rank_t peer = (me + 1) % nranks;
    const std::size_t slot = segments[peer].size / nranks;  // mine in the peer's segment
    const std::size_t room = std::min<std::size_t>(slot / 2, 1 << 16);
    std::uint8_t *win_a = segments[peer].base + me * slot;
    std::uint8_t *win_b = win_a + room;
    std::vector<std::uint8_t> src(room), model(room), back_a(room), back_b(room), fill(room), got_a(room),
        got_b(room);
    std::mt19937 rng(seed);
    for (unsigned it = 0; it < shapes; ++it) {
        const Kind kind = static_cast<Kind>(it % 3);
        const Mode mode = static_cast<Mode>((it / 3) % mode_count);
        const Shape s = random_shape(rng, kind, room);
        TCHECK(total_of(s.remote) == total_of(s.local), "test bug: totals differ");
        for (std::size_t i = 0; i < room; ++i) {
            src[i] = static_cast<std::uint8_t>(rng());
            fill[i] = fill_byte(i, it);
        }
        TOK(sluice_put(peer, win_a, fill.data(), room));
        TOK(sluice_put(peer, win_b, fill.data(), room));
        // The model: the fill, with the matched runs copied in.
        model = fill;
        runs(s, [&](std::size_t r, std::size_t l, std::size_t n) { std::memcpy(model.data() + r, src.data() + l, n); });
        vis_call(true, mode, s, peer, win_a, src.data());
        runs(s, [&](std::size_t r, std::size_t l, std::size_t n) { TOK(sluice_put(peer, win_b + r, src.data() + l, n)); });
        TOK(sluice_get(back_a.data(), peer, win_a, room));
        TOK(sluice_get(back_b.data(), peer, win_b, room));
        first_mismatch(back_b.data(), model.data(), room, "loop of Puts against the model", s, it, mode);
        first_mismatch(back_a.data(), back_b.data(), room, "VIS Put against the loop of Puts", s, it, mode);

        // Get: window A (now the model) back through the same shape, roles
        // swapped: the local pieces are destinations, so they must not
        // overlap; reuse the remote layout on both sides.
        Shape g = s;
        g.local = s.remote;
        g.lstrides = s.rstrides;
        g.lorigin = s.rorigin;
        g.llen = s.rlen;
        got_a.assign(room, 0xC3);
        got_b.assign(room, 0xC3);
        vis_call(false, mode, g, peer, win_a, got_a.data());
        runs(g, [&](std::size_t r, std::size_t l, std::size_t n) { TOK(sluice_get(got_b.data() + l, peer, win_a + r, n)); });
        first_mismatch(got_a.data(), got_b.data(), room, "VIS Get against the loop of Gets", g, it, mode);
        std::vector<std::uint8_t> expect(room, 0xC3);
        runs(g, [&](std::size_t r, std::size_t l, std::size_t n) { std::memcpy(expect.data() + l, model.data() + r, n); });
        first_mismatch(got_a.data(), expect.data(), room, "VIS Get against the model", g, it, mode);
        // Get with an overlapping source: the Put's local layout read remotely.
        {
            Shape o = s;
            o.remote = s.local;
            o.local = s.remote;
            std::swap(o.rstrides, o.lstrides);
            std::swap(o.rorigin, o.lorigin);
            std::swap(o.rlen, o.llen);
            got_a.assign(room, 0x3C);
            vis_call(false, Mode::blocking, o, peer, win_a, got_a.data());
            expect.assign(room, 0x3C);
            runs(o, [&](std::size_t r, std::size_t l, std::size_t n) { std::memcpy(expect.data() + l, model.data() + r, n); });
            first_mismatch(got_a.data(), expect.data(), room, "VIS Get with an overlapping source", o, it, mode);
        }
    }
}

// Every bad input: the status, one error line, and nothing at the target.
void bad_inputs() {
    const sluice_rank_t peer = (me + 1) % nranks;
    const std::size_t slot = segments[peer].size / nranks;
    std::uint8_t *win = segments[peer].base + me * slot;
    std::vector<std::uint8_t> fill(256), local(256, 0x77), back(256);
    for (std::size_t i = 0; i < fill.size(); ++i) fill[i] = fill_byte(i, 99);
    TOK(sluice_put(peer, win, fill.data(), fill.size()));
    sluice_event_t ev = reinterpret_cast<sluice_event_t>(0x1);

    // Overlapping destinations: vector, indexed, strided; remote and local.
    sluice_memvec_t rv[2] = {{win, 16}, {win + 8, 16}}, lv[1] = {{local.data(), 32}};
    TERR(SLUICE_ERR_ARGUMENT, sluice_putv(peer, 2, rv, 1, lv));
    TERR(SLUICE_ERR_ARGUMENT, sluice_putv_nb(peer, 2, rv, 1, lv, &ev));
    TCHECK(ev == reinterpret_cast<sluice_event_t>(0x1), "a failed putv_nb wrote its event");
    sluice_memvec_t lv2[2] = {{local.data(), 16}, {local.data() + 15, 16}}, rv1[1] = {{win, 32}};
    TERR(SLUICE_ERR_ARGUMENT, sluice_getv(2, lv2, peer, 1, rv1));
    void *ri[3] = {win, win + 64, win};
    void *li[1] = {local.data()};
    TERR(SLUICE_ERR_ARGUMENT, sluice_puti(peer, 3, ri, 8, 1, li, 24));
    const std::size_t counts[2] = {4, 3};
    const std::ptrdiff_t interleaved[2] = {16, 8}, good[2] = {8, 32}, dense[2] = {8, 32};
    TERR(SLUICE_ERR_ARGUMENT, sluice_puts(peer, win, interleaved, local.data(), dense, 10, counts, 2));  // 10 > 8
    const std::ptrdiff_t zero[1] = {0};
    const std::size_t two[1] = {2};
    TERR(SLUICE_ERR_ARGUMENT, sluice_puts_nbi(peer, win, zero, local.data(), good, 4, two, 1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_gets(local.data(), zero, peer, win, good, 4, two, 1));
    // Strides that interleave but stay disjoint are fine (checked piece by
    // piece): offsets 0, 2, 4, 3, 5, 7; the source is the fill at the same
    // offsets, so the window keeps its bytes.
    const std::ptrdiff_t weave[2] = {2, 3};
    const std::size_t weave_counts[2] = {3, 2};
    TOK(sluice_puts(peer, win, weave, fill.data(), weave, 1, weave_counts, 2));

    // Totals that differ.
    sluice_memvec_t rv16[1] = {{win, 16}}, lv17[1] = {{local.data(), 17}};
    TERR(SLUICE_ERR_ARGUMENT, sluice_putv(peer, 1, rv16, 1, lv17));
    TERR(SLUICE_ERR_ARGUMENT, sluice_geti_nbi(1, li, 8, peer, 2, ri, 8));
    // A remote piece outside the segment, after good ones: nothing moves.
    std::uint8_t *end = segments[peer].base + segments[peer].size;
    sluice_memvec_t out[3] = {{win, 8}, {win + 16, 8}, {end - 4, 8}}, src24[1] = {{local.data(), 24}};
    TERR(SLUICE_ERR_SEGMENT, sluice_putv(peer, 3, out, 1, src24));
    TERR(SLUICE_ERR_SEGMENT, sluice_putv_nbi(peer, 3, out, 1, src24));
    void *oi[2] = {win, end};
    TERR(SLUICE_ERR_SEGMENT, sluice_puti(peer, 2, oi, 4, 1, li, 8));
    const std::size_t big[1] = {1000000};
    const std::ptrdiff_t s64[1] = {64};
    TERR(SLUICE_ERR_SEGMENT, sluice_puts(peer, win, s64, local.data(), s64, 8, big, 1));
    const std::ptrdiff_t back_stride[1] = {-64};
    TERR(SLUICE_ERR_SEGMENT, sluice_gets(local.data(), s64, peer, segments[peer].base + 8, back_stride, 8, two, 1));
    // Null lists, null strides or counts with levels, a null event pointer.
    TERR(SLUICE_ERR_ARGUMENT, sluice_putv(peer, 2, nullptr, 1, lv));
    TERR(SLUICE_ERR_ARGUMENT, sluice_getv(1, nullptr, peer, 1, rv1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_puti(peer, 1, nullptr, 8, 1, li, 8));
    TERR(SLUICE_ERR_ARGUMENT, sluice_puts(peer, win, nullptr, local.data(), good, 8, two, 1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_gets(local.data(), good, peer, win, good, 8, nullptr, 1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_putv_nb(peer, 1, rv16, 1, lv, nullptr));
    sluice_memvec_t null_local[1] = {{nullptr, 16}};
    TERR(SLUICE_ERR_ARGUMENT, sluice_putv(peer, 1, rv16, 1, null_local));
    TERR(SLUICE_ERR_RANK, sluice_putv(nranks, 1, rv16, 1, lv));
    TERR(SLUICE_ERR_RANK, sluice_gets(local.data(), good, nranks, win, good, 8, two, 1));

    // Count 0, zero lengths and an empty dimension: no-ops; levels 0: one element.
    TOK(sluice_putv(peer, 0, nullptr, 0, nullptr));
    ev = reinterpret_cast<sluice_event_t>(0x1);
    TOK(sluice_getv_nb(0, nullptr, peer, 0, nullptr, &ev));
    TCHECK(ev == SLUICE_EVENT_DONE, "an empty getv_nb gave an event");
    TOK(sluice_puti(peer, 3, ri, 0, 0, nullptr, 5));
    const std::size_t empty[2] = {4, 0};
    TOK(sluice_puts(peer, win, interleaved, local.data(), dense, 10, empty, 2));  // empty: no overlap to find
    TOK(sluice_puts(peer, end - 8, nullptr, fill.data() + 200, nullptr, 8, nullptr, 0));
    std::uint64_t tail = 0;
    TOK(sluice_get(&tail, peer, end - 8, 8));
    TCHECK(std::memcmp(&tail, fill.data() + 200, 8) == 0, "levels 0 did not move its one element");
    TOK(sluice_barrier());
    TOK(sluice_get(back.data(), peer, win, back.size()));
    for (std::size_t i = 0; i < back.size(); ++i)
        TCHECK(back[i] == fill[i], "byte %zu of my window at rank %u changed to 0x%02x by failed calls", i, peer, back[i]);
}

// Strided Put of 1024 pieces of 64 B to rank 1: against memcpy of the same
// pieces and a loop of 1024 blocking Puts.
void bench() {
    if (me != 0 || nranks < 2) return;
    constexpr std::size_t pieces = 1024, elem = 64, stride = 128;
    std::vector<std::uint8_t> src(pieces * stride, 1), dst(pieces * stride, 0);
    std::uint8_t *remote = segments[1].base;
    const std::size_t counts[1] = {pieces};
    const std::ptrdiff_t strides[1] = {stride};
    auto time = [](auto &&f, unsigned reps) {
        double best = 1e30;
        for (int round = 0; round < 5; ++round) {
            double t0 = now_seconds();
            for (unsigned i = 0; i < reps; ++i) f();
            best = std::min(best, (now_seconds() - t0) / reps);
        }
        return best;
    };
    const unsigned reps = 200;
    double vis = time([&] { TOK(sluice_puts(1, remote, strides, src.data(), strides, elem, counts, 1)); }, reps);
    double copy = time(
        [&] {
            for (std::size_t i = 0; i < pieces; ++i) std::memcpy(dst.data() + i * stride, src.data() + i * stride, elem);
            __asm__ __volatile__("" ::"r"(dst.data()) : "memory");
        },
        reps);
    double loop = time(
        [&] {
            for (std::size_t i = 0; i < pieces; ++i) TOK(sluice_put(1, remote + i * stride, src.data() + i * stride, elem));
        },
        std::max(1u, reps / 20));
    std::printf("VIS-BENCH strided put 1024 x 64 B: VIS %.2f us, memcpy loop %.2f us, 1024 blocking puts %.2f us; "
                "memcpy/VIS %.2f, puts/VIS %.2f\n",
                vis * 1e6, copy * 1e6, loop * 1e6, copy / vis, loop / vis);
    std::fflush(stdout);
}

} // namespace

// vis [shapes] [bench]
int case_vis(int argc, char **argv) {
    const unsigned shapes = static_cast<unsigned>(arg_number(argc, argv, 2, 300));
    const bool do_bench = argc > 3 && std::strcmp(argv[3], "bench") == 0;
    attach(std::size_t{1} << 22);
    TOK(sluice_barrier());
    if (do_bench) {
        bench();
        TOK(sluice_barrier());
        TOK(sluice_finalize());
        return 0;
    }
    random_shapes(shapes, 1234u + me * 7919u);
    TOK(sluice_barrier());
    bad_inputs();
    TOK(sluice_barrier());
    report_expected_errors();
    TOK(sluice_finalize());
    return 0;
}

// ---- completion -------------------------------------------------------------
namespace {

bool env_is(const char *name, const char *value) {
    const char *v = std::getenv(name);
    return v && std::strcmp(v, value) == 0;
}

void check_remote(sluice_rank_t peer, const std::uint8_t *remote, const std::vector<std::uint8_t> &want,
                  const char *what) {
    std::vector<std::uint8_t> back(want.size());
    TOK(sluice_get(back.data(), peer, remote, back.size()));
    for (std::size_t i = 0; i < want.size(); ++i)
        TCHECK(back[i] == want[i], "%s: byte %zu at rank %u is 0x%02x, expected 0x%02x", what, i, peer, back[i],
               want[i]);
}

std::vector<std::uint8_t> pattern(std::size_t n, unsigned seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 31 + seed * 17 + 3);
    return v;
}

void test_some_wait_some(sluice_rank_t peer, std::uint8_t *remote) {
    // Empty lists, lists of done events, a null array.
    TOK(sluice_event_test_some(nullptr, 0));
    sluice_event_t done[3] = {SLUICE_EVENT_DONE, SLUICE_EVENT_DONE, SLUICE_EVENT_DONE};
    TOK(sluice_event_test_some(done, 3));
    TOK(sluice_event_wait_some(done, 3));
    TERR(SLUICE_ERR_ARGUMENT, sluice_event_test_some(nullptr, 2));
    TERR(SLUICE_ERR_ARGUMENT, sluice_event_wait_some(nullptr, 2));
    // Mixes: every other entry done, the others Puts and Gets in flight.
    for (int round = 0; round < 20; ++round) {
        const std::size_t n = 9;
        std::vector<std::vector<std::uint8_t>> data(n), got(n);
        std::vector<sluice_event_t> evs(n, SLUICE_EVENT_DONE);
        std::size_t live = 0;
        for (std::size_t i = 1; i < n; i += 2) {
            data[i] = pattern(1000 + 4000 * i, static_cast<unsigned>(round * 10 + i));
            TOK(sluice_put_nb(peer, remote + i * 40000, data[i].data(), data[i].size(), &evs[i]));
            live += evs[i] != SLUICE_EVENT_DONE;
        }
        const bool use_wait = round % 2;
        double deadline = now_seconds() + rank_timeout();
        while (live) {
            std::vector<sluice_event_t> before = evs;
            sluice_status_t st = use_wait ? sluice_event_wait_some(evs.data(), n) : sluice_event_test_some(evs.data(), n);
            std::size_t now_live = 0;
            for (auto e : evs) now_live += e != SLUICE_EVENT_DONE;
            if (st == SLUICE_NOT_READY) {
                TCHECK(!use_wait, "wait_some returned NOT_READY");
                TCHECK(evs == before, "test_some changed the list but said NOT_READY");
            } else {
                TCHECK(st == SLUICE_OK, "%s returned %d", use_wait ? "wait_some" : "test_some", st);
                TCHECK(now_live < live, "%s said OK with no event completed", use_wait ? "wait_some" : "test_some");
            }
            for (std::size_t i = 0; i < n; ++i)
                TCHECK(evs[i] == before[i] || evs[i] == SLUICE_EVENT_DONE, "entry %zu replaced by something else", i);
            live = now_live;
            TCHECK(now_seconds() < deadline, "events never completed");
        }
        TOK(sluice_event_test_some(evs.data(), n));
        for (std::size_t i = 1; i < n; i += 2) check_remote(peer, remote + i * 40000, data[i], "test_some/wait_some Put");
    }
}

void nbi_categories(sluice_rank_t peer, std::uint8_t *remote) {
    TERR(SLUICE_ERR_ARGUMENT, sluice_nbi_sync_cat(0));
    TERR(SLUICE_ERR_ARGUMENT, sluice_nbi_sync_cat(0x10));
    TERR(SLUICE_ERR_ARGUMENT, sluice_nbi_test_cat(0));
    TOK(sluice_nbi_test_cat(SLUICE_NBI_ALL));  // nothing outstanding
    auto a = pattern(100000, 1), b = pattern(3000, 2);
    TOK(sluice_put_nbi(peer, remote, a.data(), a.size()));
    const std::size_t counts[1] = {100};
    const std::ptrdiff_t rs[1] = {40}, ls[1] = {30};
    TOK(sluice_puts_nbi(peer, remote + 200000, rs, b.data(), ls, 30, counts, 1));
    while (sluice_nbi_test_cat(SLUICE_NBI_PUTS | SLUICE_NBI_AMS) == SLUICE_NOT_READY) {
    }
    TOK(sluice_nbi_sync_cat(SLUICE_NBI_PUTS));
    check_remote(peer, remote, a, "put_nbi after test_cat(PUTS) said done");
    std::vector<std::uint8_t> got(a.size(), 0), gs(3000, 0);
    TOK(sluice_get_nbi(got.data(), peer, remote, got.size()));
    TOK(sluice_gets_nbi(gs.data(), ls, peer, remote + 200000, rs, 30, counts, 1));
    TOK(sluice_nbi_sync_cat(SLUICE_NBI_GETS));
    TCHECK(got == a, "get_nbi after sync_cat(GETS) does not hold the data");
    TCHECK(gs == b, "gets_nbi after sync_cat(GETS) does not hold the data");
    TOK(sluice_nbi_sync_cat(SLUICE_NBI_ALL));
    TOK(sluice_nbi_sync_cat(SLUICE_NBI_AMS | SLUICE_NBI_ATOMICS));
    TOK(static_cast<sluice_status_t>(sluice::nbi_sync(sluice::NbiCategory::puts | sluice::NbiCategory::gets)));
    TOK(sluice_nbi_sync());
}

void regions(sluice_rank_t peer, std::uint8_t *remote) {
    sluice_event_t ev = reinterpret_cast<sluice_event_t>(0x1);
    TERR(SLUICE_ERR_STATE, sluice_nbi_region_end(&ev));
    TCHECK(ev == reinterpret_cast<sluice_event_t>(0x1), "a failed region_end wrote its event");
    // An empty region ends done.
    TOK(sluice_nbi_region_begin());
    TOK(sluice_nbi_region_end(&ev));
    TCHECK(ev == SLUICE_EVENT_DONE, "an empty region gave a pending event");
    // Nesting and syncs inside are refused; the region stays open.
    TOK(sluice_nbi_region_begin());
    TERR(SLUICE_ERR_STATE, sluice_nbi_region_begin());
    TERR(SLUICE_ERR_STATE, sluice_nbi_sync());
    TERR(SLUICE_ERR_STATE, sluice_nbi_sync_cat(SLUICE_NBI_PUTS));
    TERR(SLUICE_ERR_STATE, sluice_nbi_test_cat(SLUICE_NBI_PUTS));
    TERR(SLUICE_ERR_ARGUMENT, sluice_nbi_region_end(nullptr));
    auto a = pattern(70000, 5), b = pattern(5000, 6);
    std::vector<std::uint8_t> got(5000, 0);
    TOK(sluice_put_nbi(peer, remote, a.data(), a.size()));
    TOK(sluice_put_nbi(peer, remote + 100000, b.data(), b.size()));
    TOK(sluice_nbi_region_end(&ev));
    TOK(sluice_event_wait(ev));
    check_remote(peer, remote, a, "put_nbi in a region after its event");
    check_remote(peer, remote + 100000, b, "second put_nbi in a region after its event");
    // A Get in its own region, after the Puts completed: the event covers it.
    sluice_memvec_t rv[2] = {{remote + 100000, 2500}, {remote + 102500, 2500}}, lv[1] = {{got.data(), 5000}};
    TOK(static_cast<sluice_status_t>(sluice::nbi_region_begin()));
    TOK(sluice_getv_nbi(1, lv, peer, 2, rv));
    TOK(static_cast<sluice_status_t>(sluice::nbi_region_end(ev)));
    TOK(sluice_event_wait(ev));
    TCHECK(got == b, "getv_nbi in a region after its event does not hold the data");
    TOK(sluice_nbi_sync());  // allowed again
}

void local_completion(sluice_rank_t peer, std::uint8_t *remote) {
    sluice_event_t lc = reinterpret_cast<sluice_event_t>(0x1), ev = lc;
    auto a = pattern(50000, 9);
    TERR(SLUICE_ERR_ARGUMENT, sluice_put_nb_lc(peer, remote, a.data(), a.size(), nullptr, &ev));
    TERR(SLUICE_ERR_ARGUMENT, sluice_put_nb_lc(peer, remote, a.data(), a.size(), &lc, nullptr));
    TERR(SLUICE_ERR_SEGMENT, sluice_put_nb_lc(peer, segments[peer].base + segments[peer].size - 10, a.data(), 20, &lc, &ev));
    TERR(SLUICE_ERR_RANK, sluice_put_nb_lc(nranks, remote, a.data(), 8, &lc, &ev));
    TCHECK(lc == reinterpret_cast<sluice_event_t>(0x1) && ev == lc, "a failed put_nb_lc wrote its events");
    for (int order = 0; order < 4; ++order) {
        auto data = pattern(1 + 30000 * order, static_cast<unsigned>(order + 20));
        std::vector<std::uint8_t> keep = data;
        TOK(sluice_put_nb_lc(peer, remote, data.data(), data.size(), &lc, &ev));
        switch (order) {
        case 0:  // lc first, then reuse the source, then the Put
            TOK(sluice_event_wait(lc));
            std::fill(data.begin(), data.end(), 0xEE);
            TOK(sluice_event_wait(ev));
            break;
        case 1:  // the Put first, then lc
            TOK(sluice_event_wait(ev));
            TOK(sluice_event_wait(lc));
            break;
        case 2: {  // both through test_some
            sluice_event_t both[2] = {lc, ev};
            double deadline = now_seconds() + rank_timeout();
            while (both[0] != SLUICE_EVENT_DONE || both[1] != SLUICE_EVENT_DONE) {
                sluice_status_t st = sluice_event_test_some(both, 2);
                TCHECK(st == SLUICE_OK || st == SLUICE_NOT_READY, "test_some returned %d", st);
                TCHECK(now_seconds() < deadline, "lc events never completed");
            }
            break;
        }
        default: {  // C++, wait_all
            sluice::Event l2, e2;
            TOK(sluice_event_wait(ev));
            TOK(sluice_event_wait(lc));
            TOK(static_cast<sluice_status_t>(sluice::put_nb_lc(peer, remote, data.data(), data.size(), l2, e2)));
            sluice::Event both[2] = {e2, l2};
            TOK(static_cast<sluice_status_t>(sluice::wait_all(both)));
            break;
        }
        }
        check_remote(peer, remote, keep, "put_nb_lc");
    }
}

// SLUICE_NATIVE_RMA=0: the target stops polling, so what waits for it and
// what does not can be told apart.  It waits on a flag in a file of rank
// 0's, outside Sluice: rank 0 checks what must not have completed, raises
// the flag, then waits for what must.  No timing decides a check.
class Wakeup {
public:
    // Rank 0 makes the file and puts its name into the target's segment.
    Wakeup(sluice_rank_t target, std::uint8_t *name_area) : target_(target) {
        char path[64] = "/dev/shm/sluice-test-wakeup-XXXXXX";
        if (me == 0) {
            const int fd = ::mkstemp(path);
            TCHECK(fd >= 0 && ::ftruncate(fd, 64) == 0, "wake-up file %s", path);
            map(fd);
            TOK(sluice_put(target, name_area, path, sizeof path));
        }
        TOK(sluice_barrier());
        if (me == target) {
            const int fd = ::open(reinterpret_cast<const char *>(name_area), O_RDWR);
            TCHECK(fd >= 0, "wake-up file %s from rank 0", reinterpret_cast<const char *>(name_area));
            map(fd);
        }
        TOK(sluice_barrier());
        if (me == 0) ::unlink(path);  // both have it mapped
    }
    ~Wakeup() {
        if (flag_) ::munmap(const_cast<std::uint32_t *>(flag_), 64);
    }
    // One round: the target says it stopped polling and sleeps in
    // `sleep()` until rank 0's `wake()`; rank 0 starts after `asleep()`.
    void sleep() const {
        __atomic_store_n(&flag_[1], round_, __ATOMIC_RELEASE);
        while (__atomic_load_n(&flag_[0], __ATOMIC_ACQUIRE) != round_) ::usleep(500);
    }
    void asleep() const {
        while (__atomic_load_n(&flag_[1], __ATOMIC_ACQUIRE) != round_) ::usleep(100);
    }
    void wake() const { __atomic_store_n(&flag_[0], round_, __ATOMIC_RELEASE); }
    void next() { ++round_; }
    bool is_target() const { return me == target_; }

private:
    void map(int fd) {
        void *p = ::mmap(nullptr, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ::close(fd);
        TCHECK(p != MAP_FAILED, "mapping the wake-up file");
        flag_ = static_cast<std::uint32_t *>(p);
    }
    sluice_rank_t target_;
    std::uint32_t *flag_ = nullptr;
    std::uint32_t round_ = 1;
};

void sleeping_target(sluice_rank_t peer, std::uint8_t *remote) {
    Wakeup wakeup(peer, remote + 100000);
    // window(work): the target sleeps outside Sluice while rank 0 runs
    // work(wake), which raises the flag between its two halves.
    auto window = [&](auto &&origin_work) {
        TOK(sluice_barrier());
        if (wakeup.is_target()) wakeup.sleep();
        else if (me == 0) {
            wakeup.asleep();
            origin_work([&] { wakeup.wake(); });
        }
        TOK(sluice_barrier());
        wakeup.next();
    };
    auto a = pattern(20000, 31);
    // A GETS sync does not wait for a Put NBI; a PUTS sync does.
    window([&](auto wake) {
        TOK(sluice_put_nbi(peer, remote, a.data(), a.size()));
        TOK(sluice_nbi_sync_cat(SLUICE_NBI_GETS | SLUICE_NBI_AMS | SLUICE_NBI_ATOMICS));  // returns: target asleep
        TCHECK(sluice_nbi_test_cat(SLUICE_NBI_PUTS) == SLUICE_NOT_READY,
               "a Put NBI to a sleeping target counted as complete");
        wake();
        TOK(sluice_nbi_sync_cat(SLUICE_NBI_PUTS));
    });
    if (me == 0) check_remote(peer, remote, a, "put_nbi to a sleeping target");
    // test_some over a pending event says NOT_READY and changes nothing;
    // the AM path's local completion is immediate.
    window([&](auto wake) {
        sluice_event_t lc = reinterpret_cast<sluice_event_t>(0x1), ev = lc;
        TOK(sluice_put_nb_lc(peer, remote + 30000, a.data(), a.size(), &lc, &ev));
        TCHECK(lc == SLUICE_EVENT_DONE, "put_nb_lc over AM: the source is sent when the call returns");
        TCHECK(ev != SLUICE_EVENT_DONE, "put_nb_lc to a sleeping target completed at once");
        sluice_event_t list[3] = {SLUICE_EVENT_DONE, ev, SLUICE_EVENT_DONE};
        TCHECK(sluice_event_test_some(list, 3) == SLUICE_NOT_READY, "test_some with the target asleep");
        TCHECK(list[1] == ev, "test_some changed a pending entry");
        wake();
        TOK(sluice_event_wait_some(list, 3));
        TCHECK(list[1] == SLUICE_EVENT_DONE, "wait_some returned with the event pending");
    });
    window([&](auto wake) {
        // A region's operations complete its event, not the thread's sync.
        TOK(sluice_nbi_region_begin());
        TOK(sluice_put_nbi(peer, remote + 60000, a.data(), a.size()));
        sluice_event_t rev;
        TOK(sluice_nbi_region_end(&rev));
        TCHECK(rev != SLUICE_EVENT_DONE, "a region's Put to a sleeping target completed at once");
        TCHECK(sluice_event_test(rev) == SLUICE_NOT_READY, "region event with the target asleep");
        TOK(sluice_nbi_sync_cat(SLUICE_NBI_ALL));  // nothing outside the region is outstanding
        wake();
        TOK(sluice_event_wait(rev));
    });
    if (me == 0) {
        check_remote(peer, remote + 30000, a, "put_nb_lc to a sleeping target");
        check_remote(peer, remote + 60000, a, "region put to a sleeping target");
    }
}

} // namespace

int case_completion(int, char **) {
    attach(std::size_t{1} << 22);
    const sluice_rank_t peer = (me + 1) % nranks;
    const std::size_t slot = segments[peer].size / nranks;
    std::uint8_t *remote = segments[peer].base + me * slot;
    TCHECK(slot >= 400000, "segment slot of %zu bytes is too small", slot);
    TOK(sluice_barrier());
    test_some_wait_some(peer, remote);
    nbi_categories(peer, remote);
    regions(peer, remote);
    local_completion(peer, remote);
    if (env_is("SLUICE_NATIVE_RMA", "0") && nranks >= 2 && !env_is("SLUICE_ROUTE", "network"))
        sleeping_target(1, segments[1].base);
    TOK(sluice_barrier());
    report_expected_errors();
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
