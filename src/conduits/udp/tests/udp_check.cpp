// src/conduits/udp/tests/udp_check.cpp - sluice-udp-check CASE [args]: what
// the udp conduit must guarantee across hosts, checked at the receiver and
// the sender (udp-hosts.sh runs it over three network namespaces, with and
// without injected loss), and what it does with strangers' datagrams.
//
//   hosts H                  H hosts, the same number of ranks on each, one
//                            name per host and it is gethostname()'s
//   once N [WINDOW] [MEDIUMS]
//                            every rank sends N Short requests to every other
//                            rank (interleaved, WINDOW outstanding) and MEDIUMS
//                            Medium requests per size (1, 1000, 4000, max);
//                            every request must run exactly once and get
//                            exactly one reply, every payload byte must match
//   rma [SIZE...]            Put to the next rank and Get back, blocking, nb
//                            and nbi, odd offsets, then all-to-all nbi; every
//                            byte and the guard bytes around it checked
//   nbi-get [GETS] [SIZE]    rank 0 issues GETS (16) sluice_get_nbi of SIZE
//                            (4 MiB) from rank 1 without polling between
//                            them; the first Get must be complete when the
//                            last call returns (a conduit that queues every
//                            request without polling is not), all after
//                            sluice_nbi_sync (run by udp-nbi-get.sh)
//   intruder [DATAGRAMS]     garbage and other jobs' datagrams sent to the
//                            ranks' sockets (intruder.cpp; run by
//                            sluice-udp-gtest, SLUICE_ROUTE=network)
//
// Every rank first prints "udp-check rank R of N pid P host NAME" (the
// script finds the process to kill or stop from it).  A failed check prints
// one "FAIL rank R case C ..." line and ends the job with code 1; rank 0
// prints "PASS C ..." when every rank passed.
#include "conduits/udp/tests/udp_check.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace sluice_test;

namespace sluice_test::udp_check {
sluice_rank_t me = 0, nranks = 1;
} // namespace sluice_test::udp_check
using sluice_test::udp_check::me;
using sluice_test::udp_check::nranks;

namespace {

sluice_rank_t source_of(sluice_token_t token) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(src < nranks, "token source %u out of range", src);
    return src;
}

void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
void say(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    std::vprintf(format, ap);
    va_end(ap);
    std::fflush(stdout);
}

