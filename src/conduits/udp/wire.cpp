// src/conduits/udp/wire.cpp - encoder and decoder of the udp datagram format
// (wire.hpp, README.md "Wire format").
#include "conduits/udp/wire.hpp"

#include <cassert>
#include <cstring>

namespace sluice::conduit::udp::wire {
namespace {

// Header offsets.
constexpr std::size_t at_magic = 0, at_kind = 4, at_bits = 5, at_reserved16 = 6, at_secret = 8, at_source = 16,
                      at_dest = 20, at_seq = 24, at_ack = 28, at_sack = 32, at_length = 36, at_offset = 40,
                      at_reserved32 = 44;
constexpr std::uint8_t bit_am = 1;
// AM section offsets.
constexpr std::size_t am_handler = 0, am_category = 1, am_nargs = 2, am_flags = 3, am_credit = 4,
                      am_reserved = 5, am_dest_addr = 8, am_args = 16;
constexpr std::uint8_t flag_credit = 4;
constexpr std::uint8_t category_short = 0, category_medium = 1, category_long = 2;

// Little-endian loads and stores through bytes: no alignment assumed.
std::uint16_t load16(const std::uint8_t *p) { return static_cast<std::uint16_t>(p[0] | p[1] << 8); }
std::uint32_t load32(const std::uint8_t *p) {
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24;
}
std::uint64_t load64(const std::uint8_t *p) { return load32(p) | std::uint64_t{load32(p + 4)} << 32; }
void store32(std::uint8_t *p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> 8 * i);
}
void store64(std::uint8_t *p, std::uint64_t v) {
    store32(p, static_cast<std::uint32_t>(v));
    store32(p + 4, static_cast<std::uint32_t>(v >> 32));
}

bool kind_known(std::uint8_t k) {
    return k == static_cast<std::uint8_t>(Kind::data) || k == static_cast<std::uint8_t>(Kind::ack) ||
           k == static_cast<std::uint8_t>(Kind::probe);
}

// The fields of an AM section that size and name it; the decoder checks
// them before reading the arguments.
bool am_shape_ok(const Am &am) {
    return am.category <= category_long && am.nargs <= max_args && !(am.flags & ~am_flags_known);
}

// The rules of an AM section, shared by both directions.
Drop am_rules(const Am &am, std::uint32_t message_length) {
    if (!am_shape_ok(am)) return Drop::am;
    if (am.category == category_short && message_length != 0) return Drop::am;
    if (am.category != category_long && am.dest_addr != 0) return Drop::am;
    if (am.credit != 0 && !(am.flags & flag_credit)) return Drop::am;
    return Drop::none;
}

// The rules of the header fields for a datagram with `payload_length`
// payload bytes, shared by both directions (the AM section apart).
Drop header_rules(const Header &h, bool has_am, std::size_t payload_length, std::uint32_t max_message) {
    if (!kind_known(static_cast<std::uint8_t>(h.kind))) return Drop::kind;
    if (h.kind != Kind::data) {
        if (h.seq || h.message_length || h.fragment_offset || has_am || payload_length) return Drop::kind;
        return Drop::none;
    }
    if (has_am != (h.fragment_offset == 0) || h.message_length > max_message) return Drop::fragment;
    return Drop::none;
}

Drop payload_rules(const Header &h, bool has_am, std::size_t payload_length) {
    if (h.kind != Kind::data) return Drop::none;
    if (payload_length > h.message_length - std::size_t{h.fragment_offset} || h.fragment_offset > h.message_length)
        return Drop::fragment;
    if (!has_am && payload_length == 0) return Drop::fragment;
    return Drop::none;
}

} // namespace

const char *drop_name(Drop d) {
    switch (d) {
    case Drop::none: return "none";
    case Drop::truncated: return "truncated";
    case Drop::magic: return "magic";
    case Drop::secret: return "secret";
    case Drop::misrouted: return "misrouted";
    case Drop::source: return "source";
    case Drop::kind: return "kind";
    case Drop::am: return "am";
    case Drop::fragment: return "fragment";
    case Drop::count_: break;
    }
    return "?";
}

