// src/conduits/udp/tests/unit_wire.cpp - the udp conduit's datagram encoder and
// decoder (src/conduits/udp/wire.hpp) on bytes alone: every kind and AM
// category round-trips field for field and re-encodes to the same bytes, the
// layout is pinned byte by byte, every Drop reason is reached by a one-line
// edit of a valid datagram, truncation at every length stays inside the
// bytes given, and the encoder refuses whatever the decoder would drop.
//
// Decoding always works on a fresh, exactly sized copy of the bytes, so a
// read past `n` lands outside the allocation where AddressSanitizer sees it
// (a vector shrunk by resize() keeps its capacity and would hide it).
#include "conduits/udp/wire.hpp"

#include "conduits/udp/mac.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace wire = sluice::conduit::udp::wire;
using wire::Drop;
using wire::Kind;

namespace {

using Bytes = std::vector<std::uint8_t>;

// Field offsets, written out here rather than taken from the implementation
// so the tests pin the layout independently.
constexpr std::size_t off_magic = 0, off_kind = 4, off_bits = 5, off_reserved16 = 6, off_secret = 8,
                      off_source = 16, off_dest = 20, off_seq = 24, off_ack = 28, off_sack = 32,
                      off_length = 36, off_offset = 40, off_reserved32 = 44, off_number = 48, off_tag = 56;
constexpr std::size_t am_at = wire::header_bytes;  // the AM section starts right after the header
constexpr std::size_t am_handler = am_at + 0, am_category = am_at + 1, am_nargs = am_at + 2,
                      am_flags = am_at + 3, am_credit = am_at + 4, am_reserved = am_at + 5,
                      am_dest_addr = am_at + 8, am_args = am_at + 16;

constexpr std::uint8_t category_short = 0, category_medium = 1, category_long = 2;
constexpr std::uint8_t flag_reply = 1, flag_system = 2, flag_credit = 4;

constexpr std::uint64_t job_secret = 0x0123456789abcdefull;  // eight distinct bytes: byte order shows
constexpr std::uint32_t me = 3, peer = 5, ranks = 8;
constexpr std::uint32_t max_message = 4096;

wire::Expect expect() {
    wire::Expect e;
    e.secret = job_secret;
    e.me = me;
    e.size = ranks;
    e.max_message = max_message;
    e.refused_source = me;
    return e;
}

// One-line edits of a datagram in place.
void put8(Bytes &b, std::size_t at, std::uint8_t v) { b.at(at) = v; }
void put16(Bytes &b, std::size_t at, std::uint16_t v) {
    for (int i = 0; i < 2; ++i) b.at(at + i) = static_cast<std::uint8_t>(v >> (8 * i));
}
void put32(Bytes &b, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.at(at + i) = static_cast<std::uint8_t>(v >> (8 * i));
}
void put64(Bytes &b, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b.at(at + i) = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get32(const Bytes &b, std::size_t at) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | b.at(at + i);
    return v;
}

// What to encode: the encoder's arguments, kept together so the decoded
// datagram can be compared against them.
struct Case {
    const char *name = "";
    wire::Header h;
    bool has_am = false;
    wire::Am am;
    Bytes payload;
    std::size_t section() const { return wire::encoded_size(has_am, has_am ? am.nargs : 0, 0); }
    std::size_t size() const { return wire::encoded_size(has_am, has_am ? am.nargs : 0, payload.size()); }
};

Bytes pattern(std::size_t n, std::uint8_t seed) {
    Bytes p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(seed + 7 * i);
    return p;
}

// A data header from `peer` to `me` with every free field nonzero, so a
// field the codec dropped or swapped would show.
wire::Header data_header(std::uint32_t message_length, std::uint32_t fragment_offset) {
    wire::Header h;
    h.kind = Kind::data;
    h.secret = job_secret;
    h.source = peer;
    h.dest = me;
    h.seq = 0x01020304;
    h.ack = 0x0a0b0c0d;
    h.sack = 0x80000001;
    h.message_length = message_length;
    h.fragment_offset = fragment_offset;
    h.number = 0x1122334455667788ull;
    return h;
}

Case short_case(unsigned nargs) {
    Case c;
    c.name = nargs ? "short16" : "short0";
    c.h = data_header(0, 0);
    c.has_am = true;
    c.am.handler = 200;
    c.am.category = category_short;
    c.am.nargs = static_cast<std::uint8_t>(nargs);
    // With arguments, every flag and a credit byte too; without, none.
    c.am.flags = nargs ? flag_reply | flag_system | flag_credit : 0;
    c.am.credit = nargs ? 0x9c : 0;
    for (unsigned i = 0; i < nargs; ++i) c.am.args[i] = 0xa0000000u + 0x01010101u * i;
    return c;
}

// A whole Medium message in one datagram, credit flag set but credit 0
// (allowed: the flag says the byte is meaningful, not that it is nonzero).
Case medium_case() {
    Case c;
    c.name = "medium";
    c.payload = pattern(100, 1);
    c.h = data_header(100, 0);
    c.has_am = true;
    c.am.handler = 17;
    c.am.category = category_medium;
    c.am.nargs = 3;
    c.am.flags = flag_credit;
    c.am.credit = 0;
    c.am.args[0] = 0xffffffff;
    c.am.args[1] = 0;
    c.am.args[2] = 0x12345678;
    return c;
}

// The first datagram of a Long message longer than it carries.
Case long_case() {
    Case c;
    c.name = "long";
    c.payload = pattern(300, 2);
    c.h = data_header(1000, 0);
    c.has_am = true;
    c.am.handler = 255;
    c.am.category = category_long;
    c.am.nargs = 1;
    c.am.flags = flag_reply;
    c.am.dest_addr = 0xfedcba9876543210ull;
    c.am.args[0] = 42;
    return c;
}

// A middle fragment of that Long message: no AM section.
Case later_case() {
    Case c;
    c.name = "later";
    c.payload = pattern(200, 3);
    c.h = data_header(1000, 300);
    return c;
}

// The last fragment: ends exactly at message_length.
Case last_case() {
    Case c;
    c.name = "last";
    c.payload = pattern(100, 4);
    c.h = data_header(1000, 900);
    return c;
}

Case control_case(Kind kind) {
    Case c;
    c.name = kind == Kind::ack ? "ack" : "probe";
    c.h = data_header(0, 0);
    c.h.kind = kind;
    c.h.seq = 0;
    return c;
}

std::vector<Case> valid_cases() {
    return {short_case(0), short_case(16), medium_case(), long_case(),
            later_case(),  last_case(),    control_case(Kind::ack), control_case(Kind::probe)};
}

// Encodes a case, checks the size and that nothing past it was written, and
// returns exactly the datagram.
Bytes encode(const Case &c, std::uint32_t max = max_message) {
    Bytes buf(c.size() + 16, 0xaa);
    const std::size_t n = wire::encode(c.h, c.has_am ? &c.am : nullptr, c.payload.data(), c.payload.size(),
                                       buf.data(), buf.size(), max);
    EXPECT_EQ(n, c.size()) << c.name;
    for (std::size_t i = c.size(); i < buf.size(); ++i) EXPECT_EQ(buf[i], 0xaa) << c.name << " wrote past its end at " << i;
    buf.resize(n);
    return buf;
}

// The encoder's answer alone, for the refusal tests.
std::size_t encode_size(const wire::Header &h, const wire::Am *am, const Bytes &payload,
                        std::size_t capacity = 1 << 17, std::uint32_t max = max_message) {
    Bytes buf(capacity == 0 ? 1 : capacity);
    return wire::encode(h, am, payload.data(), payload.size(), buf.data(), capacity, max);
}

// A decode on an exactly sized private copy; `bytes` keeps the copy alive so
// `d.payload` can be checked against it.
struct Decoded {
    Bytes bytes;
    wire::Datagram d;
    Drop drop = Drop::none;
};

Decoded decode(const Bytes &b, const wire::Expect &e = expect()) {
    Decoded r;
    r.bytes.assign(b.begin(), b.end());  // a fresh allocation of exactly b.size() bytes
    r.drop = wire::decode(r.bytes.data(), r.bytes.size(), e, r.d);
    return r;
}

Drop drop_of(const Bytes &b, const wire::Expect &e = expect()) { return decode(b, e).drop; }

// Every field of the decoded datagram against what was encoded.
void expect_same(const Case &c, const Decoded &r) {
    SCOPED_TRACE(c.name);
    const wire::Datagram &d = r.d;
    EXPECT_EQ(static_cast<int>(d.header.kind), static_cast<int>(c.h.kind));
    EXPECT_EQ(d.header.secret, c.h.secret);
    EXPECT_EQ(d.header.source, c.h.source);
    EXPECT_EQ(d.header.dest, c.h.dest);
    EXPECT_EQ(d.header.seq, c.h.seq);
    EXPECT_EQ(d.header.ack, c.h.ack);
    EXPECT_EQ(d.header.sack, c.h.sack);
    EXPECT_EQ(d.header.message_length, c.h.message_length);
    EXPECT_EQ(d.header.fragment_offset, c.h.fragment_offset);
    ASSERT_EQ(d.has_am, c.has_am);
    if (c.has_am) {
        EXPECT_EQ(d.am.handler, c.am.handler);
        EXPECT_EQ(d.am.category, c.am.category);
        EXPECT_EQ(d.am.nargs, c.am.nargs);
        EXPECT_EQ(d.am.flags, c.am.flags);
        EXPECT_EQ(d.am.credit, c.am.credit);
        EXPECT_EQ(d.am.dest_addr, c.am.dest_addr);
        for (unsigned i = 0; i < c.am.nargs; ++i) EXPECT_EQ(d.am.args[i], c.am.args[i]) << "arg " << i;
    }
    ASSERT_EQ(d.payload_length, c.payload.size());
    if (!c.payload.empty()) {
        // Points into the given bytes, right after the AM section: no copy.
        EXPECT_EQ(d.payload, r.bytes.data() + c.section());
        EXPECT_EQ(std::memcmp(d.payload, c.payload.data(), c.payload.size()), 0);
    }
}

// Re-encodes what decode() produced.
Bytes reencode(const Decoded &r, std::uint32_t max = max_message) {
    const wire::Datagram &d = r.d;
    const std::size_t size = wire::encoded_size(d.has_am, d.has_am ? d.am.nargs : 0, d.payload_length);
    Bytes buf(size + 16, 0xaa);
    const std::size_t n = wire::encode(d.header, d.has_am ? &d.am : nullptr, d.payload, d.payload_length,
                                       buf.data(), buf.size(), max);
    EXPECT_EQ(n, size);
    buf.resize(n);
    return buf;
}

} // namespace

