// tests/sim/simulation.hpp - one discrete-event run: N nodes, each with a real
// credit::Engine and one CPU, exchanging requests, replies and system
// messages over a wire of fixed latency.  README.md describes the model.
#pragma once

#include "tests/sim/ledger.hpp"
#include "tests/sim/results.hpp"
#include "tests/sim/window.hpp"
#include "tests/sim/workload.hpp"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::sim {

// Time buckets of credit movement and received requests; the bucket width
// doubles whenever the run outgrows them, so the memory stays fixed.
class Timeline {
public:
    void add(std::int64_t t, std::uint64_t moved, std::uint64_t received);
    // Sums over the buckets that lie wholly inside [from, to).
    void sum(std::int64_t from, std::int64_t to, std::uint64_t &moved, std::uint64_t &received) const;
    // The end of the last bucket before `to` with movement, at most `to`; -1 if none.
    std::int64_t last_move_before(std::int64_t to) const;

private:
    static constexpr std::size_t buckets = 65536;
    std::int64_t width_ = 256;
    std::vector<std::uint64_t> moved_ = std::vector<std::uint64_t>(buckets), received_ = std::vector<std::uint64_t>(buckets);
};

class Simulation {
public:
    explicit Simulation(const RunParams &p);
    ~Simulation();
    Simulation(const Simulation &) = delete;
    Simulation &operator=(const Simulation &) = delete;

    RunResult run();

private:
    static constexpr std::uint32_t none = 0xffffffffu;
    enum class Kind : std::uint8_t { request, reply, sys, refused };
    enum RecordFlag : std::uint8_t { expects_reply = 1 };

    // A message on the wire or waiting for a node's CPU.
    struct Record {
        std::uint32_t next = none;  // the node's queue
        credit::Peer src = 0, dst = 0;
        std::uint32_t pair = none;  // Ledger pair of src and dst
        Kind kind = Kind::request;
        std::uint8_t credits = 0;   // a request's n
        std::uint8_t byte = 0;      // the credit byte of a request or reply
        std::uint8_t flags = 0;
        credit::SysMessage sys;     // as sys_take() gave it (peer: the destination)
    };
    // Messages waiting for a node's CPU, oldest first.
    struct Fifo {
        std::uint32_t head = none, tail = none;
    };
    struct Node {
        Fifo data;                               // requests and replies (everything under --sys-order fifo)
        Fifo system;                             // system messages and refusals
        std::uint32_t current = none;            // on the CPU
        std::uint32_t inflight = 0;              // requests awaiting a reply
        std::uint64_t remaining = 0;             // requests still to send
        credit::Peer pending = none;             // drawn destination not yet sent to
        std::uint32_t pending_pair = none;
        std::uint8_t pending_credits = 0, pending_flags = 0;
        bool stalled = false;
        bool system_last = false;                // alternate: the CPU last served the system queue
        std::uint16_t sys_used = 0;              // system queue slots taken
        std::uint32_t buffered = 0;              // credits of requests in the request buffer
        bool in_ring = false;                    // the clock holds its CPU completion for a later window
        std::int64_t stall_since = 0;
        std::int64_t cpu_done = WindowClock::never;  // when the item on the CPU is done
        Rng rng;
    };

    Record &rec(std::uint32_t r) { return chunks_[r >> chunk_bits][r & (chunk_size - 1)]; }
    std::uint32_t record_new();
    void record_free(std::uint32_t r) {
        rec(r).next = free_;
        free_ = r;
    }
    void fifo_push(Fifo &f, std::uint32_t r);
    std::uint32_t fifo_pop(Fifo &f);

    void wire(std::uint32_t r) { clock_.send(rec(r).dst, now_, r); }
    // Node n's events of this window: its arrivals [a, end) and its CPU.
    void node_window(credit::Peer n, std::size_t a, std::size_t end);
    void arrive(std::uint32_t r);
    void cpu_next(credit::Peer n);
    void request_start(credit::Peer n, std::uint32_t r);
    void finish(std::uint32_t r);
    void request_done(std::uint32_t r);
    void reply_done(std::uint32_t r);
    void sys_done(std::uint32_t r);
    void refused_done(std::uint32_t r);
    void sends_try(credit::Peer n);
    // After every engine call on `self` naming `peer`: sends what the engine
    // queued and checks every pair the call may have changed.
    void after_call(credit::Peer self, credit::Peer peer, std::uint32_t pair, const char *call);
    void pair_refresh(credit::Peer self, credit::Peer other, std::uint32_t pair);
    void move_note(std::uint64_t credits);
    void watchdog();
    void fail(const std::string &where, const std::string &why);
    std::string pair_dump(credit::Peer x, credit::Peer y) const;
    void lender_dump(credit::Peer p) const;
    void end_checks();
    void metrics_collect();

    RunParams params_;
    RunResult result_;
    Workload workload_;
    std::vector<std::unique_ptr<credit::Engine>> engines_;
    std::vector<Node> nodes_;
    std::optional<Ledger> ledger_;
    bool fixed_ = false;
    // Credits a request's byte returns (its XXX, unless that is the
    // stalled sender's want under dynamic and demand).
    unsigned returned(std::uint8_t byte) const {
        const auto b = credit::CreditByte::decode(byte);
        return fixed_ || b.extra != credit::CreditByte::want ? b.extra : 0u;
    }
    std::uint64_t total_credits_ = 0;
    unsigned epoch_length_ = 1;
    WindowClock clock_;
    std::int64_t now_ = 0, last_event_ = 0;
    bool failed_ = false;

    static constexpr unsigned chunk_bits = 12, chunk_size = 1u << chunk_bits;
    std::vector<std::unique_ptr<Record[]>> chunks_;
    std::uint32_t records_ = 0, free_ = none;

    std::deque<std::pair<std::int64_t, credit::Peer>> stalls_;  // oldest first
    std::int64_t stall_bound_ = 0;
    Timeline timeline_;
    std::int64_t steady_end_ = -1;
    std::int64_t hot_first_ = -1, hot_last_ = 0;
    std::uint64_t hot_handled_ = 0;
    std::uint64_t replies_seen_ = 0;
    std::uint64_t handled_ = 0, expected_ = 0, transport_refusals_ = 0;
    credit::Peer accounted_next_ = 0;
    std::vector<std::uint32_t> touched_;  // pairs of the system messages one call queued
    std::uint32_t watch_bank_ = none;
};

} // namespace sluice::sim
