// src/base/knobs.hpp - the knob table (declared in knobs.def) and its uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::base {

enum class KnobType { Bool, Int, Size, Double, String, Switch };

enum class Knob : int {
#define SLUICE_KNOB(id, type, def, range, doc) id,
#define SLUICE_INTERNAL(id, doc)
#include "base/knobs.def"
#undef SLUICE_KNOB
#undef SLUICE_INTERNAL
    count_
};

struct KnobInfo {
    const char *name;   // full variable name, e.g. "SLUICE_VERBOSEENV"
    KnobType type;
    const char *default_value;
    const char *range;  // accepted values (knobs.def), "" for any
    const char *doc;
    bool internal;      // set by the launcher, not a user knob
};

// Every declared name: this file's knobs (numbered as Knob), the knobs
// added by the layers above (numbered from Knob::count_ on, in the order
// added), then the internal variables.
const std::vector<KnobInfo> &knob_table();
// The number of knobs in the table, added ones included.
int knob_count();
// Adds the knobs of a layer above this one (src/conduits/knobs.cpp: each
// conduit's knobs.def) and returns the number of the first, a Knob value
// from Knob::count_ on; a later knobs_load() reads them with the others
// (and so does this call, if the table was read already).  Not while
// another thread reads knobs.
int knobs_add(const KnobInfo *infos, std::size_t n);
const char *knob_type_name(KnobType type);

// Reads the environment (again).  Returns one message per malformed or
// out-of-range value, naming knob, value, range and doc; such a value falls
// back to the default, and the caller decides whether to refuse the job.
std::vector<std::string> knobs_load();

// The range of a knob for people: "8 to 1024", "0, or 576 to 65535",
// "0 or more"; "" for a knob that takes any value of its type.
std::string knob_range_text(const KnobInfo &info);
// Whether `text` is a well-formed value of the knob inside its range.
bool knob_value_valid(const KnobInfo &info, const std::string &text);

// A family of knobs (its name ends in "_n", e.g. SLUICE_IBV_PORTS_n): the
// value of the member for `n` (SLUICE_IBV_PORTS_1), "" when it is unset.
// Members are strings, read as they are; knobs_unknown() accepts them.
std::string knob_family_string(Knob k, unsigned n);
// Whether any member of the family is set.
bool knob_family_any(Knob k);

bool knob_bool(Knob k);
// A Switch knob: 1 or 0 (as a Bool's spellings), else (auto) `when_auto`.
bool knob_switch(Knob k, bool when_auto);
bool knob_auto(Knob k);  // a Switch knob is auto
std::int64_t knob_int(Knob k);
std::size_t knob_size(Knob k);
double knob_double(Knob k);
const std::string &knob_string(Knob k);
// True if the value came from the environment rather than the default.
bool knob_is_set(Knob k);

// "SLUICE_X = value (environment|default)" lines, one per knob.
std::string knobs_listing();
// One warning per SLUICE_* variable in the environment that is not declared,
// with the closest declared name ("did you mean ...").
std::vector<std::string> knobs_unknown();

// Seconds the exit protocol may take for a job of `ranks` ranks:
// SLUICE_EXIT_TIMEOUT if set above 0, else 2 + 0.05 x ranks.
double exit_timeout_seconds(unsigned ranks);

// "64K", "16M", "1G", "4096" -> bytes.  False if malformed.
bool parse_size(const std::string &text, std::size_t &out);
std::size_t edit_distance(const std::string &a, const std::string &b);

} // namespace sluice::base
