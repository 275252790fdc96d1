// tests/perf/sluice-bench.cpp - the benchmark's entry point and its Sluice
// side.  Run directly, it is the driver (driver.cpp): it launches the Sluice
// and MPI jobs and measures the bare references itself.  Started by the driver
// under sluicerun with --worker KIND, it is one rank of a Sluice job:
//   suite  AM round trips and flood rates, Put/Get latency and bandwidth,
//          barrier (2 ranks; rank 0 measures, rank 1 serves), and the bare
//          cache-line ping-pong between the same two processes, interleaved
//          with the AM Short round trip;
//   udp    the same job over the udp conduit (the driver sets
//          SLUICE_ROUTE=network): AM Short round trip interleaved with a bare
//          UDP 8 B ping-pong between the same two processes, 8 B Put/Get,
//          4 MiB Put/Get bandwidth interleaved with a bare TCP stream;
//   ofi    the same job over the ofi conduit, one provider per job: AM
//          Short, 8 B Put/Get, 64 KiB and 4 MiB Put/Get and the firehose
//          Puts, interleaved with the bare libfabric reference of the same
//          provider between the same two processes (ofi-section.hpp);
//   ibv    the same job over the ibv conduit: AM Short, 8 B Put/Get and
//          4 MiB Put/Get, interleaved with bare verbs on the same device
//          between the same two processes (ibv-section.hpp);
//   portals  the same job over the portals conduit: AM Short, 8 B Put/Get
//          and 4 MiB Put/Get, interleaved with bare Portals 4 on the
//          conduit's NI between the same two processes (portals-section.hpp);
//   gni    the same job over the gni conduit: AM Short, 8 B Put/Get and
//          4 MiB Put/Get, interleaved with bare uGNI (SMSG, FMA, the BTE)
//          on the same NIC between the same two processes (gni-section.hpp);
//   lapi   the same job over the lapi conduit, in the mode SLUICE_LAPI_MODE
//          says: AM Short and 8 B Put/Get, interleaved with bare LAPI
//          (LAPI_Amsend, LAPI_Put, LAPI_Get and LAPI_Waitcntr) in the same
//          mode between the same two processes (lapi-section.hpp);
//   client  the client API's rows (atomics, collectives, VIS, negotiated
//          AMs) on 2, 4 or 8 ranks (client-section.hpp);
//   exactly-once  numbered AMs both ways, lost and repeated counted
//          (exactly_once.cpp);
//   empty  init and finalize (the launch-time comparison);
//   shm    records the shared-memory mappings of this rank (memory per rank).
#include "tests/perf/bench_common.hpp"
#include "tests/perf/client-section.hpp"
#include "tests/perf/driver.hpp"
#include "tests/perf/gni-section.hpp"
#include "tests/perf/ibv-section.hpp"
#include "tests/perf/lapi-section.hpp"
#include "tests/perf/ofi-section.hpp"
#include "tests/perf/portals-section.hpp"
#include "tests/perf/sockets.hpp"
#include "tests/perf/worker.hpp"

