// src/conduits/transport.cpp - the out-of-line part of the conduit interface:
// what a send does when the peer's queue is full.
#include "conduits/transport.hpp"

namespace sluice::conduit {

Status Transport::send_retry(Rank peer, const AmMessage &m) {
    const PollMode mode = (m.header.flags & am_flag_reply) ? PollMode::replies_only : PollMode::all;
    for (;;) {
        stats_.send_full.fetch_add(1, std::memory_order_relaxed);
        if (setup_.progress) (void)setup_.progress(setup_.progress_context, mode);  // idles when idle
        else if (poll(mode) == 0) base::idle();
        std::uint64_t deadline = send_deadline_.load(std::memory_order_relaxed);
        if (deadline && base::now_ns() > deadline) return Status::transport;
        Status s = send_impl(peer, m);
        if (s != Status::not_ready) return s;
    }
}

} // namespace sluice::conduit