// Fails, naming the first wrong byte, unless `n` bytes at `p` are the pattern
// of `seed`.  `format` says what the bytes are.
void expect_pattern(const void *p, std::size_t n, std::uint32_t seed, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
void expect_pattern(const void *p, std::size_t n, std::uint32_t seed, const char *format, ...) {
    std::size_t bad = pattern_mismatch(p, n, seed);
    if (bad == SIZE_MAX) return;
    char what[512];
    va_list ap;
    va_start(ap, format);
    std::vsnprintf(what, sizeof what, format, ap);
    va_end(ap);
    fail_at(__FILE__, __LINE__, "data matches the pattern", "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what,
            bad, n, static_cast<const std::uint8_t *>(p)[bad], pattern_byte(seed, bad));
}

// One bit per (peer, index); a second set bit is a duplicate.  Atomic: a
// progress thread (SLUICE_PROGRESS_THREAD=1) may run handlers too.
class Bitmaps {
public:
    void assign(std::size_t peers, std::size_t bits) {
        words_ = (bits + 63) / 64;
        bits_ = bits;
        map_ = std::make_unique<std::atomic<std::uint64_t>[]>(peers * words_);
        count_ = std::make_unique<std::atomic<std::uint64_t>[]>(peers);
        dups_ = std::make_unique<std::atomic<std::uint64_t>[]>(peers);
        for (std::size_t i = 0; i < peers * words_; ++i) map_[i].store(0);
        for (std::size_t i = 0; i < peers; ++i) count_[i].store(0), dups_[i].store(0);
        peers_ = peers;
    }
    void set(std::size_t peer, std::size_t index) {
        std::uint64_t bit = std::uint64_t{1} << (index % 64);
        if (map_[peer * words_ + index / 64].fetch_or(bit) & bit) dups_[peer].fetch_add(1);
        else count_[peer].fetch_add(1);
    }
    // The first index of `peer` not set, or bits() when every one is.
    std::size_t first_missing(std::size_t peer) const {
        for (std::size_t i = 0; i < bits_; ++i)
            if (!(map_[peer * words_ + i / 64].load() & (std::uint64_t{1} << (i % 64)))) return i;
        return bits_;
    }
    std::uint64_t count(std::size_t peer) const { return count_[peer].load(); }
    std::uint64_t dups(std::size_t peer) const { return dups_[peer].load(); }
    std::uint64_t dups_total() const {
        std::uint64_t d = 0;
        for (std::size_t i = 0; i < peers_; ++i) d += dups_[i].load();
        return d;
    }
    std::size_t bits() const { return bits_; }

private:
    std::size_t words_ = 0, bits_ = 0, peers_ = 0;
    std::unique_ptr<std::atomic<std::uint64_t>[]> map_, count_, dups_;
};

// ---- hosts ------------------------------------------------------------------
enum : sluice_handler_t { h_ping = 30, h_pong };
std::atomic<unsigned> pings{0}, pongs{0};

void on_ping(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    TCHECK(args[0] == source_of(token), "ping says source %u", args[0]);
    pings.fetch_add(1);
    std::uint32_t arg = me;
    TOK(sluice_am_reply_short(token, h_pong, &arg, 1));
}
void on_pong(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    TCHECK(args[0] == source_of(token), "pong says source %u", args[0]);
    pongs.fetch_add(1);
}

int case_hosts(int argc, char **argv) {
    unsigned long want = arg_number(argc, argv, 2, 0);
    std::uint32_t hosts = sluice_host_count();
    if (want) TCHECK(hosts == want, "sluice_host_count() is %u, expected %lu", hosts, want);
    TCHECK(nranks % hosts == 0, "%u ranks do not spread evenly over %u hosts", nranks, hosts);
    char mine[256] = {};
    TCHECK(::gethostname(mine, sizeof mine - 1) == 0, "gethostname failed");
    std::vector<std::string> name_of_host(hosts);
    std::vector<unsigned> ranks_on(hosts, 0);
    for (sluice_rank_t r = 0; r < nranks; ++r) {
        std::uint32_t h = UINT32_MAX;
        const char *name = nullptr;
        TOK(sluice_host_of(r, &h));
        TOK(sluice_host_name(r, &name));
        TCHECK(h < hosts && name && *name, "rank %u: host %u, name %s", r, h, name ? name : "(null)");
        if (name_of_host[h].empty()) name_of_host[h] = name;
        TCHECK(name_of_host[h] == name, "ranks of host %u are on '%s' and '%s'", h, name_of_host[h].c_str(), name);
        ++ranks_on[h];
        if (r == me) TCHECK(std::strcmp(name, mine) == 0, "my host name is '%s', gethostname says '%s'", name, mine);
    }
    for (std::uint32_t h = 0; h < hosts; ++h) {
        TCHECK(ranks_on[h] == nranks / hosts, "host %u has %u ranks, expected %u", h, ranks_on[h], nranks / hosts);
        for (std::uint32_t g = 0; g < h; ++g)
            TCHECK(name_of_host[g] != name_of_host[h], "hosts %u and %u are both '%s'", g, h, name_of_host[h].c_str());
    }
    std::size_t local = 0;
    TOK(sluice_host_ranks(nullptr, 0, &local));
    TCHECK(local == nranks / hosts, "sluice_host_ranks counts %zu ranks on my host", local);
    // Everyone reaches everyone: an allgather, and a Short request (with its
    // reply) to every rank, itself included.
    std::vector<std::uint32_t> all(nranks);
    std::uint32_t v = me * 7 + 1;
    TOK(sluice_allgather(&v, all.data(), sizeof v));
    for (sluice_rank_t r = 0; r < nranks; ++r) TCHECK(all[r] == r * 7 + 1, "allgather block of rank %u", r);
    TOK(sluice_handler_register(h_ping, on_ping, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(h_pong, on_pong, SLUICE_AM_SHORT, 1));
    TOK(sluice_barrier());
    for (sluice_rank_t r = 0; r < nranks; ++r) {
        std::uint32_t arg = me;
        TOK(sluice_am_request_short(r, h_ping, &arg, 1));
    }
    WAIT_UNTIL(pings.load() == nranks && pongs.load() == nranks);
    TOK(sluice_barrier());
    if (me == 0) {
        std::string list;
        for (std::uint32_t h = 0; h < hosts; ++h) list += (h ? " " : "") + name_of_host[h];
        say("PASS hosts: %u ranks on %u hosts (%s), %u each\n", nranks, hosts, list.c_str(), nranks / hosts);
    }
    TOK(sluice_finalize());
    return 0;
}

// ---- once -------------------------------------------------------------------
enum : sluice_handler_t { h_request = 40, h_reply, h_medium_request, h_medium_reply };

std::uint32_t per_peer = 0;  // Short requests each rank sends each peer
Bitmaps requests_seen, replies_seen, mediums_seen, medium_replies_seen;
std::atomic<std::uint64_t> requests_total{0}, replies_total{0};
std::vector<std::size_t> medium_sizes;
std::vector<std::uint8_t> reply_buffer;  // handlers build Medium replies here

std::uint32_t medium_seed(sluice_rank_t from, sluice_rank_t to, std::uint32_t k) {
    return from * 7919u + to * 131u + k * 17u + 3u;
}

void on_request(sluice_token_t token, void *, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == 2 && length == 0, "Short request: nargs %u length %zu", nargs, length);
    TCHECK(args[0] == src, "request says source %u, token says %u", args[0], src);
    TCHECK(args[1] < per_peer, "request index %u from rank %u, only %u sent", args[1], src, per_peer);
    requests_seen.set(src, args[1]);
    requests_total.fetch_add(1);
    std::uint32_t reply[2] = {me, args[1]};
    TOK(sluice_am_reply_short(token, h_reply, reply, 2));
}

void on_reply(sluice_token_t token, void *, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == 2 && length == 0, "Short reply: nargs %u length %zu", nargs, length);
    TCHECK(args[0] == src && args[1] < per_peer, "reply (%u, %u) from rank %u", args[0], args[1], src);
    replies_seen.set(src, args[1]);
    replies_total.fetch_add(1);
}