Drop decode(const std::uint8_t *data, std::size_t n, const Expect &expect, Datagram &out) {
    if (n < header_bytes) return Drop::truncated;
    if (load32(data + at_magic) != magic) return Drop::magic;
    // Nothing else is believed before the secret matches.
    if (load64(data + at_secret) != expect.secret) return Drop::secret;
    Header &h = out.header;
    h.secret = expect.secret;
    h.source = load32(data + at_source);
    h.dest = load32(data + at_dest);
    if (h.dest != expect.me) return Drop::misrouted;
    if (h.source >= expect.size || h.source == expect.me) return Drop::source;
    const std::uint8_t bits = data[at_bits];
    if ((bits & ~bit_am) || load16(data + at_reserved16) || load32(data + at_reserved32)) return Drop::kind;
    h.kind = static_cast<Kind>(data[at_kind]);
    h.seq = load32(data + at_seq);
    h.ack = load32(data + at_ack);
    h.sack = load32(data + at_sack);
    h.message_length = load32(data + at_length);
    h.fragment_offset = load32(data + at_offset);
    out.has_am = bits & bit_am;
    // The header's own rules first (for data they do not look at the payload).
    if (Drop d = header_rules(h, out.has_am, n - header_bytes, expect.max_message); d != Drop::none) return d;
    std::size_t used = header_bytes;
    if (out.has_am) {
        if (n < header_bytes + am_fixed_bytes) return Drop::truncated;
        const std::uint8_t *a = data + header_bytes;
        Am &am = out.am;
        am.handler = a[am_handler];
        am.category = a[am_category];
        am.nargs = a[am_nargs];
        am.flags = a[am_flags];
        am.credit = a[am_credit];
        am.dest_addr = load64(a + am_dest_addr);
        if (!am_shape_ok(am) || a[am_reserved] || a[am_reserved + 1] || a[am_reserved + 2]) return Drop::am;
        used += am_fixed_bytes + 4u * am.nargs;
        if (n < used) return Drop::truncated;
        for (unsigned i = 0; i < am.nargs; ++i) am.args[i] = load32(a + am_args + 4 * i);
        if (Drop d = am_rules(am, h.message_length); d != Drop::none) return d;
    }
    const std::size_t payload_length = n - used;
    if (Drop d = payload_rules(h, out.has_am, payload_length); d != Drop::none) return d;
    out.payload = data + used;
    out.payload_length = payload_length;
    return Drop::none;
}

namespace {

// The checks of encode(): true if the decoder would accept what write() makes.
bool encodable(const Header &h, const Am *am, std::size_t payload_length, std::size_t capacity,
               std::uint32_t max_message) {
    const bool has_am = am != nullptr;
    if (header_rules(h, has_am, payload_length, max_message) != Drop::none) return false;
    if (has_am && am_rules(*am, h.message_length) != Drop::none) return false;
    if (payload_rules(h, has_am, payload_length) != Drop::none) return false;
    const std::size_t size = encoded_size(has_am, has_am ? am->nargs : 0, payload_length);
    return size <= capacity && size <= max_datagram;
}

} // namespace

std::size_t encode(const Header &h, const Am *am, const void *payload, std::size_t payload_length,
                   std::uint8_t *buf, std::size_t capacity, std::uint32_t max_message) {
    if (!encodable(h, am, payload_length, capacity, max_message)) return 0;
    return write(h, am, payload, payload_length, buf);
}

std::size_t write(const Header &h, const Am *am, const void *payload, std::size_t payload_length,
                  std::uint8_t *buf) {
    const bool has_am = am != nullptr;
    assert(encodable(h, am, payload_length, max_datagram, ~std::uint32_t{0}));  // --enable-debug builds
    const std::size_t size = encoded_size(has_am, has_am ? am->nargs : 0, payload_length);
    std::memset(buf, 0, header_bytes);
    store32(buf + at_magic, magic);
    buf[at_kind] = static_cast<std::uint8_t>(h.kind);
    buf[at_bits] = has_am ? bit_am : 0;
    store64(buf + at_secret, h.secret);
    store32(buf + at_source, h.source);
    store32(buf + at_dest, h.dest);
    store32(buf + at_seq, h.seq);
    store32(buf + at_ack, h.ack);
    store32(buf + at_sack, h.sack);
    store32(buf + at_length, h.message_length);
    store32(buf + at_offset, h.fragment_offset);
    std::size_t used = header_bytes;
    if (has_am) {
        std::uint8_t *a = buf + header_bytes;
        std::memset(a, 0, am_fixed_bytes);
        a[am_handler] = am->handler;
        a[am_category] = am->category;
        a[am_nargs] = am->nargs;
        a[am_flags] = am->flags;
        a[am_credit] = am->credit;
        store64(a + am_dest_addr, am->dest_addr);
        for (unsigned i = 0; i < am->nargs; ++i) store32(a + am_args + 4 * i, am->args[i]);
        used += am_fixed_bytes + 4u * am->nargs;
    }
    if (payload_length) std::memcpy(buf + used, payload, payload_length);
    return size;
}

void ack_update(std::uint8_t *datagram, std::uint32_t ack, std::uint32_t sack) {
    store32(datagram + at_ack, ack);
    store32(datagram + at_sack, sack);
}

} // namespace sluice::conduit::udp::wire
