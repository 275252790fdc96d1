// src/conduits/knobs.cpp - the conduits' knobs into base's table
// (knobs.hpp).
#include "conduits/knobs.hpp"

#include <mutex>

namespace sluice::conduit {
namespace {

const base::KnobInfo conduit_knobs[] = {
#define SLUICE_KNOB(id, type, def, range, doc) {"SLUICE_" #id, base::KnobType::type, def, range, doc, false},
#define SLUICE_CONDUIT_KNOBS
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_KNOBS
#undef SLUICE_KNOB
    {nullptr, base::KnobType::String, "", "", "", false},  // a build without conduit knobs
};
constexpr std::size_t conduit_knob_count = sizeof conduit_knobs / sizeof conduit_knobs[0] - 1;
static_assert(conduit_knob_count == static_cast<std::size_t>(Knob::count_));

int first_knob = -1;
std::once_flag registered;

} // namespace

void knobs_register() {
    std::call_once(registered, [] { first_knob = base::knobs_add(conduit_knobs, conduit_knob_count); });
}

base::Knob knob(Knob k) {
    knobs_register();
    return static_cast<base::Knob>(first_knob + static_cast<int>(k));
}

} // namespace sluice::conduit
