// src/conduits/udp/wire.cpp - encoder and decoder of the udp datagram format
// (wire.hpp, README.md "Wire format").
#include "conduits/udp/wire.hpp"

#include "conduits/udp/mac.hpp"

#include <bit>
#include <cassert>
#include <cstring>

namespace sluice::conduit::udp::wire {
namespace {

// Header offsets.
// (at_source, at_number and at_tag are wire.hpp's.)
constexpr std::size_t at_magic = 0, at_kind = 4, at_bits = 5, at_reserved16 = 6, at_secret = 8, at_dest = 20,
                      at_seq = 24, at_ack = 28, at_sack = 32, at_length = 36, at_offset = 40, at_reserved32 = 44;
constexpr std::uint8_t bit_am = 1;
// AM section offsets.
constexpr std::size_t am_handler = 0, am_category = 1, am_nargs = 2, am_flags = 3, am_credit = 4,
                      am_reserved = 5, am_dest_addr = 8, am_args = 16;
constexpr std::uint8_t flag_credit = 4;
static_assert(at_kind == at_magic + 4 && at_bits == at_kind + 1 && at_reserved16 == at_bits + 1 &&
                  at_dest == at_source + 4 && at_ack == at_seq + 4 && at_length == at_sack + 4 &&
                  at_reserved32 == at_offset + 4 && at_number == at_reserved32 + 4 && at_tag == at_number + 8 &&
                  header_bytes == at_tag + mac_tag_bytes && am_category == am_handler + 1 && am_nargs == am_handler + 2 &&
                  am_flags == am_handler + 3 && am_credit == am_handler + 4 && am_reserved == am_credit + 1,
              "write() and decode_short() take these fields a 64-bit word at a time");
constexpr std::uint8_t category_short = 0, category_medium = 1, category_long = 2;

// Little-endian loads and stores, no alignment assumed: one move each on a
// little-endian machine, a move and a byte swap on a big-endian one.
template <class T> T to_little(T v) {
    if constexpr (std::endian::native == std::endian::big) {
        if constexpr (sizeof(T) == 2) return __builtin_bswap16(v);
        if constexpr (sizeof(T) == 4) return __builtin_bswap32(v);
        if constexpr (sizeof(T) == 8) return __builtin_bswap64(v);
    }
    return v;
}
template <class T> T load(const std::uint8_t *p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return to_little(v);
}
template <class T> void store(std::uint8_t *p, T v) {
    v = to_little(v);
    std::memcpy(p, &v, sizeof v);
}
inline std::uint16_t load16(const std::uint8_t *p) { return load<std::uint16_t>(p); }
inline std::uint32_t load32(const std::uint8_t *p) { return load<std::uint32_t>(p); }
inline std::uint64_t load64(const std::uint8_t *p) { return load<std::uint64_t>(p); }
inline void store32(std::uint8_t *p, std::uint32_t v) { store(p, v); }
inline void store64(std::uint8_t *p, std::uint64_t v) { store(p, v); }
// Two 32-bit fields as the 64-bit word they make at `low`'s offset.
constexpr std::uint64_t pair(std::uint32_t low, std::uint32_t high) { return low | std::uint64_t{high} << 32; }

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

// The last rule: the tag is the job key's MAC of the datagram, or zero in a
// job without MACs.
Drop tag_rule(const std::uint8_t *data, std::size_t n, const Expect &expect) {
    if (expect.mac) return expect.mac->verify(data, n) ? Drop::none : Drop::forged;
    return (load64(data + at_tag) | load64(data + at_tag + 8)) == 0 ? Drop::none : Drop::forged;
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
    case Drop::forged: return "forged";
    case Drop::count_: break;
    }
    return "?";
}

namespace {

// The fast path: a data datagram whose AM section is a whole Short, the
// only shape a round trip sends.  Every rule of decode_full() that applies
// to that shape, as word compares:
//   bytes 0-7    magic, kind data, bits "AM section", reserved 16 bits zero
//   bytes 8-15   the job's secret
//   bytes 16-23  source in the job and not me, dest me
//   bytes 36-47  message length, fragment offset and reserved 32 bits zero
//   AM 0-7       category Short, known flags, a credit byte only with its
//                flag, reserved bytes zero (handler and nargs are free)
//   AM 8-15      no Long address
//   length       exactly the header, the AM section and its arguments
// then the tag (tag_rule).  Anything else returns false and is left to
// decode_full(); a datagram of the shape returns true with its verdict.
bool decode_short(const std::uint8_t *data, std::size_t n, const Expect &expect, Datagram &out, Drop &verdict) {
    constexpr std::uint64_t first_word =
        magic | std::uint64_t{static_cast<std::uint8_t>(Kind::data)} << 32 | std::uint64_t{bit_am} << 40;
    if (n < header_bytes + am_fixed_bytes || load64(data + at_magic) != first_word ||
        load64(data + at_secret) != expect.secret)
        return false;
    const std::uint32_t source = load32(data + at_source);
    if (load32(data + at_dest) != expect.me || source >= expect.size || source == expect.refused_source ||
        load32(data + at_length) != 0 || load64(data + at_offset) != 0)
        return false;
    const std::uint8_t *a = data + header_bytes;
    const std::uint64_t am = load64(a);  // handler, category, nargs, flags, credit, 3 reserved
    const auto nargs = static_cast<std::uint8_t>(am >> 16);
    const auto flags = static_cast<std::uint8_t>(am >> 24);
    const auto credit = static_cast<std::uint8_t>(am >> 32);
    if ((am & 0xff00u) != std::uint64_t{category_short} << 8 || (am >> 40) != 0 || nargs > max_args ||
        (flags & ~am_flags_known) || (credit && !(flags & flag_credit)) || load64(a + am_dest_addr) != 0 ||
        n != header_bytes + am_fixed_bytes + 4u * nargs)
        return false;
    verdict = tag_rule(data, n, expect);
    Header &h = out.header;
    h.kind = Kind::data;
    h.secret = expect.secret;
    h.source = source;
    h.dest = expect.me;
    h.seq = load32(data + at_seq);
    h.ack = load32(data + at_ack);
    h.sack = load32(data + at_sack);
    h.message_length = 0;
    h.fragment_offset = 0;
    h.number = load64(data + at_number);
    out.has_am = true;
    Am &m = out.am;
    m.handler = static_cast<std::uint8_t>(am);
    m.category = category_short;
    m.nargs = nargs;
    m.flags = flags;
    m.credit = credit;
    m.dest_addr = 0;
    for (unsigned i = 0; i < nargs; ++i) m.args[i] = load32(a + am_args + 4 * i);
    out.payload = data + n;
    out.payload_length = 0;
    return true;
}

} // namespace

Drop decode(const std::uint8_t *data, std::size_t n, const Expect &expect, Datagram &out) {
    Drop verdict;
    if (decode_short(data, n, expect, out, verdict)) return verdict;
    return decode_full(data, n, expect, out);
}

Drop decode_full(const std::uint8_t *data, std::size_t n, const Expect &expect, Datagram &out) {
    if (n < header_bytes) return Drop::truncated;
    if (load32(data + at_magic) != magic) return Drop::magic;
    // Nothing else is believed before the secret matches.
    if (load64(data + at_secret) != expect.secret) return Drop::secret;
    Header &h = out.header;
    h.secret = expect.secret;
    h.source = load32(data + at_source);
    h.dest = load32(data + at_dest);
    if (h.dest != expect.me) return Drop::misrouted;
    if (h.source >= expect.size || h.source == expect.refused_source) return Drop::source;
    const std::uint8_t bits = data[at_bits];
    if ((bits & ~bit_am) || load16(data + at_reserved16) || load32(data + at_reserved32)) return Drop::kind;
    h.kind = static_cast<Kind>(data[at_kind]);
    h.seq = load32(data + at_seq);
    h.ack = load32(data + at_ack);
    h.sack = load32(data + at_sack);
    h.message_length = load32(data + at_length);
    h.fragment_offset = load32(data + at_offset);
    h.number = load64(data + at_number);
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
    // Well formed: now whether the job's key signed it.
    if (Drop d = tag_rule(data, n, expect); d != Drop::none) return d;
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

std::size_t encode_head(const Header &h, const Am *am, std::size_t payload_length, std::uint8_t *buf,
                        std::size_t capacity, std::uint32_t max_message) {
    if (!encodable(h, am, payload_length, capacity, max_message)) return 0;
    return write_head(h, am, payload_length, buf);
}

std::size_t write(const Header &h, const Am *am, const void *payload, std::size_t payload_length,
                  std::uint8_t *buf) {
    const std::size_t used = write_head(h, am, payload_length, buf);
    if (payload_length) std::memcpy(buf + used, payload, payload_length);
    return used + payload_length;
}

std::size_t write_head(const Header &h, const Am *am, std::size_t payload_length, std::uint8_t *buf) {
    const bool has_am = am != nullptr;
    assert(encodable(h, am, payload_length, max_datagram, ~std::uint32_t{0}));  // --enable-debug builds
    (void)payload_length;  // the header does not carry it: the datagram's size does
    // A word at a time: the header is nine 64-bit words (the last two the
    // tag, zero until Mac::sign), the AM section's fixed part two.
    store64(buf + at_magic, pair(magic, std::uint32_t{static_cast<std::uint8_t>(h.kind)} | (has_am ? bit_am : 0u) << 8));
    store64(buf + at_secret, h.secret);
    store64(buf + at_source, pair(h.source, h.dest));
    store64(buf + at_seq, pair(h.seq, h.ack));
    store64(buf + at_sack, pair(h.sack, h.message_length));
    store64(buf + at_offset, pair(h.fragment_offset, 0));
    store64(buf + at_number, h.number);
    store64(buf + at_tag, 0);
    store64(buf + at_tag + 8, 0);
    std::size_t used = header_bytes;
    if (has_am) {
        std::uint8_t *a = buf + header_bytes;
        store64(a + am_handler, pair(am->handler | am->category << 8 | am->nargs << 16 |
                                         static_cast<std::uint32_t>(am->flags) << 24,
                                     am->credit));
        store64(a + am_dest_addr, am->dest_addr);
        for (unsigned i = 0; i < am->nargs; ++i) store32(a + am_args + 4 * i, am->args[i]);
        used += am_fixed_bytes + 4u * am->nargs;
    }
    return used;
}

void resend_update(std::uint8_t *datagram, std::uint32_t ack, std::uint32_t sack, std::uint64_t number) {
    store32(datagram + at_ack, ack);
    store32(datagram + at_sack, sack);
    store64(datagram + at_number, number);
}

} // namespace sluice::conduit::udp::wire
