// src/conduits/udp/mac.hpp - the udp datagram's message authentication
// code: UMAC-64 (RFC 4418, Nettle) under the job's key, over every byte of
// the datagram but the tag field.  The nonce is the datagram's source rank,
// destination rank and transmission number (wire.hpp), which a sender never
// repeats to one destination within a job: README.md, "Authentication",
// says why that holds for retransmissions and acks too.
#pragma once

#include <nettle/umac.h>

#include <cstddef>
#include <cstdint>

namespace sluice::conduit::udp::wire {

inline constexpr std::size_t mac_key_bytes = UMAC_KEY_SIZE;
// The header's tag field (wire.hpp): the tag, then zeros to its end.
inline constexpr std::size_t mac_tag_bytes = 16;
inline constexpr std::size_t mac_digest_bytes = UMAC64_DIGEST_SIZE;

// One job key, set once; sign() and verify() change their context's running
// state, so a Mac serves one thread at a time (udp calls it under its lock).
class Mac {
public:
    explicit Mac(const std::uint8_t (&key)[mac_key_bytes]);

    // Writes the tag of the datagram made of `head_length` bytes at `head`
    // (its header, with the source, destination and transmission number
    // already written, and whatever follows the header there) and then
    // `tail_length` bytes at `tail` (a payload sent from where it lies).
    void sign(std::uint8_t *head, std::size_t head_length, const std::uint8_t *tail, std::size_t tail_length);

    // Whether the `n` bytes at `datagram` carry the tag sign() writes for
    // them.  `n` is at least wire::header_bytes.  Compared in constant time.
    bool verify(const std::uint8_t *datagram, std::size_t n);

private:
    // The tag of the datagram's bytes outside its tag field, into `tag`.
    static void compute(umac64_ctx &context, const std::uint8_t *head, std::size_t head_length,
                        const std::uint8_t *tail, std::size_t tail_length, std::uint8_t *tag);

    // One context each way: UMAC keeps the pad of the last nonce, which
    // serves the next transmission number of the same sender.
    umac64_ctx sign_, verify_;
};

} // namespace sluice::conduit::udp::wire
