// tests/mp/mp_am.cpp - active-message cases: every category at payload 0, 1,
// the maximum and maximum+1; replies in each category.
#include "tests/mp/mp_cases.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

namespace sluice_test::mp {
namespace {

enum : sluice_handler_t {
    h_short_request = 10,
    h_short_reply,
    h_medium_request,
    h_medium_reply,
    h_long_request,
    h_long_reply,
    h_oversize_reply,  // request handler that tries replies one byte too large
};

// Request arguments: source, length, seed, offset of a Long in the target's
// segment, reply length, reply offset (Long) in the requester's segment.
constexpr unsigned request_nargs = 6;
// Reply arguments: responder, length, seed, offset (Long).
constexpr unsigned reply_nargs = 4;

std::atomic<std::uint64_t> requests_seen{0}, replies_seen{0}, oversize_seen{0};
std::size_t max_medium = 0, max_long = 0, long_cap = 0;
std::vector<std::uint8_t> reply_source;  // handlers build replies here (one polling thread)

std::uint32_t reply_seed(std::uint32_t request_seed) { return request_seed ^ 0x5A5A5A5Au; }

sluice_rank_t source_of(sluice_token_t token) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(src < nranks, "token source %u out of range", src);
    return src;
}

void short_request(sluice_token_t token, void *, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == 2 && length == 0, "Short request: nargs %u length %zu", nargs, length);
    TCHECK(args[0] == src, "arg source %u, token source %u", args[0], src);
    std::uint32_t reply[2] = {me, args[1] * 3 + 1};
    TOK(sluice_am_reply_short(token, h_short_reply, reply, 2));
    requests_seen.fetch_add(1);
}

void short_reply(sluice_token_t token, void *, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == 2 && length == 0, "Short reply: nargs %u length %zu", nargs, length);
    TCHECK(args[0] == src, "reply arg says responder %u, token says %u", args[0], src);
    TCHECK(args[1] == (src * 1000 + me) * 3 + 1, "Short reply value %u from %u", args[1], src);
    replies_seen.fetch_add(1);
}

void check_request(sluice_token_t token, const void *payload, std::size_t length, const std::uint32_t *args,
                   unsigned nargs, const char *what) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == request_nargs, "%s request: nargs %u", what, nargs);
    TCHECK(args[0] == src, "%s request: arg source %u, token source %u", what, args[0], src);
    TCHECK(length == args[1], "%s request from %u: length %zu, sent %u", what, src, length, args[1]);
    if (length) TCHECK_PATTERN(payload, length, args[2], "%s request payload from rank %u", what, src);
}

void medium_request(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args,
                    unsigned nargs) {
    check_request(token, payload, length, args, nargs, "Medium");
    std::uint32_t len = args[4], seed = reply_seed(args[2]);
    pattern_fill(reply_source.data(), len, seed);
    std::uint32_t reply[reply_nargs] = {me, len, seed, 0};
    TOK(sluice_am_reply_medium(token, h_medium_reply, reply_source.data(), len, reply, reply_nargs));
    requests_seen.fetch_add(1);
}

void medium_reply(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args,
                  unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == reply_nargs && args[0] == src, "Medium reply: nargs %u responder %u", nargs, args[0]);
    TCHECK(length == args[1], "Medium reply from %u: length %zu, sent %u", src, length, args[1]);
    if (length) TCHECK_PATTERN(payload, length, args[2], "Medium reply payload from rank %u", src);
    replies_seen.fetch_add(1);
}

void long_request(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args,
                  unsigned nargs) {
    check_request(token, payload, length, args, nargs, "Long");
    if (length)
        TCHECK(payload == my_segment() + args[3], "Long payload at %p, sent to segment offset %u (%p)", payload,
               args[3], static_cast<void *>(my_segment() + args[3]));
    sluice_rank_t src = source_of(token);
    std::uint32_t len = args[4], seed = reply_seed(args[2]);
    pattern_fill(reply_source.data(), len, seed);
    std::uint32_t reply[reply_nargs] = {me, len, seed, args[5]};
    TOK(sluice_am_reply_long(token, h_long_reply, reply_source.data(), len, segments[src].base + args[5], reply,
                             reply_nargs));
    std::memset(reply_source.data(), 0x5a, len);  // the caller's again on return
    requests_seen.fetch_add(1);
}

void long_reply(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == reply_nargs && args[0] == src, "Long reply: nargs %u responder %u", nargs, args[0]);
    TCHECK(length == args[1], "Long reply from %u: length %zu, sent %u", src, length, args[1]);
    if (length) {
        TCHECK(payload == my_segment() + args[3], "Long reply payload at %p, expected segment offset %u", payload,
               args[3]);
        TCHECK_PATTERN(payload, length, args[2], "Long reply payload from rank %u", src);
    }
    replies_seen.fetch_add(1);
}

