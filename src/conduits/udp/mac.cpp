// src/conduits/udp/mac.cpp - the udp datagram's MAC (mac.hpp, README.md
// "Authentication"), on Nettle's Poly1305-AES.
#include "conduits/udp/mac.hpp"

#include "conduits/udp/wire.hpp"

#include <nettle/memops.h>

#include <cassert>
#include <cstring>

namespace sluice::conduit::udp::wire {

Mac::Mac(const std::uint8_t (&key)[mac_key_bytes]) { poly1305_aes_set_key(&context_, key); }

void Mac::compute(const std::uint8_t *head, std::size_t head_length, const std::uint8_t *tail, std::size_t tail_length,
                  std::uint8_t *tag) {
    assert(head_length >= header_bytes);
    // The nonce: source and destination rank, then the transmission number,
    // as the header carries them (little-endian).
    std::uint8_t nonce[POLY1305_AES_NONCE_SIZE];
    std::memcpy(nonce, head + at_source, 8);
    std::memcpy(nonce + 8, head + at_number, 8);
    poly1305_aes_set_nonce(&context_, nonce);
    poly1305_aes_update(&context_, at_tag, head);
    poly1305_aes_update(&context_, head_length - header_bytes, head + header_bytes);
    if (tail_length) poly1305_aes_update(&context_, tail_length, tail);
    poly1305_aes_digest(&context_, mac_tag_bytes, tag);
}

void Mac::sign(std::uint8_t *head, std::size_t head_length, const std::uint8_t *tail, std::size_t tail_length) {
    compute(head, head_length, tail, tail_length, head + at_tag);
}

bool Mac::verify(const std::uint8_t *datagram, std::size_t n) {
    std::uint8_t tag[mac_tag_bytes];
    compute(datagram, n, nullptr, 0, tag);
    return memeql_sec(tag, datagram + at_tag, mac_tag_bytes);
}

} // namespace sluice::conduit::udp::wire