#include <sluice.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <unistd.h>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::perf {
namespace {

// Handler indices of the suite.
enum : sluice_handler_t {
    h_short_ping = 100,
    h_short_pong,
    h_medium_ping,
    h_medium_pong,
    h_long_ping,
    h_long_pong,
    h_flood_short,
    h_flood_medium,
    h_flood_long,
    h_flood_end,
    h_flood_ack,
    h_stop,
    h_serve,
};

// What rank 1 serves outside Sluice when rank 0 asks (h_serve): the bare
// references, which need both processes.
enum Serve : std::uint32_t {
    serve_cacheline = 1, // cache-line ping-pong
    serve_udp_spin,      // UDP ping-pong, recv(MSG_DONTWAIT) in a loop
    serve_udp_block,     // UDP ping-pong, blocking recv
    serve_tcp,           // read a TCP stream of 4 MiB messages
    // OfiServe (ofi-section.hpp) from 16 on, IbvServe (ibv-section.hpp) from 32 on,
    // PortalsServe (portals-section.hpp) from 48 on, GniServe (gni-section.hpp)
    // from 64 on, LapiServe (lapi-section.hpp) from 80 on
};

// State the handlers touch.  Handlers run on the polling thread, so relaxed
// atomics only keep the compiler from hoisting the loads out of the loops.
struct HandlerState {
    std::atomic<bool> reply_seen{false};
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> flood_received{0};
    std::atomic<std::uint64_t> flood_acknowledged{0};
    std::atomic<std::uint64_t> serve_asked{0}; // Serve << 32 | count, from rank 0
    void *peer_base = nullptr; // the other rank's segment, for Long replies
};
HandlerState state;

// ---- handlers ----------------------------------------------------------------
void on_short_ping(sluice_token_t t, void *, size_t, const uint32_t *, unsigned) {
    check(sluice_am_reply_short(t, h_short_pong, nullptr, 0), "sluice_am_reply_short");
}
void on_medium_ping(sluice_token_t t, void *payload, size_t length, const uint32_t *,
                    unsigned) {
    check(sluice_am_reply_medium(t, h_medium_pong, payload, length, nullptr, 0),
          "sluice_am_reply_medium");
}
void on_long_ping(sluice_token_t t, void *payload, size_t length, const uint32_t *,
                  unsigned) {
    check(sluice_am_reply_long(t, h_long_pong, payload, length, state.peer_base,
                               nullptr, 0),
          "sluice_am_reply_long");
}
void on_pong(sluice_token_t, void *, size_t, const uint32_t *, unsigned) {
    state.reply_seen.store(true, std::memory_order_relaxed);
}
void on_flood(sluice_token_t, void *, size_t, const uint32_t *, unsigned) {
    state.flood_received.store(state.flood_received.load(std::memory_order_relaxed) + 1,
                               std::memory_order_relaxed);
}
void on_flood_end(sluice_token_t t, void *, size_t, const uint32_t *, unsigned) {
    // The count rides back so the sender can tell every flood message ran.
    std::uint64_t n = state.flood_received.load(std::memory_order_relaxed);
    uint32_t args[2] = {static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32)};
    check(sluice_am_reply_short(t, h_flood_ack, args, 2), "sluice_am_reply_short");
}
void on_flood_ack(sluice_token_t, void *, size_t, const uint32_t *args, unsigned) {
    state.flood_acknowledged.store(args[0] | (static_cast<std::uint64_t>(args[1]) << 32),
                                   std::memory_order_relaxed);
    state.reply_seen.store(true, std::memory_order_relaxed);
}
void on_stop(sluice_token_t, void *, size_t, const uint32_t *, unsigned) {
    state.stop.store(true, std::memory_order_relaxed);
}
void on_serve(sluice_token_t t, void *, size_t, const uint32_t *args, unsigned) {
    // The socket references answer (Suite::ask), the cache-line one does not.
    if (args[0] != serve_cacheline)
        check(sluice_am_reply_short(t, h_short_pong, nullptr, 0), "sluice_am_reply_short");
    state.serve_asked.store(static_cast<std::uint64_t>(args[0]) << 32 | args[1],
                            std::memory_order_relaxed);
}

void register_handlers() {
    struct Entry {
        sluice_handler_t index;
        sluice_handler_fn fn;
        sluice_am_category_t category;
        unsigned nargs;
    };
    const Entry table[] = {
        {h_short_ping, on_short_ping, SLUICE_AM_SHORT, 0},
        {h_short_pong, on_pong, SLUICE_AM_SHORT, 0},
        {h_medium_ping, on_medium_ping, SLUICE_AM_MEDIUM, 0},
        {h_medium_pong, on_pong, SLUICE_AM_MEDIUM, 0},
        {h_long_ping, on_long_ping, SLUICE_AM_LONG, 0},
        {h_long_pong, on_pong, SLUICE_AM_LONG, 0},
        {h_flood_short, on_flood, SLUICE_AM_SHORT, 0},
        {h_flood_medium, on_flood, SLUICE_AM_MEDIUM, 0},
        {h_flood_long, on_flood, SLUICE_AM_LONG, 0},
        {h_flood_end, on_flood_end, SLUICE_AM_SHORT, 0},
        {h_flood_ack, on_flood_ack, SLUICE_AM_SHORT, 2},
        {h_stop, on_stop, SLUICE_AM_SHORT, 0},
        {h_serve, on_serve, SLUICE_AM_SHORT, 2},
    };
    for (const Entry &e : table)
        check(sluice_handler_register(e.index, e.fn, e.category, e.nargs),
              "sluice_handler_register");
}

void wait_reply() {
    while (!state.reply_seen.load(std::memory_order_relaxed))
        check(sluice_poll(), "sluice_poll");
    state.reply_seen.store(false, std::memory_order_relaxed);
}

// ---- the suite -----------------------------------------------------------------
enum class AmKind { short_, medium, long_ };

struct Suite {
    CommonOptions options;
    ResultFile results;
    sluice_rank_t me = 0;
    sluice_rank_t peer = 1;
    void *peer_base = nullptr; // peer's segment, in the peer's address space
    PageBuffer local;          // RMA local buffer, outside the segment
    UdpPingPong udp;           // the udp kind's bare references
    TcpStream tcp;
    OfiReference ofi;          // the ofi kind's
    VerbsReference verbs;      // the ibv kind's
    PortalsReference portals;  // the portals kind's
    GniReference gni;          // the gni kind's
    LapiReference lapi;        // the lapi kind's