// Tries a Medium and a Long reply one byte over the maximum: both must fail
// with SLUICE_ERR_TOO_LARGE.  Sends no reply at all after that.
void oversize_reply(sluice_token_t token, void *, std::size_t, const std::uint32_t *, unsigned) {
    sluice_rank_t src = source_of(token);
    std::uint32_t reply[reply_nargs] = {me, 0, 0, 0};
    TERR(SLUICE_ERR_TOO_LARGE, sluice_am_reply_medium(token, h_medium_reply, reply_source.data(), max_medium + 1,
                                                      reply, reply_nargs));
    if (max_long < SIZE_MAX)
        TERR(SLUICE_ERR_TOO_LARGE, sluice_am_reply_long(token, h_long_reply, reply_source.data(), max_long + 1,
                                                        segments[src].base, reply, reply_nargs));
    oversize_seen.fetch_add(1);
}

std::uint64_t expected_requests = 0, expected_replies = 0;

void wait_phase(const char *phase) {
    double deadline = now_seconds() + rank_timeout();
    while (requests_seen.load() < expected_requests || replies_seen.load() < expected_replies) {
        TOK(sluice_poll());
        if (now_seconds() > deadline)
            fail_at(__FILE__, __LINE__, phase, "timed out: %llu of %llu requests and %llu of %llu replies arrived",
                    static_cast<unsigned long long>(requests_seen.load()),
                    static_cast<unsigned long long>(expected_requests),
                    static_cast<unsigned long long>(replies_seen.load()),
                    static_cast<unsigned long long>(expected_replies));
        ::sched_yield();
    }
    TCHECK(requests_seen.load() == expected_requests && replies_seen.load() == expected_replies,
           "%s: too many messages: %llu requests, %llu replies", phase,
           static_cast<unsigned long long>(requests_seen.load()),
           static_cast<unsigned long long>(replies_seen.load()));
}

std::vector<std::uint8_t> request_source;

void send_one(int category, sluice_rank_t dest, std::size_t len, std::size_t rlen, std::size_t offset,
              std::size_t reply_offset, std::uint32_t seed) {
    switch (category) {
    case SLUICE_AM_SHORT: {
        std::uint32_t args[2] = {me, dest * 1000 + me};
        TOK(sluice_am_request_short(dest, h_short_request, args, 2));
        break;
    }
    case SLUICE_AM_MEDIUM: {
        pattern_fill(request_source.data(), len, seed);
        std::uint32_t args[request_nargs] = {me, static_cast<std::uint32_t>(len), seed, 0,
                                             static_cast<std::uint32_t>(rlen), 0};
        TOK(sluice_am_request_medium(dest, h_medium_request, request_source.data(), len, args, request_nargs));
        // The payload is the caller's again once the call returns (a copy,
        // or the transfer done): what the target checks is what was sent.
        std::memset(request_source.data(), 0xa5, len);
        break;
    }
    case SLUICE_AM_LONG: {
        pattern_fill(request_source.data(), len, seed);
        std::uint32_t args[request_nargs] = {me, static_cast<std::uint32_t>(len), seed,
                                             static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(rlen),
                                             static_cast<std::uint32_t>(reply_offset)};
        TOK(sluice_am_request_long(dest, h_long_request, request_source.data(), len, segments[dest].base + offset,
                                   args, request_nargs));
        // The payload is the caller's again once the call returns (a copy,
        // or the transfer done): what the target checks is what was sent.
        std::memset(request_source.data(), 0xa5, len);
        break;
    }
    }
}

const char *category_name(int c) { return c == SLUICE_AM_SHORT ? "Short" : c == SLUICE_AM_MEDIUM ? "Medium" : "Long"; }

} // namespace