// ---- sizes and layout ------------------------------------------------------

static_assert(wire::encoded_size(false, 0, 0) == 72);
static_assert(wire::encoded_size(true, 0, 0) == 88);
static_assert(wire::encoded_size(true, 16, 10) == 72 + 16 + 64 + 10);
static_assert(wire::encoded_size(false, 16, 10) == 82);  // nargs counts only with an AM section

// The layout built by hand from the rules, byte for byte: catches a field at
// the wrong offset or in the wrong byte order even if decode() mirrored it.
TEST(UdpWire, LayoutIsPinned) {
    Case c = long_case();
    c.am.nargs = 2;
    c.am.args[1] = 0xcafef00d;
    c.am.flags = flag_credit | flag_reply;
    c.am.credit = 0x31;
    c.payload = {0xde, 0xad, 0xbe};
    c.h.message_length = 3;
    const Bytes got = encode(c);

    Bytes want(72 + 16 + 8 + 3, 0);
    put32(want, off_magic, 0x32554c53);
    put8(want, off_kind, 1);
    put8(want, off_bits, 1);
    put64(want, off_secret, job_secret);
    put32(want, off_source, peer);
    put32(want, off_dest, me);
    put32(want, off_seq, 0x01020304);
    put32(want, off_ack, 0x0a0b0c0d);
    put32(want, off_sack, 0x80000001);
    put32(want, off_length, 3);
    put32(want, off_offset, 0);
    put64(want, off_number, 0x1122334455667788ull);  // the tag stays zero: unsigned
    put8(want, am_handler, 255);
    put8(want, am_category, 2);
    put8(want, am_nargs, 2);
    put8(want, am_flags, 5);
    put8(want, am_credit, 0x31);
    put64(want, am_dest_addr, 0xfedcba9876543210ull);
    put32(want, am_args + 0, 42);
    put32(want, am_args + 4, 0xcafef00d);
    want[96] = 0xde;
    want[97] = 0xad;
    want[98] = 0xbe;
    EXPECT_EQ(got, want);
    // The magic reads "SLU2" in memory.
    ASSERT_GE(got.size(), 4u);
    EXPECT_EQ(std::string(got.begin(), got.begin() + 4), "SLU2");
}

