// tests/mp/mp_immediate.cpp - SLUICE_FLAG_IMMEDIATE (the _f calls of
// <sluice.h>): a call that would wait for room returns SLUICE_NOT_READY at
// once, sends nothing and runs no handler; whatever it accepted arrives.
//
// immediate [limit]
// 1. Every rank sends Short, then Medium requests with the flag to the next
//    rank while no rank polls (each is inside this loop), until the call
//    answers SLUICE_NOT_READY or `limit` calls were accepted.  Every
//    conduit runs out: credits (network conduits), ring slots (smp).  No
//    handler may run meanwhile.  After a barrier each rank has received
//    exactly the requests its predecessor was told went.
// 2. The same with put_nbi_f of 64 KiB: over ibv (a fixed RDMA queue
//    only the poll drains) and udp (the first request of a Put over AM)
//    it runs out too; over ofi it may not (the conduit reaps completions
//    inside the call); to a peer whose segment is mapped here (smp) the
//    copy never waits.  The bytes of the accepted Puts are in place after
//    the sync.
// 3. Flags other than SLUICE_FLAG_IMMEDIATE are refused by name.
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace sluice_test::mp {
namespace {

enum : sluice_handler_t { h_imm_short = 90, h_imm_medium };

std::atomic<std::uint64_t> imm_seen{0};

void on_imm(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(nargs == 2 && args[0] == src, "immediate request: nargs %u from %u claims %u", nargs, src, args[0]);
    if (length) TCHECK_PATTERN(payload, length, args[1], "immediate Medium payload from rank %u", src);
    imm_seen.fetch_add(1);
}

// Sends with `send` until it answers SLUICE_NOT_READY or `limit` went;
// returns how many went.  No handler may run in between.
template <class Send> std::uint64_t until_full(std::uint64_t limit, bool &full, Send send) {
    const std::uint64_t seen = imm_seen.load();
    std::uint64_t went = 0;
    full = false;
    while (went < limit) {
        const sluice_status_t s = send(went);
        if (s == SLUICE_NOT_READY) {
            full = true;
            break;
        }
        TOK(s);
        ++went;
    }
    TCHECK(imm_seen.load() == seen, "a handler ran inside an immediate call (%llu)",
           static_cast<unsigned long long>(imm_seen.load() - seen));
    return went;
}

} // namespace

int case_immediate(int argc, char **argv) {
    const std::uint64_t limit = arg_number(argc, argv, 2, 200000);
    TOK(sluice_handler_register(h_imm_short, on_imm, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_imm_medium, on_imm, SLUICE_AM_MEDIUM, 2));
    constexpr std::size_t put_bytes = 64 << 10;
    attach(2 * put_bytes);
    const sluice_rank_t next = (me + 1) % nranks;
    const sluice_rank_t prev = (me + nranks - 1) % nranks;
    const char *route = std::getenv("SLUICE_ROUTE");
    std::uint32_t host_me = 0, host_next = 0;
    TOK(sluice_host_of(me, &host_me));
    TOK(sluice_host_of(next, &host_next));
    const bool network = nranks > 1 && ((route && std::string(route) == "network") || host_me != host_next);

    // 1. AMs.
    std::vector<std::uint8_t> payload(std::min<std::size_t>(sluice_am_max_medium(), 1024));
    pattern_fill(payload.data(), payload.size(), 7 + me);
    std::uint64_t went[2] = {0, 0};
    for (int kind = 0; kind < 2; ++kind) {
        TOK(sluice_barrier());
        bool full = false;
        went[kind] = until_full(limit, full, [&](std::uint64_t) {
            std::uint32_t args[2] = {me, 7 + me};
            // The Shorts through the C++ wrapper's flag overload.
            return kind == 0 ? static_cast<sluice_status_t>(
                                   sluice::request_short(sluice::Flag::immediate, next, h_imm_short, args[0], args[1]))
                             : sluice_am_request_medium_f(next, h_imm_medium, payload.data(), payload.size(), args, 2,
                                                          SLUICE_FLAG_IMMEDIATE);
        });
        if (nranks > 1)
            TCHECK(full, "%s: %llu immediate requests went to rank %u without one not ready", kind ? "Medium" : "Short",
                   static_cast<unsigned long long>(went[kind]), next);
    }
    TOK(sluice_barrier());
    std::uint64_t all[2 * 64] = {};
    TCHECK(nranks <= 64, "at most 64 ranks");
    TOK(sluice_allgather(went, all, sizeof went));
    const std::uint64_t want = all[2 * prev] + all[2 * prev + 1];
    WAIT_UNTIL(imm_seen.load() >= want);
    TCHECK(imm_seen.load() == want, "rank %u was told %llu immediate requests went, %llu arrived", prev,
           static_cast<unsigned long long>(want), static_cast<unsigned long long>(imm_seen.load()));

    // 2. Non-blocking Puts.
    std::vector<std::uint8_t> source(put_bytes);
    pattern_fill(source.data(), put_bytes, 100 + me);
    TOK(sluice_barrier());
    bool full = false;
    const std::uint64_t puts = until_full(limit / 64, full, [&](std::uint64_t) {
        return sluice_put_nbi_f(next, segments[next].base, source.data(), put_bytes, SLUICE_FLAG_IMMEDIATE);
    });
    // Conduits with a fixed RDMA queue that only the poll drains (ibv) or
    // Puts over AM (udp) run out; ofi reaps completions inside the call,
    // so a provider that moves data by itself may never be full.
    const char *net = std::getenv("SLUICE_NETWORK");
    const bool fills = network && net && (std::string(net) == "ibv" || std::string(net) == "udp");
    if (fills) TCHECK(full, "%llu immediate 64 KiB Puts went to rank %u over %s without one not ready",
                      static_cast<unsigned long long>(puts), next, net);
    if (!network) TCHECK(!full, "an immediate Put to a mapped segment answered not ready");
    // The Get lands apart from `source`: the Puts may still be reading it
    // until sluice_nbi_sync (a NIC's engine, such as uGNI's BTE, reads it
    // after the call returned).
    sluice_event_t ev = SLUICE_EVENT_DONE;
    sluice_status_t s;
    std::uint64_t got = 0;
    while ((s = sluice_get_nb_f(&got, next, segments[next].base + put_bytes, 8, &ev, SLUICE_FLAG_IMMEDIATE)) ==
           SLUICE_NOT_READY)
        TOK(sluice_poll());
    TOK(s);
    TOK(sluice_event_wait(ev));
    TOK(sluice_nbi_sync());
    TOK(sluice_barrier());
    if (puts) TCHECK_PATTERN(my_segment(), put_bytes, 100 + prev, "immediate Puts from rank %u", prev);

    // 3. Bad flags.
    std::uint32_t args[2] = {me, 0};
    TERR(SLUICE_ERR_ARGUMENT, sluice_am_request_short_f(next, h_imm_short, args, 2, 0x2));
    TERR(SLUICE_ERR_ARGUMENT, sluice_put_nbi_f(next, segments[next].base, source.data(), 8, 0x80));
    report_expected_errors();
    TOK(sluice_barrier());
    if (me == 0)
        std::printf("immediate: Short %llu, Medium %llu, 64 KiB Puts %llu accepted before not ready (rank 0)\n",
                    static_cast<unsigned long long>(went[0]), static_cast<unsigned long long>(went[1]),
                    static_cast<unsigned long long>(puts));
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
