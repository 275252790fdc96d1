// src/conduits/common/rdma_conduit.hpp - what the message-buffer RDMA
// conduits (ofi, ibv, portals) share between Transport and their network
// calls, as libfabric's prov/util sits under its providers: a conduit keeps
// its own posting, completions, addressing and registration, and inherits
//
//   - the lock (one thread in the conduit's state at a time) and its guard;
//   - the ready queue: arrivals the conduit queued (ready(), or through a
//     PeerOrder), delivered one handler at a time by whichever thread polls,
//     never from a poll nested in a handler, each handed back to the
//     conduit (delivered()) under the lock;
//   - poll_impl: the receive thread started on the first poll when wanted,
//     the liveness check on its timer, the conduit's reap under the lock,
//     then delivery;
//   - liveness: a peer that was sent something and said nothing is pinged
//     and, still silent, taken for dead (liveness.hpp); the conduit sends
//     the control messages (control_send), this layer answers pings;
//   - finalize's quiesce, the abandon of a handler that ends the job, and
//     the signal-exit rule;
//   - NIC atomics (nic_atomics.hpp): the slots in flight and the steps
//     around the conduit's one post;
//   - one set of counters and the SLUICE_<NAME>_STATS line.
//
// Hooks a conduit implements: up, reap, deliver_one, delivered,
// control_send, idle, path, and receive_wait if it runs a receive thread;
// take and poll_more where it needs them; rdma for Put and Get;
// nic_atomics_support, atomics_create, atomic_room and atomic_post for
// NIC atomics.  src/conduits/common/README.md lists the kit;
// docs/conduits.md walks a message through the layers.
#pragma once

#include "base/flag.hpp"
#include "base/status.hpp"
#include "conduits/common/atomic_slots.hpp"
#include "conduits/common/conduit_lock.hpp"
#include "conduits/common/fifo.hpp"
#include "conduits/common/liveness.hpp"
#include "conduits/common/packed_am.hpp"
#include "conduits/common/private_segment.hpp"
#include "conduits/common/receive_thread.hpp"
#include "conduits/nic_atomics.hpp"
#include "conduits/transport.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace sluice::conduit::common {

// What every RDMA conduit counts; SLUICE_<NAME>_STATS prints them at
// finalize (stats_line).
struct Counters {
    std::uint64_t small = 0;         // AMs sent without a send buffer (inject, inline)
    std::uint64_t sent = 0;          // AMs sent from a send buffer
    std::uint64_t received = 0;      // messages received
    std::uint64_t packed_longs = 0;  // Longs sent with their payload in the message
    std::uint64_t writes = 0;        // RDMA writes posted (pieces)
    std::uint64_t reads = 0;         // RDMA reads posted (pieces)
    std::uint64_t atomics = 0;       // NIC atomics posted
    std::uint64_t completions = 0;   // completions reaped
    std::uint64_t full = 0;          // posts the network refused for want of room
    std::uint64_t held = 0;          // arrivals held until their turn (PeerOrder)
    std::uint64_t deferred = 0;      // deliveries put off (take() said no)
};

// The one SLUICE_<NAME>_STATS line: "sluice[rank R] NAME (PATH): small
// sends N, buffered sends N, ...", then `extra` (the conduit's own, ", "
// separated) and the receive thread's wake-ups.
void stats_line(Rank rank, const char *name, const std::string &path, const Counters &c, std::uint64_t wakeups,
                const std::string &extra);
// Every rank's record of `size` bytes about `what` (this rank's at
// `mine`) by the bootstrap's allgather, into `all` by rank; a record of
// another size is refused naming the rank, with `fix` (null: run the same
// build everywhere) as the advice.
Status allgather_records(const TransportSetup &setup, const char *name, const char *what, const void *mine,
                         std::size_t size, std::vector<std::string> &all, const char *fix = nullptr);
// The SLUICE_VERBOSE line of a receive thread's start.
void receive_thread_started(const char *name, const std::string &sleeps_on);