TEST(UdpWire, ControlLayoutIsPinned) {
    for (Kind k : {Kind::ack, Kind::probe}) {
        const Bytes got = encode(control_case(k));
        ASSERT_EQ(got.size(), 72u);
        EXPECT_EQ(get32(got, off_magic), wire::magic);
        EXPECT_EQ(got[off_kind], static_cast<std::uint8_t>(k));
        EXPECT_EQ(got[off_bits], 0);
        EXPECT_EQ(get32(got, off_ack), 0x0a0b0c0du);
        EXPECT_EQ(get32(got, off_sack), 0x80000001u);
        for (std::size_t at : {off_seq, off_length, off_offset, off_reserved32, off_tag, off_tag + 4, off_tag + 8, off_tag + 12})
            EXPECT_EQ(get32(got, at), 0u) << at;
        EXPECT_EQ(get32(got, off_number), 0x55667788u);
        EXPECT_EQ(got[off_reserved16], 0);
        EXPECT_EQ(got[off_reserved16 + 1], 0);
    }
}

// A buffer full of junk must not leak into reserved bytes.
TEST(UdpWire, EncoderZeroesReservedBytes) {
    const Case c = medium_case();
    Bytes buf(c.size(), 0xff);
    ASSERT_EQ(wire::encode(c.h, &c.am, c.payload.data(), c.payload.size(), buf.data(), buf.size(), max_message),
              c.size());
    EXPECT_EQ(buf[off_bits], 1);
    EXPECT_EQ(buf[off_reserved16], 0);
    EXPECT_EQ(buf[off_reserved16 + 1], 0);
    EXPECT_EQ(get32(buf, off_reserved32), 0u);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(buf[am_reserved + i], 0);
    EXPECT_EQ(decode(buf).drop, Drop::none);
}

// ---- round trips -------------------------------------------------------------

TEST(UdpWire, RoundTripEveryShape) {
    for (const Case &c : valid_cases()) {
        const Bytes b = encode(c);
        const Decoded r = decode(b);
        ASSERT_EQ(r.drop, Drop::none) << c.name << ": " << wire::drop_name(r.drop);
        expect_same(c, r);
    }
}

TEST(UdpWire, DecodeThenEncodeGivesTheSameBytes) {
    for (const Case &c : valid_cases()) {
        const Bytes b = encode(c);
        const Decoded r = decode(b);
        ASSERT_EQ(r.drop, Drop::none) << c.name;
        EXPECT_EQ(reencode(r), b) << c.name;
    }
}

// The unchecked writer of the round trip's path makes exactly encode()'s
// bytes, and nothing past them, for every valid shape.
TEST(UdpWire, WriteMakesEncodesBytes) {
    for (const Case &c : valid_cases()) {
        const Bytes want = encode(c);
        Bytes got(c.size() + 16, 0xaa);
        const std::size_t n = wire::write(c.h, c.has_am ? &c.am : nullptr, c.payload.data(), c.payload.size(), got.data());
        ASSERT_EQ(n, c.size()) << c.name;
        for (std::size_t i = n; i < got.size(); ++i) EXPECT_EQ(got[i], 0xaa) << c.name << " wrote past its end at " << i;
        got.resize(n);
        EXPECT_EQ(got, want) << c.name;
    }
}

// The gathered form (a Get reply's payload sent from the segment, udp.cpp):
// the header that encode_head() and write_head() write, followed by the
// payload, is exactly encode()'s datagram, and they write nothing past the
// header; encode_head() refuses what encode() refuses (here a payload that
// does not fit the capacity, or the message).
TEST(UdpWire, HeadAndPayloadMakeEncodesBytes) {
    for (const Case &c : valid_cases()) {
        const Bytes want = encode(c);
        const wire::Am *am = c.has_am ? &c.am : nullptr;
        const std::size_t head = c.size() - c.payload.size();
        for (int checked = 0; checked < 2; ++checked) {
            Bytes got(c.size() + 16, 0xaa);
            const std::size_t n = checked ? wire::encode_head(c.h, am, c.payload.size(), got.data(), got.size(), max_message)
                                          : wire::write_head(c.h, am, c.payload.size(), got.data());
            ASSERT_EQ(n, head) << c.name << (checked ? " encode_head" : " write_head");
            for (std::size_t i = n; i < got.size(); ++i)
                EXPECT_EQ(got[i], 0xaa) << c.name << " wrote past its header at " << i;
            std::copy(c.payload.begin(), c.payload.end(), got.begin() + static_cast<std::ptrdiff_t>(n));
            got.resize(c.size());
            EXPECT_EQ(got, want) << c.name;
            const Decoded r = decode(got);
            ASSERT_EQ(r.drop, Drop::none) << c.name;
            expect_same(c, r);
        }
    }
    const Case c = long_case();
    ASSERT_FALSE(c.payload.empty());
    Bytes buf(c.size());
    EXPECT_EQ(wire::encode_head(c.h, &c.am, c.payload.size(), buf.data(), c.size() - 1, max_message), 0u);
    EXPECT_EQ(wire::encode_head(c.h, &c.am, c.payload.size(), buf.data(), c.size(), c.h.message_length - 1), 0u);
    EXPECT_EQ(wire::encode_head(c.h, &c.am, c.payload.size(), buf.data(), c.size(), max_message), c.size() - c.payload.size());
}

