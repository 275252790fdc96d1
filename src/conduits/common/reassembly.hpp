// src/conduits/common/reassembly.hpp - puts an AM back together from the
// fragments a conduit cut it into, for a conduit whose network carries
// less than a whole message per packet (udp's datagrams; a verbs UD queue
// pair's MTU).  README.md in this folder.
//
// The fragments of one message from one peer must arrive in order, one
// after the other (udp's sequence numbers guarantee it): the first carries
// the AM header and offset 0, each next one starts where the last ended.
// Reassembly is then a copy to the fragment's offset, with no table of
// partial messages: a Long's bytes go straight into the segment (after a
// bounds check against it, before any byte is written), a Medium's into a
// buffer of the message's length, unless the whole Medium came in its
// first fragment, which is delivered where it lies.
//
// Every rule a fragment can break is a Verdict; nothing is written for a
// fragment that breaks one.  What a conduit does with a broken rule is its
// own affair (udp's decoder already refuses most of them, so there it is a
// Sluice bug and fatal).  One Reassembly per peer; not thread-safe (udp
// touches it only under its delivery flag).
#pragma once

#include "conduits/transport.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::conduit::common {

inline constexpr unsigned max_args = 16;

// This rank's segment, where Longs land: [base, base + bytes).
struct SegmentBounds {
    std::uint64_t base = 0, bytes = 0;
    bool holds(std::uint64_t addr, std::uint64_t n) const {
        return addr >= base && n <= bytes && addr - base <= bytes - n;
    }
};

// One fragment as a conduit decoded it.
struct Fragment {
    bool first = false;               // carries the AM header (and offset 0)
    AmHeader header;                  // first: the message's header; its payload_length is ignored
    const std::uint32_t *args = nullptr;  // first: header.nargs arguments
    std::uint32_t message_length = 0; // payload bytes of the whole message (every fragment)
    std::uint32_t offset = 0;         // where this fragment's bytes go
    const std::uint8_t *bytes = nullptr;
    std::size_t length = 0;
};

enum class Verdict : std::uint8_t {
    more,             // taken; the message is not whole yet
    whole,            // taken; header(), args() and payload() are the message
    not_started,      // a continuation with no message open
    interrupted,      // a first fragment while the last message is not whole
    out_of_order,     // does not start where the last one ended (a gap, a duplicate, an overlap)
    beyond_length,    // offset + length past the message's length
    length_changed,   // a continuation announcing another message length
    outside_segment,  // a Long whose target range is not inside the segment
    too_many_args,    // more than max_args arguments
};
const char *verdict_name(Verdict v);

class Reassembly {
public:
    // Takes one fragment.  On Verdict::whole the message stays readable
    // until the next add(); a Medium's payload may point into `f.bytes`.
    Verdict add(const Fragment &f, const SegmentBounds &segment);

    bool open() const { return open_; }
    std::uint32_t received() const { return received_; }
    const AmHeader &header() const { return header_; }
    const std::uint32_t *args() const { return args_; }
    void *payload() const { return payload_; }

    // Forgets an open message (a peer that is gone).
    void reset() { open_ = false; }

private:
    Verdict start(const Fragment &f, const SegmentBounds &segment);

    bool open_ = false;
    AmHeader header_;
    std::uint32_t args_[max_args] = {};
    std::uint32_t received_ = 0;
    void *payload_ = nullptr;
    std::vector<std::uint8_t> medium_;  // a Medium of several fragments
};

} // namespace sluice::conduit::common