    explicit Suite(const CommonOptions &o) : options(o), results(o.out) {}
    ~Suite() {
        if (pingpong_page)
            munmap(pingpong_page, pingpong_bytes);
    }

    // The bare ping-pong's page: two flags on their own lines, shared by
    // the two rank processes (rank 0 creates it, both map it, then it is
    // unlinked).  Each flag only grows, so chunks never see stale values.
    static constexpr std::size_t pingpong_bytes = 4096;
    char *pingpong_page = nullptr;
    std::uint64_t pingpong_seq = 0;
    std::atomic<std::uint64_t> &ping() {
        return *reinterpret_cast<std::atomic<std::uint64_t> *>(pingpong_page);
    }
    std::atomic<std::uint64_t> &pong() {
        return *reinterpret_cast<std::atomic<std::uint64_t> *>(pingpong_page + 256);
    }
    void pingpong_page_open() {
        std::uint32_t pids[2] = {0, 0};
        const std::uint32_t mine = static_cast<std::uint32_t>(getpid());
        check(sluice_allgather(&mine, pids, sizeof mine), "sluice_allgather");
        const std::string name = "/sluice-bench-pingpong." + std::to_string(pids[0]);
        int fd = -1;
        if (me == 0) {
            fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd >= 0 && ftruncate(fd, pingpong_bytes) != 0) {
                close(fd);
                fd = -1;
            }
        }
        check(sluice_barrier(), "sluice_barrier");
        if (me == 1)
            fd = shm_open(name.c_str(), O_RDWR, 0);
        if (fd >= 0) {
            void *p = mmap(nullptr, pingpong_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
            if (p != MAP_FAILED)
                pingpong_page = static_cast<char *>(p);
        }
        check(sluice_barrier(), "sluice_barrier");
        if (me == 0)
            shm_unlink(name.c_str());
        if (!pingpong_page) {
            std::fprintf(stderr, "sluice-bench worker rank %u: cannot map the ping-pong page %s\n",
                         me, name.c_str());
            sluice_exit(3);
        }
    }
    // Rank 1's side of `n` bare round trips.
    void pingpong_respond(std::uint32_t n) {
        for (std::uint32_t i = 0; i < n; ++i) {
            ++pingpong_seq;
            while (ping().load(std::memory_order_acquire) != pingpong_seq) {
            }
            pong().store(pingpong_seq, std::memory_order_release);
        }
    }
    // Rank 0's side: asks rank 1 to answer `n` round trips, times the last
    // `n - lead` of them (the first ones wait for rank 1 to get the request).
    double pingpong_chunk(std::uint32_t n, std::uint32_t lead) {
        ask(serve_cacheline, n);
        double t0 = 0;
        for (std::uint32_t i = 0; i < n; ++i) {
            if (i == lead)
                t0 = now_ns();
            ++pingpong_seq;
            ping().store(pingpong_seq, std::memory_order_release);
            while (pong().load(std::memory_order_acquire) != pingpong_seq) {
            }
        }
        return now_ns() - t0;
    }

    // Rank 0 asks rank 1 to serve `n` rounds of a bare reference.  Neither
    // rank polls Sluice during a socket reference, so first both settle: the
    // ask is answered, and both poll a while so that a network conduit's
    // delayed acknowledgements go out; otherwise its timers would fire
    // during the reference and its next round trips would pay for that.
    void ask(std::uint32_t what, std::uint32_t n) {
        const std::uint32_t args[2] = {what, n};
        check(sluice_am_request_short(peer, h_serve, args, 2), "sluice_am_request_short");
        if (what != serve_cacheline) {
            wait_reply();
            settle();
        }
    }
    static void settle() {
        const double end = now_ns() + settle_ns;
        while (now_ns() < end)
            check(sluice_poll(), "sluice_poll");
    }
    static constexpr double settle_ns = 300e3; // > SLUICE_UDP_ACK_DELAY (50 us)
    // Rank 1 polls until rank 0 starts a socket chunk: under loss, the
    // answer to the ask may need sending again, and rank 0 waits for it.
    static void poll_once() { check(sluice_poll(), "sluice_poll"); }
    void serve(std::uint64_t asked) {
        const auto n = static_cast<std::uint32_t>(asked);
        if ((asked >> 32) != serve_cacheline)
            settle();
        switch (static_cast<Serve>(asked >> 32)) {
        case serve_cacheline:
            pingpong_respond(n);
            break;
        case serve_udp_spin:
            udp.pong(n, UdpWait::spin, poll_once);
            break;
        case serve_udp_block:
            udp.pong(n, UdpWait::block, poll_once);
            break;
        case serve_tcp:
            if (!tcp.read_messages(n, largest_rma, poll_once)) {
                std::fprintf(stderr, "sluice-bench worker rank %u: TCP stream read failed\n", me);
                sluice_exit(3);
            }
            break;
        default:
            if (const auto what = static_cast<std::uint32_t>(asked >> 32); what >= serve_lapi_ping)
                lapi_serve(lapi, what, n);
            else if (what >= serve_gni_ping)
                gni_serve(gni, what, n);
            else if (what >= serve_portals_ping)
                portals_serve(portals, what, n);
            else if (what >= serve_verbs_send)
                verbs_serve(verbs, what, n);
            else
                ofi_serve(ofi, what, n);
            break;
        }
    }