// Edge values the rules allow: message_length == max_message, rank 0 and the
// last rank as source, a Medium or Long with no payload at all, the largest
// datagram.
TEST(UdpWire, RoundTripAtTheLimits) {
    std::vector<Case> cases;
    Case full = long_case();
    full.h.message_length = max_message;
    full.payload = pattern(max_message, 9);
    cases.push_back(full);
    Case low = later_case();
    low.h.source = 0;
    cases.push_back(low);
    Case high = control_case(Kind::probe);
    high.h.source = ranks - 1;
    cases.push_back(high);
    Case empty_medium = medium_case();
    empty_medium.payload.clear();
    empty_medium.h.message_length = 0;
    cases.push_back(empty_medium);
    Case first_of_many = medium_case();
    first_of_many.payload.clear();  // the AM alone; the bytes follow later
    first_of_many.h.message_length = 2000;
    cases.push_back(first_of_many);
    Case seq_max = last_case();
    seq_max.h.seq = 0xffffffff;
    seq_max.h.ack = 0xffffffff;
    seq_max.h.sack = 0xffffffff;
    cases.push_back(seq_max);
    // Sequence numbers wrap: after 2^32 datagrams to one peer the next is 0.
    Case seq_wrapped = short_case(2);
    seq_wrapped.h.seq = 0;
    seq_wrapped.h.ack = 0;
    cases.push_back(seq_wrapped);
    for (const Case &c : cases) {
        const Bytes b = encode(c);
        const Decoded r = decode(b);
        ASSERT_EQ(r.drop, Drop::none) << c.name << ": " << wire::drop_name(r.drop);
        expect_same(c, r);
        EXPECT_EQ(reencode(r), b);
    }

    // Exactly max_datagram bytes is allowed.
    const std::uint32_t big = 1u << 20;
    Case largest = long_case();
    largest.am.nargs = 0;
    largest.h.message_length = big;
    largest.payload = pattern(wire::max_datagram - 88, 5);
    const Bytes b = encode(largest, big);
    ASSERT_EQ(b.size(), wire::max_datagram);
    wire::Expect e = expect();
    e.max_message = big;
    const Decoded r = decode(b, e);
    ASSERT_EQ(r.drop, Drop::none) << wire::drop_name(r.drop);
    expect_same(largest, r);
}

// ---- every drop reason -------------------------------------------------------

TEST(UdpWire, HeaderDrops) {
    const Bytes ack = encode(control_case(Kind::ack));
    const Bytes data = encode(medium_case());
    ASSERT_EQ(drop_of(ack), Drop::none);
    ASSERT_EQ(drop_of(data), Drop::none);

    for (const Bytes &good : {ack, data}) {
        Bytes b = good;
        b[0] ^= 1;  // "RLU2"
        EXPECT_EQ(drop_of(b), Drop::magic);
        b = good;
        b[3] = '3';  // the next version
        EXPECT_EQ(drop_of(b), Drop::magic);

        b = good;
        put64(b, off_secret, job_secret + 1);
        EXPECT_EQ(drop_of(b), Drop::secret);
        b = good;
        put64(b, off_secret, job_secret ^ (1ull << 63));  // the top byte counts too
        EXPECT_EQ(drop_of(b), Drop::secret);

        b = good;
        put32(b, off_dest, me + 1);
        EXPECT_EQ(drop_of(b), Drop::misrouted);

        b = good;
        put32(b, off_source, me);  // from ourselves
        EXPECT_EQ(drop_of(b), Drop::source);
        wire::Expect to_myself = expect();  // unless udp carries our messages to ourselves
        to_myself.refused_source = ~0u;
        EXPECT_EQ(drop_of(b, to_myself), Drop::none);
        b = good;
        put32(b, off_source, ranks);
        EXPECT_EQ(drop_of(b), Drop::source);
        b = good;
        put32(b, off_source, 0xffffffff);
        EXPECT_EQ(drop_of(b), Drop::source);

        for (std::size_t at : {off_reserved16, off_reserved16 + 1, off_reserved32, off_reserved32 + 1,
                               off_reserved32 + 2, off_reserved32 + 3}) {
            b = good;
            put8(b, at, 0x01);
            EXPECT_EQ(drop_of(b), Drop::kind) << "reserved byte " << at;
        }
        for (int bit = 1; bit < 8; ++bit) {
            b = good;
            b[off_bits] |= static_cast<std::uint8_t>(1u << bit);
            EXPECT_EQ(drop_of(b), Drop::kind) << "bit " << bit << " of byte 5";
        }
        for (int k : {0, 4, 255}) {
            b = good;
            put8(b, off_kind, static_cast<std::uint8_t>(k));
            EXPECT_EQ(drop_of(b), Drop::kind) << "kind " << int(k);
        }
    }
    // A receiver of another rank sees the same bytes as misrouted.
    wire::Expect other = expect();
    other.me = me + 1;
    EXPECT_EQ(drop_of(ack, other), Drop::misrouted);
    // The same job with fewer ranks than the sender's number.
    wire::Expect smaller = expect();
    smaller.size = peer;
    EXPECT_EQ(drop_of(ack, smaller), Drop::source);
}

TEST(UdpWire, ControlDrops) {
    for (Kind k : {Kind::ack, Kind::probe}) {
        const Bytes good = encode(control_case(k));
        ASSERT_EQ(drop_of(good), Drop::none);
        Bytes b = good;
        put32(b, off_seq, 1);
        EXPECT_EQ(drop_of(b), Drop::kind);
        b = good;
        put32(b, off_length, 1);
        EXPECT_EQ(drop_of(b), Drop::kind);
        b = good;
        put32(b, off_offset, 1);
        EXPECT_EQ(drop_of(b), Drop::kind);
        b = good;
        put8(b, off_bits, 1);  // an AM section on an ack
        EXPECT_EQ(drop_of(b), Drop::kind);
        b = good;
        b.push_back(0);  // a trailing byte
        EXPECT_EQ(drop_of(b), Drop::kind);
        b = good;
        b.resize(72 + 16, 0);  // room for an AM section does not make one
        EXPECT_EQ(drop_of(b), Drop::kind);
    }
}

