// src/conduits/common/packed_am.cpp - the packed AM format (packed_am.hpp).
#include "conduits/common/packed_am.hpp"
#include "conduits/common/conduit_lock.hpp"

#include "base/status.hpp"

#include <cstring>

namespace sluice::conduit::common {

// conduit_lock.hpp
[[gnu::tls_model("initial-exec")]] constinit thread_local bool in_conduit_lock = false;

std::size_t packed_encode(const AmHeader &h, const std::uint32_t *args, const void *payload, std::byte *out) {
    if (h.category == AmCategory::short_)
        return packed_encode_short(h.source, h.handler, h.flags, h.credit, args, h.nargs, out);
    PackedHead w{};
    w.handler = h.handler;
    w.category = static_cast<std::uint8_t>(h.category);
    w.nargs = h.nargs;
    w.flags = h.flags;
    w.source = h.source;
    w.credit = h.credit;
    w.length = static_cast<std::uint32_t>(h.payload_length);
    std::memcpy(out, &w, sizeof w);
    if (h.category == AmCategory::long_) std::memcpy(out + sizeof w, &h.dest_addr, 8);
    if (h.nargs) std::memcpy(out + packed_args_offset(h.category), args, 4u * h.nargs);
    const std::size_t at = packed_payload_offset(h.category, h.nargs);
    if (h.category != AmCategory::short_ && h.payload_length) std::memcpy(out + at, payload, h.payload_length);
    return packed_length(h);
}

bool packed_unpack(const char *op, const std::byte *bytes, std::size_t length, Rank ranks, std::uint64_t segment_base,
                   std::uint64_t segment_bytes, PackedMessage &out) {
    PackedHead w;
    if (length < sizeof w) {
        base::report(Status::transport, op, "this is a Sluice bug", "a message of %zu bytes dropped", length);
        return false;
    }
    std::memcpy(&w, bytes, sizeof w);
    const auto category = static_cast<AmCategory>(w.category);
    const std::size_t at =
        w.category <= 2 && w.nargs <= packed_max_args ? packed_payload_offset(category, w.nargs) : ~std::size_t{0};
    const std::size_t payload = category == AmCategory::short_ ? 0 : w.length;
    if (at > length || payload > length - at || w.source >= ranks) {
        base::report(Status::transport, op, "run the same Sluice build on every rank",
                     "a malformed message of %zu bytes (rank %u, category %u, %u arguments, payload %u) dropped", length,
                     w.source, w.category, w.nargs, w.length);
        return false;
    }
    AmHeader &h = out.header;
    h.handler = w.handler;
    h.category = category;
    h.nargs = w.nargs;
    h.flags = w.flags;
    h.credit = w.credit;
    h.source = w.source;
    h.payload_length = payload;
    if (w.nargs) std::memcpy(out.args, bytes + packed_args_offset(category), 4u * w.nargs);
    out.payload = const_cast<std::byte *>(bytes + at);
    if (category != AmCategory::long_) return true;
    std::memcpy(&h.dest_addr, bytes + sizeof w, 8);
    if (h.dest_addr < segment_base || payload > segment_bytes || h.dest_addr - segment_base > segment_bytes - payload) {
        base::report(Status::segment, op, "this is a Sluice bug: the sender checks Long bounds",
                     "a Long of %zu bytes from rank %u to 0x%llx lies outside this rank's segment; dropped", payload,
                     w.source, static_cast<unsigned long long>(h.dest_addr));
        return false;
    }
    void *dest = reinterpret_cast<void *>(h.dest_addr);
    if (payload) std::memcpy(dest, out.payload, payload);
    out.payload = dest;
    return true;
}

} // namespace sluice::conduit::common