    // Rank 1 polls until rank 0 says a measurement is over, then both meet.
    void serve_until_stop() {
        while (!state.stop.load(std::memory_order_relaxed)) {
            check(sluice_poll(), "sluice_poll");
            // A plain load first: a locked exchange on every poll would
            // slow the loop the AM round trip is measured against.
            if (state.serve_asked.load(std::memory_order_relaxed) != 0)
                serve(state.serve_asked.exchange(0, std::memory_order_relaxed));
        }
        state.stop.store(false, std::memory_order_relaxed);
    }
    template <class Measure> void phase(Measure measure) {
        if (me == 0) {
            measure();
            check(sluice_am_request_short(peer, h_stop, nullptr, 0),
                  "sluice_am_request_short");
        } else {
            serve_until_stop();
        }
        check(sluice_barrier(), "sluice_barrier");
    }

    // `place`: a Long goes to the place-th `size`-byte slot of the peer's
    // segment (0: always the base).
    void request(AmKind kind, sluice_handler_t h, std::size_t size, std::size_t place = 0) {
        switch (kind) {
        case AmKind::short_:
            check(sluice_am_request_short(peer, h, nullptr, 0), "sluice_am_request_short");
            break;
        case AmKind::medium:
            check(sluice_am_request_medium(peer, h, local.data(), size, nullptr, 0),
                  "sluice_am_request_medium");
            break;
        case AmKind::long_:
            check(sluice_am_request_long(peer, h, local.data(), size,
                                         static_cast<char *>(peer_base) + place * size, nullptr, 0),
                  "sluice_am_request_long");
            break;
        }
    }

    void am_short_round_trip() {
        request(AmKind::short_, h_short_ping, 0);
        wait_reply();
    }
    double am_round_trip(AmKind kind, std::size_t size) {
        const sluice_handler_t h = kind == AmKind::short_   ? h_short_ping
                                   : kind == AmKind::medium ? h_medium_ping
                                                            : h_long_ping;
        const long iters = rtt_iterations(size, options.scale);
        for (long i = 0; i < warmup_of(iters); ++i) {
            request(kind, h, size);
            wait_reply();
        }
        const double t0 = now_ns();
        for (long i = 0; i < iters; ++i) {
            request(kind, h, size);
            wait_reply();
        }
        return (now_ns() - t0) / static_cast<double>(iters);
    }