TEST(UdpWire, DataDrops) {
    const Bytes medium = encode(medium_case());
    const Bytes later = encode(later_case());
    const Bytes last = encode(last_case());
    ASSERT_EQ(drop_of(medium), Drop::none);
    ASSERT_EQ(drop_of(later), Drop::none);
    ASSERT_EQ(drop_of(last), Drop::none);

    // Sequence numbers wrap through 0: data numbered 0 is valid.
    Bytes b = medium;
    put32(b, off_seq, 0);
    EXPECT_EQ(drop_of(b), Drop::none);
    b = later;
    put32(b, off_seq, 0);
    EXPECT_EQ(drop_of(b), Drop::none);

    // An AM section on a later fragment, and a first fragment without one.
    b = medium;
    put32(b, off_offset, 8);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = later;
    put8(b, off_bits, 1);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = later;
    put32(b, off_offset, 0);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = medium;
    put8(b, off_bits, 0);
    EXPECT_EQ(drop_of(b), Drop::fragment);

    // Longer than the largest message, with or without an AM section.
    b = medium;
    put32(b, off_length, max_message + 1);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = later;
    put32(b, off_length, max_message + 1);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = later;
    put32(b, off_length, 0xffffffff);
    EXPECT_EQ(drop_of(b), Drop::fragment);

    // Payload running past message_length.
    b = medium;
    put32(b, off_length, 99);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = last;
    put32(b, off_offset, 901);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = last;
    b.push_back(0);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    // offset + payload must not wrap around 32 bits into looking small.
    b = later;
    put32(b, off_offset, 0xffffffc0);
    EXPECT_EQ(drop_of(b), Drop::fragment);

    // A later fragment with nothing in it.
    b = later;
    b.resize(wire::header_bytes);
    EXPECT_EQ(drop_of(b), Drop::fragment);
}

TEST(UdpWire, AmDrops) {
    const Bytes short0 = encode(short_case(0));
    const Bytes short16 = encode(short_case(16));
    const Bytes medium = encode(medium_case());
    const Bytes lng = encode(long_case());
    ASSERT_EQ(drop_of(short0), Drop::none);
    ASSERT_EQ(drop_of(short16), Drop::none);
    ASSERT_EQ(drop_of(medium), Drop::none);
    ASSERT_EQ(drop_of(lng), Drop::none);

    Bytes b = medium;
    put8(b, am_category, 3);
    EXPECT_EQ(drop_of(b), Drop::am);
    b = medium;
    put8(b, am_category, 255);
    EXPECT_EQ(drop_of(b), Drop::am);

    // Too many arguments is malformed, not merely short of bytes.
    b = short0;
    put8(b, am_nargs, 17);
    EXPECT_EQ(drop_of(b), Drop::am);
    b = short16;
    put8(b, am_nargs, 17);
    EXPECT_EQ(drop_of(b), Drop::am);
    b = short16;
    put8(b, am_nargs, 255);
    EXPECT_EQ(drop_of(b), Drop::am);

    for (int bit = 3; bit < 8; ++bit) {
        b = medium;
        b[am_flags] |= static_cast<std::uint8_t>(1u << bit);
        EXPECT_EQ(drop_of(b), Drop::am) << "flag bit " << bit;
    }
    for (std::size_t i = 0; i < 3; ++i) {
        b = medium;
        put8(b, am_reserved + i, 0x80);
        EXPECT_EQ(drop_of(b), Drop::am) << "AM reserved byte " << i;
    }

    // Short: no payload, no target address.
    b = short0;
    put32(b, off_length, 1);
    EXPECT_EQ(drop_of(b), Drop::am);
    b = short0;
    put64(b, am_dest_addr, 0x1000);
    EXPECT_EQ(drop_of(b), Drop::am);
    // Medium: no target address.
    b = medium;
    put64(b, am_dest_addr, 1ull << 63);
    EXPECT_EQ(drop_of(b), Drop::am);
    // Turning a Long into a Medium leaves its address behind.
    b = lng;
    put8(b, am_category, category_medium);
    EXPECT_EQ(drop_of(b), Drop::am);

    // A credit byte needs the credit flag.
    b = short0;
    put8(b, am_credit, 1);
    EXPECT_EQ(drop_of(b), Drop::am);
    b = short16;
    put8(b, am_flags, flag_reply | flag_system);
    EXPECT_EQ(drop_of(b), Drop::am);
}

TEST(UdpWire, TruncatedDrops) {
    const Bytes short0 = encode(short_case(0));
    const Bytes short16 = encode(short_case(16));
    const Bytes medium = encode(medium_case());

    // Shorter than the header: truncated before anything else is read.
    EXPECT_EQ(drop_of(Bytes{}), Drop::truncated);
    EXPECT_EQ(drop_of(Bytes(71, 0)), Drop::truncated);
    Bytes b = medium;
    b.resize(71);
    EXPECT_EQ(drop_of(b), Drop::truncated);
    // Inside the fixed AM bytes.
    b = medium;
    b.resize(72 + 15);
    EXPECT_EQ(drop_of(b), Drop::truncated);
    // Inside the arguments.
    b = short16;
    b.resize(short16.size() - 1);
    EXPECT_EQ(drop_of(b), Drop::truncated);
    b = short0;
    put8(b, am_nargs, 1);  // says one argument, carries none
    EXPECT_EQ(drop_of(b), Drop::truncated);
    b = short0;
    put8(b, am_nargs, 16);
    EXPECT_EQ(drop_of(b), Drop::truncated);
}

