// src/credit/knobs.hpp - the SLUICE_CREDIT_* knobs as an engine Config.
// Kept apart from credit.hpp, which depends on the standard library only
// (the simulator compiles the engine without the rest of Sluice).
#pragma once

#include "credit/credit.hpp"

#include <string>
#include <vector>

namespace sluice::credit {

// Flow control wanted for transports that declare `needs_credits`
// (SLUICE_CREDIT_FLOW auto), or for every transport (1), or never (0).
enum class Flow { automatic, forced, disabled };
// `prefs`: a conduit's preferences (Preferences), or null.
Flow flow_from_knobs(const Preferences *prefs = nullptr);

// Config::defaults for this job, then every SLUICE_CREDIT_* knob that is
// set.  `largest_request` is the receive space of the largest request, so
// one credit is a min_credits-th of it.  `notes` gets one line per knob
// that was adjusted (Config::normalize) or is malformed.
Config config_from_knobs(Peer nodes, Peer me, std::size_t largest_request, std::vector<std::string> &notes,
                         const Preferences *prefs = nullptr);

} // namespace sluice::credit
