// tests/mp/mp_rma.cpp - Put and Get from 1 byte to 16 MiB, unaligned
// addresses and lengths, every completion mode, data checked byte by byte
// at the target, in the returned copy, and in guard bytes around both.
// The driver runs it with native RMA and with SLUICE_NATIVE_RMA=0.
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <cstring>
#include <string>

namespace sluice_test::mp {
namespace {

enum class Mode { blocking, nb_wait, nb_test, nb_wait_all, nbi, cpp_nb };
const char *mode_name(Mode m) {
    switch (m) {
    case Mode::blocking: return "blocking";
    case Mode::nb_wait: return "nb+wait";
    case Mode::nb_test: return "nb+test";
    case Mode::nb_wait_all: return "nb+wait_all";
    case Mode::nbi: return "nbi+sync";
    case Mode::cpp_nb: return "C++ nb+wait";
    }
    return "?";
}

constexpr std::size_t guard = 64;
constexpr std::uint8_t segment_fill = 0xA5, local_fill = 0x5C;

// Splits [0, n) into up to `pieces` parts: the parts are issued as separate
// operations (unaligned boundaries when n is odd).
std::vector<std::pair<std::size_t, std::size_t>> split(std::size_t n, std::size_t pieces) {
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    pieces = std::max<std::size_t>(1, std::min(pieces, n));
    std::size_t step = n / pieces, at = 0;
    for (std::size_t i = 0; i < pieces; ++i) {
        std::size_t len = (i + 1 == pieces) ? n - at : step;
        parts.emplace_back(at, len);
        at += len;
    }
    return parts;
}

void wait_test(sluice_event_t ev, const char *what) {
    double deadline = now_seconds() + rank_timeout();
    for (;;) {
        sluice_status_t s = sluice_event_test(ev);
        if (s == SLUICE_OK) return;
        TCHECK(s == SLUICE_NOT_READY, "%s: sluice_event_test returned %d: %s", what, s, sluice_last_error());
        TCHECK(now_seconds() < deadline, "%s: event never completed", what);
    }
}

// One transfer of `len` bytes between local `buf` and remote `remote` on
// `rank`, in `mode`.  put: local -> remote; otherwise remote -> local.
void transfer(bool put, Mode mode, sluice_rank_t rank, std::uint8_t *remote, std::uint8_t *buf, std::size_t len,
              const char *what) {
    switch (mode) {
    case Mode::blocking:
        if (put) TOK(sluice_put(rank, remote, buf, len));
        else TOK(sluice_get(buf, rank, remote, len));
        break;
    case Mode::nb_wait:
    case Mode::nb_test: {
        sluice_event_t ev = reinterpret_cast<sluice_event_t>(0x1);
        if (put) TOK(sluice_put_nb(rank, remote, buf, len, &ev));
        else TOK(sluice_get_nb(buf, rank, remote, len, &ev));
        TCHECK(ev != reinterpret_cast<sluice_event_t>(0x1), "%s: no event written", what);
        if (mode == Mode::nb_wait) TOK(sluice_event_wait(ev));
        else wait_test(ev, what);
        break;
    }
    case Mode::nb_wait_all: {
        auto parts = split(len, 7);
        std::vector<sluice_event_t> evs(parts.size());
        for (std::size_t i = 0; i < parts.size(); ++i) {
            auto [at, n] = parts[i];
            if (put) TOK(sluice_put_nb(rank, remote + at, buf + at, n, &evs[i]));
            else TOK(sluice_get_nb(buf + at, rank, remote + at, n, &evs[i]));
        }
        TOK(sluice_event_wait_all(evs.data(), evs.size()));
        break;
    }
    case Mode::nbi: {
        for (auto [at, n] : split(len, 13)) {
            if (put) TOK(sluice_put_nbi(rank, remote + at, buf + at, n));
            else TOK(sluice_get_nbi(buf + at, rank, remote + at, n));
        }
        TOK(sluice_nbi_sync());
        break;
    }
    case Mode::cpp_nb: {
        sluice::Event ev = sluice::event_done;
        sluice::Status s = put ? sluice::put_nb(rank, remote, buf, len, ev) : sluice::get_nb(buf, rank, remote, len, ev);
        TOK(static_cast<sluice_status_t>(s));
        TOK(static_cast<sluice_status_t>(sluice::wait(ev)));
        break;
    }
    }
}

std::uint32_t seed_of(sluice_rank_t writer, std::size_t step) {
    return static_cast<std::uint32_t>(writer * 1000003u + step * 17u + 5u);
}

// Many small operations in flight at once: `count` 8-byte transfers to
// distinct unaligned addresses, then one sync.
void small_burst(unsigned count, bool use_nbi) {
    sluice_rank_t target = (me + 1) % nranks, origin = (me + nranks - 1) % nranks;
    const std::size_t stride = 24;
    std::vector<std::uint64_t> values(count), back(count, 0);
    for (unsigned i = 0; i < count; ++i) values[i] = (static_cast<std::uint64_t>(me) << 40) ^ (i * 0x9E3779B97F4A7C15ull);
    std::memset(my_segment(), segment_fill, count * stride + guard);
    TOK(sluice_barrier());
    std::vector<sluice_event_t> evs;
    for (unsigned i = 0; i < count; ++i) {
        std::uint8_t *remote = segments[target].base + 1 + i * stride;
        if (use_nbi) {
            TOK(sluice_put_nbi(target, remote, &values[i], 8));
        } else {
            evs.push_back(SLUICE_EVENT_DONE);
            TOK(sluice_put_nb(target, remote, &values[i], 8, &evs.back()));
        }
    }
    if (use_nbi) TOK(sluice_nbi_sync());
    else TOK(sluice_event_wait_all(evs.data(), evs.size()));
    TOK(sluice_barrier());
    for (unsigned i = 0; i < count; ++i) {
        std::uint64_t want = (static_cast<std::uint64_t>(origin) << 40) ^ (i * 0x9E3779B97F4A7C15ull), got;
        std::memcpy(&got, my_segment() + 1 + i * stride, 8);
        TCHECK(got == want, "burst (%s) put %u from rank %u: got 0x%llx", use_nbi ? "nbi" : "nb", i, origin,
               static_cast<unsigned long long>(got));
        TCHECK(fill_mismatch(my_segment() + 1 + i * stride + 8, stride - 8, segment_fill) == SIZE_MAX,
               "burst put %u wrote past its 8 bytes", i);
    }
    evs.clear();
    for (unsigned i = 0; i < count; ++i) {
        std::uint8_t *remote = segments[target].base + 1 + i * stride;
        if (use_nbi) {
            TOK(sluice_get_nbi(&back[i], target, remote, 8));
        } else {
            evs.push_back(SLUICE_EVENT_DONE);
            TOK(sluice_get_nb(&back[i], target, remote, 8, &evs.back()));
        }
    }
    if (use_nbi) TOK(sluice_nbi_sync());
    else TOK(sluice_event_wait_all(evs.data(), evs.size()));
    for (unsigned i = 0; i < count; ++i)
        TCHECK(back[i] == values[i], "burst get %u from rank %u: got 0x%llx", i, target,
               static_cast<unsigned long long>(back[i]));
    TOK(sluice_barrier());
}

} // namespace

int case_rma(int, char **) {
    bool reduced = reduced_subset();
    std::vector<std::size_t> sizes;
    if (reduced) {
        sizes = {1, 3, 8, 17, 255, 4097, 65537, 1048577, 4194309};
    } else {
        sizes = {1,    2,    3,    4,    5,    7,     8,     9,     15,     16,     17,     31,     32,     33,
                 63,   64,   65,   127,  128,  129,   255,   256,   257,    1000,   1023,   1024,   1025,   4095,
                 4096, 4097, 8191, 8192, 8193, 65535, 65536, 65537, 262143, 262145, 1048575, 1048576, 1048577,
                 4194309, 16u << 20};
    }
    std::vector<Mode> modes = {Mode::blocking, Mode::nb_wait, Mode::nb_test, Mode::nb_wait_all, Mode::nbi,
                               Mode::cpp_nb};
    std::size_t biggest = sizes.back();
    attach(biggest + 2 * guard + 64);
    sluice_rank_t target = (me + 1) % nranks, origin = (me + nranks - 1) % nranks;
    std::vector<std::uint8_t> local(biggest + 2 * guard + 8), back(biggest + 2 * guard + 8);
    const char *native = std::getenv("SLUICE_NATIVE_RMA");
    if (me == 0) {
        std::printf("rma: %zu sizes x %zu modes, SLUICE_NATIVE_RMA=%s\n", sizes.size(), modes.size(),
                    native ? native : "(default)");
        std::fflush(stdout);
    }

    std::size_t step = 0;
    for (std::size_t si = 0; si < sizes.size(); ++si) {
        for (Mode mode : modes) {
            ++step;
            std::size_t len = sizes[si];
            // Largest size: aligned on both sides; otherwise odd offsets.
            std::size_t lo = (len == biggest) ? 0 : (si * 3 + step) % 8;
            std::size_t ro = (len == biggest) ? 0 : (si * 5 + 1 + step) % 8;
            std::string what = std::string(mode_name(mode)) + " " + std::to_string(len) + " B, local offset " +
                               std::to_string(lo) + ", remote offset " + std::to_string(ro);

            // My segment receives the origin's Put at guard + ro.
            std::memset(my_segment(), segment_fill, guard + ro + len + guard);
            std::memset(local.data(), local_fill, local.size());
            std::uint8_t *src = local.data() + guard + lo;
            pattern_fill(src, len, seed_of(me, step));
            TOK(sluice_barrier());

            std::uint8_t *remote = segments[target].base + guard + ro;
            transfer(true, mode, target, remote, src, len, what.c_str());
            TCHECK_PATTERN(src, len, seed_of(me, step), "%s: Put changed its source", what.c_str());
            TOK(sluice_barrier());

            // What the origin's Put left in my segment.
            std::uint8_t *landed = my_segment() + guard + ro;
            TCHECK_PATTERN(landed, len, seed_of(origin, step), "Put %s from rank %u, checked at the target",
                           what.c_str(), origin);
            TCHECK(fill_mismatch(my_segment(), guard + ro, segment_fill) == SIZE_MAX,
                   "Put %s from rank %u wrote before its destination", what.c_str(), origin);
            TCHECK(fill_mismatch(landed + len, guard, segment_fill) == SIZE_MAX,
                   "Put %s from rank %u wrote past its end", what.c_str(), origin);

            // Get my data back from the target.
            std::memset(back.data(), local_fill, guard + lo + len + guard);
            std::uint8_t *dst = back.data() + guard + lo;
            transfer(false, mode, target, remote, dst, len, what.c_str());
            TCHECK_PATTERN(dst, len, seed_of(me, step), "Get %s from rank %u", what.c_str(), target);
            TCHECK(fill_mismatch(back.data(), guard + lo, local_fill) == SIZE_MAX, "Get %s wrote before its buffer",
                   what.c_str());
            TCHECK(fill_mismatch(dst + len, guard, local_fill) == SIZE_MAX, "Get %s wrote past its buffer",
                   what.c_str());
            TOK(sluice_barrier());  // the target may refill its segment now
        }
    }
    unsigned burst = reduced ? 300 : 2000;
    small_burst(burst, true);
    small_burst(burst, false);

    // Completion on SLUICE_EVENT_DONE is immediate.
    TOK(sluice_event_wait(SLUICE_EVENT_DONE));
    TOK(sluice_event_test(SLUICE_EVENT_DONE));
    TOK(sluice_nbi_sync());  // nothing outstanding
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
