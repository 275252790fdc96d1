// src/core/runtime.hpp - the runtime object that composes the layers: ranks
// and hosts, conduits per peer, segments, progress, collectives and exit.
#pragma once

#include "am/am.hpp"
#include "conduits/registry.hpp"
#include "conduits/firehose/main_pool.hpp"
#include "conduits/firehose/registrar.hpp"
#include "rma/rma.hpp"
#include "spawners/bootstrap.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace sluice::core {

using am::Rank;
using base::Status;

class Runtime {
public:
    Status init(int *argc, char ***argv);
    Status finalize();
    bool running() const { return state_.load(std::memory_order_acquire) == State::running; }
    bool finalized() const { return state_.load() == State::finalized; }

    Rank rank() const { return rank_; }
    Rank size() const { return size_; }
    std::uint32_t host_count() const { return host_count_; }
    std::uint32_t host_of(Rank r) const { return host_of_[r]; }
    const std::string &host_name(Rank r) const { return host_names_[r]; }
    const std::vector<Rank> &host_ranks() const { return local_ranks_; }

    // Receive buffers of every transport (sluice_receive_memory).
    std::size_t receive_buffer_bytes() const {
        std::size_t n = 0;
        for (const auto &t : transports_) n += t->receive_buffer_bytes();
        return n;
    }

    Status segment_attach(std::size_t size);
    Status segment_info(Rank r, void **base, std::size_t *size) const;

