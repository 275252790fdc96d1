// src/conduits/common/packed_am.hpp - one AM as one packed message: the
// wire format of the conduits that move whole messages into receive
// buffers (ofi, ibv).  A 16-byte head, the Long's destination address,
// the arguments, then the payload at an 8-byte boundary; every message is
// a multiple of 8 bytes, so messages packed back to back stay aligned.
#pragma once

#include "conduits/transport.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sluice::conduit::common {

constexpr unsigned packed_max_args = 16;

struct PackedHead {
    std::uint8_t handler;
    std::uint8_t category;  // AmCategory, or a conduit's control category (> 2)
    std::uint8_t nargs;
    std::uint8_t flags;
    std::uint32_t source;
    std::uint8_t credit;
    std::uint8_t pad;
    std::uint16_t seq;      // free for the conduit (ofi: per-peer order)
    std::uint32_t length;   // payload bytes
};
static_assert(sizeof(PackedHead) == 16);

// Control messages of the conduits whose messages start with a
// PackedHead, in its `category` beyond the AM categories (the liveness
// ping and pong of rdma_conduit.hpp): handled by the conduit, never
// delivered, not numbered.
constexpr std::uint8_t category_ping = 3;
constexpr std::uint8_t category_pong = 4;

// Room a message takes beyond its payload: head, Long address, arguments.
constexpr std::size_t packed_head_room = sizeof(PackedHead) + 8 + 4 * packed_max_args;

constexpr std::size_t packed_align(std::size_t n) { return (n + 7) & ~std::size_t{7}; }
constexpr std::size_t packed_args_offset(AmCategory c) {
    return sizeof(PackedHead) + (c == AmCategory::long_ ? 8 : 0);
}
constexpr std::size_t packed_payload_offset(AmCategory c, unsigned nargs) {
    return packed_align(packed_args_offset(c) + 4u * nargs);
}
// Bytes the message of `h` takes.
constexpr std::size_t packed_length(const AmHeader &h) {
    return packed_align(packed_payload_offset(h.category, h.nargs) +
                        (h.category == AmCategory::short_ ? 0 : h.payload_length));
}

// Bytes the AM message with head `w` takes; ~0 when `w` is no AM's head
// (a control category, too many arguments).
constexpr std::size_t packed_wire_length(const PackedHead &w) {
    if (w.category > static_cast<std::uint8_t>(AmCategory::long_) || w.nargs > packed_max_args) return ~std::size_t{0};
    const auto c = static_cast<AmCategory>(w.category);
    return packed_align(packed_payload_offset(c, w.nargs) + (c == AmCategory::short_ ? 0 : w.length));
}

// Writes the message at `out` (packed_length(h) bytes); returns its length.
std::size_t packed_encode(const AmHeader &h, const std::uint32_t *args, const void *payload, std::byte *out);

// The same for a Short from `source` (a conduit's send_short_impl, the
// latency path): packed_short_length(nargs) bytes.
constexpr std::size_t packed_short_length(unsigned nargs) {
    return packed_payload_offset(AmCategory::short_, nargs);
}
inline std::size_t packed_encode_short(Rank source, std::uint8_t handler, std::uint8_t flags, std::uint8_t credit,
                                       const std::uint32_t *args, unsigned nargs, std::byte *out) {
    PackedHead w{};
    w.handler = handler;
    w.category = static_cast<std::uint8_t>(AmCategory::short_);
    w.nargs = static_cast<std::uint8_t>(nargs);
    w.flags = flags;
    w.source = source;
    w.credit = credit;
    std::memcpy(out, &w, sizeof w);
    if (nargs) std::memcpy(out + sizeof w, args, 4u * nargs);
    return packed_short_length(nargs);
}

// A well-formed Short (from a job of `ranks`) in the `length` bytes at
// `bytes`: its head into `w` and its arguments into `args` (the latency
// path).  False for anything else, which packed_unpack takes (and
// reports when malformed).
inline bool packed_short_take(const std::byte *bytes, std::size_t length, Rank ranks, PackedHead &w,
                              std::uint32_t *args) {
    if (length < sizeof w) return false;
    std::memcpy(&w, bytes, sizeof w);
    if (w.category != static_cast<std::uint8_t>(AmCategory::short_) || w.nargs > packed_max_args ||
        length < packed_short_length(w.nargs) || w.source >= ranks)
        return false;
    if (w.nargs) std::memcpy(args, bytes + sizeof w, 4u * w.nargs);
    return true;
}

// An arrived message, checked and unpacked.
struct PackedMessage {
    AmHeader header;
    std::uint32_t args[packed_max_args];
    void *payload = nullptr;  // Medium: in the message; Long: in the segment, already copied there
};

// Checks the message of `length` bytes (from a job of `ranks`) and, for a
// Long, copies its payload to its destination, which must lie in this
// rank's segment [segment_base, +segment_bytes).  False: malformed or out
// of bounds, reported under `op` and dropped.
bool packed_unpack(const char *op, const std::byte *bytes, std::size_t length, Rank ranks, std::uint64_t segment_base,
                   std::uint64_t segment_bytes, PackedMessage &out);

} // namespace sluice::conduit::common