// Medium arguments: source, number k, length, seed.
void on_medium_request(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args,
                       unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == 4 && args[0] == src, "Medium request: nargs %u, source %u from rank %u", nargs, args[0], src);
    TCHECK(args[1] < mediums_seen.bits(), "Medium number %u from rank %u", args[1], src);
    TCHECK(length == args[2], "Medium %u from rank %u: %zu bytes arrived, %u sent", args[1], src, length, args[2]);
    TCHECK(args[3] == medium_seed(src, me, args[1]), "Medium %u from rank %u: seed %u", args[1], src, args[3]);
    expect_pattern(payload, length, args[3], "Medium request %u (%zu bytes) from rank %u", args[1], length, src);
    mediums_seen.set(src, args[1]);
    requests_total.fetch_add(1);
    std::uint32_t seed = args[3] ^ 0x5A5A5A5Au;
    pattern_fill(reply_buffer.data(), length, seed);
    std::uint32_t reply[4] = {me, args[1], static_cast<std::uint32_t>(length), seed};
    TOK(sluice_am_reply_medium(token, h_medium_reply, reply_buffer.data(), length, reply, 4));
}

void on_medium_reply(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args,
                     unsigned nargs) {
    sluice_rank_t src = source_of(token);
    TCHECK(nargs == 4 && args[0] == src && args[1] < medium_replies_seen.bits(),
           "Medium reply: nargs %u (%u, %u) from rank %u", nargs, args[0], args[1], src);
    TCHECK(length == args[2], "Medium reply %u from rank %u: %zu bytes arrived, %u sent", args[1], src, length,
           args[2]);
    TCHECK(args[3] == (medium_seed(me, src, args[1]) ^ 0x5A5A5A5Au), "Medium reply %u from rank %u: seed %u",
           args[1], src, args[3]);
    expect_pattern(payload, length, args[3], "Medium reply %u (%zu bytes) from rank %u", args[1], length, src);
    medium_replies_seen.set(src, args[1]);
    replies_total.fetch_add(1);
}

