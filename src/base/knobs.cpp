// src/base/knobs.cpp - parsing and listing of the knob table.
#include "base/knobs.hpp"
#include "sluice_config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

extern char **environ;

namespace sluice::base {
namespace {

struct KnobValue {
    std::string text;
    bool from_env = false;
    bool flag = false;
    std::int64_t integer = 0;
    std::size_t bytes = 0;
    double real = 0;
};

std::vector<KnobValue> values;  // one per knob of the table, once read
std::once_flag loaded_once;
int added_knobs = 0;

bool parse_bool(const std::string &t, bool &out) {
    std::string s = t;
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    if (s == "1" || s == "yes" || s == "true" || s == "on" || s == "y") { out = true; return true; }
    if (s == "0" || s == "no" || s == "false" || s == "off" || s == "n") { out = false; return true; }
    return false;
}

bool parse_value(const KnobInfo &info, const std::string &text, KnobValue &v) {
    v.text = text;
    switch (info.type) {
    case KnobType::Bool: return parse_bool(text, v.flag);
    case KnobType::Int: {
        errno = 0;
        char *end = nullptr;
        long long x = std::strtoll(text.c_str(), &end, 0);
        if (errno || end == text.c_str() || *end) return false;
        v.integer = x;
        return true;
    }
    case KnobType::Size: return parse_size(text, v.bytes);
    case KnobType::Double: {
        errno = 0;
        char *end = nullptr;
        double x = std::strtod(text.c_str(), &end);
        if (errno || end == text.c_str() || *end) return false;
        v.real = x;
        return true;
    }
    case KnobType::String: return true;
    case KnobType::Switch: {
        std::string s = text;
        std::transform(s.begin(), s.end(), s.begin(), ::tolower);
        v.integer = -1;
        if (s.empty() || s == "auto") return true;
        if (!parse_bool(text, v.flag)) return false;
        v.integer = v.flag;
        return true;
    }
    }
    return false;
}

// One piece of a range: [low, high], either side open when its text is empty.
struct Interval {
    std::string low, high;
};

std::vector<Interval> intervals_of(const char *range) {
    std::vector<Interval> out;
    std::string r = range ? range : "";
    std::size_t start = 0;
    while (start < r.size()) {
        std::size_t comma = r.find(',', start);
        std::string piece = r.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        piece.erase(0, piece.find_first_not_of(' '));
        piece.erase(piece.find_last_not_of(' ') + 1);
        const std::size_t dots = piece.find("..");
        if (dots == std::string::npos) out.push_back({piece, piece});
        else out.push_back({piece.substr(0, dots), piece.substr(dots + 2)});
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

// -1, 0, 1 as a is below, equal to or above the bound (parsed as the knob's type).
int compare(const KnobInfo &info, const KnobValue &a, const std::string &bound) {
    KnobValue b;
    if (!parse_value(info, bound, b)) return 0;  // a malformed bound in knobs.def: unit_knobs catches it
    switch (info.type) {
    case KnobType::Int: return a.integer < b.integer ? -1 : a.integer > b.integer;
    case KnobType::Size: return a.bytes < b.bytes ? -1 : a.bytes > b.bytes;
    case KnobType::Double: return a.real < b.real ? -1 : a.real > b.real;
    case KnobType::String: return a.text.compare(b.text) < 0 ? -1 : a.text != b.text;  // a list of values: equality
    default: return 0;
    }
}

bool in_range(const KnobInfo &info, const KnobValue &v) {
    const std::vector<Interval> pieces = intervals_of(info.range);
    if (pieces.empty() || (info.type == KnobType::String && v.text.empty())) return true;  // empty: the default
    for (const Interval &i : pieces)
        if ((i.low.empty() || compare(info, v, i.low) >= 0) && (i.high.empty() || compare(info, v, i.high) <= 0))
            return true;
    return false;
}

void ensure_loaded() {
    std::call_once(loaded_once, [] { (void)knobs_load(); });
}

const KnobValue &value(Knob k) {
    ensure_loaded();
    return values[static_cast<std::size_t>(k)];
}

std::vector<KnobInfo> &table_mutable() {
    static std::vector<KnobInfo> table = {
#define SLUICE_KNOB(id, type, def, range, doc) {"SLUICE_" #id, KnobType::type, def, range, doc, false},
#define SLUICE_INTERNAL(id, doc) {"SLUICE_" #id, KnobType::String, "", "", doc, true},
#include "base/knobs.def"
#undef SLUICE_KNOB
#undef SLUICE_INTERNAL
    };
    return table;
}

// The knob's value from the environment, else its default; a message in
// `errors` for a value that is malformed or out of range.
KnobValue knob_read(const KnobInfo &info, std::vector<std::string> &errors) {
    KnobValue v;
    const char *env = std::getenv(info.name);
    const bool parsed = env && parse_value(info, env, v);
    if (parsed && in_range(info, v)) {
        v.from_env = true;
        return v;
    }
    if (env) {
        const std::string range = knob_range_text(info);
        std::string e = std::string(info.name) + "=" + env;
        if (!parsed)
            e += std::string(" is not a valid ") + knob_type_name(info.type) +
                 (range.empty() ? "" : "; it must be " + range);
        else
            e += " is out of range: it must be " + range;
        e += std::string(" (default ") + (*info.default_value ? info.default_value : "empty") + "). " + info.name +
             ": " + info.doc;
        errors.push_back(e);
    }
    v = KnobValue{};
    (void)parse_value(info, info.default_value, v);
    return v;
}

} // namespace

const std::vector<KnobInfo> &knob_table() { return table_mutable(); }

int knob_count() { return static_cast<int>(Knob::count_) + added_knobs; }

int knobs_add(const KnobInfo *infos, std::size_t n) {
    std::vector<KnobInfo> &table = table_mutable();
    const int first = knob_count();
    table.insert(table.begin() + first, infos, infos + n);
    added_knobs += static_cast<int>(n);
    if (!values.empty()) {
        std::vector<std::string> ignored;  // the next knobs_load() reports them
        for (std::size_t i = 0; i < n; ++i) values.push_back(knob_read(infos[i], ignored));
    }
    return first;
}

const char *knob_type_name(KnobType type) {
    switch (type) {
    case KnobType::Bool: return "bool";
    case KnobType::Int: return "int";
    case KnobType::Size: return "size";
    case KnobType::Double: return "double";
    case KnobType::String: return "string";
    case KnobType::Switch: return "switch (auto, 1 or 0)";
    }
    return "?";
}

std::string knob_range_text(const KnobInfo &info) {
    std::string out;
    const std::vector<Interval> pieces = intervals_of(info.range);
    for (std::size_t n = 0; n < pieces.size(); ++n) {
        const Interval &i = pieces[n];
        if (n) out += n + 1 == pieces.size() ? ", or " : ", ";
        if (i.low == i.high) out += i.low;
        else if (i.high.empty()) out += i.low + " or more";
        else if (i.low.empty()) out += "at most " + i.high;
        else out += i.low + " to " + i.high;
    }
    return out;
}

bool knob_value_valid(const KnobInfo &info, const std::string &text) {
    KnobValue v;
    return parse_value(info, text, v) && in_range(info, v);
}

std::vector<std::string> knobs_load() {
    std::vector<std::string> errors;
    const auto &table = knob_table();
    // In place: a reference knob_string() returned stays valid.
    values.resize(static_cast<std::size_t>(knob_count()));
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = knob_read(table[i], errors);
    return errors;
}

namespace {

// "SLUICE_X_n" -> "SLUICE_X_" for a family's entry, else "".
std::string family_prefix(const KnobInfo &info) {
    const std::string name = info.name;
    if (name.size() < 3 || name.compare(name.size() - 2, 2, "_n") != 0) return "";
    return name.substr(0, name.size() - 1);
}

} // namespace

std::string knob_family_string(Knob k, unsigned n) {
    const std::string name = family_prefix(knob_table()[static_cast<int>(k)]) + std::to_string(n);
    const char *v = std::getenv(name.c_str());
    return v ? v : "";
}

bool knob_family_any(Knob k) {
    const std::string prefix = family_prefix(knob_table()[static_cast<int>(k)]);
    for (char **e = environ; e && *e; ++e) {
        const char *v = *e;
        if (std::strncmp(v, prefix.c_str(), prefix.size()) != 0) continue;
        const char *d = v + prefix.size();
        while (*d >= '0' && *d <= '9') ++d;
        if (d != v + prefix.size() && *d == '=') return true;
    }
    return false;
}

bool knob_bool(Knob k) { return value(k).flag; }
bool knob_switch(Knob k, bool when_auto) { return value(k).integer < 0 ? when_auto : value(k).integer != 0; }
bool knob_auto(Knob k) { return value(k).integer < 0; }
std::int64_t knob_int(Knob k) { return value(k).integer; }
std::size_t knob_size(Knob k) { return value(k).bytes; }
double knob_double(Knob k) { return value(k).real; }
const std::string &knob_string(Knob k) { return value(k).text; }
bool knob_is_set(Knob k) { return value(k).from_env; }

std::string knobs_listing() {
    std::string out;
    const auto &table = knob_table();
    for (int i = 0; i < knob_count(); ++i) {
        const KnobValue &v = value(static_cast<Knob>(i));
        out += table[i].name;
        out += " = ";
        out += v.text.empty() ? "\"\"" : v.text;
        out += v.from_env ? "   (environment)\n" : "   (default)\n";
    }
    return out;
}

std::size_t edit_distance(const std::string &a, const std::string &b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = up;
        }
    }
    return row[b.size()];
}

std::vector<std::string> knobs_unknown() {
    std::vector<std::string> warnings;
    const auto &table = knob_table();
    for (char **e = environ; e && *e; ++e) {
        if (std::strncmp(*e, "SLUICE_", 7) != 0) continue;
        const char *eq = std::strchr(*e, '=');
        std::string name(*e, eq ? static_cast<std::size_t>(eq - *e) : std::strlen(*e));
        const KnobInfo *best = nullptr;
        std::size_t best_distance = SIZE_MAX;
        for (const auto &info : table) {
            std::size_t d = edit_distance(name, info.name);
            // A member of a family: its prefix, then digits.
            const std::string prefix = family_prefix(info);
            if (!prefix.empty() && name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                name.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
                d = 0;
            if (d < best_distance) { best_distance = d; best = &info; }
        }
        if (best_distance == 0) continue;
        std::string w = "unknown variable " + name + " is ignored";
        if (best && best_distance <= std::max<std::size_t>(3, name.size() / 4))
            w += "; did you mean " + std::string(best->name) + "?";
        else
            w += "; `sluice-info` lists every knob";
        warnings.push_back(w);
    }
    return warnings;
}

double exit_timeout_seconds(unsigned ranks) {
    double t = knob_double(Knob::EXIT_TIMEOUT);
    return t > 0 ? t : 2.0 + 0.05 * ranks;
}

bool parse_size(const std::string &text, std::size_t &out) {
    // strtoull accepts leading blanks and a sign; a size must start with a digit.
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
    errno = 0;
    char *end = nullptr;
    unsigned long long x = std::strtoull(text.c_str(), &end, 0);
    if (errno || end == text.c_str()) return false;
    std::string suffix(end);
    std::transform(suffix.begin(), suffix.end(), suffix.begin(), ::toupper);
    unsigned shift = 0;
    if (suffix.empty() || suffix == "B") shift = 0;
    else if (suffix == "K" || suffix == "KB" || suffix == "KIB") shift = 10;
    else if (suffix == "M" || suffix == "MB" || suffix == "MIB") shift = 20;
    else if (suffix == "G" || suffix == "GB" || suffix == "GIB") shift = 30;
    else return false;
    if (shift && x > (~0ull >> shift)) return false;
    out = static_cast<std::size_t>(x << shift);
    return true;
}

} // namespace sluice::base
