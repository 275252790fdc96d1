// src/conduits/udp/mac.cpp - the udp datagram's MAC (mac.hpp, README.md
// "Authentication"), on Nettle's UMAC-64.
#include "conduits/udp/mac.hpp"

#include "conduits/udp/wire.hpp"

#include <nettle/memops.h>

#include <cassert>
#include <cstring>

namespace sluice::conduit::udp::wire {

Mac::Mac(const std::uint8_t (&key)[mac_key_bytes]) {
    umac64_set_key(&sign_, key);
    umac64_set_key(&verify_, key);
}

void Mac::compute(umac64_ctx &context, const std::uint8_t *head, std::size_t head_length, const std::uint8_t *tail,
                  std::size_t tail_length, std::uint8_t *tag) {
    assert(head_length >= header_bytes);
    // The nonce: source and destination rank, then the transmission number,
    // as the header carries them (little-endian).
    std::uint8_t nonce[16];
    std::memcpy(nonce, head + at_source, 8);
    std::memcpy(nonce + 8, head + at_number, 8);
    umac64_set_nonce(&context, sizeof nonce, nonce);
    umac64_update(&context, at_tag, head);
    umac64_update(&context, head_length - header_bytes, head + header_bytes);
    if (tail_length) umac64_update(&context, tail_length, tail);
    umac64_digest(&context, mac_digest_bytes, tag);
}

void Mac::sign(std::uint8_t *head, std::size_t head_length, const std::uint8_t *tail, std::size_t tail_length) {
    compute(sign_, head, head_length, tail, tail_length, head + at_tag);
    std::memset(head + at_tag + mac_digest_bytes, 0, mac_tag_bytes - mac_digest_bytes);
}

bool Mac::verify(const std::uint8_t *datagram, std::size_t n) {
    std::uint8_t tag[mac_tag_bytes] = {};
    compute(verify_, datagram, n, nullptr, 0, tag);
    return memeql_sec(tag, datagram + at_tag, mac_tag_bytes);
}

} // namespace sluice::conduit::udp::wire