// Polls until `done()`, failing with the figures after the rank timeout.
template <class Done>
void wait_for(Done done, const char *what, std::uint64_t sent, std::uint64_t expected_in) {
    double deadline = now_seconds() + rank_timeout();
    while (!done()) {
        sluice_status_t s = sluice_poll();
        if (s != SLUICE_OK)
            fail_at(__FILE__, __LINE__, what, "sluice_poll returned %d: %s", s, sluice_last_error());
        if (now_seconds() > deadline)
            fail_at(__FILE__, __LINE__, what,
                    "timed out after %.0f s: %llu of %llu replies and %llu of %llu requests arrived", rank_timeout(),
                    static_cast<unsigned long long>(replies_total.load()), static_cast<unsigned long long>(sent),
                    static_cast<unsigned long long>(requests_total.load()),
                    static_cast<unsigned long long>(expected_in));
        ::sched_yield();
    }
}

int case_once(int argc, char **argv) {
    per_peer = static_cast<std::uint32_t>(arg_number(argc, argv, 2, 10000));
    std::uint64_t window = arg_number(argc, argv, 3, 256);
    std::uint32_t mediums_per_size = static_cast<std::uint32_t>(arg_number(argc, argv, 4, 4));
    TCHECK(per_peer >= 1 && window >= 1, "once N WINDOW: N %u, WINDOW %llu", per_peer,
           static_cast<unsigned long long>(window));
    std::size_t max_medium = sluice_am_max_medium();
    medium_sizes = {1, 1000, 4000, max_medium};
    for (std::size_t &s : medium_sizes) s = std::min(s, max_medium);
    const std::uint32_t mediums = mediums_per_size * static_cast<std::uint32_t>(medium_sizes.size());
    requests_seen.assign(nranks, per_peer);
    replies_seen.assign(nranks, per_peer);
    mediums_seen.assign(nranks, std::max<std::uint32_t>(mediums, 1));
    medium_replies_seen.assign(nranks, std::max<std::uint32_t>(mediums, 1));
    reply_buffer.assign(max_medium + 1, 0);
    std::vector<std::uint8_t> request_buffer(max_medium + 1);
    TOK(sluice_handler_register(h_request, on_request, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_reply, on_reply, SLUICE_AM_SHORT, 2));
    TOK(sluice_handler_register(h_medium_request, on_medium_request, SLUICE_AM_MEDIUM, 4));
    TOK(sluice_handler_register(h_medium_reply, on_medium_reply, SLUICE_AM_MEDIUM, 4));
    TOK(sluice_barrier());
    const std::uint64_t peers = nranks - 1;
    const std::uint64_t expected_in = peers * (per_peer + std::uint64_t{mediums});
    say("once: rank %u sending %u Short and %u Medium requests to each of %llu peers, %llu outstanding at most\n", me,
        per_peer, mediums, static_cast<unsigned long long>(peers), static_cast<unsigned long long>(window));
    double start = now_seconds();

    // Mediums are spread through the stream of Shorts: one to each peer every
    // `spacing` rounds.
    std::uint32_t spacing = mediums ? std::max<std::uint32_t>(1, per_peer / (mediums + 1)) : 0;
    std::uint32_t next_medium = 0;
    std::uint64_t sent = 0;
    auto make_room = [&] {
        if (sent - replies_total.load() >= window)
            wait_for([&] { return sent - replies_total.load() < window; }, "room in the window", sent, expected_in);
    };
    for (std::uint32_t i = 0; i < per_peer || next_medium < mediums; ++i) {
        bool medium_round = next_medium < mediums && (i >= per_peer || (spacing && i % spacing == spacing - 1));
        for (sluice_rank_t k = 1; k < nranks; ++k) {
            sluice_rank_t dest = (me + k) % nranks;
            if (i < per_peer) {
                make_room();
                std::uint32_t args[2] = {me, i};
                TOK(sluice_am_request_short(dest, h_request, args, 2));
                ++sent;
            }
            if (medium_round) {
                make_room();
                std::size_t len = medium_sizes[next_medium % medium_sizes.size()];
                std::uint32_t seed = medium_seed(me, dest, next_medium);
                pattern_fill(request_buffer.data(), len, seed);
                std::uint32_t args[4] = {me, next_medium, static_cast<std::uint32_t>(len), seed};
                TOK(sluice_am_request_medium(dest, h_medium_request, request_buffer.data(), len, args, 4));
                ++sent;
            }
        }
        if (medium_round) ++next_medium;
    }
    TCHECK(sent == expected_in, "sent %llu requests, meant %llu", static_cast<unsigned long long>(sent),
           static_cast<unsigned long long>(expected_in));
    wait_for([&] { return replies_total.load() >= sent && requests_total.load() >= expected_in; },
             "every reply and every request", sent, expected_in);
    double took = now_seconds() - start;
    TOK(sluice_barrier());

    // Every index from every peer exactly once, both ways.
    auto check = [&](const Bitmaps &b, std::size_t want, const char *what) {
        for (sluice_rank_t r = 0; r < nranks; ++r) {
            if (r == me || want == 0) continue;
            TCHECK(b.count(r) == want && b.dups(r) == 0,
                   "%s from rank %u: %llu of %zu arrived (first missing: number %zu), %llu duplicates", what, r,
                   static_cast<unsigned long long>(b.count(r)), want, b.first_missing(r),
                   static_cast<unsigned long long>(b.dups(r)));
        }
        TCHECK(b.count(me) == 0 && b.dups(me) == 0, "%s: %llu from myself", what,
               static_cast<unsigned long long>(b.count(me) + b.dups(me)));
    };
    check(requests_seen, per_peer, "Short requests");
    check(replies_seen, per_peer, "Short replies");
    check(mediums_seen, mediums, "Medium requests");
    check(medium_replies_seen, mediums, "Medium replies");
    TCHECK(requests_total.load() == expected_in && replies_total.load() == sent,
           "%llu requests and %llu replies ran, expected %llu and %llu",
           static_cast<unsigned long long>(requests_total.load()),
           static_cast<unsigned long long>(replies_total.load()), static_cast<unsigned long long>(expected_in),
           static_cast<unsigned long long>(sent));
    say("once: rank %u: %llu requests in, each of %u Shorts and %u Mediums from each of %llu peers exactly once; "
        "%llu replies back, one per request; %.2f s, %.0f requests/s sent\n",
        me, static_cast<unsigned long long>(requests_total.load()), per_peer, mediums,
        static_cast<unsigned long long>(peers), static_cast<unsigned long long>(replies_total.load()), took,
        took > 0 ? static_cast<double>(sent) / took : 0.0);
    // A duplicate that arrives late is still a duplicate.
    TOK(sluice_barrier());
    for (int i = 0; i < 100; ++i) TOK(sluice_poll());
    TOK(sluice_barrier());
    std::uint64_t late = requests_seen.dups_total() + replies_seen.dups_total() + mediums_seen.dups_total() +
                         medium_replies_seen.dups_total();
    TCHECK(late == 0 && requests_total.load() == expected_in && replies_total.load() == sent,
           "after the end: %llu duplicates, %llu requests, %llu replies", static_cast<unsigned long long>(late),
           static_cast<unsigned long long>(requests_total.load()),
           static_cast<unsigned long long>(replies_total.load()));
    TOK(sluice_barrier());
    if (me == 0)
        say("PASS once: %u ranks, %u Shorts and %u Mediums (up to %zu B) per ordered pair, each exactly once, "
            "each replied once\n",
            nranks, per_peer, mediums, max_medium);
    TOK(sluice_finalize());
    return 0;
}

