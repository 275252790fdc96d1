// tests/mp/mp_main.cpp - sluice-mp-test: case dispatch and the small cases
// (basic, host queries, allgather, barrier storm).
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

namespace sluice_test::mp {

std::vector<SegmentView> segments;
sluice_rank_t me = 0, nranks = 0;

void attach(std::size_t bytes) {
    TOK(sluice_segment_attach(bytes));
    segments.assign(nranks, SegmentView{});
    for (sluice_rank_t r = 0; r < nranks; ++r) {
        void *base = nullptr;
        std::size_t size = 0;
        TOK(sluice_segment_info(r, &base, &size));
        segments[r].base = static_cast<std::uint8_t *>(base);
        segments[r].size = size;
    }
    TCHECK(segments[me].size >= bytes, "asked %zu bytes, got %zu", bytes, segments[me].size);
}

std::uint8_t *my_segment() { return segments[me].base; }

void report_expected_errors() {
    std::printf("EXPECTED-ERRORS rank %u %d\n", me, g_errors_expected);
    std::fflush(stdout);
}

// ---- basic: the smallest complete program --------------------------------
// basic [expected size]
int case_basic(int argc, char **argv) {
    unsigned long expected = arg_number(argc, argv, 2, 0);
    if (expected) TCHECK(nranks == expected, "size %u, expected %lu", nranks, expected);
    TCHECK(me < nranks, "rank %u size %u", me, nranks);
    TCHECK(sluice_initialized(), "sluice_initialized() after init");
    attach(1 << 20);
    TCHECK(sluice::rank() == me && sluice::size() == nranks, "C++ rank/size agree with C");
    // Put to the next rank, read it back, and let it check its segment.
    sluice_rank_t next = (me + 1) % nranks;
    std::uint8_t out[1000], in[1000];
    pattern_fill(out, sizeof out, 1000 + me);
    TOK(sluice_put(next, segments[next].base + 100, out, sizeof out));
    TOK(sluice_get(in, next, segments[next].base + 100, sizeof in));
    TCHECK_PATTERN(in, sizeof in, 1000 + me, "get after put to rank %u", next);
    TOK(sluice_barrier());
    sluice_rank_t prev = (me + nranks - 1) % nranks;
    TCHECK_PATTERN(my_segment() + 100, 1000, 1000 + prev, "put from rank %u", prev);
    TOK(sluice_barrier());
    std::printf("OK basic rank %u of %u\n", me, nranks);
    std::fflush(stdout);
    TOK(sluice_finalize());
    TCHECK(!sluice_initialized(), "sluice_initialized() after finalize");
    return 0;
}

// ---- host: rank and host queries, segment lookup --------------------------
int case_host(int, char **) {
    TCHECK(sluice_host_count() == 1, "one host, got %u", sluice_host_count());
    std::string my_host;
    for (sluice_rank_t r = 0; r < nranks; ++r) {
        std::uint32_t h = 777;
        TOK(sluice_host_of(r, &h));
        TCHECK(h == 0, "host of rank %u is %u, expected 0", r, h);
        const char *name = nullptr;
        TOK(sluice_host_name(r, &name));
        TCHECK(name && *name, "host name of rank %u is empty", r);
        if (r == 0) my_host = name;
        TCHECK(my_host == name, "rank %u on host '%s', rank 0 on '%s'", r, name, my_host.c_str());
    }
    std::uint32_t h = 777;
    TERR(SLUICE_ERR_RANK, sluice_host_of(nranks, &h));
    TCHECK(h == 777, "host_of wrote its output on failure");
    const char *name = "unchanged";
    TERR(SLUICE_ERR_RANK, sluice_host_name(nranks, &name));
    TCHECK(std::strcmp(name, "unchanged") == 0, "host_name wrote its output on failure");

    std::size_t count = 12345;
    TOK(sluice_host_ranks(nullptr, 0, &count));
    TCHECK(count == nranks, "host_ranks count %zu, expected %u", count, nranks);
    std::vector<sluice_rank_t> ranks(nranks + 1, 0xdeadbeef);
    count = 0;
    TOK(sluice_host_ranks(ranks.data(), nranks, &count));
    TCHECK(count == nranks, "count %zu", count);
    for (sluice_rank_t r = 0; r < nranks; ++r) TCHECK(ranks[r] == r, "host_ranks[%u] = %u", r, ranks[r]);
    TCHECK(ranks[nranks] == 0xdeadbeef, "host_ranks wrote past max");
    if (nranks > 1) {
        std::vector<sluice_rank_t> few(nranks, 0xdeadbeef);
        count = 0;
        TOK(sluice_host_ranks(few.data(), nranks - 1, &count));
        TCHECK(count == nranks, "count with a short array is %zu, expected %u", count, nranks);
        TCHECK(few[nranks - 1] == 0xdeadbeef, "host_ranks wrote more than max entries");
        for (sluice_rank_t r = 0; r + 1 < nranks; ++r) TCHECK(few[r] == r, "few[%u] = %u", r, few[r]);
    }
    std::vector<sluice::Rank> cpp = sluice::host_ranks();
    TCHECK(cpp.size() == nranks, "C++ host_ranks size %zu", cpp.size());
    TCHECK(sluice::host_of(nranks) == UINT32_MAX, "C++ host_of(out of range) gives UINT32_MAX");

    // Ranks may ask different segment sizes, 0 included.
    auto wanted = [](sluice_rank_t r) -> std::size_t {
        return (r == nranks - 1 && nranks > 2) ? 0 : (r + 1) * 65536 + 123;
    };
    TOK(sluice_segment_attach(wanted(me)));
    long page = ::sysconf(_SC_PAGESIZE);
    for (sluice_rank_t r = 0; r < nranks; ++r) {
        void *base = nullptr;
        std::size_t size = 1;
        TOK(sluice_segment_info(r, &base, &size));
        TCHECK(size >= wanted(r), "rank %u segment %zu bytes, asked %zu", r, size, wanted(r));
        TCHECK(size % static_cast<std::size_t>(page) == 0, "segment size %zu not a page multiple", size);
        if (wanted(r) > 0) {
            TCHECK(base != nullptr, "rank %u segment base is null", r);
            TCHECK(reinterpret_cast<std::uintptr_t>(base) % static_cast<std::uintptr_t>(page) == 0,
                   "rank %u segment base %p not page aligned", r, base);
        }
    }
    void *base = reinterpret_cast<void *>(0x1);
    std::size_t size = 99;
    TERR(SLUICE_ERR_RANK, sluice_segment_info(nranks, &base, &size));
    TCHECK(base == reinterpret_cast<void *>(0x1) && size == 99, "segment_info wrote its outputs on failure");
    TOK(sluice_barrier());
    report_expected_errors();
    TOK(sluice_finalize());
    return 0;
}

// ---- allgather ----------------------------------------------------------
int case_allgather(int argc, char **argv) {
    unsigned iterations = static_cast<unsigned>(arg_number(argc, argv, 2, 20));
    std::size_t max = sluice_am_max_medium();
    std::vector<std::size_t> lengths = {1, 3, 8, 100, 4096, max};
    for (std::size_t len : lengths) {
        if (len > max) continue;  // a conduit's Medium may be smaller (portals: 800 bytes)
        std::vector<std::uint8_t> in(len), out(nranks * len + 64);
        for (unsigned it = 0; it < iterations; ++it) {
            auto seed = [&](sluice_rank_t r) { return static_cast<std::uint32_t>(r * 100003 + len * 31 + it); };
            pattern_fill(in.data(), len, seed(me));
            std::memset(out.data(), 0xEE, out.size());
            TOK(sluice_allgather(in.data(), out.data(), len));
            for (sluice_rank_t r = 0; r < nranks; ++r)
                TCHECK_PATTERN(out.data() + r * len, len, seed(r), "allgather length %zu, block of rank %u, iteration %u",
                               len, r, it);
            TCHECK(fill_mismatch(out.data() + nranks * len, 64, 0xEE) == SIZE_MAX,
                   "allgather length %zu wrote past size*length", len);
            TCHECK_PATTERN(in.data(), len, seed(me), "allgather modified its input");
        }
    }
    // The C++ form, and an allgather right after a barrier and before attach.
    std::uint32_t mine = me * 3 + 1;
    std::vector<std::uint32_t> all(nranks);
    TOK(static_cast<sluice_status_t>(sluice::allgather(&mine, all.data(), sizeof mine)));
    for (sluice_rank_t r = 0; r < nranks; ++r) TCHECK(all[r] == r * 3 + 1, "C++ allgather block %u", r);
    TOK(sluice_finalize());
    return 0;
}

// ---- barrier storm --------------------------------------------------------
// barrier <plain iterations> <mixed iterations>
// Plain: back-to-back barriers.  Mixed: before barrier i every rank puts i+1
// into its slot (parity i%2) in rank 0's segment and sends a Short AM to rank
// (r+i)%N; after barrier i rank 0 must see i+1 in every slot, so a barrier
// that lets a rank through early is caught.
namespace {
std::atomic<std::uint64_t> storm_received{0};
void storm_handler(sluice_token_t token, void *, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(nargs == 2 && length == 0, "nargs %u length %zu", nargs, length);
    TCHECK(args[0] == src, "arg says source %u, token says %u", args[0], src);
    TCHECK((src + args[1]) % nranks == me, "AM of iteration %u from %u reached the wrong rank", args[1], src);
    storm_received.fetch_add(1);
}
} // namespace

int case_barrier(int argc, char **argv) {
    unsigned plain = static_cast<unsigned>(arg_number(argc, argv, 2, 2000));
    unsigned mixed = static_cast<unsigned>(arg_number(argc, argv, 3, 1000));
    for (unsigned i = 0; i < plain; ++i) TOK(sluice_barrier());
    TOK(sluice_handler_register(90, storm_handler, SLUICE_AM_SHORT, 2));
    attach(4096);
    TOK(sluice_barrier());
    auto *slots = reinterpret_cast<std::uint64_t *>(segments[0].base);  // rank 0's address space
    for (unsigned i = 0; i < mixed; ++i) {
        std::uint64_t value = i + 1;
        TOK(sluice_put(0, slots + 2 * me + (i % 2), &value, sizeof value));
        std::uint32_t args[2] = {me, i};
        TOK(sluice_am_request_short((me + i) % nranks, 90, args, 2));
        TOK(sluice_barrier());
        if (me == 0) {
            for (sluice_rank_t r = 0; r < nranks; ++r) {
                std::uint64_t seen = __atomic_load_n(slots + 2 * r + (i % 2), __ATOMIC_ACQUIRE);
                TCHECK(seen == value, "after barrier %u rank %u's slot holds %llu: it passed the barrier early "
                       "or its put was not complete", i, r, static_cast<unsigned long long>(seen));
            }
        }
    }
    WAIT_UNTIL(storm_received.load() == mixed);
    TOK(sluice_barrier());
    TCHECK(storm_received.load() == mixed, "received %llu AMs, expected %u",
           static_cast<unsigned long long>(storm_received.load()), mixed);
    TOK(sluice_finalize());
    return 0;
}

// ---- delivery: the README's program, checked ------------------------------
// delivery <iterations> [right|left]
// Each iteration every rank sends a Short request to its right (or left)
// neighbour (itself at 1 rank) and Puts into its segment, then enters a barrier.  The
// handler counts and records the iteration in its own segment.  After the
// barrier a rank checks that its own handler ran (it must not be the last
// rank to arrive that still holds the request) and reads its neighbour's
// record: the neighbour ran this rank's request before any rank left.  Last,
// a request whose handler replies goes right before finalize: both handlers
// must have run when finalize returns.  To the left, at 4 ranks or more, the
// target is never a partner of the sender in the barrier's rounds, so the
// barrier's own messages cannot push the request through.
namespace {
sluice_rank_t delivery_step = 1;  // right: 1, left: nranks - 1
std::atomic<std::uint64_t> delivered{0}, replies_run{0};
void delivery_request(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK((src + delivery_step) % nranks == me, "a request from rank %u reached rank %u", src, me);
    __atomic_store_n(reinterpret_cast<std::uint64_t *>(my_segment()), std::uint64_t{args[0]} + 1, __ATOMIC_RELEASE);
    delivered.fetch_add(1);
}
void delivery_replying(sluice_token_t token, void *, std::size_t, const std::uint32_t *, unsigned) {
    delivered.fetch_add(1);
    TOK(sluice_am_reply_short(token, 96, nullptr, 0));
}
void delivery_reply(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) { replies_run.fetch_add(1); }
} // namespace

int case_delivery(int argc, char **argv) {
    const auto iterations = static_cast<std::uint32_t>(arg_number(argc, argv, 2, 200));
    if (argc > 3 && std::strcmp(argv[3], "left") == 0) delivery_step = nranks - 1;
    TOK(sluice_handler_register(94, delivery_request, SLUICE_AM_SHORT, 1));
    TOK(sluice_handler_register(95, delivery_replying, SLUICE_AM_SHORT, 0));
    TOK(sluice_handler_register(96, delivery_reply, SLUICE_AM_SHORT, 0));
    attach(4096);
    TOK(sluice_barrier());
    const sluice_rank_t target = (me + delivery_step) % nranks;
    auto *record = reinterpret_cast<std::uint64_t *>(segments[target].base);  // the target's handler writes it
    auto *put_slot = reinterpret_cast<std::uint64_t *>(segments[target].base) + 1;
    for (std::uint32_t i = 0; i < iterations; ++i) {
        const std::uint32_t arg = i;
        TOK(sluice_am_request_short(target, 94, &arg, 1));
        const std::uint64_t value = 1000 + i;
        TOK(sluice_put(target, put_slot, &value, sizeof value));
        TOK(sluice_barrier());
        // The left neighbour may already send the next request, so this
        // rank has seen at least i + 1.
        TCHECK(delivered.load() >= i + 1, "after barrier %u this rank's handler ran %llu times: a request "
               "sent before the barrier was still unhandled", i, static_cast<unsigned long long>(delivered.load()));
        std::uint64_t seen = 0;
        TOK(sluice_get(&seen, target, record, sizeof seen));
        TCHECK(seen == i + 1, "after barrier %u rank %u's handler had recorded iteration %llu of this rank's "
               "requests: a rank left the barrier before every request had run", i, target,
               static_cast<unsigned long long>(seen));
        std::uint64_t landed = 0;
        TOK(sluice_get(&landed, target, put_slot, sizeof landed));
        TCHECK(landed == value, "after barrier %u the Put to rank %u holds %llu", i, target,
               static_cast<unsigned long long>(landed));
    }
    TOK(sluice_am_request_short(target, 95, nullptr, 0));
    TOK(sluice_finalize());
    TCHECK(delivered.load() == iterations + 1, "after finalize this rank's handlers ran %llu times, expected %u",
           static_cast<unsigned long long>(delivered.load()), iterations + 1);
    TCHECK(replies_run.load() == 1, "after finalize %llu replies ran, expected 1",
           static_cast<unsigned long long>(replies_run.load()));
    return 0;
}

} // namespace sluice_test::mp