    // Progress: runs handlers on every conduit.  Threads other than the one
    // running an exit park here until the process ends.
    // Who polls: Sluice's own wait loops (barrier, allgather, exit), which
    // may sleep in block mode (base::idle); the program's sluice_poll,
    // which never sleeps; or the program's sluice_poll_wait, a wait on
    // memory a peer may change without a message, which naps.
    enum class Poller { wait, program, program_wait };
    void poll(Poller who = Poller::wait) {
        if (exit_started_.load(std::memory_order_relaxed)) exit_park();
        // A hint for the progress thread (not a count: threads may race on it).
        app_polls_.store(app_polls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (__builtin_expect(who == Poller::wait, 1)) {
            am.poll();
        } else if (who == Poller::program_wait) {
            base::IdleNap nap;
            am.poll();
        } else {
            base::idle_no_sleep = true;
            am.poll();
            base::idle_no_sleep = false;
        }
    }
    Status barrier();
    Status allgather(const void *in, void *out, std::size_t length);

    [[noreturn]] void exit(int code);
    // on_exit/atexit: the program is ending with `code` without sluice_exit.
    void exit_from_process_end(int code);
    // A termination signal arrived: the handler forwards it (async-signal-
    // safe), the signal thread runs the exit.
    void exit_signal_forward(int sig);
    bool exit_signal_may_wait() const;  // no conduit is mid-update on this thread
    void exit_from_signal(int sig);

    am::AmEngine am;
    rma::RmaEngine rma;
    am::SegmentTable segments;

private:
    enum class State { none, running, finalized };
    friend struct SystemHandlers;
    friend struct ExitHandlers;

    // The host names, and every rank's choice of network conduit (one
    // allgather carries both): `choices[r]` is rank r's conduit, or "!" and
    // why it has none.
    Status init_hosts(const std::string &my_choice, std::vector<std::string> &choices);
    bool network_needed(const conduit::ConduitChoice &network, const conduit::ConduitChoice &same_host) const;
    Status init_transports(const conduit::ConduitChoice &network, const conduit::ConduitChoice &same_host,
                           const std::vector<std::string> &choices);
    // Firehose on every transport that reaches only registered memory
    // (needs_registration): its local registrar for buffers outside the
    // segment; with SLUICE_SEGMENT=large, a main pool per such transport
    // at segment_attach (main_pools_create).
    Status init_firehose();
    void main_pools_create(void *base, std::size_t size, const std::vector<conduit::SegmentRecord> &records);
    void firehose_stats_print() const;  // SLUICE_FIREHOSE_STATS, at finalize
    void system_handlers_register();
    void idle_policy_set(const conduit::TransportInfo *network);
    static void sleep_hook(void *context);  // base::idle's, in block mode
    // Block mode: sleep until a transport has work (or `also`, a
    // descriptor of the caller's, is readable), 10 ms at most.
    void sleep_for_work(int also = -1);
    void progress_thread_start();
    void progress_thread_stop();
    // While this thread blocks in a bootstrap collective (it does not poll),
    // a thread polls for it when a conduit acknowledges what it receives: a
    // peer may wait for the retransmission of a datagram this rank sent, or
    // for its ack, before it can join the same collective.  Stopped at the
    // end of the scope, unless it was running before.
    struct ProgressWhileBlocked {
        explicit ProgressWhileBlocked(Runtime &runtime);
        ~ProgressWhileBlocked();
        Runtime &rt;
        bool started = false;
    };

    // Exit protocol (exit.cpp, src/core/README.md): head
    // decides the first exit and its code, body coordinates (reduce with
    // timeout, then leader election and O(N) exit requests, bootstrap abort
    // as the last resort), tail ends the process.
    bool exit_head(int code);
    void exit_body(int code);
    [[noreturn]] void exit_tail();
    void exit_park();  // returns only on the exiting thread
    bool exit_main_parks() const;
    void exit_finish();  // the bootstrap's last calls: abort, or notify and fini
    bool exit_wait(std::uint64_t deadline, bool (Runtime::*done)() const);
    bool exit_reduced() const;
    bool exit_elected() const;
    bool exit_acked() const;
    bool exit_leader_known() const;

    std::atomic<State> state_{State::none};
    Rank rank_ = 0, size_ = 1;
    std::unique_ptr<spawner::Bootstrap> bootstrap_;
    std::vector<std::unique_ptr<conduit::Transport>> transports_;
    // After transports_: destroyed first, while their transports still exist.
    std::vector<std::unique_ptr<rma::firehose::Registrar>> registrars_;
    // SLUICE_SEGMENT=large: each such transport's main pool (segment_attach).
    bool segment_large_ = false;
    std::vector<std::unique_ptr<rma::firehose::MainPool>> main_pools_;
    std::vector<conduit::Transport *> route_;
    std::vector<std::string> host_names_;
    std::vector<std::uint32_t> host_of_;
    std::uint32_t host_count_ = 1;
    std::vector<Rank> local_ranks_;
    std::string job_id_;
    // The transport whose own barrier sluice_barrier runs: one that reaches
    // every other rank, when it has one and SLUICE_BARRIER allows (null:
    // the AM dissemination).
    conduit::Transport *native_barrier_ = nullptr;

    // barrier over AM: highest epoch heard per dissemination round
    std::uint64_t barrier_epoch_ = 0;
    std::atomic<std::uint64_t> barrier_heard_[64] = {};

    std::thread progress_thread_;
    std::atomic<bool> progress_stop_{false};
    std::atomic<std::uint64_t> app_polls_{0};  // bumped by poll(): the program is polling
    // Block mode (SLUICE_WAIT): the nap of a transport with nothing to
    // sleep on, and how often this rank slept, and woke to work.
    std::uint64_t wait_nap_ns_ = 100'000;
    int progress_wake_fd_ = -1;  // block mode: progress_thread_stop wakes the thread through it
    std::atomic<std::uint64_t> sleeps_{0}, sleeps_woken_{0};

    // exit state
    std::atomic<bool> exit_started_{false};
    std::atomic<int> exit_code_{0};
    std::atomic<bool> exit_graceful_{false};
    std::atomic<bool> main_parked_{false};   // the main thread waits in exit_park
    std::atomic<bool> exit_handoff_{false};  // the main thread runs exit_finish
    std::atomic<long> exit_thread_{0};
    std::atomic<int> exit_arrivals_{0};
    std::atomic<int> exit_max_code_{0};
    std::atomic<bool> exit_done_{false};
    std::atomic<int> exit_leader_{-1};     // rank 0: the elected leader
    std::atomic<int> exit_role_{0};        // 0 unknown, 1 leader, 2 member
    std::atomic<bool> exit_elect_answered_{false};
    std::atomic<int> exit_acks_{0};
    std::atomic<int> exit_leader_code_{0};
    std::atomic<bool> exit_leader_heard_{false};  // a leader's request (with its code) arrived
};

// This thread is inside one of the bootstrap's collectives (MPI under the
// mpi backend); an exit() from in there must not call the bootstrap again.
inline thread_local int bootstrap_calls = 0;
struct BootstrapCall {
    BootstrapCall() { ++bootstrap_calls; }
    ~BootstrapCall() { --bootstrap_calls; }
    BootstrapCall(const BootstrapCall &) = delete;
    BootstrapCall &operator=(const BootstrapCall &) = delete;
};

extern Runtime *const runtime_instance;
inline Runtime &runtime() { return *runtime_instance; }

} // namespace sluice::core