    // The AM Short round trip and its reference, the bare ping-pong between
    // the same two processes on the same CPUs, in alternating chunks so both
    // see the same machine: returns {AM ns, ping-pong ns} per round trip.
    std::pair<double, double> short_rtt_with_reference() {
        const long iters = rtt_iterations(0, options.scale);
        constexpr int chunks = 5;
        const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, 1000));
        const std::uint32_t lead = per / 10;
        am_round_trip(AmKind::short_, 0); // warm-up of both paths
        (void)pingpong_chunk(per, lead);
        double am = 0, pp = 0;
        for (int c = 0; c < chunks; ++c) {
            pp += pingpong_chunk(per + lead, lead);
            const double t0 = now_ns();
            for (std::uint32_t i = 0; i < per; ++i) {
                request(AmKind::short_, h_short_ping, 0);
                wait_reply();
            }
            am += now_ns() - t0;
        }
        const double n = static_cast<double>(per) * chunks;
        return {am / n, pp / n};
    }

    std::uint64_t flood_sent = 0;
    // Back-to-back requests, then one round trip that reports how many ran.
    // Longs go to `places` slots of the segment in turn.
    void flood_batch(AmKind kind, std::size_t size, long count, std::size_t places = 1) {
        const sluice_handler_t h = kind == AmKind::short_   ? h_flood_short
                                   : kind == AmKind::medium ? h_flood_medium
                                                            : h_flood_long;
        for (long i = 0; i < count; ++i)
            request(kind, h, size, static_cast<std::size_t>(i) % places);
        flood_sent += static_cast<std::uint64_t>(count);
        do {
            check(sluice_am_request_short(peer, h_flood_end, nullptr, 0),
                  "sluice_am_request_short");
            wait_reply();
        } while (state.flood_acknowledged.load(std::memory_order_relaxed) < flood_sent);
    }
    double am_flood(AmKind kind, std::size_t size, std::size_t places = 1) {
        const long iters = flood_iterations(size, options.scale);
        flood_batch(kind, size, warmup_of(iters), places);
        const double t0 = now_ns();
        flood_batch(kind, size, iters, places);
        return (now_ns() - t0) / static_cast<double>(iters);
    }

    // ns for `n` calls of `op`.
    template <class Op> static double timed(long n, Op op) {
        const double t0 = now_ns();
        for (long i = 0; i < n; ++i)
            op();
        return now_ns() - t0;
    }
    // ns per call, after a warm-up.
    template <class Op> double time_loop(long iters, Op op) {
        (void)timed(warmup_of(iters), op);
        return timed(iters, op) / static_cast<double>(iters);
    }
    // The loops take their arguments by value and are not inlined into the
    // long function that runs the suite: what they time is the call, not
    // reloading spilled arguments after each copy.
    [[gnu::noinline]] double put_latency(std::size_t n) {
        return time_loop(rma_iterations(n, options.scale), [r = peer, to = peer_base, from = local.data(), n] {
            check(sluice_put(r, to, from, n), "sluice_put");
        });
    }
    [[gnu::noinline]] double get_latency(std::size_t n) {
        return time_loop(rma_iterations(n, options.scale), [r = peer, from = peer_base, to = local.data(), n] {
            check(sluice_get(to, r, from, n), "sluice_get");
        });
    }
    // Bandwidth: rma_window implicit operations between two syncs; the clock
    // stops after the last sync.
    // ns for `count` operations, synced every rma_window and at the end.
    template <class Issue> double nbi_count(long count, Issue issue) {
        const double t0 = now_ns();
        for (long i = 0; i < count; ++i) {
            issue();
            if ((i + 1) % rma_window == 0)
                check(sluice_nbi_sync(), "sluice_nbi_sync");
        }
        check(sluice_nbi_sync(), "sluice_nbi_sync");
        return now_ns() - t0;
    }
    template <class Issue> double nbi_stream(std::size_t n, Issue issue) {
        const long iters = rma_iterations(n, options.scale);
        nbi_count(warmup_of(iters), issue);
        return nbi_count(iters, issue) / static_cast<double>(iters);
    }
    double put_bandwidth_ns(std::size_t n) {
        return nbi_stream(n, [&] {
            check(sluice_put_nbi(peer, peer_base, local.data(), n), "sluice_put_nbi");
        });
    }
    double get_bandwidth_ns(std::size_t n) {
        return nbi_stream(n, [&] {
            check(sluice_get_nbi(local.data(), peer, peer_base, n), "sluice_get_nbi");
        });
    }

    // What one sluice_poll() costs when nothing has arrived (includes the
    // runtime's idle step).
    double empty_poll() {
        return time_loop(rma_iterations(0, options.scale),
                         [&] { check(sluice_poll(), "sluice_poll"); });
    }

    double barrier_latency() {
        const long iters = barrier_iterations(options.scale);
        for (long i = 0; i < warmup_of(iters); ++i)
            check(sluice_barrier(), "sluice_barrier");
        const double t0 = now_ns();
        for (long i = 0; i < iters; ++i)
            check(sluice_barrier(), "sluice_barrier");
        return (now_ns() - t0) / static_cast<double>(iters);
    }
    // A barrier after each rank sent the other a Short request: the barrier
    // then waits for the request's handler (its flush) as well.
    double barrier_after_am_latency() {
        const long iters = barrier_iterations(options.scale);
        auto one = [&] {
            check(sluice_am_request_short(peer, h_flood_short, nullptr, 0), "sluice_am_request_short");
            check(sluice_barrier(), "sluice_barrier");
        };
        for (long i = 0; i < warmup_of(iters); ++i) one();
        const double t0 = now_ns();
        for (long i = 0; i < iters; ++i) one();
        return (now_ns() - t0) / static_cast<double>(iters);
    }

    // ---- the udp kind ----------------------------------------------------------
    // A UDP socket per rank, connected to the other's; rank 1 listens for
    // the TCP stream and rank 0 connects.
    void sockets_open() {
        struct Ports {
            std::uint16_t udp, tcp;
        };
        bool ok = udp.open() && (me == 0 || tcp.listen_any());
        const Ports mine{udp.port(), tcp.port()};
        Ports all[2] = {};
        check(sluice_allgather(&mine, all, sizeof mine), "sluice_allgather");
        ok = ok && udp.connect_to(all[peer].udp) && (me == 1 || tcp.connect_to(all[1].tcp));
        check(sluice_barrier(), "sluice_barrier");
        ok = ok && (me == 0 || tcp.accept_one());
        if (!ok) {
            std::fprintf(stderr, "sluice-bench worker rank %u: cannot set up the bare UDP "
                                 "and TCP sockets on 127.0.0.1\n", me);
            sluice_exit(3);
        }
        check(sluice_barrier(), "sluice_barrier");
    }
    double udp_chunk(std::uint32_t n, std::uint32_t lead, UdpWait wait,
                     std::vector<double> *trips = nullptr) {
        ask(wait == UdpWait::spin ? serve_udp_spin : serve_udp_block, n);
        return udp.ping(n, lead, wait, trips);
    }

    struct UdpRtt {
        double am = 0, am_p50 = 0, am_p99 = 0; // mean, and over single round trips
        double put = 0, get = 0;               // 8 B blocking Put and Get
        double spin = 0, block = 0;            // bare UDP, ns per round trip
        double spin_p50 = 0;                   // over the bare spinning single round trips
    };
    void put8() { check(sluice_put(peer, peer_base, local.data(), 8), "sluice_put"); }
    void get8() { check(sluice_get(local.data(), peer, peer_base, 8), "sluice_get"); }
    // The AM Short round trip and the 8 B blocking Put and Get over udp, in
    // chunks alternating with the bare UDP ping-pong (spinning, then
    // blocking) between the same two processes, so all of them see the same
    // machine.
    UdpRtt udp_rtt_with_references() {
        const long iters = rtt_iterations(0, options.scale);
        constexpr int chunks = 5;
        const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, 200));
        const std::uint32_t lead = per / 10;
        for (std::uint32_t i = 0; i < per; ++i) { // warm-up of every path
            request(AmKind::short_, h_short_ping, 0);
            wait_reply();
        }
        (void)timed(lead, [&] { put8(); });
        (void)timed(lead, [&] { get8(); });
        (void)udp_chunk(per, lead, UdpWait::spin);
        (void)udp_chunk(lead + 1, lead, UdpWait::block);
        std::vector<double> trips, bare_trips;
        trips.reserve(static_cast<std::size_t>(per) * chunks);
        bare_trips.reserve(static_cast<std::size_t>(per) * chunks);
        UdpRtt r;
        for (int c = 0; c < chunks; ++c) {
            r.spin += udp_chunk(per + lead, lead, UdpWait::spin, &bare_trips);
            r.block += udp_chunk(per + lead, lead, UdpWait::block);
            // Single round trips are timed from send to send: the clock is
            // read once the request is on its way, off the round trip's
            // path, as the bare ping-pong reads it after its send (read
            // after the reply instead, it lengthened every round trip by
            // the read and the store).  The last one ends at its reply.
            const double t0 = now_ns();
            double t = t0;
            for (std::uint32_t i = 0; i < per; ++i) {
                request(AmKind::short_, h_short_ping, 0);
                const double t1 = now_ns();
                if (i > 0) trips.push_back(t1 - t);
                t = t1;
                wait_reply();
            }
            const double end = now_ns();
            trips.push_back(end - t);
            r.am += end - t0;
            r.put += timed(per, [&] { put8(); });
            r.get += timed(per, [&] { get8(); });
        }
        const double n = static_cast<double>(trips.size());
        r.am /= n;
        r.put /= n;
        r.get /= n;
        r.spin /= n;
        r.block /= n;
        std::sort(trips.begin(), trips.end());
        r.am_p50 = trips[trips.size() / 2];
        r.am_p99 = trips[trips.size() * 99 / 100];
        std::sort(bare_trips.begin(), bare_trips.end());
        r.spin_p50 = bare_trips.empty() ? nan_value : bare_trips[bare_trips.size() / 2];
        return r;
    }

    // 4 MiB Put bandwidth (nbi, as put_bw) in chunks alternating with the
    // bare TCP stream of 4 MiB messages: {Put ns, TCP ns} per message.
    std::pair<double, double> put_bw_with_tcp() {
        const long iters = rma_iterations(largest_rma, options.scale);
        constexpr int chunks = 3;
        const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, 4));
        auto put = [&] {
            check(sluice_put_nbi(peer, peer_base, local.data(), largest_rma), "sluice_put_nbi");
        };
        auto stream = [&](std::uint32_t n) {
            ask(serve_tcp, n);
            return tcp.write_messages(n, largest_rma);
        };
        (void)nbi_count(per / 2 + 1, put);
        (void)stream(per / 2 + 1);
        double put_ns = 0, tcp_ns = 0;
        for (int c = 0; c < chunks; ++c) {
            tcp_ns += stream(per);
            put_ns += nbi_count(per, put);
        }
        const double n = static_cast<double>(per) * chunks;
        return {put_ns / n, tcp_ns / n};
    }

    template <class How> void measure(const char *metric, std::size_t size, How how) {
        if (options.wanted(metric, size))
            phase([&] { results.add(metric, size, how()); });
    }
    // The job's state (tests/perf/README.md, "States"): 20,000 bare round
    // trips, whatever --only keeps; the driver reads `state_pingpong_first`
    // and `_last` (ns per round trip), measured as the suite starts and ends.
    void state_pingpong(const char *metric) {
        constexpr std::uint32_t n = 20000, lead = 2000;
        phase([&] { results.add(metric, 0, pingpong_chunk(n + lead, lead) / n); });
    }

    // What both kinds start with: 2 ranks, handlers, segments, buffers.
    bool start(std::size_t &peer_size) {
        me = sluice_rank();
        if (sluice_size() != 2) {
            if (me == 0)
                std::fprintf(stderr, "sluice-bench: the suite needs 2 ranks, got %u\n",
                             sluice_size());
            return false;
        }
        peer = 1 - me;
        register_handlers();
        check(sluice_segment_attach(segment_bytes), "sluice_segment_attach");
        check(sluice_segment_info(peer, &peer_base, &peer_size), "sluice_segment_info");
        state.peer_base = peer_base;
        if (!local.assign(largest_rma, 1)) {
            std::fprintf(stderr, "sluice-bench worker: mmap of the local buffer failed\n");
            return false;
        }
        return true;
    }

    int run_udp() {
        std::size_t peer_size = 0;
        if (!start(peer_size))
            return 2;
        const int conduit_sockets = udp_transport_sockets(options); // before ours
        sockets_open();
        if (me == 0)
            results.add("udp_conduit_sockets", 0, conduit_sockets);
        // The bare UDP round trip is also the 8 B Put/Get latencies' reference,
        // measured in the same alternation.
        if (options.wanted("udp_am_short_rtt") || options.wanted("udp_pingpong") ||
            options.wanted("udp_put_lat", 8) || options.wanted("udp_get_lat", 8))
            phase([&] {
                const UdpRtt r = udp_rtt_with_references();
                results.add("udp_am_short_rtt", 0, r.am);
                results.add("udp_am_short_rtt_p50", 0, r.am_p50);
                results.add("udp_am_short_rtt_p99", 0, r.am_p99);
                results.add("udp_pingpong_job", 0, r.spin);
                results.add("udp_pingpong_job_p50", 0, r.spin_p50);
                results.add("udp_pingpong_job_block", 0, r.block);
                results.add("udp_pingpong_resends", 0, static_cast<double>(udp.resends()));
                results.add("udp_put_lat", 8, r.put);
                results.add("udp_get_lat", 8, r.get);
            });
        if (options.wanted("udp_put_bw", largest_rma))
            phase([&] {
                const auto [put, stream] = put_bw_with_tcp();
                results.add("udp_put_bw", largest_rma, put);
                results.add("udp_tcp_stream", largest_rma, stream);
            });
        measure("udp_get_bw", largest_rma, [&] { return get_bandwidth_ns(largest_rma); });
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }

    int run() {
        std::size_t peer_size = 0;
        if (!start(peer_size))
            return 2;
        // A one-host job with default routing must not start udp.
        if (me == 0)
            results.add("route_udp_sockets", 0, udp_sockets_open());
        pingpong_page_open();
        check(sluice_barrier(), "sluice_barrier");
        state_pingpong("state_pingpong_first");

        const std::size_t max_medium = sluice_am_max_medium();
        const std::size_t max_long = std::min(sluice_am_max_long(), peer_size);
        if (me == 0) {
            results.add("info_am_max_medium", 0, static_cast<double>(max_medium));
            results.add("info_am_max_long", 0, static_cast<double>(sluice_am_max_long()));
        }

        // Each figure in its own phase; --only NAME keeps the matching ones.
        measure("poll_empty", 0, [&] { return empty_poll(); });
        if (options.wanted("am_short_rtt"))
            phase([&] {
                const auto [am, pp] = short_rtt_with_reference();
                results.add("am_short_rtt", 0, am);
                results.add("pingpong_job", 0, pp);
            });
        // Medium: the common sizes up to the maximum, and the maximum itself.
        std::vector<std::size_t> medium_sizes;
        for (std::size_t s : am_sizes())
            if (s < max_medium)
                medium_sizes.push_back(s);
        medium_sizes.push_back(max_medium);
        for (std::size_t s : medium_sizes)
            measure("am_medium_rtt", s, [&] { return am_round_trip(AmKind::medium, s); });
        for (std::size_t s : am_sizes())
            if (s <= max_long)
                measure("am_long_rtt", s, [&] { return am_round_trip(AmKind::long_, s); });
        measure("am_short_flood", 0, [&] { return am_flood(AmKind::short_, 0); });
        for (std::size_t s : medium_sizes)
            measure("am_medium_flood", s, [&] { return am_flood(AmKind::medium, s); });
        for (std::size_t s : am_sizes())
            if (s <= max_long)
                measure("am_long_flood", s, [&] { return am_flood(AmKind::long_, s); });
        // The Long flood above rewrites one place, which stays in the
        // sender's L1; a Medium's payload goes through the queue's ring, a
        // new place each time.  The same Long flood over four places (the
        // 64 KiB a 16 KiB Medium's ring spans) tells the two costs apart.
        if (std::size_t s = std::size_t{16} << 10; s <= max_medium && 4 * s <= peer_size)
            measure("am_long_flood_4places", s, [&] { return am_flood(AmKind::long_, s, 4); });
        for (std::size_t s : rma_sizes(options.all_sizes)) {
            measure("put_lat", s, [&] { return put_latency(s); });
            measure("get_lat", s, [&] { return get_latency(s); });
            measure("put_bw", s, [&] { return put_bandwidth_ns(s); });
            measure("get_bw", s, [&] { return get_bandwidth_ns(s); });
        }
        state_pingpong("state_pingpong_last");
        if (!options.wanted("barrier")) {
            check(sluice_finalize(), "sluice_finalize");
            return 0;
        }

        const double b = barrier_latency();
        const double ba = barrier_after_am_latency();
        if (me == 0) {
            results.add("barrier", 0, b);
            results.add("barrier_after_am", 0, ba);
        }
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }
};

