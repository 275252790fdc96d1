// tests/mp/mp_prepare.cpp - negotiated-payload AMs and Long requests with
// SLUICE_FLAG_NBI.
//
// prepare [iterations]: every rank sends to the next one (and hears from the
// previous one): prepared Mediums at the least, the most and between, with 0,
// 2 and 16 arguments; commits shorter than prepared; cancels between sends
// (many, so the rings wrap over cancelled room and credits must come back);
// prepared Longs; replies prepared in handlers (Medium and Long); threads each
// with its own prepared message; NBI Longs above the packed limit; and every
// bad input of the family, each refused with its status and one line.
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace sluice_test::mp {
namespace {

enum : sluice_handler_t {
    h_med = 180,    // Medium, 2 args: seed, length
    h_med0,         // Medium, 0 args
    h_med16,        // Medium, 16 args: seed, length, then 2..15 as i * 7
    h_long,         // Long, 2 args: seed, length
    h_ask,          // Short, 3 args: seed, length, 1 for a Long reply; replies with a prepared message
    h_answer,       // Medium, 2 args: the prepared reply
    h_answer_long,  // Long, 2 args: the prepared Long reply
    h_leave,        // Short, 0 args: prepares a reply and returns without committing
    h_left,         // Short, 0 args: never sent
    h_unregistered = 250,
};

constexpr std::uint32_t cancelled_seed = 0xdeadu;  // a cancelled message's: never delivered
constexpr std::size_t long_area = 64 * 1024;      // per sender, prepared Longs
constexpr std::size_t answer_area = 1 << 20;      // where Long replies land (origin's segment)
constexpr std::size_t nbi_area = 2 << 20;         // where NBI Longs land
constexpr std::size_t nbi_bytes = 768 * 1024;     // above smp's packed limit (512 KiB)

std::atomic<unsigned> med_seen{0}, long_seen{0}, answers{0}, leave_seen{0};

void check_medium(void *payload, std::size_t length, const std::uint32_t *args) {
    TCHECK(args[0] != cancelled_seed, "a cancelled message was delivered");
    TCHECK(length == args[1], "Medium of %zu bytes, committed %u", length, args[1]);
    TCHECK_PATTERN(payload, length, args[0], "prepared Medium");
}

void on_med(sluice_token_t, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 2, "nargs %u", nargs);
    check_medium(payload, length, args);
    med_seen.fetch_add(1);
}
void on_med0(sluice_token_t, void *payload, std::size_t length, const std::uint32_t *, unsigned nargs) {
    TCHECK(nargs == 0, "nargs %u", nargs);
    TCHECK(length == 100, "Medium with no arguments: %zu bytes", length);
    TCHECK_PATTERN(payload, length, 77, "prepared Medium with no arguments");
    med_seen.fetch_add(1);
}
void on_med16(sluice_token_t, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 16, "nargs %u", nargs);
    for (unsigned i = 2; i < 16; ++i) TCHECK(args[i] == i * 7, "argument %u is %u", i, args[i]);
    check_medium(payload, length, args);
    med_seen.fetch_add(1);
}
void on_long(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 2 && length == args[1], "Long of %zu bytes, committed %u (nargs %u)", length, args[1], nargs);
    TCHECK(args[0] != cancelled_seed, "a cancelled Long was delivered");
    auto *p = static_cast<std::uint8_t *>(payload);
    TCHECK(p >= my_segment() && p + length <= my_segment() + segments[me].size, "Long outside my segment");
    (void)token;
    TCHECK_PATTERN(payload, length, args[0], "prepared or NBI Long");
    long_seen.fetch_add(1);
}