// am [--max-medium=BYTES]
int case_am(int argc, char **argv) {
    max_medium = sluice_am_max_medium();
    max_long = sluice_am_max_long();
    // Checked at the end, so a different maximum does not hide other faults.
    std::size_t want_max_medium = max_medium;
    for (int i = 2; i < argc; ++i)
        if (std::strncmp(argv[i], "--max-medium=", 13) == 0) want_max_medium = std::strtoull(argv[i] + 13, nullptr, 0);
    TCHECK(max_medium >= 512, "max medium %zu is implausibly small", max_medium);
    TCHECK(max_long >= max_medium, "max long %zu below max medium %zu", max_long, max_medium);
    // The largest Long we actually send; the true maximum when it is at most 16 MiB.
    long_cap = std::min<std::size_t>(max_long, 16u << 20);
    if (me == 0) {
        std::printf("am: max Medium %zu, max Long %zu, largest Long sent %zu\n", max_medium, max_long, long_cap);
        std::fflush(stdout);
    }
    // All-to-all phases: requests from rank s land at s*slot+3, replies from
    // rank d at (nranks+d)*slot+5, so no two messages share bytes.
    std::size_t slot = (max_medium + 127) / 64 * 64;
    std::size_t seg = std::max(long_cap + 8192, 2 * nranks * slot + 4096);
    if (max_long < (16u << 20)) seg = std::max(seg, max_long + 1 + 8192);
    attach(seg);
    std::size_t buffer = std::max(max_medium, long_cap) + 2;
    if (max_long < (16u << 20)) buffer = std::max(buffer, max_long + 2);
    reply_source.assign(buffer, 0);
    request_source.assign(buffer, 0);

    TOK(sluice_handler_register(h_short_request, short_request, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_short_reply, short_reply, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_medium_request, medium_request, SLUICE_AM_MEDIUM, request_nargs));
    TOK(sluice_handler_register(h_medium_reply, medium_reply, SLUICE_AM_MEDIUM, reply_nargs));
    TOK(sluice_handler_register(h_long_request, long_request, SLUICE_AM_LONG, request_nargs));
    TOK(sluice_handler_register(h_long_reply, long_reply, SLUICE_AM_LONG, reply_nargs));
    TOK(sluice_handler_register(h_oversize_reply, oversize_reply, SLUICE_AM_SHORT, 0));
    TOK(sluice_barrier());

    // Every rank to every rank (itself included), at once: request and reply
    // of the same category and length.
    struct Phase {
        int category;
        std::size_t length;
    };
    std::vector<Phase> phases = {{SLUICE_AM_SHORT, 0}};
    for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{7}, max_medium - 1, max_medium}) {
        phases.push_back({SLUICE_AM_MEDIUM, len});
        phases.push_back({SLUICE_AM_LONG, len});
    }
    unsigned phase_index = 0;
    for (const Phase &p : phases) {
        ++phase_index;
        for (sluice_rank_t d = 0; d < nranks; ++d) {
            std::size_t offset = me * slot + 3, reply_offset = (nranks + d) * slot + 5;
            send_one(p.category, d, p.length, p.length, offset, reply_offset, me * 7919 + d * 131 + phase_index);
        }
        expected_requests += nranks;
        expected_replies += nranks;
        std::string what = std::string(category_name(p.category)) + " payload " + std::to_string(p.length);
        wait_phase(what.c_str());
        TOK(sluice_barrier());
    }

    // The largest Long, request and reply, one rank at a time around the ring
    // (a full-size region per pair would not fit).
    for (sluice_rank_t turn = 0; turn < nranks; ++turn) {
        sluice_rank_t dest = (turn + 1) % nranks;
        if (me == turn) {
            send_one(SLUICE_AM_LONG, dest, long_cap, long_cap, 3, 5, 4242 + turn);
            ++expected_replies;
        }
        if (me == dest) ++expected_requests;
        std::string what = "Long payload " + std::to_string(long_cap) + " (the maximum)";
        wait_phase(what.c_str());
        TOK(sluice_barrier());
    }

    // One byte over the maximum: a clear error at the sender, nothing sent.
    sluice_rank_t dest = (me + 1) % nranks;
    std::uint32_t args[request_nargs] = {me, 0, 0, 0, 0, 0};
    TERR(SLUICE_ERR_TOO_LARGE, sluice_am_request_medium(dest, h_medium_request, request_source.data(),
                                                        max_medium + 1, args, request_nargs));
    if (max_long < SIZE_MAX)
        TERR(SLUICE_ERR_TOO_LARGE, sluice_am_request_long(dest, h_long_request, request_source.data(), max_long + 1,
                                                          segments[dest].base, args, request_nargs));
    // ... and in replies: every rank asks every rank for an oversize reply.
    for (sluice_rank_t d = 0; d < nranks; ++d) TOK(sluice_am_request_short(d, h_oversize_reply, nullptr, 0));
    WAIT_UNTIL(oversize_seen.load() == nranks);
    wait_phase("after oversize requests");  // nothing else may have arrived
    TOK(sluice_barrier());
    report_expected_errors();
    TCHECK(max_medium == want_max_medium, "sluice_am_max_medium() is %zu, expected %zu (SLUICE_SMP_MAX_MEDIUM)",
           max_medium, want_max_medium);
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
