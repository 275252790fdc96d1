// src/conduits/template/template.cpp - the template conduit's data path:
// sends, polls and RDMA (set-up and teardown are in template_setup.cpp,
// the class in template_transport.hpp).
//
// Copy this folder to start a conduit.  Every *_impl hook says what a
// real conduit must do there; the bodies are a working loopback transport
// (one rank talking to itself), so the skeleton compiles, links into
// libsluice and can be driven by a unit test.  The shared policy (retry when
// the wire is full, statistics, stop at exit) is in the non-virtual wrapper in
// src/conduits/transport.hpp: a hook only moves bytes.
//
// Includes allowed here (docs/conduits.md, "What a conduit may include"):
// src/conduits/transport.hpp, src/conduits/common, src/credit,
// spawners/bootstrap.hpp and src/base.  Nothing from src/am, src/rma, src/core.
#include "conduits/template/template.hpp"
#include "conduits/template/template_transport.hpp"

#include "conduits/common/conduit_lock.hpp"

#include "base/status.hpp"

#include <cstring>
#include <utility>

namespace sluice::conduit::template_ {
namespace detail {

// Sends one AM to `peer` or answers not_ready: never blocks, never waits.
//
// not_ready means "no room on the wire now" (ring full, no send
// descriptor, no credit the conduit tracks itself).  The wrapper then
// polls (replies only, when this is a reply, so reply chains cannot
// deadlock) and calls send_impl again; it never drops the message.  Any
// other error is final: report it here, once.
//
// m.payload is readable only during this call: copy it, or send it
// before returning.  For a Long, the bytes must be in the target's
// segment at m.header.dest_addr before the target's poll hands the header
// to deliver(): with RDMA, write the payload first and send the header
// after it (or with it, as immediate data); without RDMA, carry the
// payload and copy it into the segment at the target before deliver().
Status TemplateTransport::send_impl(Rank peer, const AmMessage &m) {
    if (peer != setup().rank)
        return base::report(Status::rank, "template conduit send",
                            "route other ranks to another conduit",
                            "rank %u is not reachable (loopback only)", peer);
    QueuedMessage q;
    if (Status s = message_copy(m, q); s != Status::ok) return s;
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<QueuedMessage> &queue = (q.header.flags & am_flag_reply) ? replies_ : requests_;
    if (queue.size() >= queue_depth) return Status::not_ready;
    queue.push_back(std::move(q));
    return Status::ok;
}


// Delivers arrived messages through deliver() and returns how many.
//
// PollMode::replies_only is used while a reply waits for room: deliver
// only replies then (reply handlers send nothing, so this always makes
// progress).  A real conduit keeps requests and replies apart for the
// same reason (separate rings, receive pools or tags).
//
// deliver() runs the handler: call it with no lock held, since a handler
// may send (and so re-enter send_impl and poll_impl).  Medium payloads
// need only stay valid during the call.  A Long's bytes must already be
// at header.dest_addr, and the payload argument is that address.
// Credits, hidden replies and tokens are src/am's business, not the
// conduit's: it only reports what arrived.
//
// A poll made inside one of this conduit's handlers (a handler that waits
// for room polls) delivers no request: requests of a peer run one handler
// after the other, in order.  Replies still go, as above.
// The handler called exit: this thread delivers here no more.
void TemplateTransport::dispatch_abandon_impl() {
    if (common::delivering_conduit == this) common::delivering_conduit = nullptr;
}

int TemplateTransport::poll_impl(PollMode mode) {
    if (common::delivering_conduit == this) mode = PollMode::replies_only;
    int delivered = rdma_progress();
    for (int budget = poll_budget; budget > 0; --budget) {
        QueuedMessage q;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            std::deque<QueuedMessage> *queue = nullptr;
            if (!replies_.empty()) queue = &replies_;
            else if (mode == PollMode::all && !requests_.empty()) queue = &requests_;
            else break;
            q = std::move(queue->front());
            queue->pop_front();
        }
        land_and_deliver(q);
        ++delivered;
    }
    return delivered;
}


// Native RDMA (native_rma).  Post the operation and return at once:
// `later` = true and keep `op` (as the work-request id) when the NIC
// completes it afterwards; poll_impl then hands it to rma_complete().
// Status::not_ready when the send queue is full: the wrapper queues the
// operation and retries from poll, so the caller never waits for room.
// `remote` is an offset into the peer's segment here (remote_offsets).
// The remote range is already checked against the segment table by
// src/rma; a conduit needing local registration (needs_registration)
// looks `local` up in the firehose cache first.  FILL IN HERE: the
// template's "NIC" is the rdma_ queue, worked off by poll_impl.
// With needs_registration, local_handle(op) names the registration of
// `local` (the segment's, or firehose's for memory outside it).
Status TemplateTransport::put_impl(Rank peer, void *remote, const void *local, std::size_t n, RmaOp *op, bool &later) {
    return rdma_post(peer, Rdma::put, remote, const_cast<void *>(local), n, nullptr, op, later);
}

Status TemplateTransport::get_impl(void *local, Rank peer, const void *remote, std::size_t n, RmaOp *op, bool &later) {
    return rdma_post(peer, Rdma::get, const_cast<void *>(remote), local, n, nullptr, op, later);
}

// Put with remote completion (remote_completion): the write, then
// `notify` delivered at the target after the bytes, as with an RDMA
// write with immediate data whose receive completion carries a small
// tag the target turns back into the message (verbs: the immediate
// indexes a table both sides agree on).  `notify` is valid during the
// call only: copy it.
Status TemplateTransport::put_rc_impl(Rank peer, void *remote, const void *local, std::size_t n,
                                      const AmMessage &notify, RmaOp *op, bool &later) {
    return rdma_post(peer, Rdma::put, remote, const_cast<void *>(local), n, &notify, op, later);
}


// A hardware or conduit-level barrier over every peer this transport
// reaches, only when native_barrier is set; otherwise core runs its
// dissemination barrier over AM.  While waiting, call poll_fn(context) so
// AMs keep moving, and give up with Status::transport when it returns
// false (the job is exiting).  Loopback: the only participant is me.
Status TemplateTransport::barrier_impl(bool (*poll_fn)(void *), void *context) {
    if (poll_fn && !poll_fn(context)) return Status::transport;
    return Status::ok;
}

// Checks a message and copies it (header, arguments, payload) into `q`.
Status TemplateTransport::message_copy(const AmMessage &m, QueuedMessage &q) const {
    const AmHeader &h = m.header;
    if (h.nargs > max_args)
        return base::report(Status::argument, "template conduit send", nullptr,
                            "%u arguments, at most %u", h.nargs, max_args);
    const std::size_t length =
        h.category == AmCategory::short_ ? 0 : static_cast<std::size_t>(h.payload_length);
    if (h.category == AmCategory::medium && length > capabilities().max_medium)
        return base::report(Status::too_large, "template conduit send", nullptr,
                            "Medium of %zu bytes, at most %zu", length,
                            capabilities().max_medium);
    if (h.category == AmCategory::long_ && length > capabilities().max_packed_long)
        return base::report(Status::too_large, "template conduit send", nullptr,
                            "packed Long of %zu bytes, at most %zu", length,
                            capabilities().max_packed_long);
    if (h.category == AmCategory::long_ && length > 0 && !segment_.contains(h.dest_addr, length))
        return base::report(Status::segment, "template conduit send", nullptr,
                            "Long of %zu bytes at 0x%llx is outside the segment", length,
                            static_cast<unsigned long long>(h.dest_addr));

    // Copy before taking the lock: the lock only guards the queues.
    q.header = h;
    if (h.nargs) std::memcpy(q.args.data(), m.args, h.nargs * sizeof(std::uint32_t));
    if (length) {
        const auto *bytes = static_cast<const std::byte *>(m.payload);
        q.payload.assign(bytes, bytes + length);
    }
    return Status::ok;
}


Status TemplateTransport::rdma_post(Rank peer, Rdma::Kind kind, void *remote, void *local, std::size_t n,
                                    const AmMessage *notify, RmaOp *op, bool &later) {
    if (peer != setup().rank) return Status::rank;
    const auto offset = reinterpret_cast<std::uint64_t>(remote);
    if (offset > segment_.size() || n > segment_.size() - offset)
        return base::report(Status::segment, "template conduit RDMA", "this is a Sluice bug",
                            "%zu bytes at offset %llu are outside the segment", n,
                            static_cast<unsigned long long>(offset));
    Rdma r;
    r.kind = kind;
    r.offset = offset;
    r.local = local;
    if (capabilities().needs_registration && n) {
        if (Status s = local_check(local, n, local_handle(op), r.local); s != Status::ok) return s;
    }
    r.n = n;
    r.op = op;
    if (notify) {
        if (Status s = message_copy(*notify, r.message); s != Status::ok) return s;
        r.notify = true;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (peer_key_ >= regions_.size() || !regions_[peer_key_].live)
        return base::report(Status::segment, "template conduit RDMA", "attach the segment first",
                            "rank %u has no registered segment", peer);
    if (rdma_.size() >= rdma_depth) return Status::not_ready;
    rdma_.push_back(std::move(r));
    later = true;
    return Status::ok;
}


// A NIC that reaches only registered memory: `handle` must name a live
// registration covering [local, local+n).  `reach` is where the NIC
// reads or writes those bytes: through the registration's own mapping
// of the pages when it has one.
Status TemplateTransport::local_check(void *local, std::size_t n, std::uint64_t handle, void *&reach) {
    const auto at = reinterpret_cast<std::uint64_t>(local);
    std::lock_guard<std::mutex> lock(mutex_);
    const Region *r = handle < regions_.size() ? &regions_[handle] : nullptr;
    if (!r || !r->live || at < r->base || n > r->size || at - r->base > r->size - n)
        return base::report(Status::argument, "template conduit RDMA", "register local buffers (firehose)",
                            "%zu bytes at %p are not covered by registration %llu", n, local,
                            static_cast<unsigned long long>(handle));
    reach = r->alias ? r->alias + (at - r->base) : local;
    return Status::ok;
}


// The "NIC" at work: performs posted operations and reports them
// complete, as reaping a completion queue would.  A put_rc's
// notification joins the AM queue after its bytes are in place.
int TemplateTransport::rdma_progress() {
    int done = 0;
    for (int budget = poll_budget; budget > 0; --budget) {
        Rdma r;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (rdma_.empty()) break;
            r = std::move(rdma_.front());
            rdma_.pop_front();
        }
        char *at = static_cast<char *>(segment_.base()) + r.offset;
        if (r.n) {
            if (r.kind == Rdma::put) std::memmove(at, r.local, r.n);
            else std::memmove(r.local, at, r.n);
        }
        if (r.notify) {
            std::lock_guard<std::mutex> lock(mutex_);
            ((r.message.header.flags & am_flag_reply) ? replies_ : requests_).push_back(std::move(r.message));
        }
        rma_complete(r.op);
        ++done;
    }
    return done;
}


void TemplateTransport::land_and_deliver(QueuedMessage &q) {
    const void *outer = common::delivering_conduit;
    common::delivering_conduit = this;
    land(q);
    common::delivering_conduit = outer;
}

void TemplateTransport::land(QueuedMessage &q) {
    const std::uint32_t *args = q.header.nargs ? q.args.data() : nullptr;
    switch (q.header.category) {
    case AmCategory::short_:
        deliver(q.header, args, nullptr);
        break;
    case AmCategory::medium:
        deliver(q.header, args, q.payload.data());
        break;
    case AmCategory::long_: {
        // The payload lands in the segment before the handler runs.
        auto *dest = reinterpret_cast<void *>(static_cast<std::uintptr_t>(q.header.dest_addr));
        if (!q.payload.empty()) std::memcpy(dest, q.payload.data(), q.payload.size());
        deliver(q.header, args, dest);
        break;
    }
    }
}

} // namespace detail

std::unique_ptr<Transport> make_template_transport() { return std::make_unique<detail::TemplateTransport>(false); }

std::unique_ptr<Transport> make_template_transport_registered() {
    return std::make_unique<detail::TemplateTransport>(true);
}

} // namespace sluice::conduit::template_
