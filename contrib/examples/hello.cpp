// contrib/examples/hello.cpp - a first Sluice program.
//
// Every rank
//   1. starts Sluice and attaches a segment: memory the other ranks may
//      read and write with Put and Get;
//   2. plays active-message ping-pong with its right-hand neighbour;
//   3. puts a value into the neighbour's segment, waits in a barrier, reads
//      the value its left-hand neighbour put into its own segment, and gets
//      its value back from the neighbour to check it;
//   4. gathers every rank's host name and result with an allgather;
// then each rank prints one line, in rank order, and rank 0 a summary.
//
//   make && ./sluicerun -n 4 contrib/examples/hello
#include <sluice/sluice.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

// Handler indices are ours to choose (0..255); every rank registers the same.
constexpr sluice::HandlerIndex ping_handler = 1;
constexpr sluice::HandlerIndex pong_handler = 2;
constexpr int rounds = 100;

// Written by the pong handler, read by the main loop.
std::atomic<std::uint32_t> last_pong{0};

// Stops the whole job: sluice::exit ends every rank with this code.
void check(sluice::Status s, const char *what) {
    if (s == sluice::Status::ok) return;
    std::fprintf(stderr, "hello: rank %u: %s failed: %s\n", sluice::rank(), what,
                 std::string(sluice::to_string(s)).c_str());
    sluice::exit(1);
}

// A request handler runs on the receiving rank, inside one of its Sluice
// calls.  It may send at most one reply, with the token it was given, and
// must not wait for anything.
void on_ping(sluice::Token token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    check(sluice::reply_short(token, pong_handler, args[0]), "reply to a ping");
}

// A reply handler may not send anything; it records the round it answers.
void on_pong(sluice::Token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    last_pong.store(args[0], std::memory_order_release);
}

// What every rank tells the others at the end.
struct Report {
    char host[56];
    std::uint32_t ok;       // 1 if every check on this rank passed
    float round_trip_us;    // mean AM round trip to the neighbour
};

} // namespace

int main(int argc, char **argv) {
    // Start the runtime: learns rank and size from the launcher (a program
    // started without sluicerun is a 1-rank job).
    check(sluice::init(&argc, &argv), "init");
    const sluice::Rank me = sluice::rank();
    const sluice::Rank n = sluice::size();
    const sluice::Rank right = (me + 1) % n;
    const sluice::Rank left = (me + n - 1) % n;

    // Collective: every rank attaches a segment (one page is plenty here).
    check(sluice::segment_attach(4096), "segment attach");

    // Register the handlers everywhere, then barrier so that no ping can
    // arrive at a rank that has not registered them yet.
    check(sluice::register_handler(ping_handler, on_ping, sluice::Category::short_, 1),
          "register ping");
    check(sluice::register_handler(pong_handler, on_pong, sluice::Category::short_, 1),
          "register pong");
    check(sluice::barrier(), "barrier");

    // 1. AM ping-pong: a Short request with one argument (the round), a
    //    Short reply carrying it back.  Waiting means polling: handlers run
    //    only inside Sluice calls.
    const auto start = std::chrono::steady_clock::now();
    for (std::uint32_t round = 1; round <= rounds; ++round) {
        check(sluice::request_short(right, ping_handler, round), "ping");
        while (last_pong.load(std::memory_order_acquire) != round) sluice::poll();
    }
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;

    // 2. Put a value into the right neighbour's segment.  A blocking Put
    //    returns when the value is visible there.
    const std::uint64_t mine = 0x5100000000ull + me;
    auto *slot = static_cast<std::uint64_t *>(sluice::segment(right).base);
    check(sluice::put(right, slot, &mine, sizeof mine), "put");

    // After the barrier every Put has landed: my segment holds my left
    // neighbour's value, and a Get from the right returns my own.
    check(sluice::barrier(), "barrier");
    const std::uint64_t received = *static_cast<std::uint64_t *>(sluice::segment(me).base);
    std::uint64_t back = 0;
    check(sluice::get(&back, right, slot, sizeof back), "get");
    const bool ok = back == mine && received == 0x5100000000ull + left;

    // 3. Everyone learns everyone's host name and result.
    Report report{};
    ::gethostname(report.host, sizeof report.host - 1);
    report.ok = ok ? 1 : 0;
    report.round_trip_us = static_cast<float>(elapsed.count() / rounds);
    std::vector<Report> all(n);
    check(sluice::allgather(&report, all.data(), sizeof report), "allgather");

    // 4. One line per rank, in rank order: a barrier after each turn.
    for (sluice::Rank turn = 0; turn < n; ++turn) {
        if (turn == me) {
            std::printf("rank %u of %u on %s: ping-pong with rank %u, %.2f us per round trip; "
                        "put/get %s\n",
                        me, n, report.host, right, report.round_trip_us,
                        ok ? "ok" : "WRONG VALUE");
            std::fflush(stdout);
        }
        check(sluice::barrier(), "barrier");
    }

    bool all_ok = true;
    std::set<std::string> hosts;
    for (const Report &r : all) {
        all_ok = all_ok && r.ok;
        hosts.insert(r.host);
    }
    if (me == 0) {
        std::printf("hello: %u rank%s on %zu host%s, %s\n", n, n == 1 ? "" : "s", hosts.size(),
                    hosts.size() == 1 ? "" : "s",
                    all_ok ? "all checks passed" : "SOME CHECKS FAILED");
        std::fflush(stdout);
    }

    // Collective: drains, synchronizes and releases everything.  Every rank
    // knows all_ok, so the job ends with one exit code.
    check(sluice::finalize(), "finalize");
    return all_ok ? 0 : 1;
}
