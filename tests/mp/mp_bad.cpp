// tests/mp/mp_bad.cpp - bad input: every call must return the right status,
// print one line naming the rank and the fix, write no output, deliver
// nothing, and corrupt no memory; the runtime must still work afterwards.
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <atomic>
#include <cstring>

namespace sluice_test::mp {
namespace {

enum : sluice_handler_t {
    h_short2 = 200,     // Short, 2 args
    h_medium1,          // Medium, 1 arg
    h_long1,            // Long, 1 arg
    h_reply_twice,      // Short request: replies, then tries again
    h_reply_twice_med,  // Medium request: replies, then tries again
    h_ack,              // Short reply: tries to reply to a reply
    h_ack_medium,       // Medium reply: tries to reply to a reply
    h_unregistered = 250,
};

std::atomic<int> short_seen{0}, medium_seen{0}, long_seen{0}, twice_handled{0}, acks{0};
constexpr std::size_t tail = 64;  // the only bytes of a segment valid messages write

void on_short2(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 2 && args[0] == 11 && args[1] == 22, "a bad request was delivered (nargs %u)", nargs);
    TCHECK(sluice_in_handler() == 1 && sluice::in_handler(), "sluice_in_handler() in a request handler");
    short_seen.fetch_add(1);
}
void on_medium1(sluice_token_t, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 1 && args[0] == 33 && length == 8, "a bad Medium was delivered (nargs %u, length %zu)", nargs,
           length);
    TCHECK_PATTERN(payload, length, 33, "valid Medium after the bad ones");
    medium_seen.fetch_add(1);
}
void on_long1(sluice_token_t, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 1 && args[0] == 44 && length == 8, "a bad Long was delivered (nargs %u, length %zu)", nargs,
           length);
    TCHECK(payload == my_segment() + segments[me].size - tail, "valid Long landed at %p", payload);
    TCHECK_PATTERN(payload, length, 44, "valid Long after the bad ones");
    long_seen.fetch_add(1);
}

void on_reply_twice(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 1, "nargs %u", nargs);
    std::uint32_t a = args[0] + 1;
    std::uint8_t buf[16] = {};
    TOK(sluice_am_reply_short(token, h_ack, &a, 1));
    TERR(SLUICE_ERR_CONTEXT, sluice_am_reply_short(token, h_ack, &a, 1));
    TERR(SLUICE_ERR_CONTEXT, sluice_am_reply_medium(token, h_ack_medium, buf, sizeof buf, &a, 1));
    twice_handled.fetch_add(1);
}

void on_reply_twice_medium(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 1, "nargs %u", nargs);
    std::uint32_t a = args[0] + 1;
    std::uint8_t buf[16] = {};
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TOK(sluice_am_reply_medium(token, h_ack_medium, buf, sizeof buf, &a, 1));
    TERR(SLUICE_ERR_CONTEXT, sluice_am_reply_short(token, h_ack, &a, 1));
    TERR(SLUICE_ERR_CONTEXT,
         sluice_am_reply_long(token, h_long1, buf, 8, segments[src].base + segments[src].size - tail, &a, 1));
    twice_handled.fetch_add(1);
}

void on_ack(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 1 && args[0] == 2, "ack: nargs %u value %u", nargs, nargs ? args[0] : 0);
    TCHECK(sluice_in_handler() == 1, "sluice_in_handler() in a reply handler");
    std::uint32_t a = 0;
    TERR(SLUICE_ERR_CONTEXT, sluice_am_reply_short(token, h_ack, &a, 1));
    acks.fetch_add(1);
}

void on_ack_medium(sluice_token_t token, void *, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    TCHECK(nargs == 1 && args[0] == 4 && length == 16, "Medium ack: nargs %u length %zu", nargs, length);
    std::uint32_t a = 0;
    std::uint8_t buf[4] = {};
    TERR(SLUICE_ERR_CONTEXT, sluice_am_reply_medium(token, h_ack_medium, buf, sizeof buf, &a, 1));
    acks.fetch_add(1);
}

// A stack buffer with guard bytes on both sides.
struct Guarded {
    std::uint8_t before[32];
    std::uint8_t data[64];
    std::uint8_t after[32];
    Guarded() {
        std::memset(before, 0xC3, sizeof before);
        std::memset(data, 0x77, sizeof data);
        std::memset(after, 0xC3, sizeof after);
    }
    void check(const char *what) const {
        TCHECK(fill_mismatch(before, sizeof before, 0xC3) == SIZE_MAX, "%s: guard before a buffer changed", what);
        TCHECK(fill_mismatch(after, sizeof after, 0xC3) == SIZE_MAX, "%s: guard after a buffer changed", what);
    }
};

