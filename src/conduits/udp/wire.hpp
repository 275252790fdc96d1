// src/conduits/udp/wire.hpp - the udp conduit's datagram format: one encoder,
// and the one decoder every received byte goes through before anything else
// looks at it.
//
// Every field is little-endian at a fixed offset (no struct is laid over the
// bytes).  A datagram is a 72-byte header, then for the first datagram of a
// message its AM section (16 bytes and 4 per argument), then payload bytes.
// The header ends with the transmission number and the MAC's tag (mac.hpp).
// The full layout, with the rules the decoder checks, is in README.md
// ("Wire format").
//
// The decoder reads only inside the `n` bytes it is given, checks the job
// secret before any other field is believed, then every rule of the format,
// then the MAC, and accepts exactly the datagrams the encoder can produce
// (reserved bits zero, lengths that add up), so a datagram decodes and
// re-encodes to the same bytes.  It never allocates and never throws.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::conduit::udp::wire {

inline constexpr std::uint32_t magic = 0x32554c53;  // "SLU2" in memory; the '2' is the version
inline constexpr std::size_t header_bytes = 72;
// Where the nonce's fields and the tag are (mac.cpp reads them there).
inline constexpr std::size_t at_source = 16, at_number = 48, at_tag = 56;

class Mac;
inline constexpr std::size_t am_fixed_bytes = 16;  // handler..credit, 3 reserved, Long target address
inline constexpr unsigned max_args = 16;
inline constexpr std::size_t max_datagram = 65507;  // the largest UDP payload over IPv4

enum class Kind : std::uint8_t {
    data = 1,   // carries (part of) one AM; has a sequence number
    ack = 2,    // acknowledgement alone (piggybacked acks ride on data)
    probe = 3,  // liveness: "are you there", answered by an ack
};

// AM header flags the wire carries (src/conduits/transport.hpp's am_flag_*).
inline constexpr std::uint8_t am_flags_known = 1 | 2 | 4;

struct Header {
    Kind kind = Kind::data;
    std::uint64_t secret = 0;        // the job's, from bootstrap
    std::uint32_t source = 0;        // sender's rank
    std::uint32_t dest = 0;          // receiver's rank
    std::uint32_t seq = 0;           // data: this datagram's number from source to dest (from 1, wrapping through 0); else 0
    std::uint32_t ack = 0;           // every kind: the highest number received in order from dest
    std::uint32_t sack = 0;          // bit i: number ack + 2 + i also received (selective ack)
    std::uint32_t message_length = 0;   // data: payload bytes of the whole message
    std::uint32_t fragment_offset = 0;  // data: where this datagram's payload bytes go in it
    std::uint64_t number = 0;        // every kind: this transmission's number from source to dest (from 1; never reused)
};

// The AM section, present in the first datagram of a message (offset 0).
struct Am {
    std::uint8_t handler = 0;
    std::uint8_t category = 0;  // 0 Short, 1 Medium, 2 Long (conduit::AmCategory)
    std::uint8_t nargs = 0;
    std::uint8_t flags = 0;     // am_flag_* bits
    std::uint8_t credit = 0;    // credit byte (src/credit) when flags has am_flag_credit
    std::uint64_t dest_addr = 0;  // Long: address in the target's segment
    // The first `nargs` are the arguments; the rest is left as it is (not
    // zeroed: a datagram is decoded into one of these on every arrival).
    std::uint32_t args[max_args];
};

// A decoded datagram.  `payload` points into the bytes given to decode().
struct Datagram {
    Header header;
    bool has_am = false;
    Am am;
    const std::uint8_t *payload = nullptr;
    std::size_t payload_length = 0;
};

