// src/conduits/ibv/tests/knobs_check.cpp - sluice-ibv-knobs-check CASE
// [args]: traffic shaped for the ibv conduit's knobs that a counter of
// SLUICE_IBV_STATS shows at work, run by ibv-softnic.sh (README.md).
//
//   gather ROUNDS
//       every rank sends ROUNDS times to the next one a Medium and a
//       (packed) Long of each of 100, 1499, 1500, 4000 bytes and the
//       largest Medium, from its segment, and one Medium of the largest
//       size from the heap; it overwrites each payload as soon as the call
//       returns, and the target checks every byte.  Of these, SLUICE_
//       AM_GATHER_MIN=M gathers exactly the segment payloads of M bytes
//       or more (1500: 6 per round); none with -1.
//   windows COUNT
//       every rank puts 64 KiB from each of COUNT separate 128 KiB windows
//       of memory outside its segment to the next rank and gets it back
//       into the window, checking every byte: firehose registers a region
//       per window, until its victim pool evicts (SLUICE_FIREHOSE_MAXVICTIM_R).
//
// A failed check prints one FAIL line and ends the job with code 1; rank 0
// prints "PASS CASE" when every check passed on every rank.
#include "tests/rank_util.hpp"

#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace sluice_test;

namespace {

sluice_rank_t me = 0, nranks = 0;
enum : sluice_handler_t { h_medium = 50, h_long, h_ack };
std::atomic<unsigned> acks{0}, arrived{0};
std::uint8_t *segment = nullptr;
constexpr std::size_t long_area = 64 << 10;  // Longs land in the target's segment from here

void on_medium(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned) {
    TCHECK(length == args[0], "Medium of %zu bytes, sent as %u", length, args[0]);
    TCHECK_PATTERN(payload, length, args[1], "Medium payload of %zu bytes", length);
    arrived.fetch_add(1);
    TOK(sluice_am_reply_short(token, h_ack, nullptr, 0));
}

void on_long(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned) {
    TCHECK(length == args[0], "Long of %zu bytes, sent as %u", length, args[0]);
    TCHECK(payload == segment + long_area, "Long at %p, sent to %p", payload, static_cast<void *>(segment + long_area));
    TCHECK_PATTERN(payload, length, args[1], "Long payload of %zu bytes", length);
    arrived.fetch_add(1);
    TOK(sluice_am_reply_short(token, h_ack, nullptr, 0));
}

void on_ack(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) { acks.fetch_add(1); }

void *segment_of(sluice_rank_t r) {
    void *base = nullptr;
    std::size_t size = 0;
    TOK(sluice_segment_info(r, &base, &size));
    return base;
}

int case_gather(int argc, char **argv) {
    const auto rounds = static_cast<unsigned>(arg_number(argc, argv, 2, 4));
    const std::size_t largest = sluice_am_max_medium();
    TCHECK(largest >= 4096 && largest <= long_area, "largest Medium %zu", largest);
    TOK(sluice_segment_attach(2 * long_area));
    segment = static_cast<std::uint8_t *>(segment_of(me));
    TOK(sluice_handler_register(h_medium, on_medium, SLUICE_AM_MEDIUM, 2));
    TOK(sluice_handler_register(h_long, on_long, SLUICE_AM_LONG, 2));
    TOK(sluice_handler_register(h_ack, on_ack, SLUICE_AM_SHORT, 0));
    TOK(sluice_barrier());
    const sluice_rank_t next = (me + 1) % nranks;
    auto *target = static_cast<std::uint8_t *>(segment_of(next)) + long_area;
    std::vector<std::uint8_t> heap(largest);
    const std::size_t sizes[] = {100, 1499, 1500, 4000, largest};
    unsigned sent = 0;
    for (unsigned r = 0; r < rounds; ++r) {
        for (std::size_t n : sizes) {
            const std::uint32_t seed = me * 7919 + r * 131 + static_cast<std::uint32_t>(n);
            std::uint32_t args[2] = {static_cast<std::uint32_t>(n), seed};
            pattern_fill(segment, n, seed);
            TOK(sluice_am_request_medium(next, h_medium, segment, n, args, 2));
            std::memset(segment, 0xa5, n);  // the payload is the caller's again once the call returns
            args[1] = seed + 1;
            pattern_fill(segment, n, seed + 1);
            TOK(sluice_am_request_long(next, h_long, segment, n, target, args, 2));
            std::memset(segment, 0x5a, n);
            sent += 2;
            // One Long at a time lands in the target's area.
            WAIT_UNTIL(acks.load() == sent);
        }
        const std::uint32_t seed = me * 7919 + r * 131 + 7;
        std::uint32_t args[2] = {static_cast<std::uint32_t>(largest), seed};
        pattern_fill(heap.data(), largest, seed);
        TOK(sluice_am_request_medium(next, h_medium, heap.data(), largest, args, 2));
        std::memset(heap.data(), 0xa5, largest);
        ++sent;
    }
    WAIT_UNTIL(acks.load() == sent && arrived.load() == sent);
    TOK(sluice_barrier());
    if (me == 0) std::printf("PASS gather: %u rounds, %u AMs per rank\n", rounds, sent);
    TOK(sluice_finalize());
    return 0;
}

int case_windows(int argc, char **argv) {
    const auto count = static_cast<std::size_t>(arg_number(argc, argv, 2, 40));
    constexpr std::size_t window = 128 << 10, piece = 64 << 10;
    TOK(sluice_segment_attach(piece));
    TOK(sluice_barrier());
    const sluice_rank_t next = (me + 1) % nranks;
    auto *target = static_cast<std::uint8_t *>(segment_of(next));  // this rank's alone: it is next's only sender
    // COUNT windows, aligned to firehose's (SLUICE_FIREHOSE_MAXREGION_SIZE's default).
    const std::size_t bytes = (count + 1) * window;
    void *map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TCHECK(map != MAP_FAILED, "mmap of %zu bytes", bytes);
    auto *first = reinterpret_cast<std::uint8_t *>((reinterpret_cast<std::uintptr_t>(map) + window - 1) & ~(window - 1));
    for (std::size_t i = 0; i < count; ++i) {
        std::uint8_t *w = first + i * window;
        const auto seed = static_cast<std::uint32_t>(me * 1000 + i);
        pattern_fill(w, piece, seed);
        TOK(sluice_put(next, target, w, piece));
        std::memset(w, 0, piece);
        TOK(sluice_get(w, next, target, piece));
        TCHECK_PATTERN(w, piece, seed, "window %zu after a Put and a Get", i);
    }
    TOK(sluice_barrier());
    ::munmap(map, bytes);
    if (me == 0) std::printf("PASS windows: %zu windows per rank\n", count);
    TOK(sluice_finalize());
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    record_pid();
    const std::string which = argc > 1 ? argv[1] : "";
    if (which != "gather" && which != "windows") {
        std::fprintf(stderr, "usage: sluicerun -n N sluice-ibv-knobs-check gather [ROUNDS] | windows [COUNT]\n");
        return 2;
    }
    g_case = argv[1];
    TOK(sluice_init(&argc, &argv));
    me = sluice_rank();
    nranks = sluice_size();
    return which == "gather" ? case_gather(argc, argv) : case_windows(argc, argv);
}