// When several rules fail the first in the documented order wins; the
// conduit's counters rely on e.g. a stranger never counting as misrouted.
TEST(UdpWire, FirstFailingCheckWins) {
    const Bytes medium = encode(medium_case());
    const Bytes short16 = encode(short_case(16));

    Bytes b = medium;
    b.resize(40);
    b[0] ^= 0xff;
    EXPECT_EQ(drop_of(b), Drop::truncated);

    b = medium;
    b[0] ^= 0xff;
    put64(b, off_secret, 0);
    EXPECT_EQ(drop_of(b), Drop::magic);

    b = medium;
    put64(b, off_secret, 0);
    put32(b, off_dest, 7);
    EXPECT_EQ(drop_of(b), Drop::secret);

    b = medium;
    put32(b, off_dest, 7);
    put32(b, off_source, 99);
    EXPECT_EQ(drop_of(b), Drop::misrouted);

    b = medium;
    put32(b, off_source, 99);
    put8(b, off_kind, 9);
    EXPECT_EQ(drop_of(b), Drop::source);

    b = medium;
    put8(b, off_kind, 9);
    put32(b, off_seq, 0);
    put8(b, am_category, 7);
    EXPECT_EQ(drop_of(b), Drop::kind);

    b = medium;
    put16(b, off_reserved16, 1);
    put32(b, off_offset, 5);
    EXPECT_EQ(drop_of(b), Drop::kind);

    // The data header is judged before any AM byte is read: an oversized
    // message or an AM section on a later fragment wins over a broken or
    // missing AM section.
    b = medium;
    put32(b, off_length, max_message + 1);
    put8(b, am_reserved, 1);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = medium;
    put32(b, off_length, max_message + 1);
    b.resize(72 + 8);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = medium;
    put32(b, off_offset, 4);
    b.resize(72 + 8);
    EXPECT_EQ(drop_of(b), Drop::fragment);
    b = medium;
    put32(b, off_length, max_message + 1);
    put8(b, am_nargs, 40);
    EXPECT_EQ(drop_of(b), Drop::fragment);

    // A Short claiming too long a message: the length rule comes first.
    b = short16;
    put32(b, off_length, max_message + 1);
    EXPECT_EQ(drop_of(b), Drop::fragment);

    // Malformed AM fields are seen before the arguments are found missing...
    b = short16;
    b.resize(b.size() - 4);
    put8(b, am_category, 3);
    EXPECT_EQ(drop_of(b), Drop::am);
    // ...and missing arguments before the category-specific rules.
    b = short16;
    b.resize(b.size() - 4);
    put32(b, off_length, 1);
    EXPECT_EQ(drop_of(b), Drop::truncated);
    b = short16;
    b.resize(b.size() - 4);
    put8(b, am_flags, 0);
    EXPECT_EQ(drop_of(b), Drop::truncated);

    // Category rules before the payload-length rule: a Medium turned Short
    // whose payload also overruns message_length.
    b = medium;
    put8(b, am_category, category_short);
    put32(b, off_length, 99);
    EXPECT_EQ(drop_of(b), Drop::am);
}

// Cutting a valid datagram short, at every length: inside the header or the
// AM section it is truncated; inside the payload it is a shorter datagram
// that is still well formed (a first fragment carrying fewer bytes, or a
// later fragment that is empty when cut to its header).  Either way the
// decoder stays inside the bytes it is given.
TEST(UdpWire, TruncationAtEveryLength) {
    for (const Case &c : valid_cases()) {
        SCOPED_TRACE(c.name);
        const Bytes full = encode(c);
        for (std::size_t n = 0; n < full.size(); ++n) {
            const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
            const Decoded r = decode(cut);
            if (n < c.section()) {
                EXPECT_EQ(r.drop, Drop::truncated) << "length " << n;
            } else if (!c.has_am && n == c.section()) {
                EXPECT_EQ(r.drop, Drop::fragment) << "length " << n;
            } else {
                ASSERT_EQ(r.drop, Drop::none) << "length " << n << ": " << wire::drop_name(r.drop);
                EXPECT_EQ(r.d.payload_length, n - c.section());
                EXPECT_EQ(r.d.payload, r.bytes.data() + c.section());
                EXPECT_EQ(reencode(r), cut);
            }
        }
    }
}

// Random edits of valid datagrams: whatever the decoder accepts is exactly
// what the encoder writes for the decoded fields (no reserved bit or stray
// byte survives a decode), and whatever it drops has a named reason.
TEST(UdpWire, AcceptedMutationsReencodeExactly) {
    std::mt19937 rng(11);
    std::size_t accepted = 0, dropped = 0;
    for (const Case &c : valid_cases()) {
        const Bytes good = encode(c);
        for (int round = 0; round < 3000; ++round) {
            Bytes b = good;
            const int edits = 1 + static_cast<int>(rng() % 3);
            for (int e = 0; e < edits; ++e) {
                // Mostly the header and AM section, where the rules are.
                const std::size_t span = rng() % 4 ? std::min<std::size_t>(b.size(), c.section()) : b.size();
                b[rng() % span] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
            }
            if (rng() % 8 == 0) b.resize(rng() % (b.size() + 1));
            const Decoded r = decode(b);
            if (r.drop == Drop::none) {
                ++accepted;
                ASSERT_EQ(reencode(r), b) << c.name << " round " << round;
            } else {
                ++dropped;
                ASSERT_LT(static_cast<std::size_t>(r.drop), wire::drop_reasons);
            }
        }
    }
    // Both outcomes happened, or the test proved nothing.
    EXPECT_GT(accepted, 0u);
    EXPECT_GT(dropped, 0u);
}

// ---- the encoder refuses what the decoder would drop -------------------------

