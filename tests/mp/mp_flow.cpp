// tests/mp/mp_flow.cpp - request/reply chains, hidden replies, and floods of
// outstanding requests in both directions.
#include "tests/mp/mp_cases.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice_test::mp {

// ---- chain -----------------------------------------------------------------
// chain <round trips> <laps>
// 1. Round trips A -> B (request) -> A (reply handler), one at a time, in all
//    three categories.
// 2. Multi-hop: every rank starts a token that travels the ring `laps` times.
//    A handler may not send requests, so it acknowledges with a reply and
//    queues the token; the main loop forwards it after polling.  The token
//    carries its path, which every hop checks.
namespace {

enum : sluice_handler_t {
    h_ping = 50,
    h_pong,
    h_ping_medium,
    h_pong_medium,
    h_ping_long,
    h_pong_long,
    h_token_medium,
    h_token_long,
    h_token_ack,
};

std::atomic<std::uint32_t> last_pong{UINT32_MAX};
std::atomic<std::uint64_t> pongs{0};

sluice_rank_t token_source(sluice_token_t token) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    return src;
}

void on_ping(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 2, "nargs %u", nargs);
    sluice_rank_t src = token_source(token);
    TCHECK(args[0] == src, "ping from %u claims %u", src, args[0]);
    std::uint32_t reply[2] = {me, args[1] * 2 + 1};
    if (length) TCHECK_PATTERN(payload, length, args[1], "ping payload from %u", src);
    std::uint8_t back[64];
    pattern_fill(back, sizeof back, reply[1]);
    if (length == 0) {
        TOK(sluice_am_reply_short(token, h_pong, reply, 2));
    } else if (payload >= my_segment() && payload < my_segment() + segments[me].size) {
        TOK(sluice_am_reply_long(token, h_pong_long, back, sizeof back, segments[src].base + 4096 + me, reply, 2));
    } else {
        TOK(sluice_am_reply_medium(token, h_pong_medium, back, sizeof back, reply, 2));
    }
}

void on_pong(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 2, "nargs %u", nargs);
    sluice_rank_t src = token_source(token);
    TCHECK(args[0] == src && src == (me + 1) % nranks, "pong from %u claims %u", src, args[0]);
    if (length) {
        TCHECK(length == 64, "pong length %zu", length);
        TCHECK_PATTERN(payload, length, args[1], "pong payload from %u", src);
    }
    last_pong.store(args[1]);
    pongs.fetch_add(1);
}

// Tokens: payload = the ranks visited, origin first.
std::mutex token_lock;
std::deque<std::vector<std::uint32_t>> token_queue;
std::atomic<std::uint64_t> tokens_received{0}, token_acks{0};

void on_token(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = token_source(token);
    TCHECK(nargs == 1 && length % 4 == 0 && length >= 4 && args[0] == length / 4, "token: nargs %u length %zu",
           nargs, length);
    std::vector<std::uint32_t> path(length / 4);
    std::memcpy(path.data(), payload, length);
    TCHECK(path.back() == src, "token from %u ends its path with %u", src, path.back());
    for (std::size_t i = 1; i < path.size(); ++i)
        TCHECK(path[i] == (path[i - 1] + 1) % nranks, "token path broken at hop %zu: %u after %u", i, path[i],
               path[i - 1]);
    std::uint32_t ack = static_cast<std::uint32_t>(path.size());
    TOK(sluice_am_reply_short(token, h_token_ack, &ack, 1));
    std::lock_guard<std::mutex> g(token_lock);
    token_queue.push_back(std::move(path));
    tokens_received.fetch_add(1);
}

void on_token_ack(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned nargs) {
    TCHECK(nargs == 1, "nargs %u", nargs);
    token_acks.fetch_add(1);
}

std::size_t token_slot(std::uint32_t origin) { return 8192 + origin * (16384 + 64); }

void token_send(std::vector<std::uint32_t> &path) {
    sluice_rank_t next = (me + 1) % nranks;
    std::uint32_t words = static_cast<std::uint32_t>(path.size());
    std::size_t bytes = path.size() * 4;
    if (path.size() % 3 == 0) {
        TOK(sluice_am_request_long(next, h_token_long, path.data(), bytes, segments[next].base + token_slot(path[0]),
                                   &words, 1));
    } else {
        TOK(sluice_am_request_medium(next, h_token_medium, path.data(), bytes, &words, 1));
    }
}

} // namespace