// RMA with a remote range outside the peer's segment, in every form; the
// local buffer and the event must stay untouched.
void rma_outside(sluice_rank_t peer, std::uint8_t *remote, std::size_t len, sluice_status_t alternative,
                 const char *what) {
    Guarded g;
    sluice_event_t ev = reinterpret_cast<sluice_event_t>(0x1234);
    TERR2(SLUICE_ERR_SEGMENT, alternative, sluice_put(peer, remote, g.data, len));
    TERR2(SLUICE_ERR_SEGMENT, alternative, sluice_get(g.data, peer, remote, len));
    TERR2(SLUICE_ERR_SEGMENT, alternative, sluice_put_nb(peer, remote, g.data, len, &ev));
    TERR2(SLUICE_ERR_SEGMENT, alternative, sluice_get_nb(g.data, peer, remote, len, &ev));
    TERR2(SLUICE_ERR_SEGMENT, alternative, sluice_put_nbi(peer, remote, g.data, len));
    TERR2(SLUICE_ERR_SEGMENT, alternative, sluice_get_nbi(g.data, peer, remote, len));
    TCHECK(ev == reinterpret_cast<sluice_event_t>(0x1234), "%s: event written on failure", what);
    TCHECK(fill_mismatch(g.data, sizeof g.data, 0x77) == SIZE_MAX, "%s: failed Get wrote the local buffer", what);
    g.check(what);
}

} // namespace

// Runs before sluice_init: every call must say the runtime is not started.
void bad_before_init() {
    TCHECK(!sluice_initialized(), "initialized before sluice_init");
    TCHECK(sluice_in_handler() == 0, "sluice_in_handler() before sluice_init");
    std::uint8_t buf[8] = {};
    TERR(SLUICE_ERR_STATE, sluice_barrier());
    TERR(SLUICE_ERR_STATE, sluice_put(0, buf, buf, sizeof buf));
    TERR(SLUICE_ERR_STATE, sluice_am_request_short(0, h_short2, nullptr, 0));
    TERR(SLUICE_ERR_STATE, sluice_segment_attach(4096));
    TERR(SLUICE_ERR_STATE, sluice_finalize());
}