// Why a datagram was dropped; the conduit counts each (udp README).
enum class Drop : std::uint8_t {
    none = 0,
    truncated,   // shorter than its header, or than its AM section says
    magic,       // not a Sluice udp datagram of this version
    secret,      // not this job's secret: a stranger, or a datagram from an older job
    misrouted,   // addressed to another rank
    source,      // source rank outside the job, or this rank itself
    kind,        // unknown kind, or fields a kind must leave zero are not
    am,          // AM section malformed: category, argument count, flags, reserved bytes
    fragment,    // offsets and lengths do not add up, or exceed the largest message
    forged,      // well formed, with the job's secret, but its MAC is not the job key's
    count_
};
inline constexpr std::size_t drop_reasons = static_cast<std::size_t>(Drop::count_);
const char *drop_name(Drop d);

// What the receiver knows: the datagram must match these.
struct Expect {
    std::uint64_t secret = 0;
    std::uint32_t me = 0;
    std::uint32_t size = 0;            // ranks in the job
    std::uint32_t max_message = 0;     // largest message payload (max Medium/Long)
    // The one source refused besides ranks out of range: `me`, unless this
    // rank's messages to itself go over udp too (a build without a
    // same-host conduit), then none (~0u).
    std::uint32_t refused_source = 0;
    // The job key's MAC, which every datagram must carry; null in a job run
    // without MACs (SLUICE_UDP_MAC=0), whose datagrams carry a zero tag.
    Mac *mac = nullptr;
};

// Checks and decodes `n` bytes.  On Drop::none `out` holds the datagram;
// otherwise `out` is unspecified and nothing else of the bytes may be used.
//
// A datagram that carries a whole Short AM (a round trip's) is checked by a
// fast path of a few word compares; anything else, and anything the fast
// path does not accept, goes through decode_full(), the decoder of every
// rule.  The fast path accepts a subset of what decode_full() accepts and
// decodes it to the same fields: the fuzz harness checks both on every
// input (src/conduits/udp/tests/fuzz_wire.cpp).
Drop decode(const std::uint8_t *data, std::size_t n, const Expect &expect, Datagram &out);
Drop decode_full(const std::uint8_t *data, std::size_t n, const Expect &expect, Datagram &out);

// Bytes a datagram takes on the wire.
inline constexpr std::size_t encoded_size(bool has_am, unsigned nargs, std::size_t payload_length) {
    return header_bytes + (has_am ? am_fixed_bytes + 4 * std::size_t{nargs} : 0) + payload_length;
}

// Writes a datagram into `buf` (of `capacity` bytes) and returns its size,
// or 0 if it does not fit or would not decode (the encoder's own checks are
// the decoder's, so nothing it writes is dropped as malformed).  `am` is
// given for the first datagram of a data message and null otherwise.  The
// tag is written zero: Mac::sign() fills it in once the datagram is whole.
std::size_t encode(const Header &h, const Am *am, const void *payload, std::size_t payload_length,
                   std::uint8_t *buf, std::size_t capacity, std::uint32_t max_message);

// encode() without its checks, for the first datagram of a message the
// conduit builds from one src/am has checked (a round trip's latency path).
// The fields must pass encode()'s checks and fit `capacity`; debug builds
// assert that they do.
std::size_t write(const Header &h, const Am *am, const void *payload, std::size_t payload_length,
                  std::uint8_t *buf);

// The gathered form of encode() and write(), for a payload sent from where
// it lies (a second iovec) rather than copied after the header: they write
// only the header and AM section of a datagram whose `payload_length`
// payload bytes follow them on the wire, and return how many bytes they
// wrote (the datagram's size less payload_length; encode_head: 0 where
// encode() returns 0).  The datagram is the header's bytes then the
// payload's: exactly what encode() writes into one buffer.
std::size_t encode_head(const Header &h, const Am *am, std::size_t payload_length, std::uint8_t *buf,
                        std::size_t capacity, std::uint32_t max_message);
std::size_t write_head(const Header &h, const Am *am, std::size_t payload_length, std::uint8_t *buf);

// Rewrites the cumulative and selective ack and the transmission number of
// an encoded datagram, so a retransmission carries what the sender knows
// now under a number of its own (its tag must be signed again).
void resend_update(std::uint8_t *datagram, std::uint32_t ack, std::uint32_t sack, std::uint64_t number);

} // namespace sluice::conduit::udp::wire
