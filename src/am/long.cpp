// src/am/long.cpp - the two-part Long: a Long above the conduit's packed
// limit (Capabilities::max_packed_long) on an RDMA conduit.
//
// The payload goes by Put with remote completion straight into the
// target's segment; its notification (sys_long_data) names the Long ID.
// The header (handler, arguments, address, length, the Long ID) goes by AM
// as sys_long_header and carries the request's credit and reply flags.  The
// two may arrive in either order (a header can overtake the payload's
// completion on an RDMA network): the first to arrive is kept in the LID
// cache under (source, Long ID), the second finds it there and runs the
// handler, so the handler sees the payload in place (the LID cache,
// docs/conduits.md, "Put with remote completion and the two-part Long").  The call returns once the payload's Put completed and its
// notification was sent, so the source buffer may be reused, and a flush
// sent afterwards reaches the target behind both parts.  With
// SLUICE_FLAG_NBI (request_nbi) it returns once both are under way; the
// Put counts on the caller's NBI counter instead, and a flush may then
// overtake the payload until that counter is synced.
#include "am/am.hpp"

#include <cstring>

namespace sluice::am {

AmEngine *AmEngine::long_owner_ = nullptr;

Status AmEngine::long_transmit(Rank dest, const Send &m, std::uint8_t flags, std::uint8_t credit_byte,
                               std::atomic<std::uint64_t> *nbi) {
    Transport *t = route_[dest];
    LongHeader h;
    h.dest_addr = reinterpret_cast<std::uint64_t>(m.dest_addr);
    h.length = m.length;
    h.lid = next_lid_.fetch_add(1, std::memory_order_relaxed);
    h.handler = m.handler;
    h.nargs = static_cast<std::uint8_t>(m.nargs);
    h.flags = flags & conduit::am_flag_system;
    if (m.nargs) std::memcpy(h.args, m.args, 4u * m.nargs);
    const std::uint8_t kind = flags & conduit::am_flag_reply;  // both parts travel as the Long would

    // The payload, and after it its notification: a Short naming the LID.
    conduit::AmMessage notify;
    notify.header.handler = sys_long_data;
    notify.header.nargs = 1;
    notify.header.flags = conduit::am_flag_system | kind;
    notify.header.source = rank_;
    notify.args = &h.lid;
    std::atomic<std::uint64_t> landed{0};
    if (Status s = t->put_rc(dest, m.dest_addr, m.payload, m.length, notify, nbi ? *nbi : landed); s != Status::ok)
        return base::report(s, "Long", nullptr, "the payload's Put to rank %u failed", dest);

    // The header, with the credit and reply flags of the Long itself.
    Send header;
    header.category = AmCategory::medium;
    header.handler = sys_long_header;
    header.payload = &h;
    header.length = h.wire_size();
    Status s = t->send(dest, to_message(rank_, header, static_cast<std::uint8_t>(flags | conduit::am_flag_system), credit_byte));
    // The source buffer is the caller's again once the Put completed (for
    // SLUICE_FLAG_NBI, once `nbi` says so).
    const PollMode mode = kind ? PollMode::replies_only : PollMode::all;
    while (landed.load(std::memory_order_acquire) != 0) poll(mode);
    return s;
}

bool AmEngine::lid_match(Rank source, std::uint32_t lid, const LongHeader *arrived, LongHeader &header) {
    const std::uint64_t key = std::uint64_t{source} << 32 | lid;
    std::lock_guard<std::mutex> lock(lid_lock_);
    auto it = lid_cache_.find(key);
    if (it == lid_cache_.end()) {
        auto entry = std::make_unique<LongHeader>();
        if (arrived) *entry = *arrived;
        else entry->data = 1;
        lid_cache_.emplace(key, std::move(entry));
        return false;
    }
    // The same part twice is a conduit bug (a duplicated message).
    if (static_cast<bool>(it->second->data) == !arrived)
        base::fatal("Long", "this is a Sluice bug", "part of Long %u from rank %u arrived twice", lid, source);
    if (!arrived) header = *it->second;
    lid_cache_.erase(it);
    return true;
}

// Runs the Long's own handler in the context of the part that arrived
// second: the header's token (a request that may reply, with its credit)
// or the payload notification's (the same source and kind, no credit).
void AmEngine::long_run(Token *token, const LongHeader &h) {
    conduit::AmHeader hh;
    hh.handler = h.handler;
    hh.category = AmCategory::long_;
    hh.nargs = h.nargs;
    hh.flags = h.flags;
    hh.source = token->source;
    hh.payload_length = h.length;
    hh.dest_addr = h.dest_addr;
    if (sluice_handler_fn fn = dispatch_resolve(hh))
        fn(token, reinterpret_cast<void *>(h.dest_addr), static_cast<std::size_t>(h.length), h.nargs ? h.args : nullptr,
           h.nargs);
}

void AmEngine::long_header_arrived(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *, unsigned) {
    AmEngine &self = *long_owner_;
    LongHeader h;
    if (n < LongHeader::fixed || n > sizeof h)
        base::fatal("Long", "this is a Sluice bug", "a two-part Long header of %zu bytes from rank %u", n, token->source);
    std::memcpy(&h, payload, n);
    if (h.nargs > SLUICE_AM_MAX_ARGS || h.wire_size() != n)
        base::fatal("Long", "this is a Sluice bug", "a malformed two-part Long header from rank %u", token->source);
    LongHeader unused;
    if (self.lid_match(token->source, h.lid, &h, unused)) self.long_run(token, h);
}

void AmEngine::long_data_arrived(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned) {
    AmEngine &self = *long_owner_;
    LongHeader h;
    if (self.lid_match(token->source, args[0], nullptr, h)) self.long_run(token, h);
}

} // namespace sluice::am
