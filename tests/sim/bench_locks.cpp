// tests/sim/bench_locks.cpp - --bench-locks: what the engine's spinlocks cost.
// One cycle is the four calls of a request and its reply on the common path
// (request_begin, request_arrived, reply_byte, reply_arrived), made by one
// thread on a sender engine and a receiver engine.  With several threads the
// sender is shared: either each thread talks to its own peer (only the
// engine-wide counters are shared) or all talk to the same peer (one
// per-peer lock on each side).  Adjacent peers (1, 2, 3, ...) share cache
// lines of the sender's per-peer state; far peers (16 apart) do not.
#include "tests/sim/modes.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

namespace sluice::sim {

using credit::Config;
using credit::Engine;
using credit::Peer;

namespace {

struct Outcome {
    double wall_ns = 0;
    std::uint64_t cycles = 0, refusals = 0;
};

enum class Peers { same, adjacent, far };

Outcome bench(unsigned threads, Peers peers, std::uint64_t iterations, credit::Policy policy) {
    const bool same_peer = peers == Peers::same;
    const Peer nodes = 80;
    auto peer_of = [&](unsigned t) -> Peer { return same_peer ? 1 : peers == Peers::adjacent ? t + 1 : 1 + 16 * t; };
    auto config = [&](Peer me) {
        Config c = Config::defaults(nodes, me);
        c.policy = policy;
        c.per_peer = 64;  // never the limit: 4 threads keep at most 4 credits in use
        return c;
    };
    Engine sender(config(0));
    std::vector<std::unique_ptr<Engine>> receivers;
    for (unsigned t = 0; t < (same_peer ? 1u : threads); ++t) receivers.push_back(std::make_unique<Engine>(config(peer_of(t))));
    std::atomic<unsigned> ready{0};
    std::atomic<bool> go{false};
    std::atomic<std::uint64_t> refusals{0};
    auto body = [&](unsigned t) {
        const Peer peer = peer_of(t);
        Engine &receiver = *receivers[same_peer ? 0 : t];
        credit::SysMessage drop[16];
        std::uint64_t refused = 0;
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (std::uint64_t i = 0; i < iterations; ++i) {
            std::uint8_t byte = 0;
            while (!sender.request_begin(peer, 1, byte)) ++refused;
            receiver.request_arrived(0, byte);
            const std::uint8_t reply = receiver.reply_byte(0, byte);
            sender.reply_arrived(peer, reply);
            if (receiver.sys_pending()) receiver.sys_take(drop, 16);
            if (sender.sys_pending()) sender.sys_take(drop, 16);
        }
        refusals.fetch_add(refused);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(body, t);
    while (ready.load() < threads) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread &t : pool) t.join();
    Outcome o;
    o.wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    o.cycles = iterations * threads;
    o.refusals = refusals.load();
    return o;
}

} // namespace

int bench_locks_run(const Cli &cli) {
    const unsigned cores = std::thread::hardware_concurrency();
    std::printf("engine lock cost: one cycle = request_begin + request_arrived + reply_byte + reply_arrived "
                "(4 operations); %llu cycles per thread; %u hardware threads\n",
                static_cast<unsigned long long>(cli.bench_iterations), cores);
    std::printf("%-8s %7s %-9s %12s %12s %14s %10s\n", "policy", "threads", "peers", "ns/op wall", "ns/op/thread",
                "cycles/s", "false");
    for (credit::Policy policy : {credit::Policy::fixed, credit::Policy::dynamic}) {
        for (unsigned threads : {1u, 2u, 4u}) {
            for (Peers peers : {Peers::adjacent, Peers::far, Peers::same}) {
                if (threads == 1 && peers != Peers::adjacent) continue;
                const Outcome o = bench(threads, peers, cli.bench_iterations, policy);
                const double ops = 4.0 * static_cast<double>(o.cycles);
                const char *name = threads == 1 ? "one" : peers == Peers::same ? "same" : peers == Peers::far ? "far" : "adjacent";
                std::printf("%-8s %7u %-9s %12.1f %12.1f %14.0f %10llu\n", credit::policy_name(policy), threads, name,
                            o.wall_ns / ops,
                            o.wall_ns * threads / ops, static_cast<double>(o.cycles) * 1e9 / o.wall_ns,
                            static_cast<unsigned long long>(o.refusals));
            }
        }
    }
    if (cores && cores < 4)
        std::printf("note: %u hardware threads: with 4 threads a lock holder can be descheduled while others spin\n", cores);
    return 0;
}

} // namespace sluice::sim