// ---- memory per rank -----------------------------------------------------------
// Writes one line per shared-memory mapping of this rank ("map DEV INODE BYTES
// PATH") and one for the object holding its own segment ("seg DEV INODE
// BYTES"); the driver removes segments and counts each object once.
int record_shared_memory(const CommonOptions &o) {
    check(sluice_segment_attach(1 * mib), "sluice_segment_attach");
    void *base = nullptr;
    std::size_t size = 0;
    check(sluice_segment_info(sluice_rank(), &base, &size), "sluice_segment_info");
    check(sluice_barrier(), "sluice_barrier");

    std::ostringstream out;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    const auto addr = reinterpret_cast<std::uintptr_t>(base);
    while (std::getline(maps, line)) {
        std::istringstream in(line);
        std::string range, perms, offset, dev, path;
        unsigned long long inode = 0;
        in >> range >> perms >> offset >> dev >> inode;
        std::getline(in >> std::ws, path);
        const bool shm = path.rfind("/dev/shm/", 0) == 0 || path.rfind("/memfd:", 0) == 0 ||
                         path.rfind("/SYSV", 0) == 0;
        if (!shm)
            continue;
        const auto dash = range.find('-');
        const std::uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
        const std::uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
        out << "map " << dev << ' ' << inode << ' ' << (hi - lo) << ' ' << path << '\n';
        if (addr >= lo && addr < hi)
            out << "seg " << dev << ' ' << inode << ' ' << size << '\n';
    }
    if (!o.out.empty()) {
        std::ofstream f(o.out + "/shm-" + std::to_string(sluice_rank()) + ".txt");
        f << out.str();
    }
    check(sluice_barrier(), "sluice_barrier");
    check(sluice_finalize(), "sluice_finalize");
    return 0;
}