namespace {

struct Case {
    const char *name;
    int (*run)(int, char **);
    const char *usage;
};

const Case cases[] = {
    {"basic", sluice_test::mp::case_basic, "basic [expected size]"},
    {"host", sluice_test::mp::case_host, "host"},
    {"allgather", sluice_test::mp::case_allgather, "allgather [iterations]"},
    {"barrier", sluice_test::mp::case_barrier, "barrier [plain] [mixed]"},
    {"delivery", sluice_test::mp::case_delivery, "delivery [iterations] [right|left]"},
    {"am", sluice_test::mp::case_am, "am [--max-medium=BYTES]"},
    {"args", sluice_test::mp::case_args, "args"},
    {"chain", sluice_test::mp::case_chain, "chain [round trips] [laps]"},
    {"hidden", sluice_test::mp::case_hidden, "hidden [messages per destination]"},
    {"flood", sluice_test::mp::case_flood, "flood [messages]"},
    {"hotspot", sluice_test::mp::case_hotspot, "hotspot [messages] [pause ms]"},
    {"rma", sluice_test::mp::case_rma, "rma"},
    {"segment", sluice_test::mp::case_segment, "segment [MiB] [rounds]"},
    {"threads", sluice_test::mp::case_threads, "threads [AMs per thread] [RMAs per thread]"},
    {"bad", sluice_test::mp::case_bad, "bad"},
    {"immediate", sluice_test::mp::case_immediate, "immediate [limit]"},
    {"atomic", sluice_test::mp::case_atomic, "atomic [iterations]"},
    {"team", sluice_test::mp::case_team, "team"},
    {"coll", sluice_test::mp::case_coll, "coll [iterations]"},
    {"vis", sluice_test::mp::case_vis, "vis [shapes]"},
    {"completion", sluice_test::mp::case_completion, "completion"},
    {"prepare", sluice_test::mp::case_prepare, "prepare"},
};

void usage() {
    std::fprintf(stderr, "usage: sluicerun -n N sluice-mp-test CASE [args]\ncases:\n");
    for (const auto &c : cases) std::fprintf(stderr, "  %s\n", c.usage);
}

} // namespace

int main(int argc, char **argv) {
    using namespace sluice_test;
    record_pid();
    if (argc < 2) {
        usage();
        return 2;
    }
    const Case *chosen = nullptr;
    for (const auto &c : cases)
        if (std::strcmp(argv[1], c.name) == 0) chosen = &c;
    if (!chosen) {
        std::fprintf(stderr, "sluice-mp-test: unknown case '%s'\n", argv[1]);
        usage();
        return 2;
    }
    g_case = chosen->name;
    if (std::strcmp(chosen->name, "bad") == 0) mp::bad_before_init();
    TOK(sluice_init(&argc, &argv));
    mp::me = sluice_rank();
    mp::nranks = sluice_size();
    TCHECK(mp::nranks >= 1 && mp::me < mp::nranks, "rank %u of %u", mp::me, mp::nranks);
    int rc = chosen->run(argc, argv);
    if (rc == 0 && mp::me == 0) {
        std::printf("PASS %s on %u ranks\n", chosen->name, mp::nranks);
        std::fflush(stdout);
    }
    return rc;
}