// `Slot` is the conduit's NIC atomic in flight (atomic_slots.hpp).
template <class Arrival, class Slot = PlainAtomicSlot>
class RdmaConduit : public Transport, public NicAtomics {
public:
    // NIC atomics: the conduit's atomic_post between a free slot and
    // room for it, the caller's counter raised once it is posted.
    Status nic_atomic(Rank peer, std::uint64_t remote, sluice_aop_t op, sluice_dt_t type, std::uint64_t op1,
                      std::uint64_t op2, void *result, std::atomic<std::uint64_t> &counter) final {
        if (Status s = atomic_prepare(peer); s != Status::ok) return s;
        Guard g(*this);
        if (!up()) return Status::transport;
        if (!atomic_.made())
            if (Status s = atomics_create(); s != Status::ok) return s;
        if (atomic_.full() || !atomic_room(peer)) reap_all();
        if (atomic_.full() || !atomic_room(peer)) {
            ++counters_.full;
            return Status::not_ready;
        }
        Slot *s = atomic_.next(peer, result, type, counter);
        if (Status st = atomic_post(s, remote, op, type, op1, op2); st != Status::ok) return st;
        atomic_.started(s);
        return Status::ok;
    }
    const char *nic_atomics_name() const final { return name(); }
    // "" when the network applies every operation of `ops` on `type`.
    std::string nic_atomics_support(sluice_dt_t, std::uint64_t) override {
        return std::string(name()) + " has no NIC atomics";
    }

protected:
    RdmaConduit(const char *name, Capabilities caps) : Transport(name, caps) {}

    struct Guard : ConduitGuard {
        explicit Guard(RdmaConduit &c) : ConduitGuard(c.lock_) {}
    };

    // stats_report: the counters under lock_ while the network is open.
    // At an exit, another thread (one stuck inside the network library)
    // may hold the lock: after 200 ms the report says so instead.
    void stats_report_impl() final {
        if (!stats_wanted()) return;
        ConduitGuard g(lock_, base::now_ns() + 200'000'000);
        if (!g.owns()) {
            std::fprintf(stderr, "sluice[rank %u] %s: counters not printed: another thread held the conduit for 200 ms\n",
                         setup().rank, name());
            return;
        }
        if (up()) stats_print();
    }