// ---- rma --------------------------------------------------------------------
constexpr std::size_t guard = 64;
constexpr std::uint8_t segment_fill = 0xA5, local_fill = 0x5C;

enum class Mode { blocking, nb, nbi };
const char *mode_name(Mode m) { return m == Mode::blocking ? "blocking" : m == Mode::nb ? "nb+wait" : "nbi+sync"; }

std::vector<std::uint8_t *> bases;

void transfer(bool put, Mode mode, sluice_rank_t rank, std::uint8_t *remote, std::uint8_t *local, std::size_t len) {
    switch (mode) {
    case Mode::blocking:
        if (put) TOK(sluice_put(rank, remote, local, len));
        else TOK(sluice_get(local, rank, remote, len));
        break;
    case Mode::nb: {
        sluice_event_t ev = SLUICE_EVENT_DONE;
        if (put) TOK(sluice_put_nb(rank, remote, local, len, &ev));
        else TOK(sluice_get_nb(local, rank, remote, len, &ev));
        TOK(sluice_event_wait(ev));
        break;
    }
    case Mode::nbi: {
        // Seven pieces at odd boundaries, in flight together.
        std::size_t pieces = std::min<std::size_t>(7, len), step = len / pieces, at = 0;
        for (std::size_t i = 0; i < pieces; ++i) {
            std::size_t n = i + 1 == pieces ? len - at : step;
            if (put) TOK(sluice_put_nbi(rank, remote + at, local + at, n));
            else TOK(sluice_get_nbi(local + at, rank, remote + at, n));
            at += n;
        }
        TOK(sluice_nbi_sync());
        break;
    }
    }
}

