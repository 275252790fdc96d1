// src/credit/preferences.hpp - what a conduit may ask of flow control
// (Capabilities::credit_prefs in src/conduits/transport.hpp), apart from
// the credit machinery itself (credit.hpp), so that the transport layer
// needs no more of it.
#pragma once

#include <cstdint>

namespace sluice::credit {

enum class Policy : std::uint8_t { off, fixed, dynamic, demand };

// Flow control as a conduit's own knobs ask it (the portals conduit's
// SLUICE_PORTALS_FLOW_CONTROL, _DYNAMIC_CREDITS, _MAX_CRED_PER_NODE,
// _EPOCH_DURATION): each applies where the SLUICE_CREDIT_* knob it
// stands for is unset (src/credit/knobs.cpp).
struct Preferences {
    bool set = false;          // a conduit asks anything at all
    bool flow = true;          // false: no flow control (SLUICE_CREDIT_FLOW)
    Policy policy = Policy::dynamic;  // SLUICE_CREDIT_POLICY
    unsigned max_per_peer = 0;        // SLUICE_CREDIT_MAX_PER_PEER; 0: no preference
    unsigned epoch_length = 0;        // SLUICE_CREDIT_EPOCH; 0: no preference
};

} // namespace sluice::credit