// Replies prepared in the handler, and the handler's bad calls (counted
// apart: they run on whichever rank serves the request).
void on_ask(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 3, "nargs %u", nargs);
    const std::uint32_t seed = args[0], length = args[1];
    const bool long_reply = args[2] != 0;
    void *buffer = nullptr;
    std::size_t size = 0;
    const sluice_am_category_t c = long_reply ? SLUICE_AM_LONG : SLUICE_AM_MEDIUM;
    // A foreign token, and a request from a handler.
    int foreign = 0;
    if (seed % 16 == 0) {
        TERR(SLUICE_ERR_CONTEXT, sluice_am_prepare_reply(c, reinterpret_cast<sluice_token_t>(&foreign), 0, length, 2,
                                                         0, &buffer, &size));
        TERR(SLUICE_ERR_CONTEXT, sluice_am_prepare_request(SLUICE_AM_MEDIUM, me, 0, 8, 2, 0, &buffer, &size));
    }
    TOK(sluice_am_prepare_reply(c, token, length / 2, length, 2, 0, &buffer, &size));
    TCHECK(size >= length / 2 && size <= length && buffer, "reply prepared with %zu bytes for [%u, %u]", size,
           length / 2, length);
    const std::uint32_t out[2] = {seed, static_cast<std::uint32_t>(size)};
    pattern_fill(buffer, size, seed);
    if (seed % 16 == 0) {
        std::uint32_t a = 1;
        TERR(SLUICE_ERR_STATE, sluice_am_reply_short(token, h_left, &a, 0));
        TERR(SLUICE_ERR_STATE, sluice_am_prepare_reply(c, token, 0, 8, 2, 0, &buffer, &size));
        TERR(SLUICE_ERR_ARGUMENT, sluice_am_commit(long_reply ? h_answer_long : h_answer, size, nullptr, out, 1));
    }
    void *dest = nullptr;
    if (long_reply) {
        sluice_rank_t src = 0;
        TOK(sluice_token_source(token, &src));
        dest = segments[src].base + answer_area + me * long_area;
    }
    TOK(sluice_am_commit(long_reply ? h_answer_long : h_answer, size, dest, out, 2));
    if (seed % 16 == 0) {
        TERR(SLUICE_ERR_CONTEXT, sluice_am_prepare_reply(c, token, 0, 8, 2, 0, &buffer, &size));
    }
}
void on_answer(sluice_token_t, void *payload, std::size_t length, const std::uint32_t *args, unsigned) {
    check_medium(payload, length, args);
    answers.fetch_add(1);
}
void on_answer_long(sluice_token_t, void *payload, std::size_t length, const std::uint32_t *args, unsigned) {
    TCHECK(length == args[1], "Long reply of %zu bytes, committed %u", length, args[1]);
    TCHECK_PATTERN(payload, length, args[0], "prepared Long reply");
    answers.fetch_add(1);
}
// Leaves a prepared reply behind: the runtime cancels it and says so.
void on_leave(sluice_token_t token, void *, std::size_t, const std::uint32_t *, unsigned) {
    void *buffer = nullptr;
    std::size_t size = 0;
    TOK(sluice_am_prepare_reply(SLUICE_AM_MEDIUM, token, 8, 8, 0, 0, &buffer, &size));
    std::memset(buffer, 1, size);
    ++g_errors_expected;  // the runtime's line when it cancels the reply
    leave_seen.fetch_add(1);
}
void on_left(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) {
    TCHECK(false, "a reply left prepared by its handler was delivered");
}

// One prepared Medium of `least`..`most`, committed with `pick` of the
// size it got (0: least, 1: the size, 2: between); returns the length sent.
std::size_t send_prepared(sluice_rank_t peer, std::size_t least, std::size_t most, int pick, std::uint32_t seed,
                          unsigned flags = 0) {
    void *buffer = nullptr;
    std::size_t size = 0;
    sluice_status_t s;
    while ((s = sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, least, most, 2, flags, &buffer, &size)) ==
           SLUICE_NOT_READY)
        TOK(sluice_poll());
    TOK(s);
    TCHECK(buffer && size >= least && size <= most, "prepared %zu bytes for [%zu, %zu]", size, least, most);
    const std::size_t length = pick == 0 ? least : pick == 1 ? size : least + (size - least) / 2;
    pattern_fill(buffer, length, seed);
    const std::uint32_t args[2] = {seed, static_cast<std::uint32_t>(length)};
    TOK(sluice_am_commit(h_med, length, nullptr, args, 2));
    return length;
}

void cancel_one(sluice_rank_t peer, std::size_t most) {
    void *buffer = nullptr;
    std::size_t size = 0;
    TOK(sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 0, most, 2, 0, &buffer, &size));
    std::memset(buffer, 0xee, size);
    TOK(sluice_am_cancel());
}

