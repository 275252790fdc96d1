// src/conduits/knobs.hpp - the conduits' own knobs: each conduit's
// knobs.def (src/conduits/NAME/knobs.def, the conduits configure built into
// libsluice, listed in the conduits.def autogen.sh writes), numbered here
// and added to src/base's knob table, which knows no conduit.
//
// A conduit reads one as base reads its own, through knob():
//   base::knob_size(knob(Knob::SMP_RING_SIZE))
#pragma once

#include "base/knobs.hpp"
#include "sluice_config.h"

namespace sluice::conduit {

enum class Knob : int {
#define SLUICE_KNOB(id, type, def, range, doc) id,
#define SLUICE_CONDUIT_KNOBS
#include "conduits/conduits.def"
#undef SLUICE_CONDUIT_KNOBS
#undef SLUICE_KNOB
    count_
};

// Adds the conduits' knobs to base's table, once; the runtime, the
// launcher and sluice-info call it before they read the environment.
void knobs_register();

// The number of a conduit knob in base's table (registering them first).
base::Knob knob(Knob k);

} // namespace sluice::conduit