std::uint32_t seed_of(sluice_rank_t writer, std::size_t step) {
    return static_cast<std::uint32_t>(writer * 1000003u + step * 17u + 5u);
}

int case_rma(int argc, char **argv) {
    std::vector<std::size_t> sizes;
    for (int i = 2; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 0));
    if (sizes.empty()) sizes = {1, 7, 1000, 1471, 1473, 4097, 65537, 262147, 1048577, 4194309};
    for (std::size_t s : sizes) TCHECK(s >= 1, "sizes must be at least 1 byte");
    const std::size_t biggest = *std::max_element(sizes.begin(), sizes.end());
    // The all-to-all phase: one block per writer in every segment.
    const std::size_t block = std::min<std::size_t>(biggest, 100003), slot = block + guard + 64;
    std::size_t seg = std::max(biggest + 2 * guard + 64, nranks * slot + guard);
    TOK(sluice_segment_attach(seg));
    bases.assign(nranks, nullptr);
    for (sluice_rank_t r = 0; r < nranks; ++r) {
        void *base = nullptr;
        std::size_t size = 0;
        TOK(sluice_segment_info(r, &base, &size));
        TCHECK(size >= seg, "rank %u segment %zu bytes, %zu asked", r, size, seg);
        bases[r] = static_cast<std::uint8_t *>(base);
    }
    std::uint8_t *mine = bases[me];
    const sluice_rank_t target = (me + 1) % nranks, origin = (me + nranks - 1) % nranks;
    std::vector<std::uint8_t> local(biggest + 2 * guard + 8), back(biggest + 2 * guard + 8);
    const Mode modes[] = {Mode::blocking, Mode::nb, Mode::nbi};
    say("rma: rank %u puts to rank %u and gets back: %zu sizes up to %zu B x 3 modes\n", me, target, sizes.size(),
        biggest);
    double start = now_seconds();
    std::uint64_t bytes = 0;
    std::size_t step = 0;
    for (std::size_t len : sizes) {
        for (Mode mode : modes) {
            ++step;
            std::size_t lo = (step * 3) % 8, ro = (step * 5 + 1) % 8;
            std::memset(mine, segment_fill, guard + ro + len + guard);
            std::memset(local.data(), local_fill, local.size());
            std::uint8_t *src = local.data() + guard + lo;
            pattern_fill(src, len, seed_of(me, step));
            TOK(sluice_barrier());
            transfer(true, mode, target, bases[target] + guard + ro, src, len);
            TOK(sluice_barrier());
            std::uint8_t *landed = mine + guard + ro;
            expect_pattern(landed, len, seed_of(origin, step), "Put %s of %zu B (remote offset %zu) from rank %u",
                           mode_name(mode), len, ro, origin);
            TCHECK(fill_mismatch(mine, guard + ro, segment_fill) == SIZE_MAX && fill_mismatch(landed + len, guard,
                                                                                               segment_fill) == SIZE_MAX,
                   "Put %s of %zu B from rank %u wrote outside its bytes", mode_name(mode), len, origin);
            std::memset(back.data(), local_fill, back.size());
            std::uint8_t *dst = back.data() + guard + lo;
            transfer(false, mode, target, bases[target] + guard + ro, dst, len);
            expect_pattern(dst, len, seed_of(me, step), "Get %s of %zu B (local offset %zu) from rank %u",
                           mode_name(mode), len, lo, target);
            TCHECK(fill_mismatch(back.data(), guard + lo, local_fill) == SIZE_MAX &&
                       fill_mismatch(dst + len, guard, local_fill) == SIZE_MAX,
                   "Get %s of %zu B wrote outside its buffer", mode_name(mode), len);
            bytes += 2 * len;
            TOK(sluice_barrier());
        }
    }
    // All to all: every rank writes its block into slot `me` of every other
    // rank's segment at once (nbi), then reads every block back.
    std::memset(mine, segment_fill, nranks * slot + guard);
    std::vector<std::uint8_t> out(block);
    pattern_fill(out.data(), block, seed_of(me, 999999));
    TOK(sluice_barrier());
    for (sluice_rank_t k = 1; k < nranks; ++k) {
        sluice_rank_t r = (me + k) % nranks;
        TOK(sluice_put_nbi(r, bases[r] + me * slot + 3, out.data(), block));
    }
    TOK(sluice_nbi_sync());
    TOK(sluice_barrier());
    for (sluice_rank_t r = 0; r < nranks; ++r) {
        if (r == me) continue;
        expect_pattern(mine + r * slot + 3, block, seed_of(r, 999999), "all-to-all Put of %zu B from rank %u", block,
                       r);
        TCHECK(fill_mismatch(mine + r * slot + 3 + block, slot - block - 3, segment_fill) == SIZE_MAX,
               "all-to-all Put from rank %u wrote past its block", r);
    }
    std::vector<std::uint8_t> all(nranks * block);
    for (sluice_rank_t k = 1; k < nranks; ++k) {
        sluice_rank_t r = (me + k) % nranks;
        TOK(sluice_get_nbi(all.data() + r * block, r, bases[r] + me * slot + 3, block));
    }
    TOK(sluice_nbi_sync());
    for (sluice_rank_t r = 0; r < nranks; ++r)
        if (r != me) expect_pattern(all.data() + r * block, block, seed_of(me, 999999), "all-to-all Get from rank %u", r);
    bytes += 2 * (nranks - 1) * block;
    double took = now_seconds() - start;
    TOK(sluice_barrier());
    say("rma: rank %u: every Put landed and every Get came back byte for byte, %.1f MB moved in %.2f s\n", me,
        static_cast<double>(bytes) / 1e6, took);
    TOK(sluice_barrier());
    if (me == 0)
        say("PASS rma: %u ranks, %zu sizes up to %zu B x blocking/nb/nbi, odd offsets, all-to-all %zu B\n", nranks,
            sizes.size(), biggest, block);
    TOK(sluice_finalize());
    return 0;
}

