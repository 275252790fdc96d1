// src/conduits/lapi/lapi.cpp - the lapi conduit's traffic: every AM one
// LAPI_Amsend whose user header is the token (the packed AM's head and
// arguments, and its payload when it fits), the rest as the message's
// data; the header handler queues the token in its sender's order, a
// completion handler marks an unpacked one complete, the poll runs the AM
// handlers; Put and Get by LAPI_Put and LAPI_Get, complete when their
// counters move.  README.md has the design.
#include "conduits/lapi/lapi_transport.hpp"

#include "base/status.hpp"

#include <cstddef>
#include <cstring>

namespace sluice::conduit::lapi::detail {

namespace {

void *handler_address(int index) { return reinterpret_cast<void *>(static_cast<std::uintptr_t>(index)); }

} // namespace

std::atomic<LapiTransport *> LapiTransport::live_{nullptr};

// ---- sends ----

// Under lock_: one AM to `peer`, its head (and packed payload) `head`,
// numbered in `peer`'s order; `b` holds `n` bytes of payload sent as the
// message's data (null: none).  Every AM counts on am_done_ once the
// target completed it (idle()).
Status LapiTransport::amsend(Rank peer, std::byte *head, std::size_t head_len, SendBuffer *b, std::size_t n) {
    const std::uint16_t seq = send_order_.at(peer).next_send();
    std::memcpy(head + offsetof(common::PackedHead, seq), &seq, sizeof seq);
    const int rc = calls().Amsend(handle_, peer, handler_address(handler_am), head, static_cast<uint>(head_len),
                                  b ? b->bytes : nullptr, n, nullptr, b ? &b->origin : nullptr, &am_done_);
    if (rc != LAPI_SUCCESS) {
        send_order_.at(peer).unsend();
        return failed("send (lapi)", "LAPI_Amsend", rc, peer);
    }
    ++am_sent_;
    sent_to(peer);
    return Status::ok;
}

// An AM whose packed form fits SLUICE_LAPI_PACKED_MAX (a Short always)
// goes whole in the user header; any other as its head and arguments in
// the user header and its payload as data, from a send buffer (none free:
// not_ready, the wrapper polls and sends again).  A rank's AMs to itself
// go through LAPI too.
Status LapiTransport::send_impl(Rank peer, const AmMessage &m) {
    const AmHeader &h = m.header;
    const std::size_t at = common::packed_payload_offset(h.category, h.nargs);
    const std::size_t payload = h.category == AmCategory::short_ ? 0 : h.payload_length;
    alignas(8) std::byte head[uhdr_room];
    if (h.category == AmCategory::short_ || at + payload <= packed_max_) {
        common::packed_encode(h, m.args, m.payload, head);
        Guard g(*this);
        if (!up()) return Status::transport;
        if (Status s = amsend(peer, head, at + payload, nullptr, 0); s != Status::ok) return s;
        ++counters_.small;
        counters_.packed_longs += h.category == AmCategory::long_;
        return Status::ok;
    }
    // The head alone, announcing the payload's length.
    AmHeader bare = h;
    bare.payload_length = 0;
    common::packed_encode(bare, m.args, nullptr, head);
    const auto length = static_cast<std::uint32_t>(payload);
    std::memcpy(head + offsetof(common::PackedHead, length), &length, sizeof length);
    SendBuffer *b;
    {
        Guard g(*this);
        if (!up()) return Status::transport;
        if (send_free_.empty()) reap();
        if (send_free_.empty()) {
            ++counters_.full;
            return Status::not_ready;
        }
        b = send_free_.take();
    }
    std::memcpy(b->bytes, m.payload, payload);
    Guard g(*this);
    if (!up()) return Status::transport;
    if (Status s = amsend(peer, head, at, b, payload); s != Status::ok) {
        send_free_.give(b);
        return s;
    }
    sending_.push_back(b);
    ++counters_.sent;
    ++(h.category == AmCategory::long_ ? lapi_counters_.unpacked_longs : lapi_counters_.unpacked_mediums);
    return Status::ok;
}

// A bare ping or pong, to the control handler (not numbered: it is never
// delivered).  A pong that cannot leave stays owed, unless the peer is gone.
void LapiTransport::control_send(Rank peer, std::uint8_t category) {
    if (!up() || peer >= setup().size || peer == setup().rank) return;
    common::PackedHead w{};
    w.category = category;
    w.source = setup().rank;
    const int rc = calls().Amsend(handle_, peer, handler_address(handler_control), &w, sizeof w, nullptr, 0, nullptr,
                                  nullptr, &am_done_);
    if (rc == LAPI_SUCCESS) ++am_sent_;
    else if (rc != LAPI_ERR_TGT_PURGED)  // a peer gone is for the liveness check and the launcher to find
        (void)failed("liveness (lapi)", category == common::category_ping ? "LAPI_Amsend (ping)" : "LAPI_Amsend (pong)",
                     rc, peer);
    if (category == common::category_pong) life(peer).pong_owed = rc != LAPI_SUCCESS && rc != LAPI_ERR_TGT_PURGED;
}

// ---- header and completion handlers ----

void *LapiTransport::am_header(lapi_handle_t *, void *uhdr, uint *uhdr_len, ulong *msg_len, compl_hndlr_t **comp_h,
                               void **user_info) {
    *comp_h = nullptr;
    *user_info = nullptr;
    LapiTransport *t = live_.load(std::memory_order_acquire);
    if (t == nullptr) return nullptr;
    return t->arrive(uhdr, *uhdr_len, *msg_len, comp_h, user_info);
}

void *LapiTransport::control_header(lapi_handle_t *, void *uhdr, uint *uhdr_len, ulong *, compl_hndlr_t **comp_h,
                                    void **user_info) {
    *comp_h = nullptr;
    *user_info = nullptr;
    if (LapiTransport *t = live_.load(std::memory_order_acquire)) t->control_arrive(uhdr, *uhdr_len);
    return nullptr;
}

// An unpacked AM's data are in place: its token may be delivered once its
// turn comes.
void LapiTransport::am_complete(lapi_handle_t *, void *user_info) {
    LapiTransport *t = live_.load(std::memory_order_acquire);
    if (t == nullptr) return;
    base::SpinGuard a(t->arrival_lock_);
    static_cast<Token *>(user_info)->complete.store(true, std::memory_order_release);
    ++t->arrival_counters_.completion_handlers;
}

// Asynchronous errors (a rule a handler broke, an unknown handler index
// here): LAPI returns the code from this rank's next call too, where the
// conduit reports it; here it is only counted (no LAPI call, no report
// that could end the job from the dispatcher).
void LapiTransport::error_handler(lapi_handle_t *, int *, lapi_err_t *, int *, int *) {
    if (LapiTransport *t = live_.load(std::memory_order_acquire))
        t->lapi_counters_.async_errors.fetch_add(1, std::memory_order_relaxed);
}

// The header handler of every AM (in LAPI's dispatcher: it must not block
// or call LAPI).  The token is checked, copied and queued in its sender's
// order; a packed AM is then complete.  An unpacked Medium's data go to a
// buffer that holds its head too (a whole packed message once they are
// in), a Long's straight to its address in the segment, each with the
// completion handler that marks the token complete.
void *LapiTransport::arrive(const void *uhdr, std::size_t uhdr_len, std::size_t data_len, compl_hndlr_t **comp_h,
                            void **user_info) {
    const char *op = "poll (lapi)";
    common::PackedHead w{};
    if (uhdr_len >= sizeof w) std::memcpy(&w, uhdr, sizeof w);
    const auto category = static_cast<AmCategory>(w.category);
    bool ok = uhdr_len >= sizeof w && w.category <= 2 && w.nargs <= common::packed_max_args &&
              w.source < setup().size && uhdr_len <= uhdr_max_;
    std::size_t at = 0;
    if (ok) {
        at = common::packed_payload_offset(category, w.nargs);
        ok = data_len == 0 ? uhdr_len == at + (category == AmCategory::short_ ? 0 : w.length)
                           : category != AmCategory::short_ && uhdr_len == at && data_len == w.length;
    }
    if (!ok) {
        base::report(Status::transport, op, "run the same Sluice build on every rank",
                     "lapi: a malformed AM (user header of %zu bytes, %zu bytes of data; rank %u, category %u, %u "
                     "arguments) dropped",
                     uhdr_len, data_len, w.source, w.category, w.nargs);
        return nullptr;
    }
    if (!up()) return nullptr;
    base::SpinGuard a(arrival_lock_);
    ArrivalCounters &n = arrival_counters_;
    n.nested += common::in_conduit_lock;  // this rank's own LAPI call, made under lock_
    ++n.received;
    if (!heard_flag_[w.source]) {
        heard_flag_[w.source] = 1;
        heard_from_.push_back(w.source);
    }
    Token *k = token_take();
    void *landing = nullptr;
    if (data_len == 0) {
        std::memcpy(k->room.get(), uhdr, uhdr_len);
        k->message = reinterpret_cast<std::byte *>(k->room.get());
        k->length = static_cast<std::uint32_t>(uhdr_len);
        k->complete.store(true, std::memory_order_relaxed);
    } else if (category == AmCategory::medium) {
        if (data_len > max_medium_) {
            base::report(Status::transport, op, "set SLUICE_LAPI_MAX_MEDIUM alike on every rank",
                         "lapi: a Medium of %zu bytes from rank %u is larger than this rank's %zu; dropped", data_len,
                         w.source, max_medium_);
            k->dropped = true;
            k->complete.store(true, std::memory_order_relaxed);
            ++n.dropped;
        } else {
            auto *buffer = reinterpret_cast<std::byte *>(medium_pool_.get());
            std::memcpy(buffer, uhdr, uhdr_len);
            k->message = buffer;
            k->length = static_cast<std::uint32_t>(at + data_len);
            k->pooled = true;
            landing = buffer + at;
        }
    } else {
        std::uint64_t dest = 0;
        std::memcpy(&dest, static_cast<const std::byte *>(uhdr) + sizeof w, sizeof dest);
        if (dest < segment_base_ || data_len > segment_bytes_ || dest - segment_base_ > segment_bytes_ - data_len) {
            base::report(Status::segment, op, "this is a Sluice bug: the sender checks Long bounds",
                         "lapi: a Long of %zu bytes from rank %u to 0x%llx lies outside this rank's segment; dropped",
                         data_len, w.source, static_cast<unsigned long long>(dest));
            k->dropped = true;
            k->complete.store(true, std::memory_order_relaxed);
            ++n.dropped;
        } else {
            // The head says 0 bytes: packed_unpack then only checks the
            // address; the length is the token's.
            std::memcpy(k->room.get(), uhdr, uhdr_len);
            const std::uint32_t none = 0;
            std::memcpy(reinterpret_cast<std::byte *>(k->room.get()) + offsetof(common::PackedHead, length), &none,
                        sizeof none);
            k->message = reinterpret_cast<std::byte *>(k->room.get());
            k->length = static_cast<std::uint32_t>(at);
            k->long_bytes = data_len;
            landing = reinterpret_cast<void *>(dest);
        }
    }
    if (landing) {
        *comp_h = &LapiTransport::am_complete;
        *user_info = k;
    }
    if (!receive_order_.at(w.source).arrived(k, w.seq, 0, arrived_)) ++n.held;
    arrivals_.store(true, std::memory_order_release);
    return landing;
}

// A ping is answered by the next poll (not from here: a header handler
// does not communicate); either is word from the peer.
void LapiTransport::control_arrive(const void *uhdr, std::size_t uhdr_len) {
    common::PackedHead w{};
    if (uhdr_len != sizeof w) return;
    std::memcpy(&w, uhdr, sizeof w);
    if (!up() || w.source >= setup().size) return;
    base::SpinGuard a(arrival_lock_);
    ++arrival_counters_.received;
    if (!heard_flag_[w.source]) {
        heard_flag_[w.source] = 1;
        heard_from_.push_back(w.source);
    }
    ping_flag_[w.source] |= w.category == common::category_ping;
    arrivals_.store(true, std::memory_order_release);
}

// Under lock_: the handlers' arrivals, in order, onto the ready queue;
// the peers they heard from noted for liveness; their pings answered,
// after arrival_lock_ is released (a LAPI call may run handlers here).
void LapiTransport::arrivals_take() {
    {
        base::SpinGuard a(arrival_lock_);
        arrivals_.store(false, std::memory_order_relaxed);
        for (Token *k : arrived_) ready_.push_back(k);
        arrived_.clear();
        for (Rank r : heard_from_) {
            heard(r);
            heard_flag_[r] = 0;
            if (ping_flag_[r]) {
                ping_flag_[r] = 0;
                pong_to_.push_back(r);
            }
        }
        heard_from_.clear();
    }
    for (Rank r : pong_to_) control_send(r, common::category_pong);
    pong_to_.clear();
}

Token *LapiTransport::token_take() {
    if (token_free_.empty()) {
        auto k = std::make_unique<Token>();
        k->room = std::make_unique<std::uint64_t[]>((uhdr_max_ + 7) / 8);
        token_free_.give(k.get());
        tokens_.push_back(std::move(k));
    }
    return token_free_.take();
}

// ---- the poll ----

// LAPI_Probe runs the dispatcher here (the header handlers run in this
// thread): in polling mode nothing else does; in interrupt mode it spares
// the wait for LAPI's notification thread to be scheduled, a time slice
// per message on a host whose cores all run polling ranks (the
// notification thread still serves a rank that does not poll).  Then the
// counters of sends and transfers (LAPI_Getcntr dispatches too), then
// what the handlers queued.
void LapiTransport::reap() {
    ++lapi_counters_.probes;
    if (const int rc = calls().Probe(handle_); rc != LAPI_SUCCESS)
        (void)failed("poll (lapi)", "LAPI_Probe", rc, setup().rank);
    if (!sending_.empty()) reap_sends();
    if (!in_flight_.empty()) reap_rma();
    if (arrivals_.load(std::memory_order_acquire)) arrivals_take();
    // am_done_ is an int: zeroed while nothing is outstanding, long before
    // it could wrap.
    if (am_sent_ >= (std::uint64_t{1} << 30) && idle() && counter_zero(am_done_, "poll (lapi)")) am_sent_ = 0;
}

// Under lock_: every record of `outstanding` whose counter (its member
// `counter`) LAPI has moved is zeroed for its next use, taken off the list
// and handed to `done`; `what` names the operation in a report.
template <class Record, class Done>
void LapiTransport::counters_reap(std::vector<Record *> &outstanding, lapi_cntr_t Record::*counter, const char *what,
                                  Done done) {
    for (std::size_t i = 0; i < outstanding.size();) {
        Record *r = outstanding[i];
        int value = 0;
        if (const int rc = calls().Getcntr(handle_, &(r->*counter), &value); rc != LAPI_SUCCESS) {
            (void)failed(what, "LAPI_Getcntr", rc, setup().rank);
            return;
        }
        if (value < 1) {
            ++i;
            continue;
        }
        if (!counter_zero(r->*counter, what)) return;
        outstanding[i] = outstanding.back();
        outstanding.pop_back();
        ++counters_.completions;
        done(r);
    }
}

// A send buffer LAPI has read goes back.
void LapiTransport::reap_sends() {
    counters_reap(sending_, &SendBuffer::origin, "poll (lapi)", [&](SendBuffer *b) { send_free_.give(b); });
}

// A Put or Get whose counter moved is complete.
void LapiTransport::reap_rma() {
    counters_reap(in_flight_, &RmaPost::done, "put or get (lapi)", [&](RmaPost *p) {
        RmaOp *op = p->op;
        p->op = nullptr;
        post_free_.give(p);
        rma_complete(op);
    });
}

// Under lock_: nothing this rank sent is outstanding (a counter LAPI
// cannot read ends the wait, reported).
bool LapiTransport::idle() {
    if (!sending_.empty() || !in_flight_.empty()) return false;
    int value = 0;
    if (const int rc = calls().Getcntr(handle_, &am_done_, &value); rc != LAPI_SUCCESS) {
        (void)failed("finalize (lapi)", "LAPI_Getcntr (the AMs' completion counter)", rc, setup().rank);
        return true;
    }
    return static_cast<std::uint64_t>(value) >= am_sent_;
}

// Zeroes `counter` for its next use; false (reported under `what`) when
// LAPI refuses.
bool LapiTransport::counter_zero(lapi_cntr_t &counter, const char *what) {
    if (const int rc = calls().Setcntr(handle_, &counter, 0); rc != LAPI_SUCCESS) {
        (void)failed(what, "LAPI_Setcntr", rc, setup().rank);
        return false;
    }
    return true;
}

// ---- delivery ----

void LapiTransport::deliver_one(const Arrival &k) {
    if (k->dropped) return;
    if (k->long_bytes == 0) {
        deliver_packed("poll (lapi)", k->message, k->length);
        return;
    }
    common::PackedMessage m;
    if (!common::packed_unpack("poll (lapi)", k->message, k->length, setup().size, segment_base_, segment_bytes_, m))
        return;
    m.header.payload_length = k->long_bytes;
    deliver(m.header, m.args, m.payload);
}

void LapiTransport::delivered(const Arrival &k) {
    base::SpinGuard a(arrival_lock_);
    if (k->pooled) medium_pool_.put(reinterpret_cast<std::uint8_t *>(k->message));
    k->message = nullptr;
    k->length = 0;
    k->long_bytes = 0;
    k->pooled = k->dropped = false;
    k->complete.store(false, std::memory_order_relaxed);
    token_free_.give(k);
}

// ---- RMA ----

// One Put or Get piece, straight to LAPI with its own counter: a Put is
// complete when its completion counter moves (the target has the bytes),
// a Get when its origin counter does.  The remote range must lie in the
// peer's segment: LAPI would write any address there.
Status LapiTransport::rdma(Rank peer, bool write, std::uint64_t remote, void *local, std::size_t n, RmaOp *op,
                           bool &later) {
    later = false;
    if (n == 0) return Status::ok;
    const char *what = write ? "put (lapi)" : "get (lapi)";
    if (!in_peer_segment(peer, remote, n))
        return base::report(Status::argument, what, "address the peer's segment (sluice_segment_query)",
                            "lapi: %zu bytes at %p are not in rank %u's segment", n, reinterpret_cast<void *>(remote),
                            peer);
    Guard g(*this);
    if (!up()) return Status::transport;
    if (post_free_.empty()) reap();
    if (post_free_.empty()) {
        ++counters_.full;
        return Status::not_ready;
    }
    RmaPost *p = post_free_.take();
    auto *target = reinterpret_cast<void *>(remote);
    const int rc = write ? calls().Put(handle_, peer, n, target, local, nullptr, nullptr, &p->done)
                         : calls().Get(handle_, peer, n, target, local, nullptr, &p->done);
    if (rc != LAPI_SUCCESS) {
        post_free_.give(p);
        return failed(what, write ? "LAPI_Put" : "LAPI_Get", rc, peer);
    }
    p->op = op;
    in_flight_.push_back(p);
    ++(write ? counters_.writes : counters_.reads);
    later = true;
    return Status::ok;
}

} // namespace sluice::conduit::lapi::detail