TEST(UdpWire, EncoderRefusesDataRuleViolations) {
    const Case base = medium_case();
    ASSERT_GT(encode_size(base.h, &base.am, base.payload), 0u);

    for (int k : {0, 4, 255}) {
        wire::Header h = base.h;
        h.kind = static_cast<Kind>(k);
        EXPECT_EQ(encode_size(h, &base.am, base.payload), 0u) << "kind " << int(k);
    }
    wire::Header h = base.h;
    // AM section iff offset 0.
    EXPECT_EQ(encode_size(base.h, nullptr, base.payload), 0u);
    h = base.h;
    h.message_length = 1000;
    h.fragment_offset = 100;
    EXPECT_EQ(encode_size(h, &base.am, base.payload), 0u);
    EXPECT_GT(encode_size(h, nullptr, base.payload), 0u);  // the same as a later fragment is fine

    h = base.h;
    h.message_length = max_message + 1;
    EXPECT_EQ(encode_size(h, &base.am, base.payload), 0u);
    EXPECT_GT(encode_size(h, &base.am, base.payload, 1 << 17, max_message + 1), 0u);

    // Payload past message_length, first or later fragment.
    h = base.h;
    h.message_length = 99;
    EXPECT_EQ(encode_size(h, &base.am, base.payload), 0u);
    const Case last = last_case();
    h = last.h;
    h.fragment_offset = 901;
    EXPECT_EQ(encode_size(h, nullptr, last.payload), 0u);
    h.fragment_offset = 0xffffffc0;  // would wrap around 32 bits
    EXPECT_EQ(encode_size(h, nullptr, last.payload), 0u);

    // An empty later fragment.
    EXPECT_EQ(encode_size(later_case().h, nullptr, Bytes{}), 0u);
}

TEST(UdpWire, EncoderRefusesAmRuleViolations) {
    const Case base = medium_case();
    wire::Am am = base.am;
    am.category = 3;
    EXPECT_EQ(encode_size(base.h, &am, base.payload), 0u);
    am = base.am;
    am.nargs = 17;
    EXPECT_EQ(encode_size(base.h, &am, base.payload), 0u);
    for (int bit = 3; bit < 8; ++bit) {
        am = base.am;
        am.flags |= static_cast<std::uint8_t>(1u << bit);
        EXPECT_EQ(encode_size(base.h, &am, base.payload), 0u) << "flag bit " << bit;
    }
    am = base.am;
    am.dest_addr = 1;  // Medium with a target address
    EXPECT_EQ(encode_size(base.h, &am, base.payload), 0u);
    am = base.am;
    am.flags = flag_reply;
    am.credit = 1;  // credit byte without its flag
    EXPECT_EQ(encode_size(base.h, &am, base.payload), 0u);

    const Case s = short_case(2);
    ASSERT_GT(encode_size(s.h, &s.am, s.payload), 0u);
    wire::Header h = s.h;
    h.message_length = 4;  // Short with a payload
    EXPECT_EQ(encode_size(h, &s.am, Bytes(4, 1)), 0u);
    EXPECT_EQ(encode_size(h, &s.am, Bytes{}), 0u);
    am = s.am;
    am.dest_addr = 0x1000;
    EXPECT_EQ(encode_size(s.h, &am, s.payload), 0u);
}

TEST(UdpWire, EncoderRefusesControlRuleViolations) {
    for (Kind k : {Kind::ack, Kind::probe}) {
        const Case base = control_case(k);
        ASSERT_EQ(encode_size(base.h, nullptr, Bytes{}), 72u);
        wire::Header h = base.h;
        h.seq = 1;
        EXPECT_EQ(encode_size(h, nullptr, Bytes{}), 0u);
        h = base.h;
        h.message_length = 1;
        EXPECT_EQ(encode_size(h, nullptr, Bytes{}), 0u);
        h = base.h;
        h.fragment_offset = 1;
        EXPECT_EQ(encode_size(h, nullptr, Bytes{}), 0u);
        const wire::Am am = short_case(0).am;
        EXPECT_EQ(encode_size(base.h, &am, Bytes{}), 0u);
        EXPECT_EQ(encode_size(base.h, nullptr, Bytes(1, 0)), 0u);
    }
}

TEST(UdpWire, EncoderRefusesSmallBuffersAndHugeDatagrams) {
    for (const Case &c : valid_cases()) {
        const wire::Am *am = c.has_am ? &c.am : nullptr;
        EXPECT_EQ(encode_size(c.h, am, c.payload, c.size()), c.size()) << c.name;
        EXPECT_EQ(encode_size(c.h, am, c.payload, c.size() - 1), 0u) << c.name;
        EXPECT_EQ(encode_size(c.h, am, c.payload, wire::header_bytes - 1), 0u) << c.name;
        EXPECT_EQ(encode_size(c.h, am, c.payload, 0), 0u) << c.name;
    }
    // One byte over the largest UDP payload, even with room in the buffer and
    // a message limit that allows it.
    const std::uint32_t big = 1u << 20;
    Case c = long_case();
    c.am.nargs = 0;
    c.h.message_length = big;
    c.payload = pattern(wire::max_datagram - 88 + 1, 6);
    EXPECT_EQ(encode_size(c.h, &c.am, c.payload, 1 << 17, big), 0u);
    c.payload.pop_back();
    EXPECT_EQ(encode_size(c.h, &c.am, c.payload, 1 << 17, big), wire::max_datagram);
    // The same with arguments taking the room.
    c.am.nargs = 16;
    EXPECT_EQ(encode_size(c.h, &c.am, c.payload, 1 << 17, big), 0u);
    Case later = later_case();
    later.h.message_length = big;
    later.payload = pattern(wire::max_datagram - 72 + 1, 7);
    EXPECT_EQ(encode_size(later.h, nullptr, later.payload, 1 << 17, big), 0u);
}

// ---- drop names --------------------------------------------------------------

TEST(UdpWire, DropNamesAreDistinct) {
    ASSERT_EQ(wire::drop_reasons, 10u);
    std::set<std::string> names;
    for (std::size_t i = 0; i < wire::drop_reasons; ++i) {
        const char *name = wire::drop_name(static_cast<Drop>(i));
        ASSERT_NE(name, nullptr) << i;
        EXPECT_NE(std::string(name), "") << i;
        names.insert(name);
    }
    EXPECT_EQ(names.size(), wire::drop_reasons);
}

