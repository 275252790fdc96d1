// src/conduits/common/connect_file.cpp - connect files, in GASNet-EX's ibv format
// (connect_file.hpp has the format).
#include "conduits/common/connect_file.hpp"

#include <cctype>
#include <sstream>

namespace sluice::conduit::common {
namespace {

int digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    return 99;
}

char digit_char(unsigned d) { return static_cast<char>(d < 10 ? '0' + d : 'a' + (d - 10)); }

// A number in `base` (no sign, at least one digit); false on anything else
// or beyond 2^32.
bool number(const std::string &s, unsigned base, std::uint64_t &out) {
    if (s.empty()) return false;
    out = 0;
    for (char c : s) {
        const int d = digit_value(c);
        if (d >= static_cast<int>(base)) return false;
        out = out * base + static_cast<unsigned>(d);
        if (out > 0xffffffffull) return false;
    }
    return true;
}

std::string trim(const std::string &s) {
    const auto first = s.find_first_not_of(" \t\r");
    if (first == std::string::npos) return "";
    return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::string in_base(std::uint32_t v, unsigned base) {
    std::string s;
    do {
        s.insert(s.begin(), digit_char(v % base));
        v /= base;
    } while (v);
    return s;
}

} // namespace

bool connect_file_peers(const std::string &text, std::uint32_t size, std::uint32_t rank, std::vector<bool> &wanted,
                        std::string &why) {
    wanted.assign(size, false);
    std::istringstream in(text);
    std::string line;
    unsigned base = 10;
    for (unsigned n = 1; std::getline(in, line); ++n) {
        const std::string where = "line " + std::to_string(n) + " ('" + trim(line) + "')";
        line = trim(line);
        if (line.empty() || line[0] == '#') continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) {
            why = where + ": no ':' (expected 'node: peers', 'size: N' or 'base: B')";
            return false;
        }
        const std::string left = trim(line.substr(0, colon)), right = trim(line.substr(colon + 1));
        std::uint64_t v = 0;
        if (left == "size" || left == "base") {
            if (!number(right, 10, v)) {
                why = where + ": '" + right + "' is not a decimal number";
                return false;
            }
            if (left == "size" && v != size) {
                why = where + ": the file is for " + std::to_string(v) + " ranks, the job has " + std::to_string(size);
                return false;
            }
            if (left == "base" && (v < 2 || v > 36)) {
                why = where + ": base " + std::to_string(v) + " is not 2-36";
                return false;
            }
            if (left == "base") base = static_cast<unsigned>(v);
            continue;
        }
        std::uint64_t node = 0;
        if (!number(left, base, node) || node >= size) {
            why = where + ": '" + left + "' is not a rank of this job in base " + std::to_string(base);
            return false;
        }
        std::istringstream items(right);
        std::string item;
        while (items >> item) {
            const auto dash = item.find('-');
            std::uint64_t lo = 0, hi = 0;
            const bool ok = dash == std::string::npos
                                ? number(item, base, lo) && (hi = lo, true)
                                : number(item.substr(0, dash), base, lo) && number(item.substr(dash + 1), base, hi);
            if (!ok || lo > hi || hi >= size) {
                why = where + ": '" + item + "' is not a rank or range of ranks of this job in base " +
                      std::to_string(base);
                return false;
            }
            for (std::uint64_t p = lo; p <= hi; ++p) {
                if (node == rank) wanted[p] = true;
                if (p == rank) wanted[node] = true;
            }
        }
    }
    wanted[rank] = false;
    return true;
}

std::string connect_file_text(std::uint32_t rank, std::uint32_t size, unsigned base, const std::vector<bool> &used) {
    std::string out = "base: " + std::to_string(base) + "\nsize: " + std::to_string(size) + "\n";
    const std::string head = in_base(rank, base) + ":";
    std::string line;
    for (std::uint32_t p = 0; p < used.size(); ++p) {
        if (!used[p] || p == rank) continue;
        if (line.size() > 72) {
            out += line + "\n";
            line.clear();
        }
        line += (line.empty() ? head : "") + " " + in_base(p, base);
    }
    if (!line.empty()) out += line + "\n";
    return out;
}

std::string connect_file_name(const std::string &pattern, std::uint32_t rank) {
    std::string out;
    for (char c : pattern) out += c == '%' ? std::to_string(rank) : std::string(1, c);
    return out;
}

} // namespace sluice::conduit::common