    // ---- hooks ----
    // Under lock_: the network is open (false once closed; polls do nothing).
    virtual bool up() const = 0;
    // SLUICE_<NAME>_STATS is set.
    virtual bool stats_wanted() const = 0;
    // Under lock_, the network open: the SLUICE_<NAME>_STATS line(s)
    // (stats_line, then the conduit's own).
    virtual void stats_print() = 0;
    // Under lock_: takes completions, queues arrivals (ready() or a
    // PeerOrder into ready_), reposts, issues what waited for room.
    virtual void reap() = 0;
    // Under lock_, after reap: anything else a poll serves.
    virtual void poll_more() {}
    // Under lock_: whatever delivering `a` needs reserved first (false:
    // not now, the next poll tries again).
    virtual bool take(const Arrival &) { return true; }
    // Outside the lock: runs the handler of `a`.
    virtual void deliver_one(const Arrival &a) = 0;
    // Under lock_: `a` was delivered; its buffer goes back.
    virtual void delivered(const Arrival &a) = 0;
    // Under lock_: a bare control message (category_ping, category_pong);
    // one that cannot leave now leaves a pong owed (PeerLife::pong_owed).
    virtual void control_send(Rank peer, std::uint8_t category) = 0;
    // Under lock_, after reap: nothing this rank posted is outstanding.
    virtual bool idle() = 0;
    // How `peer` is reached, for messages: "tcp;ofi_rxm, domain lo".
    virtual std::string path(Rank peer) const = 0;
    // The receive thread's sleep: until the network has something, at
    // most about 100 ms (without a wait object: receive_nap); and what it
    // sleeps on, for SLUICE_VERBOSE.
    virtual void receive_wait() { receive_nap(); }
    virtual std::string receive_sleeps_on() const { return "a timer"; }
    // Block mode (Transport::wake_prepare), when no arrival is queued:
    // arm the network's wait object and add its descriptor to `w` (false:
    // completions are already there).  Without one: a nap.
    virtual bool wake_arm(WakeSet &w) { return Transport::wake_prepare_impl(w); }
    // Outside the lock: one Put (`write`: `n` bytes from `local` to
    // `remote` in `peer`'s segment) or Get (into `local`) of at most
    // Capabilities::rma_piece bytes, posted whole or not at all
    // (Status::not_ready: no room, the wrapper retries it); `later` set
    // when it completes by rma_complete() from a poll.
    virtual Status rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                        bool &later) = 0;
    // NIC atomics.  Outside the lock, before anything: whatever reaching
    // `peer` needs (a connection).
    virtual Status atomic_prepare(Rank) { return Status::ok; }
    // Under lock_, before the first atomic: atomic_.create() and the
    // slots' registration.
    virtual Status atomics_create() { return Status::transport; }
    // Under lock_: there is room to post an atomic to `peer`.
    virtual bool atomic_room(Rank) { return true; }
    // Under lock_: posts `op` on the word at `remote` in `s->peer`'s
    // segment from the slot `s` (whose peer, result, size and counter are
    // filled in); its completion calls atomic_.done().
    virtual Status atomic_post(Slot *, std::uint64_t, sluice_aop_t, sluice_dt_t, std::uint64_t, std::uint64_t) {
        return Status::transport;
    }

    // ---- set-up, from init_impl ----
    // Liveness over `ranks` peers, silent after `timeout_s` (knob `knob`).
    void liveness_setup(std::size_t ranks, double timeout_s, const char *knob) {
        life_.reset(ranks);
        peer_timeout_s_ = timeout_s;
        timeout_knob_ = knob;
    }
    // Start the receive thread on the first poll.
    void receive_thread_want() { rcv_wanted_.store(true); }

    // ---- for the conduit's own code ----
    bool delivering() const { return delivering_conduit == this; }
    // Under lock_: an arrival from `source` (its liveness is noted).
    void heard(Rank source) {
        if (source >= life_.size()) return;
        if (PeerLife *l = life_.find(source)) l->heard = true;  // none: never sent to
    }
    void sent_to(Rank peer) { life(peer).sent = true; }
    // Under lock_: peer r's liveness, made at its first touch.
    PeerLife &life(Rank r) {
        if (PeerLife *l = life_.find(r)) [[likely]]
            return *l;
        return life_.insert(r, std::make_unique<PeerLife>());
    }
    // Under lock_: a ping or pong from `source` (a ping is answered).
    void control_arrived(Rank source, std::uint8_t category) {
        heard(source);
        if (category == category_ping && source < life_.size()) control_send(source, category_pong);
    }
    // Sends a packed AM (packed_am.hpp).  One of at most
    // `inline_limit` bytes (at most packed_inline_max) is encoded on the
    // stack and posted inline; a longer one goes into a send buffer that
    // `take()` lends under the lock (null: none free, Status::not_ready)
    // and is encoded outside it, so another thread may poll meanwhile.
    // `post(bytes, length, buffer)` posts it under the lock (buffer null:
    // inline; the bytes may still be stamped) and gives the buffer back
    // when it fails.
    template <class Buffer, class Take, class Post>
    Status send_packed(const AmMessage &m, std::size_t inline_limit, Take take, Post post) {
        const std::size_t length = packed_length(m.header);
        if (length <= inline_limit && length <= packed_inline_max) {
            alignas(8) std::byte bytes[packed_inline_max];
            packed_encode(m.header, m.args, m.payload, bytes);
            Guard g(*this);
            if (!up()) return Status::transport;
            return post(static_cast<std::byte *>(bytes), length, static_cast<Buffer *>(nullptr));
        }
        Buffer *b;
        {
            Guard g(*this);
            if (!up()) return Status::transport;
            if (!(b = take())) return Status::not_ready;
        }
        packed_encode(m.header, m.args, m.payload, b->bytes);
        Guard g(*this);
        const Status s = post(b->bytes, length, b);
        if (s == Status::ok) counters_.packed_longs += m.header.category == AmCategory::long_;
        return s;
    }
    static constexpr std::size_t packed_inline_max = 4096 + packed_head_room;
    // A packed message (packed_am.hpp) to its handler; `op` names the
    // poll in a report of a malformed one.
    void deliver_packed(const char *op, const std::byte *bytes, std::size_t length) {
        deliver_packed(op, bytes, length, [] {});
    }
    // The same, calling `unpacked()` once the bytes are no longer needed
    // (before the handler of a Short or a Long runs).
    template <class Unpacked>
    void deliver_packed(const char *op, const std::byte *bytes, std::size_t length, Unpacked unpacked) {
        PackedHead w;
        std::uint32_t args[packed_max_args];
        if (packed_short_take(bytes, length, setup().size, w, args)) [[likely]] {
            unpacked();
            deliver_short(w.source, w.handler, w.flags, w.credit, args, w.nargs);
            return;
        }
        PackedMessage m;
        const bool ok = packed_unpack(op, bytes, length, setup().size, segment_base_, segment_bytes_, m);
        if (!ok || m.header.category != AmCategory::medium) unpacked();
        if (!ok) return;
        if (m.header.category == AmCategory::short_)
            deliver_short(m.header.source, m.header.handler, m.header.flags, m.header.credit, m.args, m.header.nargs);
        else
            deliver(m.header, m.args, m.payload);
    }
    // The segment's range, set while no handler runs (a receive thread may
    // be delivering, and deliver_packed checks a packed Long against it).
    void segment_set(std::uint64_t base, std::uint64_t bytes) {
        for (;;) {
            {
                Guard g(*this);
                if (deliver_flag_take()) break;
            }
            base::cpu_relax();
        }
        segment_base_ = base;
        segment_bytes_ = bytes;
        base::flag_release(deliver_flag_);
    }
    std::uint64_t receive_wakeups() const { return rcv_thread_.wakeups(); }
    // RDMA of a rank with itself where no network path leads there: a
    // copy, completed by the next poll like a transfer (so its
    // registrations are held as long).
    Status self_rma(void *to, const void *from, std::size_t n, RmaOp *op, bool &later) {
        if (n) std::memmove(to, from, n);
        Guard g(*this);
        if (!up()) return Status::transport;
        complete_at_poll(op);
        later = true;
        return Status::ok;
    }
    // An AM of this rank to itself where no network path leads there:
    // packed into a copy and delivered by a poll, in the order sent.
    Status self_send(const AmMessage &m) {
        const std::size_t length = packed_length(m.header);
        SelfMessage copy{std::make_unique<std::uint64_t[]>((length + 7) / 8), length};
        packed_encode(m.header, m.args, m.payload, reinterpret_cast<std::byte *>(copy.bytes.get()));
        Guard g(*this);
        if (!up()) return Status::transport;
        self_ready_.push_back(std::move(copy));
        return Status::ok;
    }
    // Under lock_: `op` completes at the next poll (a copy, or a transfer
    // that goes on from a bounce buffer).
    void complete_at_poll(RmaOp *op) { poll_done_.push_back(op); }
    // Joins the receive thread (finalize, before the network closes).
    void receive_thread_stop() { rcv_thread_.stop(); }

    // ---- Transport ----
    // The empty poll, which a waiting rank spins on, is kept lean: what
    // delivering needs is set up out of line (poll_deliver).
    int poll_impl(PollMode mode) override {
        if (__builtin_expect(rcv_wanted_.load(std::memory_order_relaxed), 0) && rcv_wanted_.exchange(false))
            receive_thread_start();
        if (__builtin_expect(liveness_timer_.due(), 0)) liveness();
        Guard g(*this);
        if (!up()) return 0;
        reap_all();
        poll_more();
        if (ready_.empty() && self_ready_.empty()) [[likely]]
            return 0;
        // The first message is taken under the reap's lock (one lock from
        // the network's completion to the handler).
        if (mode == PollMode::replies_only || delivering() || !deliver_flag_take()) return 0;
        return poll_deliver(g);
    }
    bool wake_prepare_impl(WakeSet &w) override {
        {
            Guard g(*this);
            if (!up()) return true;
            if (!ready_.empty() || !self_ready_.empty()) return false;
        }
        return wake_arm(w);
    }
    void dispatch_abandon_impl() override {
        if (!delivering()) return;
        delivering_conduit = nullptr;
        base::flag_release(deliver_flag_);
    }
    // Everything posted completes before finalize goes on.
    void quiesce_impl() override {
        const std::string op = std::string("finalize (") + name() + ")";
        const std::string who = std::string(name()) + " (" + path(setup().rank) + ")";
        quiesce_wait(
            op.c_str(), who.c_str(),
            [&] {
                Guard g(*this);
                if (!up()) return true;
                reap_all();
                return idle();
            },
            [&] { deliver_ready(); });
    }
    bool signal_exit_safe_impl() const override { return !in_conduit_lock; }
    Status put_impl(Rank peer, void *remote, const void *local, std::size_t n, RmaOp *op, bool &later) final {
        return rdma(peer, true, reinterpret_cast<std::uint64_t>(remote), const_cast<void *>(local), n, op, later);
    }
    Status get_impl(void *local, Rank peer, const void *remote, std::size_t n, RmaOp *op, bool &later) final {
        return rdma(peer, false, reinterpret_cast<std::uint64_t>(remote), local, n, op, later);
    }
    // The segment, when no same-host conduit owns it: this rank's own
    // private mapping.
    Status segment_create_impl(std::size_t size, void **base, std::string &key) override {
        const std::string op = std::string("segment_attach (") + name() + ")";
        return own_segment_.create(op.c_str(), size, base, key);
    }
    // Notes this rank's segment (deliver_packed checks Longs against it),
    // then the conduit's segment_connected.
    Status segment_connect_impl(const std::vector<SegmentRecord> &all) override {
        segment_set(all[setup().rank].base, all[setup().rank].size);
        return segment_connected(all);
    }
    // After segment_connect_impl noted this rank's segment: what the
    // conduit does with every rank's (match entries, its own key).
    virtual Status segment_connected(const std::vector<SegmentRecord> &) { return Status::ok; }
    // This rank's own remote key for this transport in `all` (peers' come
    // through key_unpack_impl): a NIC atomic domain sends this rank's
    // updates of its own words through the NIC.  False when it published
    // none of 8 bytes.
    bool own_key(const std::vector<SegmentRecord> &all, std::uint64_t &key) const {
        for (const auto &[transport, packed] : all[setup().rank].rkeys)
            if (transport == name() && packed.size() == sizeof key) {
                std::memcpy(&key, packed.data(), sizeof key);
                return true;
            }
        return false;
    }

    // Delivers what is ready, one handler at a time (the thread that takes
    // the flag), up to poll_budget.
    int deliver_ready() {
        Guard g(*this);
        if (!deliver_flag_take()) return 0;
        return poll_deliver(g);
    }

    static constexpr unsigned poll_budget = 64;  // messages one poll delivers at most

    base::SpinLock lock_;
    Fifo<Arrival> ready_;
    PeerTable<PeerLife> life_;  // by rank, made at first touch (life)
    Counters counters_;
    // The segment's range here (deliver_packed checks a packed Long against it).
    std::uint64_t segment_base_ = 0, segment_bytes_ = 0;
    double peer_timeout_s_ = 30;  // liveness_setup's
    PrivateSegment own_segment_;  // segment_create_impl's
    AtomicSlots<Slot> atomic_;    // NIC atomics in flight