int case_bad(int, char **) {
    sluice_rank_t peer = (me + 1) % nranks, origin = (me + nranks - 1) % nranks;
    TERR(SLUICE_ERR_STATE, sluice_init(nullptr, nullptr));
    {
        std::uint8_t buf[8] = {};
        TERR2(SLUICE_ERR_STATE, SLUICE_ERR_SEGMENT, sluice_put(peer, buf, buf, sizeof buf));
    }
    attach(1 << 20);
    TCHECK(sluice_in_handler() == 0 && !sluice::in_handler(), "sluice_in_handler() outside handlers");
    TERR(SLUICE_ERR_STATE, sluice_segment_attach(4096));
    std::size_t my_size = segments[me].size;
    pattern_fill(my_segment(), my_size - tail, 9999 + me);

    // Registration.
    TERR(SLUICE_ERR_ARGUMENT, sluice_handler_register(h_short2, nullptr, SLUICE_AM_SHORT, 2));
    TERR(SLUICE_ERR_ARGUMENT, sluice_handler_register(h_short2, on_short2, static_cast<sluice_am_category_t>(3), 2));
    TERR(SLUICE_ERR_ARGUMENT, sluice_handler_register(h_short2, on_short2, SLUICE_AM_SHORT, 17));
    TOK(sluice_handler_register(h_short2, on_short2, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_medium1, on_medium1, SLUICE_AM_MEDIUM, 1));
    TOK(sluice_handler_register(h_long1, on_long1, SLUICE_AM_LONG, 1));
    TOK(sluice_handler_register(h_reply_twice, on_reply_twice, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_reply_twice_med, on_reply_twice_medium, SLUICE_AM_MEDIUM, 1));
    TOK(sluice_handler_register(h_ack, on_ack, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_ack_medium, on_ack_medium, SLUICE_AM_MEDIUM, 1));
    TOK(sluice_barrier());

    std::uint8_t *peer_base = segments[peer].base;
    std::size_t peer_size = segments[peer].size;
    std::uint32_t a2[2] = {11, 22}, a17[17] = {};
    Guarded g;
    std::size_t max_medium = sluice_am_max_medium();
    std::vector<std::uint8_t> big(max_medium + 1, 0);

    // Rank out of range.
    TERR(SLUICE_ERR_RANK, sluice_am_request_short(nranks, h_short2, a2, 2));
    TERR(SLUICE_ERR_RANK, sluice_am_request_short(UINT32_MAX, h_short2, a2, 2));
    TERR(SLUICE_ERR_RANK, sluice_am_request_medium(nranks, h_medium1, g.data, 8, a2, 1));
    TERR(SLUICE_ERR_RANK, sluice_am_request_long(nranks, h_long1, g.data, 8, peer_base, a2, 1));
    {
        sluice_event_t ev = reinterpret_cast<sluice_event_t>(0x1234);
        TERR(SLUICE_ERR_RANK, sluice_put(nranks, peer_base, g.data, 8));
        TERR(SLUICE_ERR_RANK, sluice_get(g.data, nranks, peer_base, 8));
        TERR(SLUICE_ERR_RANK, sluice_put_nb(nranks, peer_base, g.data, 8, &ev));
        TERR(SLUICE_ERR_RANK, sluice_get_nb(g.data, nranks, peer_base, 8, &ev));
        TERR(SLUICE_ERR_RANK, sluice_put_nbi(nranks, peer_base, g.data, 8));
        TERR(SLUICE_ERR_RANK, sluice_get_nbi(g.data, nranks, peer_base, 8));
        TCHECK(ev == reinterpret_cast<sluice_event_t>(0x1234), "event written on failure");
    }
    // Zero lengths: valid at either end of the segment, refused at a null
    // remote address (a peer that is not mapped here is published with size
    // 0, which the inline bounds test lets through at offset 0 only).
    TOK(sluice_put(peer, peer_base, g.data, 0));
    TOK(sluice_get(g.data, peer, peer_base + peer_size, 0));
    rma_outside(peer, nullptr, 0, SLUICE_ERR_ARGUMENT, "a null remote address, zero length");
    rma_outside(peer, peer_base + peer_size + 1, 0, SLUICE_ERR_SEGMENT, "zero length past the end");

    // Unregistered handler, wrong category, wrong argument count.
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_short(peer, h_unregistered, a2, 2));
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_medium(peer, h_unregistered, g.data, 8, a2, 1));
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_long(peer, h_unregistered, g.data, 8, peer_base, a2, 1));
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_medium(peer, h_short2, g.data, 8, a2, 2));
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_short(peer, h_medium1, a2, 1));
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_long(peer, h_medium1, g.data, 8, peer_base, a2, 1));
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_short(peer, h_short2, a2, 1));
    TERR(SLUICE_ERR_HANDLER, sluice_am_request_short(peer, h_short2, a17, 3));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_request_short(peer, h_short2, a17, 17));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_request_medium(peer, h_medium1, g.data, 8, a17, 17));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_request_short(peer, h_short2, nullptr, 2));

    // Payloads: too large, null.
    TERR(SLUICE_ERR_TOO_LARGE, sluice_am_request_medium(peer, h_medium1, big.data(), max_medium + 1, a2, 1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_request_medium(peer, h_medium1, nullptr, 8, a2, 1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_request_long(peer, h_long1, nullptr, 8, peer_base, a2, 1));

    // Long destinations outside the peer's segment.
    TERR(SLUICE_ERR_SEGMENT, sluice_am_request_long(peer, h_long1, g.data, 1, peer_base + peer_size, a2, 1));
    TERR(SLUICE_ERR_SEGMENT, sluice_am_request_long(peer, h_long1, g.data, 8, peer_base + peer_size - 4, a2, 1));
    TERR(SLUICE_ERR_SEGMENT, sluice_am_request_long(peer, h_long1, g.data, 8, peer_base - 8, a2, 1));
    TERR(SLUICE_ERR_SEGMENT, sluice_am_request_long(peer, h_long1, g.data, 8, g.data, a2, 1));
    TERR2(SLUICE_ERR_SEGMENT, SLUICE_ERR_ARGUMENT, sluice_am_request_long(peer, h_long1, g.data, 8, nullptr, a2, 1));

    // RMA outside the peer's segment.
    rma_outside(peer, peer_base + peer_size, 1, SLUICE_ERR_SEGMENT, "one past the end");
    rma_outside(peer, peer_base + peer_size - 4, 8, SLUICE_ERR_SEGMENT, "straddling the end");
    rma_outside(peer, peer_base - 8, 8, SLUICE_ERR_SEGMENT, "before the base");
    rma_outside(peer, g.after, 8, SLUICE_ERR_SEGMENT, "a stack address");
    rma_outside(peer, peer_base + 1, SIZE_MAX, SLUICE_ERR_ARGUMENT, "a length that wraps around");
    rma_outside(peer, nullptr, 8, SLUICE_ERR_ARGUMENT, "a null remote address");
    {
        sluice_event_t ev = reinterpret_cast<sluice_event_t>(0x1234);
        TERR(SLUICE_ERR_ARGUMENT, sluice_put(peer, peer_base, nullptr, 8));
        TERR(SLUICE_ERR_ARGUMENT, sluice_get(nullptr, peer, peer_base, 8));
        TERR(SLUICE_ERR_ARGUMENT, sluice_put_nb(peer, peer_base, nullptr, 8, &ev));
        TERR(SLUICE_ERR_ARGUMENT, sluice_get_nbi(nullptr, peer, peer_base, 8));
        TERR(SLUICE_ERR_ARGUMENT, sluice_put_nb(peer, peer_base, g.data, 8, nullptr));
        TERR(SLUICE_ERR_ARGUMENT, sluice_get_nb(g.data, peer, peer_base, 8, nullptr));
        TCHECK(ev == reinterpret_cast<sluice_event_t>(0x1234), "event written on failure");
    }

    // Null outputs of queries; replies outside a handler.
    std::size_t count = 0;
    sluice_rank_t src = 77;
    TERR(SLUICE_ERR_ARGUMENT, sluice_host_of(0, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_receive_memory(nullptr));
    sluice_receive_memory_t memory;
    TCHECK(sluice_receive_memory(&memory) == SLUICE_OK, "receive_memory refused a good call");
    TCHECK(memory.credit_space == memory.credits * memory.credit_bytes, "credit_space is not credits x credit_bytes");
    TCHECK(memory.receive_buffers > 0, "receive_memory counts no receive buffers");
    TERR(SLUICE_ERR_ARGUMENT, sluice_host_name(0, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_host_ranks(nullptr, 0, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_host_ranks(nullptr, 4, &count));
    TERR2(SLUICE_ERR_ARGUMENT, SLUICE_ERR_CONTEXT, sluice_token_source(nullptr, &src));
    TCHECK(src == 77, "token_source wrote its output on failure");
    TERR2(SLUICE_ERR_CONTEXT, SLUICE_ERR_ARGUMENT, sluice_am_reply_short(nullptr, h_ack, a2, 1));

    // Collective misuse, the same on every rank.
    std::vector<std::uint8_t> gathered(nranks * (max_medium + 1));
    TERR2(SLUICE_ERR_TOO_LARGE, SLUICE_ERR_ARGUMENT, sluice_allgather(big.data(), gathered.data(), max_medium + 1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_allgather(nullptr, gathered.data(), 8));
    TOK(sluice_barrier());

    // Reply rules, checked inside handlers (their TERRs count on the handling rank).
    std::uint32_t one = 1, three = 3;
    std::uint8_t medium_payload[8] = {};
    TOK(sluice_am_request_short(peer, h_reply_twice, &one, 1));
    TOK(sluice_am_request_medium(peer, h_reply_twice_med, medium_payload, sizeof medium_payload, &three, 1));
    WAIT_UNTIL(twice_handled.load() == 2 && acks.load() == 2);

    // The runtime still works: one valid message of each kind, RMA round trip.
    std::uint8_t eight[8];
    pattern_fill(eight, 8, 33);
    std::uint32_t v33 = 33, v44 = 44;
    TOK(sluice_am_request_short(peer, h_short2, a2, 2));
    TOK(sluice_am_request_medium(peer, h_medium1, eight, 8, &v33, 1));
    pattern_fill(eight, 8, 44);
    TOK(sluice_am_request_long(peer, h_long1, eight, 8, peer_base + peer_size - tail, &v44, 1));
    WAIT_UNTIL(short_seen.load() == 1 && medium_seen.load() == 1 && long_seen.load() == 1);
    std::uint64_t value = 0x1122334455667788ull + me, readback = 0;
    TOK(sluice_put(peer, peer_base + peer_size - 16, &value, 8));
    TOK(sluice_get(&readback, peer, peer_base + peer_size - 16, 8));
    TCHECK(readback == value, "RMA round trip after the bad calls read 0x%llx",
           static_cast<unsigned long long>(readback));
    TOK(sluice_barrier());

    // Nothing bad was delivered late, nothing outside the tail was written.
    TCHECK(short_seen.load() == 1 && medium_seen.load() == 1 && long_seen.load() == 1 && acks.load() == 2 &&
               twice_handled.load() == 2,
           "unexpected deliveries: short %d medium %d long %d acks %d", short_seen.load(), medium_seen.load(),
           long_seen.load(), acks.load());
    TCHECK_PATTERN(my_segment(), my_size - tail, 9999 + me, "my segment after rank %u's bad calls", origin);
    g.check("after all bad calls");
    TOK(sluice_finalize());
    // The inline same-host Put/Get (<sluice.h>) stop with the runtime: the
    // peer's segment is no longer mapped, and the call says why.
    TERR(SLUICE_ERR_STATE, sluice_put(peer, peer_base + peer_size - 16, &value, 8));
    TERR(SLUICE_ERR_STATE, sluice_get(&readback, peer, peer_base + peer_size - 16, 8));
    report_expected_errors();
    return 0;
}

} // namespace sluice_test::mp
