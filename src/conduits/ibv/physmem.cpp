// src/conduits/ibv/physmem.cpp - SLUICE_PHYSMEM_MAX's syntax
// (physmem.hpp).
#include "conduits/ibv/physmem.hpp"

#include "base/knobs.hpp"

#include <cctype>
#include <cstdlib>

namespace sluice::conduit::ibv {
namespace {

bool real(const std::string &s, double &out) {
    if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return false;
    char *end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return *end == '\0';
}

} // namespace

bool physmem_parse(const std::string &text, std::uint64_t physical, std::uint64_t &bytes, std::string &why) {
    why = "'" + text + "' is neither a fraction of physical memory (0.5, 2/3) nor a size (12G)";
    double fraction = -1;
    if (const auto slash = text.find('/'); slash != std::string::npos) {
        double a = 0, b = 0;
        if (!real(text.substr(0, slash), a) || !real(text.substr(slash + 1), b) || b <= 0) return false;
        fraction = a / b;
    } else if (double v = 0; real(text, v) && v < 1) {
        fraction = v;
    }
    if (fraction >= 0) {
        if (fraction <= 0 || fraction > 1) {
            why = "'" + text + "' is not a fraction between 0 and 1 of physical memory";
            return false;
        }
        bytes = static_cast<std::uint64_t>(fraction * static_cast<double>(physical));
        return true;
    }
    std::string s = text;
    unsigned tera = 0;
    if (const auto n = s.size(); n > 1 && (s[n - 1] == 'T' || s[n - 1] == 't')) {
        s.back() = 'G';
        tera = 10;
    }
    std::size_t size = 0;
    if (!base::parse_size(s, size) || size == 0 || (tera && size > (~std::size_t{0} >> tera))) return false;
    bytes = std::uint64_t{size} << tera;
    return true;
}

} // namespace sluice::conduit::ibv
