// src/conduits/common/reassembly.cpp - fragments back into AMs
// (reassembly.hpp).
#include "conduits/common/reassembly.hpp"

#include <algorithm>
#include <cstring>

namespace sluice::conduit::common {

const char *verdict_name(Verdict v) {
    switch (v) {
    case Verdict::more: return "more";
    case Verdict::whole: return "whole";
    case Verdict::not_started: return "continuation with no message open";
    case Verdict::interrupted: return "new message before the last was whole";
    case Verdict::out_of_order: return "fragment not where the last one ended";
    case Verdict::beyond_length: return "fragment past the message's length";
    case Verdict::length_changed: return "fragment announcing another message length";
    case Verdict::outside_segment: return "Long outside this rank's segment";
    case Verdict::too_many_args: return "too many arguments";
    }
    return "?";
}

// The first fragment: checks the message as a whole, before any byte of it
// is written anywhere.
Verdict Reassembly::start(const Fragment &f, const SegmentBounds &segment) {
    if (open_) return Verdict::interrupted;
    if (f.offset != 0) return Verdict::out_of_order;
    if (f.header.nargs > max_args) return Verdict::too_many_args;
    if (f.length > f.message_length) return Verdict::beyond_length;
    if (f.header.category == AmCategory::long_ && !segment.holds(f.header.dest_addr, f.message_length))
        return Verdict::outside_segment;
    header_ = f.header;
    header_.payload_length = f.message_length;
    std::copy(f.args, f.args + f.header.nargs, args_);
    received_ = 0;
    payload_ = nullptr;
    if (header_.category == AmCategory::long_) {
        payload_ = reinterpret_cast<void *>(header_.dest_addr);
    } else if (header_.category == AmCategory::medium) {
        if (f.length == f.message_length) {
            payload_ = const_cast<std::uint8_t *>(f.bytes);  // whole in one fragment: no copy
        } else {
            medium_.resize(f.message_length);
            payload_ = medium_.data();
        }
    }
    open_ = true;
    return Verdict::more;
}

Verdict Reassembly::add(const Fragment &f, const SegmentBounds &segment) {
    if (f.first) {
        if (Verdict v = start(f, segment); v != Verdict::more) return v;
    } else {
        if (!open_) return Verdict::not_started;
        if (f.message_length != header_.payload_length) return Verdict::length_changed;
        if (f.offset != received_) return Verdict::out_of_order;
        if (f.length > f.message_length - f.offset) return Verdict::beyond_length;
    }
    // A Medium whole in its first fragment is delivered where it lies.
    if (f.length && payload_ != f.bytes && header_.category != AmCategory::short_)
        std::memcpy(static_cast<std::uint8_t *>(payload_) + f.offset, f.bytes, f.length);
    received_ += static_cast<std::uint32_t>(f.length);
    if (received_ < header_.payload_length) return Verdict::more;
    open_ = false;
    return Verdict::whole;
}

} // namespace sluice::conduit::common
