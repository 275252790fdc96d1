// tests/softnic/lapi/context.hpp - a LAPI context: one task's state, its
// dispatcher and its threads.
//
// The dispatcher takes packets from the task's ring, in order: it runs an
// active message's header handler on its first packet (holding the
// dispatcher's lock, so no other packet of the task moves meanwhile),
// copies every packet's data into place, and completes a message once its
// last packet landed: the completion handler goes to the completion
// thread, counters are incremented, an acknowledgement goes back to the
// origin.  It also pushes the task's outgoing packets as the targets'
// rings have room.  It runs in the program's LAPI calls and, in interrupt
// mode, on the notification thread, woken by the ring's doorbell.  A
// watchdog thread reports a header handler that runs past
// SOFTNIC_LAPI_HH_LIMIT_MS while it still runs.
#pragma once

#include "fabric.hpp"
#include "lapi.h"
#include "transfer.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace softnic_lapi {

class Context {
public:
    Context(lapi_handle_t handle, const Job &job, const Knobs &knobs, LAPI_err_hndlr *err_hndlr);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    // Joins the fabric, waits until every task of the job has joined and
    // starts the threads.  LAPI_SUCCESS or the code saying why not.
    int start();
    // LAPI_Term: pushes what is still owed to other tasks (acknowledgements,
    // get replies), lets the completion thread finish, stops the threads
    // and leaves the fabric.
    void stop();

    // Queues message `o` to task `target` and pushes what fits now.
    // `tracked`: it counts as outstanding (LAPI_Fence) until acknowledged.
    int post(std::uint32_t target, Outgoing o, bool tracked);
    // One dispatcher pass, unless another thread is running one.  Returns
    // whether it moved anything.  `notified`: the notification thread's
    // pass, which runs only in interrupt mode.
    bool dispatch(bool notified = false);
    // LAPI_Senv INTERRUPT_SET: once it returns in polling mode, no
    // notification pass runs (one under way has ended), so only the
    // program's calls dispatch what arrives from then on.
    void set_interrupt(bool on);
    // Dispatches until `done` holds.  Every 100 ms without progress it asks
    // `broken` (by default: a task of the job died and nothing left here
    // can make `done` hold) and ends with its code if not LAPI_SUCCESS;
    // the pending asynchronous error ends it too.
    int wait_until(const std::function<bool()> &done, const std::function<int()> &broken = nullptr);
    int fence();
    // LAPI_Gfence (table nullptr) and LAPI_Address_init.
    int collective(void *value, void **table);

    // Whether task `task` can still be sent to (asking its host over the
    // wire when it is another's); LAPI_ERR_TGT_PURGED if not.
    int reachable(std::uint32_t task);
    // Wakes the notification thread and every waiter of this task.
    void wake() { doorbell_ring(slot_); }
    // The asynchronous error a rule broken by a handler left, once.
    int take_error() { return pending_error_.exchange(0); }
    // A rule a handler broke: one line on stderr, the error pending for
    // the next call, the program's error handler.
    void report(int code, int source, const std::string &what);

    const lapi_handle_t handle;
    const Job job;
    const Knobs knobs;
    std::atomic<bool> interrupt{true};
    std::atomic<int> error_check{0};
    std::atomic<void *> address_table[LAPI_ADDR_TBL_SZ] = {};

private:
    struct Peer {
        TaskRef ref;
        std::atomic<std::uint64_t> outstanding{0};  // messages not yet acknowledged
        std::atomic<std::uint64_t> arrived{0};      // its last collective
        std::atomic<std::uint64_t> value[2] = {};   // its collectives' values, by sequence parity
    };
    // A message arriving: where its data goes and what completes it.
    struct Incoming {
        unsigned char *buffer = nullptr;
        std::uint64_t received = 0;
        compl_hndlr_t *completion = nullptr;
        void *user_info = nullptr;
    };
    struct Completion {
        compl_hndlr_t *handler;
        void *user_info;
        PacketHead head;  // the message's first packet's header
    };

    void handle_packet(const PacketHead &h, const unsigned char *data);
    void begin_am(const PacketHead &h, const unsigned char *data, Incoming &in);
    void complete(const PacketHead &h, const Incoming &in);
    void acknowledge(const PacketHead &h);
    bool push_outgoing();
    bool died_peer();
    int idle_with_dead_peer();
    void notification_loop();
    void completion_loop();
    void watchdog_loop();

    LAPI_err_hndlr *const err_hndlr_;
    std::uint32_t slot_ = 0, incarnation_ = 0;
    bool joined_ = false;
    std::unique_ptr<Peer[]> peers_;

    std::mutex dispatch_mutex_;
    // By kind, source and message number: a get's reply carries its
    // origin's number, which the replying task's own messages may also have.
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, Incoming> incoming_;  // under dispatch_mutex_

    std::mutex out_mutex_;
    std::vector<std::deque<Outgoing>> out_;  // by target task, under out_mutex_
    std::atomic<std::uint64_t> out_queued_{0};
    std::atomic<std::uint64_t> next_message_{1};
    std::uint64_t collective_seq_ = 0;

    std::mutex completion_mutex_;
    std::condition_variable completion_ready_;
    std::deque<Completion> completions_;
    bool completing_ = false;  // the completion thread is running a handler

    std::atomic<int> pending_error_{0};
    // The header handler running now: when it started (steady clock, ns;
    // 0: none) and its number, so that it is reported once.
    std::atomic<std::int64_t> handler_since_{0};
    std::atomic<std::uint64_t> handler_serial_{0};
    std::atomic<std::uint64_t> handler_reported_{0};

    std::atomic<bool> stopping_{false};
    std::thread notification_, completion_, watchdog_;
};

// The thread is inside a header handler (the dispatcher's): communication
// calls from it are refused.
bool in_header_handler();

} // namespace softnic_lapi