// ---- the MAC (mac.hpp) ---------------------------------------------------------

namespace {

using Key = std::uint8_t[wire::mac_key_bytes];
const Key job_key = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

// A case's datagram, signed under `mac` as the conduit sends it.
Bytes sign(const Case &c, wire::Mac &mac) {
    Bytes b = encode(c);
    mac.sign(b.data(), b.size(), nullptr, 0);
    return b;
}

} // namespace

// Signed datagrams of every shape decode to what was encoded under the key,
// and the tag is where the layout says and is not zero.
TEST(UdpMac, SignedDatagramsVerify) {
    wire::Mac mac(job_key);
    wire::Expect e = expect();
    e.mac = &mac;
    for (const Case &c : valid_cases()) {
        const Bytes b = sign(c, mac);
        const Decoded r = decode(b, e);
        ASSERT_EQ(r.drop, Drop::none) << c.name << ": " << wire::drop_name(r.drop);
        expect_same(c, r);
        EXPECT_EQ(r.d.header.number, c.h.number) << c.name;
        EXPECT_NE(get32(b, off_tag) | get32(b, off_tag + 4) | get32(b, off_tag + 8) | get32(b, off_tag + 12), 0u)
            << c.name;
        // Unsigned (a zero tag) or signed under another key: forged.
        EXPECT_EQ(drop_of(encode(c), e), Drop::forged) << c.name;
        Key other;
        std::copy(std::begin(job_key), std::end(job_key), other);
        other[wire::mac_key_bytes - 1] ^= 1;
        wire::Mac stranger(other);
        EXPECT_EQ(drop_of(sign(c, stranger), e), Drop::forged) << c.name;
        // A job without MACs takes only zero tags.
        EXPECT_EQ(drop_of(b), Drop::forged) << c.name;
    }
}

// One bit flipped anywhere, header, AM section, payload or tag: never
// accepted.  Where the flipped datagram is still well formed (a sequence
// number, an ack, an argument, a payload byte, the transmission number, the
// tag), the MAC is what refuses it.
TEST(UdpMac, EveryFlippedBitIsRefused) {
    wire::Mac mac(job_key);
    wire::Expect e = expect();
    e.mac = &mac;
    wire::Expect unsigned_job = expect();
    for (const Case &c : valid_cases()) {
        SCOPED_TRACE(c.name);
        const Bytes good = sign(c, mac);
        for (std::size_t at = 0; at < good.size(); ++at)
            for (int bit = 0; bit < 8; ++bit) {
                Bytes b = good;
                b[at] ^= static_cast<std::uint8_t>(1u << bit);
                const Drop d = drop_of(b, e);
                ASSERT_NE(d, Drop::none) << "byte " << at << " bit " << bit;
                // Well formed but for its tag (the same bytes, tag zeroed,
                // pass a job without MACs): then it is counted as forged.
                Bytes zeroed = b;
                std::fill(zeroed.begin() + off_tag, zeroed.begin() + off_tag + 16, 0);
                if (drop_of(zeroed, unsigned_job) == Drop::none) {
                    ASSERT_EQ(d, Drop::forged) << "byte " << at << " bit " << bit;
                }
            }
    }
}

// Cut short at every length: truncated inside the header or AM section,
// forged inside the payload (the shorter datagram is well formed, but the
// tag was made for the whole one); never accepted.
TEST(UdpMac, TruncationIsRefused) {
    wire::Mac mac(job_key);
    wire::Expect e = expect();
    e.mac = &mac;
    for (const Case &c : valid_cases()) {
        SCOPED_TRACE(c.name);
        const Bytes full = sign(c, mac);
        for (std::size_t n = 0; n < full.size(); ++n) {
            const Drop d = drop_of(Bytes(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)), e);
            if (n < c.section()) EXPECT_EQ(d, Drop::truncated) << "length " << n;
            else EXPECT_NE(d, Drop::none) << "length " << n;
        }
        // And one byte longer.
        Bytes longer = full;
        longer.push_back(0);
        EXPECT_NE(drop_of(longer, e), Drop::none);
    }
}

// The nonce is source, destination and transmission number: the same bytes
// under another number carry another tag, and a retransmission's header
// update (acks, number) must be signed again.  A payload signed where it
// lies (head and tail apart) gets the tag of the whole datagram.
TEST(UdpMac, NumberTailAndResend) {
    wire::Mac mac(job_key);
    wire::Expect e = expect();
    e.mac = &mac;
    const Case c = long_case();
    const Bytes a = sign(c, mac);
    Case next = c;
    next.h.number += 1;
    const Bytes b = sign(next, mac);
    EXPECT_FALSE(std::equal(a.begin() + off_tag, a.begin() + off_tag + 16, b.begin() + off_tag));
    Case other_source = c;
    other_source.h.source = peer + 1;
    const Bytes o = sign(other_source, mac);
    EXPECT_FALSE(std::equal(a.begin() + off_tag, a.begin() + off_tag + 16, o.begin() + off_tag));

    Bytes head(c.size());  // the capacity a whole datagram needs; the head alone is written
    ASSERT_EQ(wire::encode_head(c.h, &c.am, c.payload.size(), head.data(), head.size(), max_message), c.section());
    head.resize(c.section());
    mac.sign(head.data(), head.size(), c.payload.data(), c.payload.size());
    Bytes whole = head;
    whole.insert(whole.end(), c.payload.begin(), c.payload.end());
    EXPECT_EQ(whole, a);

    Bytes resent = a;
    wire::resend_update(resent.data(), 77, 0x3, c.h.number + 5);
    EXPECT_EQ(drop_of(resent, e), Drop::forged);
    mac.sign(resent.data(), resent.size(), nullptr, 0);
    const Decoded r = decode(resent, e);
    ASSERT_EQ(r.drop, Drop::none);
    EXPECT_EQ(r.d.header.ack, 77u);
    EXPECT_EQ(r.d.header.sack, 0x3u);
    EXPECT_EQ(r.d.header.number, c.h.number + 5);
}