// Every bad input, on the main thread; returns the Mediums it delivered.
unsigned bad_inputs(sluice_rank_t peer) {
    void *buffer = nullptr, *keep = &buffer;
    std::size_t size = 12345;
    const std::size_t max_medium = sluice_am_max_medium_for(peer, 2), max_long = sluice_am_max_long_for(peer, 2);
    TCHECK(max_medium == sluice_am_max_medium() && max_long == sluice_am_max_long(),
           "max_*_for %zu/%zu, max %zu/%zu", max_medium, max_long, sluice_am_max_medium(), sluice_am_max_long());
    TCHECK(sluice_am_max_medium_for(nranks, 0) == 0 && sluice_am_max_medium_for(peer, 17) == 0 &&
               sluice_am_max_long_for(nranks, 0) == 0,
           "max_*_for of a bad rank or argument count");
    const std::uint32_t args[2] = {5, 8};
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 9, 8, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_TOO_LARGE,
         sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, max_medium + 1, SIZE_MAX, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_TOO_LARGE,
         sluice_am_prepare_request(SLUICE_AM_LONG, peer, max_long + 1, SIZE_MAX, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_prepare_request(SLUICE_AM_SHORT, peer, 0, 8, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_ARGUMENT,
         sluice_am_prepare_request(static_cast<sluice_am_category_t>(7), peer, 0, 8, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_RANK, sluice_am_prepare_request(SLUICE_AM_MEDIUM, nranks, 0, 8, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 0, 8, 17, 0, &buffer, &size));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 0, 8, 2, 0, nullptr, &size));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 0, 8, 2, 0x80, &buffer, &size));
    TERR(SLUICE_ERR_CONTEXT, sluice_am_prepare_reply(SLUICE_AM_MEDIUM, nullptr, 0, 8, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_CONTEXT,
         sluice_am_prepare_reply(SLUICE_AM_MEDIUM, reinterpret_cast<sluice_token_t>(keep), 0, 8, 2, 0, &buffer, &size));
    TERR(SLUICE_ERR_STATE, sluice_am_commit(h_med, 8, nullptr, args, 2));
    TERR(SLUICE_ERR_STATE, sluice_am_cancel());
    TCHECK(buffer == nullptr && size == 12345, "outputs written by a failed prepare");

    // Prepared: everything else on this thread is refused, it stays prepared.
    TOK(sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 8, 64, 2, 0, &buffer, &size));
    TCHECK(size >= 8 && size <= 64, "size %zu", size);
    pattern_fill(buffer, 8, 5);
    void *other = nullptr;
    std::size_t other_size = 0;
    TERR(SLUICE_ERR_STATE, sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 0, 8, 2, 0, &other, &other_size));
    TERR(SLUICE_ERR_STATE, sluice_am_request_short(peer, h_left, nullptr, 0));
    TERR(SLUICE_ERR_STATE, sluice_am_request_short_f(peer, h_left, nullptr, 0, SLUICE_FLAG_IMMEDIATE));
    TERR(SLUICE_ERR_STATE, sluice_am_request_medium(peer, h_med, buffer, 8, args, 2));
    TERR(SLUICE_ERR_STATE,
         sluice_am_request_long(peer, h_long, buffer, 8, segments[peer].base + me * long_area, args, 2));
    TERR(SLUICE_ERR_STATE, sluice_poll());
    TERR(SLUICE_ERR_STATE, sluice_barrier());
    TERR(SLUICE_ERR_TOO_LARGE, sluice_am_commit(h_med, size + 1, nullptr, args, 2));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_commit(h_med, 8, nullptr, args, 1));
    TERR(SLUICE_ERR_HANDLER, sluice_am_commit(h_unregistered, 8, nullptr, args, 2));
    TERR(SLUICE_ERR_HANDLER, sluice_am_commit(h_long, 8, nullptr, args, 2));
    TOK(sluice_am_commit(h_med, 8, nullptr, args, 2));  // the one delivery

    // A Long committed outside the segment stays prepared; cancel it.
    TOK(sluice_am_prepare_request(SLUICE_AM_LONG, peer, 8, 8, 2, 0, &buffer, &size));
    const std::uint32_t dead[2] = {cancelled_seed, 8};
    TERR(SLUICE_ERR_SEGMENT, sluice_am_commit(h_long, 8, segments[peer].base + segments[peer].size - 4, dead, 2));
    TOK(sluice_am_cancel());

    // SLUICE_FLAG_NBI combines with nothing.
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_request_long_f(peer, h_long, buffer, 8, segments[peer].base, dead, 2,
                                                       SLUICE_FLAG_NBI | SLUICE_FLAG_IMMEDIATE));
    return 1;
}

} // namespace