// Many outstanding Gets (sluice-bench's udp "4 MiB Get with NBI
// completion" once ran at 251 MiB/s against 2705 blocking): the udp conduit queued every request
// of them (4096 Shorts fit its 2 MiB queue) without a poll, so nothing came
// back until the sync while the target's replies waited for acks past the
// retransmission timeout.  A sender that cannot send polls; so when the
// last Get's call returns, the replies to the first have run.  (With the
// default SLUICE_UDP_WINDOW: at most a window in flight and a window waiting
// per peer, a few hundred requests, far fewer than the 4096 issued.)
int case_nbi_get(int argc, char **argv) {
    const std::size_t gets = argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 16;
    const std::size_t size = argc > 3 ? std::strtoull(argv[3], nullptr, 0) : std::size_t{4} << 20;
    TCHECK(nranks >= 2 && gets >= 2 && size >= 1, "nbi-get needs 2 ranks, 2 Gets and 1 byte");
    TOK(sluice_segment_attach(size));
    void *base = nullptr;
    std::size_t seg = 0;
    TOK(sluice_segment_info(1, &base, &seg));
    TCHECK(seg >= size, "rank 1 segment %zu bytes, %zu asked", seg, size);
    if (me == 1) {
        void *own = nullptr;
        TOK(sluice_segment_info(1, &own, &seg));
        pattern_fill(own, size, seed_of(1, 28));
    }
    TOK(sluice_barrier());
    if (me == 0) {
        std::vector<std::uint8_t> local(gets * size, local_fill);
        const double start = now_seconds();
        for (std::size_t g = 0; g < gets; ++g) TOK(sluice_get_nbi(local.data() + g * size, 1, base, size));
        expect_pattern(local.data(), size, seed_of(1, 28),
                       "the first of %zu sluice_get_nbi of %zu B, when the last call returned (no poll between them)",
                       gets, size);
        TOK(sluice_nbi_sync());
        const double took = now_seconds() - start;
        for (std::size_t g = 0; g < gets; ++g)
            expect_pattern(local.data() + g * size, size, seed_of(1, 28), "Get %zu of %zu after sluice_nbi_sync", g, gets);
        say("PASS nbi-get: %zu Gets of %zu B, the first complete when the last was issued, %.0f MB/s\n", gets, size,
            static_cast<double>(gets * size) / 1e6 / took);
    }
    TOK(sluice_barrier());
    TOK(sluice_finalize());
    return 0;
}