int case_chain(int argc, char **argv) {
    unsigned round_trips = static_cast<unsigned>(arg_number(argc, argv, 2, 300));
    unsigned laps = static_cast<unsigned>(arg_number(argc, argv, 3, 20));
    TCHECK(laps * nranks + 1 <= sluice_am_max_medium() / 4 && laps * nranks + 1 <= 16384 / 4, "too many laps");
    attach(8192 + nranks * (16384 + 64) + 4096);
    TOK(sluice_handler_register(h_ping, on_ping, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_pong, on_pong, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_ping_medium, on_ping, SLUICE_AM_MEDIUM, 2));
    TOK(sluice_handler_register(h_pong_medium, on_pong, SLUICE_AM_MEDIUM, 2));
    TOK(sluice_handler_register(h_ping_long, on_ping, SLUICE_AM_LONG, 2));
    TOK(sluice_handler_register(h_pong_long, on_pong, SLUICE_AM_LONG, 2));
    TOK(sluice_handler_register(h_token_medium, on_token, SLUICE_AM_MEDIUM, 1));
    TOK(sluice_handler_register(h_token_long, on_token, SLUICE_AM_LONG, 1));
    TOK(sluice_handler_register(h_token_ack, on_token_ack, SLUICE_AM_SHORT, 1));
    TOK(sluice_barrier());

    sluice_rank_t next = (me + 1) % nranks;
    std::uint8_t out[100];
    for (unsigned i = 0; i < round_trips; ++i) {
        std::uint32_t seq = i * nranks + me;
        std::uint32_t args[2] = {me, seq};
        switch (i % 3) {
        case 0: TOK(sluice_am_request_short(next, h_ping, args, 2)); break;
        case 1:
            pattern_fill(out, sizeof out, seq);
            TOK(sluice_am_request_medium(next, h_ping_medium, out, sizeof out, args, 2));
            break;
        case 2:
            pattern_fill(out, sizeof out, seq);
            TOK(sluice_am_request_long(next, h_ping_long, out, sizeof out, segments[next].base + 64 * me + 1, args,
                                       2));
            break;
        }
        WAIT_UNTIL(pongs.load() == i + 1);
        TCHECK(last_pong.load() == seq * 2 + 1, "round trip %u: reply carried %u, expected %u", i, last_pong.load(),
               seq * 2 + 1);
    }
    TOK(sluice_barrier());

    // Multi-hop tokens.
    std::vector<std::uint32_t> mine = {me};
    token_send(mine);
    std::uint64_t sent = 1;
    std::size_t full = static_cast<std::size_t>(laps) * nranks + 1;
    bool home = false;
    double deadline = now_seconds() + rank_timeout();
    while (!home || tokens_received.load() < static_cast<std::uint64_t>(laps) * nranks || token_acks.load() < sent) {
        TOK(sluice_poll());
        for (;;) {
            std::vector<std::uint32_t> path;
            {
                std::lock_guard<std::mutex> g(token_lock);
                if (token_queue.empty()) break;
                path = std::move(token_queue.front());
                token_queue.pop_front();
            }
            path.push_back(me);
            if (path.size() == full) {
                TCHECK(path[0] == me, "a token of rank %u ended at rank %u", path[0], me);
                TCHECK(!home, "my token came home twice");
                home = true;
            } else {
                TCHECK(path.size() < full, "token of rank %u overran: %zu hops", path[0], path.size());
                token_send(path);
                ++sent;
            }
        }
        if (now_seconds() > deadline)
            fail_at(__FILE__, __LINE__, "tokens", "timed out: home %d, %llu tokens received, %llu of %llu acks", home,
                    static_cast<unsigned long long>(tokens_received.load()),
                    static_cast<unsigned long long>(token_acks.load()), static_cast<unsigned long long>(sent));
        ::sched_yield();
    }
    TOK(sluice_barrier());
    TCHECK(tokens_received.load() == static_cast<std::uint64_t>(laps) * nranks, "received %llu tokens",
           static_cast<unsigned long long>(tokens_received.load()));
    TOK(sluice_finalize());
    return 0;
}

// ---- hidden: request handlers that never reply ------------------------------
// hidden <messages per destination>
// With SLUICE_CREDIT_FLOW=1 and 4 credits per peer every request holds a credit until Sluice's hidden
// reply returns it: without hidden replies this case deadlocks.
namespace {

enum : sluice_handler_t { h_silent_short = 60, h_silent_medium, h_silent_long };
std::atomic<std::uint64_t> silent_seen{0};
std::uint32_t per_destination = 0;

std::uint32_t silent_seed(sluice_rank_t src, std::uint32_t i) { return src * 7919 + i; }
std::size_t silent_offset(sluice_rank_t src, std::uint32_t i) { return (src * (per_destination / 3 + 1) + i / 3) * 64 + 3; }

void on_silent(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = token_source(token);
    TCHECK(nargs == 3 && args[0] == src, "silent: nargs %u, source %u claims %u", nargs, src, args[0]);
    std::uint32_t i = args[1], kind = args[2];
    TCHECK(kind == i % 3, "message %u of kind %u", i, kind);
    if (kind == 0) TCHECK(length == 0, "Short with length %zu", length);
    if (kind > 0) {
        TCHECK(length == i % 61 + 1, "message %u from %u: length %zu", i, src, length);
        TCHECK_PATTERN(payload, length, silent_seed(src, i), "message %u from %u", i, src);
    }
    if (kind == 2)
        TCHECK(payload == my_segment() + silent_offset(src, i), "Long %u from %u landed at %p", i, src, payload);
    silent_seen.fetch_add(1);
}

} // namespace