int worker_main(int argc, char **argv, std::string_view kind) {
    check(sluice_init(&argc, &argv), "sluice_init");
    const CommonOptions o = parse_common(argc, argv);
    if (kind == "empty") {
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }
    if (kind == "shm")
        return record_shared_memory(o);
    if (kind == "exactly-once")
        return exactly_once_main(o);
    if (kind == "ofi-large")
        return large_segment_main(o);
    if (kind == "suite" || kind == "udp" || kind == "ofi" || kind == "ibv" || kind == "portals" ||
        kind == "gni" || kind == "lapi" || kind == "client") {
        Suite suite(o);
        if (sluice_rank() == 0 && !suite.results.ok()) {
            std::fprintf(stderr, "sluice-bench: cannot write %s\n", o.out.c_str());
            sluice_exit(2);
        }
        if (kind == "ofi")
            return OfiSection<Suite>(suite).run();
        if (kind == "ibv")
            return IbvSection<Suite>(suite).run();
        if (kind == "portals")
            return PortalsSection<Suite>(suite).run();
        if (kind == "gni")
            return GniSection<Suite>(suite).run();
        if (kind == "lapi")
            return LapiSection<Suite>(suite).run();
        if (kind == "client")
            return ClientSection<Suite>(suite, argc, argv).run();
        return kind == "udp" ? suite.run_udp() : suite.run();
    }
    std::fprintf(stderr, "sluice-bench: unknown worker kind '%.*s'\n",
                 static_cast<int>(kind.size()), kind.data());
    return 2;
}

} // namespace
} // namespace sluice::perf

int main(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string_view(argv[i]) == "--worker")
            return sluice::perf::worker_main(argc, argv, argv[i + 1]);
    return sluice::perf::driver_main(argc, argv);
}