struct Case {
    const char *name;
    int (*run)(int, char **);
};
const Case cases[] = {{"hosts", case_hosts},
                      {"once", case_once},
                      {"rma", case_rma},
                      {"nbi-get", case_nbi_get},
                      {"intruder", udp_check::case_intruder}};

// --hold-ports FIRST COUNT -- COMMAND...: binds COUNT UDP sockets with
// SO_REUSEPORT to 127.0.0.1, ports FIRST to FIRST + COUNT - 1, as other
// ranks of this user hold theirs, and runs COMMAND with them still held
// (UdpPorts in udp_driver.cpp).
int hold_ports(int argc, char **argv) {
    if (argc < 6 || std::strcmp(argv[4], "--") != 0) {
        std::fprintf(stderr, "usage: sluice-udp-check --hold-ports FIRST COUNT -- COMMAND...\n");
        return 2;
    }
    const long first = std::strtol(argv[2], nullptr, 10), count = std::strtol(argv[3], nullptr, 10);
    for (long port = first; port < first + count; ++port) {
        const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
        const int on = 1;
        sockaddr_in at{};
        at.sin_family = AF_INET;
        at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        at.sin_port = htons(static_cast<std::uint16_t>(port));
        if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0 ||
            ::bind(fd, reinterpret_cast<sockaddr *>(&at), sizeof at) != 0) {
            std::fprintf(stderr, "hold-ports: cannot hold port %ld: %s\n", port, std::strerror(errno));
            return 1;
        }
    }
    ::execvp(argv[5], argv + 5);
    std::fprintf(stderr, "hold-ports: cannot run %s: %s\n", argv[5], std::strerror(errno));
    return 127;
}

} // namespace

int main(int argc, char **argv) {
    if (argc >= 2 && std::strcmp(argv[1], "--hold-ports") == 0) return hold_ports(argc, argv);
    record_pid();
    const Case *chosen = nullptr;
    for (const auto &c : cases)
        if (argc >= 2 && std::strcmp(argv[1], c.name) == 0) chosen = &c;
    if (!chosen) {
        std::fprintf(stderr, "usage: sluicerun -n N sluice-udp-check CASE [args]\n"
                             "  hosts H                    H hosts, distinct names, ranks spread evenly\n"
                             "  once N [WINDOW] [MEDIUMS]  every AM exactly once, one reply each\n"
                             "  rma [SIZE...]              Put/Get to the next rank, then all to all\n"
                             "  nbi-get [GETS] [SIZE]      many Get nbi outstanding: the issuer polls\n"
                             "  intruder [DATAGRAMS]       strangers' datagrams dropped and counted\n");
        return 2;
    }
    g_case = chosen->name;
    TOK(sluice_init(&argc, &argv));
    me = sluice_rank();
    nranks = sluice_size();
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    say("udp-check rank %u of %u pid %d host %s\n", me, nranks, static_cast<int>(::getpid()), host);
    return chosen->run(argc, argv);
}