int case_hidden(int argc, char **argv) {
    per_destination = static_cast<std::uint32_t>(arg_number(argc, argv, 2, 2000));
    attach(static_cast<std::size_t>(nranks) * (per_destination / 3 + 1) * 64 + 4096);
    TOK(sluice_handler_register(h_silent_short, on_silent, SLUICE_AM_SHORT, 3));
    TOK(sluice_handler_register(h_silent_medium, on_silent, SLUICE_AM_MEDIUM, 3));
    TOK(sluice_handler_register(h_silent_long, on_silent, SLUICE_AM_LONG, 3));
    TOK(sluice_barrier());
    std::uint8_t payload[64];
    for (std::uint32_t i = 0; i < per_destination; ++i) {
        for (sluice_rank_t k = 0; k < nranks; ++k) {
            sluice_rank_t d = (me + k) % nranks;
            std::uint32_t args[3] = {me, i, i % 3};
            std::size_t len = i % 61 + 1;
            if (i % 3) pattern_fill(payload, len, silent_seed(me, i));
            if (i % 3 == 0) TOK(sluice_am_request_short(d, h_silent_short, args, 3));
            if (i % 3 == 1) TOK(sluice_am_request_medium(d, h_silent_medium, payload, len, args, 3));
            if (i % 3 == 2)
                TOK(sluice_am_request_long(d, h_silent_long, payload, len, segments[d].base + silent_offset(me, i),
                                           args, 3));
        }
    }
    std::uint64_t expected = static_cast<std::uint64_t>(per_destination) * nranks;
    WAIT_UNTIL(silent_seen.load() == expected);
    TOK(sluice_barrier());
    TCHECK(silent_seen.load() == expected, "received %llu", static_cast<unsigned long long>(silent_seen.load()));
    TOK(sluice_finalize());
    return 0;
}

// ---- flood: thousands of outstanding Mediums in both directions -----------
// flood <messages>
// Phase 1: ranks in pairs (r, r^1; an odd last rank floods itself) send
// `messages` Mediums each without waiting; handlers send no reply.
// Phase 2: every rank sends `messages` Mediums spread over all ranks, and
// every handler replies, so request and reply queues fill at once.
namespace {

enum : sluice_handler_t { h_flood = 70, h_flood_echo, h_flood_echo_reply };
std::atomic<std::uint64_t> flood_seen{0}, echo_seen{0}, echo_replies{0};
std::size_t flood_max = 0;

std::size_t flood_length(std::uint32_t i) {
    static const std::size_t fractions[] = {1, 2, 3, 5, 8};
    std::size_t f = fractions[i % 5];
    return std::max<std::size_t>(1, flood_max * f / 8 - (i % 7));
}
std::uint32_t flood_seed(sluice_rank_t src, std::uint32_t i, std::uint32_t phase) { return src * 104729 + i * 3 + phase; }

void on_flood(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = token_source(token);
    TCHECK(nargs == 2 && args[0] == src, "flood: nargs %u", nargs);
    TCHECK(length == flood_length(args[1]), "flood message %u from %u: length %zu", args[1], src, length);
    TCHECK_PATTERN(payload, length, flood_seed(src, args[1], 1), "flood message %u from %u", args[1], src);
    flood_seen.fetch_add(1);
}

void on_echo(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = token_source(token);
    TCHECK(nargs == 2 && args[0] == src, "echo: nargs %u", nargs);
    TCHECK(length == flood_length(args[1]), "echo message %u from %u: length %zu", args[1], src, length);
    TCHECK_PATTERN(payload, length, flood_seed(src, args[1], 2), "echo message %u from %u", args[1], src);
    // Echo the first 32 bytes back.
    std::uint32_t reply[2] = {me, args[1]};
    TOK(sluice_am_reply_medium(token, h_flood_echo_reply, payload, std::min<std::size_t>(length, 32), reply, 2));
    echo_seen.fetch_add(1);
}

void on_echo_reply(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args,
                   unsigned nargs) {
    sluice_rank_t src = token_source(token);
    TCHECK(nargs == 2 && args[0] == src, "echo reply: nargs %u", nargs);
    TCHECK(length == std::min<std::size_t>(flood_length(args[1]), 32), "echo reply %u: length %zu", args[1], length);
    TCHECK_PATTERN(payload, length, flood_seed(me, args[1], 2), "echo reply %u from %u", args[1], src);
    echo_replies.fetch_add(1);
}

} // namespace