int case_prepare(int argc, char **argv) {
    const unsigned iterations = static_cast<unsigned>(arg_number(argc, argv, 2, 200));
    attach(nbi_area + nbi_bytes + 4096);
    const sluice_rank_t peer = (me + 1) % nranks;
    TOK(sluice_handler_register(h_med, on_med, SLUICE_AM_MEDIUM, 2));
    TOK(sluice_handler_register(h_med0, on_med0, SLUICE_AM_MEDIUM, 0));
    TOK(sluice_handler_register(h_med16, on_med16, SLUICE_AM_MEDIUM, 16));
    TOK(sluice_handler_register(h_long, on_long, SLUICE_AM_LONG, 2));
    TOK(sluice_handler_register(h_ask, on_ask, SLUICE_AM_SHORT, 3));
    TOK(sluice_handler_register(h_answer, on_answer, SLUICE_AM_MEDIUM, 2));
    TOK(sluice_handler_register(h_answer_long, on_answer_long, SLUICE_AM_LONG, 2));
    TOK(sluice_handler_register(h_leave, on_leave, SLUICE_AM_SHORT, 0));
    TOK(sluice_handler_register(h_left, on_left, SLUICE_AM_MEDIUM, 0));
    TOK(sluice_barrier());
    unsigned sent = 0;  // Mediums to the peer; each rank receives as many from its origin
    std::uint32_t seed = 1000 * (me + 1);

    // Sizes: at the least, the most and between, with commits shorter than prepared.
    // Fixed sizes clamp to the conduit's largest Medium (portals: 800 bytes).
    const std::size_t max = sluice_am_max_medium(), k4 = std::min<std::size_t>(4096, max);
    const std::size_t bounds[][2] = {{0, 0}, {0, 1}, {1, 1}, {0, 63}, {40, 64}, {64, 65}, {100, k4},
                                     {k4, k4}, {1, max / 2}, {max / 2, max}, {max, max}, {0, SIZE_MAX}};
    for (const auto &b : bounds)
        for (int pick = 0; pick < 3; ++pick) {
            send_prepared(peer, b[0], b[1], pick, ++seed);
            ++sent;
        }
    {
        // No arguments, and 16 (more than an smp record line holds: the library's buffer).
        void *buffer;
        std::size_t size;
        TOK(sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, 100, 200, 0, 0, &buffer, &size));
        pattern_fill(buffer, 100, 77);
        TOK(sluice_am_commit(h_med0, 100, nullptr, nullptr, 0));
        std::uint32_t a16[16];
        for (unsigned i = 0; i < 16; ++i) a16[i] = i * 7;
        a16[0] = ++seed;
        const std::size_t n16 = std::min<std::size_t>(3000, sluice_am_max_medium_for(peer, 16));
        a16[1] = static_cast<std::uint32_t>(n16);
        TOK(sluice_am_prepare_request(SLUICE_AM_MEDIUM, peer, n16, n16, 16, 0, &buffer, &size));
        pattern_fill(buffer, n16, a16[0]);
        TOK(sluice_am_commit(h_med16, n16, nullptr, a16, 16));
        sent += 2;
    }
    // Cancels between sends, many: the rings wrap over cancelled room, and
    // with 4 credits per peer a credit lost to a cancel would stall the sends.
    for (unsigned i = 0; i < iterations; ++i) {
        const std::size_t most = 1 + (i * 977u) % max;
        if (i % 3 == 0) {
            cancel_one(peer, most);
            const std::uint32_t a[2] = {++seed, static_cast<std::uint32_t>(std::min<std::size_t>(most, 256))};
            std::vector<std::uint8_t> plain(a[1]);
            pattern_fill(plain.data(), plain.size(), a[0]);
            TOK(sluice_am_request_medium(peer, h_med, plain.data(), plain.size(), a, 2));
        } else {
            send_prepared(peer, most / 3, most, static_cast<int>(i % 3), ++seed, i % 5 == 0 ? SLUICE_FLAG_IMMEDIATE : 0);
        }
        ++sent;
    }
    sent += bad_inputs(peer);

    // Prepared Longs into my area of the peer's segment.
    unsigned longs = 0;
    // (length, offset in my area): apart, since a Long may land before the last one's handler ran
    const std::size_t placed[][2] = {{0, 0}, {1, 64}, {4096, 4096}, {long_area / 2, long_area / 2}};
    for (const auto &[length, offset] : placed) {
        void *buffer;
        std::size_t size;
        TOK(sluice_am_prepare_request(SLUICE_AM_LONG, peer, length, long_area / 2, 2, 0, &buffer, &size));
        TCHECK(size == long_area / 2, "Long prepared with %zu bytes", size);
        const std::uint32_t a[2] = {++seed, static_cast<std::uint32_t>(length)};
        pattern_fill(buffer, length, a[0]);
        TOK(sluice_am_commit(h_long, length, segments[peer].base + me * long_area + offset, a, 2));
        ++longs;
    }

    // Replies prepared in handlers: Medium and Long.
    unsigned asked = 0;
    for (unsigned i = 0; i < 32; ++i) {
        std::uint32_t a[3] = {++seed, static_cast<std::uint32_t>(1 + (i * 1237u) % max),
                              static_cast<std::uint32_t>(i % 4 == 3)};
        if (a[2]) {
            a[1] = std::min<std::uint32_t>(a[1], long_area);
            WAIT_UNTIL(answers.load() == asked);  // one Long reply in my area at a time
        }
        TOK(sluice_am_request_short(peer, h_ask, a, 3));
        ++asked;
    }
    TOK(sluice_am_request_short(peer, h_leave, nullptr, 0));
    // The handlers' bad calls count on the thread that runs them: done before threads start.
    WAIT_UNTIL(answers.load() == asked && leave_seen.load() == 1);
    TOK(sluice_barrier());

    // Threads, each with its own prepared message.
    const unsigned threads = nranks >= 8 ? 2 : 4, per_thread = iterations / 4 + 8;
    {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                std::uint32_t s = 0x100000u * (t + 1) + 5000 * me;
                for (unsigned i = 0; i < per_thread; ++i) {
                    if (i % 4 == 1) cancel_one(peer, 2000);
                    send_prepared(peer, 16, std::min<std::size_t>(1024 + 100 * t, max), static_cast<int>(i % 3), ++s);
                }
            });
        for (auto &t : pool) t.join();
        sent += threads * per_thread;
    }

    // NBI Long above smp's packed limit: returns before the payload left
    // on RDMA conduits; the buffer is reused after the sync.
    {
        const std::size_t length = std::min(nbi_bytes, sluice_am_max_long());
        std::vector<std::uint8_t> payload(length);
        const std::uint32_t a[2] = {++seed, static_cast<std::uint32_t>(length)};
        pattern_fill(payload.data(), length, a[0]);
        TOK(sluice_am_request_long_f(peer, h_long, payload.data(), length, segments[peer].base + nbi_area, a, 2,
                                     SLUICE_FLAG_NBI));
        TOK(sluice_nbi_sync_cat(SLUICE_NBI_AMS));
        std::memset(payload.data(), 0, length);  // the target must still see the pattern
        ++longs;
    }

    WAIT_UNTIL(med_seen.load() == sent && long_seen.load() == longs);
    TOK(sluice_barrier());
    // Nothing twice: the counts still hold once every request has run.
    TCHECK(med_seen.load() == sent, "%u Mediums arrived, %u sent", med_seen.load(), sent);
    TCHECK(long_seen.load() == longs, "%u Longs arrived, %u sent", long_seen.load(), longs);
    TCHECK(answers.load() == asked && leave_seen.load() == 1, "%u answers of %u", answers.load(), asked);
    report_expected_errors();
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