private:
    struct SelfMessage {
        std::unique_ptr<std::uint64_t[]> bytes;
        std::size_t length = 0;
    };

    // The delivery flag: one thread runs this conduit's handlers at a
    // time.  It is taken only under lock_ (a plain load and store, no
    // locked instruction beside the lock's), and given back by its holder
    // with a release store, with or without the lock (nobody else writes
    // it while it is held).
    bool deliver_flag_take() {
        if (deliver_flag_.load(std::memory_order_acquire)) return false;
        deliver_flag_.store(true, std::memory_order_relaxed);
        return true;
    }
    // Under lock_ (`g`), holding the delivery flag: lets the lock go and
    // delivers what is ready.
    [[gnu::noinline]] int poll_deliver(Guard &g) {
        Arrival a{};
        SelfMessage self;
        if (!next_ready(a, self)) {
            base::flag_release(deliver_flag_);
            return 0;
        }
        g.release();
        return deliver_from(a, std::move(self));
    }
    // Under lock_, holding the delivery flag: the next message to deliver,
    // into `self` (this rank's own, first) or `a`; false when none is
    // ready or take() holds the next one back.
    bool next_ready(Arrival &a, SelfMessage &self) {
        if (!self_ready_.empty()) {
            self = std::move(self_ready_.front());
            self_ready_.pop_front();
            return true;
        }
        if (ready_.empty()) return false;
        if (!take(ready_.front())) {
            ++counters_.deferred;
            return false;
        }
        a = ready_.front();
        ready_.pop_front();
        return true;
    }
    // Holding the delivery flag, outside lock_: delivers `self` (when it
    // has bytes) or `a`, as next_ready took them, then the next ready, one
    // handler at a time, up to poll_budget; gives the flag back.
    int deliver_from(Arrival a, SelfMessage self) {
        const void *outer = delivering_conduit;  // another conduit's handler, when nested
        delivering_conduit = this;
        int n = 0;
        for (;;) {
            const bool arrival = !self.bytes;
            if (arrival) deliver_one(a);
            else deliver_packed("poll", reinterpret_cast<const std::byte *>(self.bytes.get()), self.length);
            self.bytes.reset();
            ++n;
            Guard g(*this);
            if (arrival) delivered(a);
            if (n >= static_cast<int>(poll_budget) || !next_ready(a, self)) break;
        }
        delivering_conduit = outer;
        base::flag_release(deliver_flag_);
        return n;
    }

    // Under lock_: the conduit's reap, then what complete_at_poll queued.
    void reap_all() {
        reap();
        if (__builtin_expect(!poll_done_.empty(), 0)) poll_done_complete();
    }
    [[gnu::noinline]] void poll_done_complete() {
        for (RmaOp *op : poll_done_) rma_complete(op);
        poll_done_.clear();
    }
    // Every liveness period of polling: a stopped or hung process keeps its
    // connections (and its NIC acknowledging), so the network alone would
    // never notice.
    void liveness() {
        Rank silent;
        {
            Guard g(*this);
            if (!up() || life_.size() == 0) return;
            silent = liveness_check(
                life_, setup().rank, base::now_ns(), peer_timeout_s_, [&](Rank r) { control_send(r, category_ping); },
                [&](Rank r) { control_send(r, category_pong); });
        }
        if (silent != life_.size()) peer_silent(name(), silent, path(silent).c_str(), timeout_knob_, peer_timeout_s_);
    }
    void receive_thread_start() {
        rcv_thread_.start([this] { receive_wait(); }, [this] { (void)progress_all(PollMode::all); });
        receive_thread_started(name(), receive_sleeps_on());
    }

    std::vector<RmaOp *> poll_done_;  // complete_at_poll's
    std::deque<SelfMessage> self_ready_;  // self_send's
    LivenessTimer liveness_timer_;
    const char *timeout_knob_ = "";
    ReceiveThread rcv_thread_;
    std::atomic<bool> rcv_wanted_{false};
    std::atomic<bool> deliver_flag_{false};
};

} // namespace sluice::conduit::common