int case_flood(int argc, char **argv) {
    std::uint32_t messages = static_cast<std::uint32_t>(arg_number(argc, argv, 2, 5000));
    flood_max = sluice_am_max_medium();
    TOK(sluice_handler_register(h_flood, on_flood, SLUICE_AM_MEDIUM, 2));
    TOK(sluice_handler_register(h_flood_echo, on_echo, SLUICE_AM_MEDIUM, 2));
    TOK(sluice_handler_register(h_flood_echo_reply, on_echo_reply, SLUICE_AM_MEDIUM, 2));
    attach(4096);
    TOK(sluice_barrier());
    std::vector<std::uint8_t> buf(flood_max);

    sluice_rank_t partner = (me ^ 1u) < nranks ? (me ^ 1u) : me;
    for (std::uint32_t i = 0; i < messages; ++i) {
        std::size_t len = flood_length(i);
        pattern_fill(buf.data(), len, flood_seed(me, i, 1));
        std::uint32_t args[2] = {me, i};
        TOK(sluice_am_request_medium(partner, h_flood, buf.data(), len, args, 2));
    }
    WAIT_UNTIL(flood_seen.load() == messages);
    TOK(sluice_barrier());

    std::uint64_t expected_in = 0;  // how many echo requests reach me
    for (std::uint32_t i = 0; i < messages; ++i) {
        sluice_rank_t d = (me + 1 + i) % nranks;
        std::size_t len = flood_length(i);
        pattern_fill(buf.data(), len, flood_seed(me, i, 2));
        std::uint32_t args[2] = {me, i};
        TOK(sluice_am_request_medium(d, h_flood_echo, buf.data(), len, args, 2));
    }
    for (sluice_rank_t s = 0; s < nranks; ++s)
        for (std::uint32_t i = 0; i < messages; ++i)
            if ((s + 1 + i) % nranks == me) ++expected_in;
    WAIT_UNTIL(echo_seen.load() == expected_in && echo_replies.load() == messages);
    TOK(sluice_barrier());
    TCHECK(flood_seen.load() == messages && echo_seen.load() == expected_in, "counts changed after the barrier");
    TOK(sluice_finalize());
    return 0;
}

// ---- hotspot ---------------------------------------------------------------
// hotspot <messages> <pause ms>
// Every rank but 0 sends `messages` Medium requests of the largest size to
// rank 0, which first computes for `pause` ms without calling Sluice: the
// requests pile up at one receiver, more than its request buffers hold
// unless flow control holds the senders back.  Every request arrives once,
// whole, in its sender's order.

namespace {

enum : sluice_handler_t { h_hot = 75 };
std::atomic<std::uint64_t> hot_seen{0};
std::vector<std::uint32_t> hot_next;  // by source: the next index expected

void on_hot(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    const sluice_rank_t src = token_source(token);
    TCHECK(nargs == 2 && args[0] == src, "hotspot: nargs %u", nargs);
    TCHECK(args[1] == hot_next[src], "hotspot: message %u from %u arrived, %u expected", args[1], src, hot_next[src]);
    TCHECK(length == flood_max, "hotspot message %u from %u: length %zu", args[1], src, length);
    TCHECK_PATTERN(payload, length, flood_seed(src, args[1], 3), "hotspot message %u from %u", args[1], src);
    ++hot_next[src];
    hot_seen.fetch_add(1);
}

} // namespace

int case_hotspot(int argc, char **argv) {
    const auto messages = static_cast<std::uint32_t>(arg_number(argc, argv, 2, 2000));
    const auto pause = arg_number(argc, argv, 3, 500);
    flood_max = sluice_am_max_medium();
    hot_next.assign(nranks, 0);
    TOK(sluice_handler_register(h_hot, on_hot, SLUICE_AM_MEDIUM, 2));
    attach(4096);
    TOK(sluice_barrier());
    if (me == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(pause));
        WAIT_UNTIL(hot_seen.load() == std::uint64_t{messages} * (nranks - 1));
    } else {
        std::vector<std::uint8_t> buf(flood_max);
        for (std::uint32_t i = 0; i < messages; ++i) {
            pattern_fill(buf.data(), flood_max, flood_seed(me, i, 3));
            std::uint32_t args[2] = {me, i};
            TOK(sluice_am_request_medium(0, h_hot, buf.data(), flood_max, args, 2));
        }
    }
    TOK(sluice_barrier());
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
