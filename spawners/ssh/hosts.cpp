// spawners/ssh/hosts.cpp - the host list (knobs, node file, Slurm, PBS), and
// the shape of the tree of control processes.
#include "spawners/ssh/hosts.hpp"

#include "base/knobs.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sluice::spawner::ssh {
namespace {

void hosts_add(std::vector<std::string> &hosts, const std::string &name) {
    if (!name.empty() && std::find(hosts.begin(), hosts.end(), name) == hosts.end()) hosts.push_back(name);
}

// Names separated by commas, spaces, tabs or newlines.
void hosts_split(const std::string &text, std::vector<std::string> &hosts) {
    std::string name;
    for (char c : text + ",") {
        if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            hosts_add(hosts, name);
            name.clear();
        } else {
            name += c;
        }
    }
}

// One host per line (PBS repeats a host once per slot); '#' starts a comment.
bool nodefile_read(const std::string &path, const char *knob, std::vector<std::string> &hosts, std::string &error) {
    std::ifstream in(path);
    if (!in) {
        error = std::string("cannot read the node file ") + path + " (" + knob + "); fix: give a readable file";
        return false;
    }
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream words(line);
        std::string name;
        if (words >> name) hosts_add(hosts, name);
    }
    return true;
}

// "1-3,5" into numbers, keeping the width of zero-padded ones ("08-10").
bool ranges_expand(const std::string &ranges, std::vector<std::string> &out) {
    std::istringstream in(ranges);
    std::string part;
    while (std::getline(in, part, ',')) {
        const std::size_t dash = part.find('-');
        const std::string lo = part.substr(0, dash), hi = dash == std::string::npos ? lo : part.substr(dash + 1);
        if (lo.empty() || hi.empty() || lo.find_first_not_of("0123456789") != std::string::npos ||
            hi.find_first_not_of("0123456789") != std::string::npos || lo.size() > 9 || hi.size() > 9)
            return false;
        const unsigned long a = std::stoul(lo), b = std::stoul(hi);
        if (b < a || b - a > 100000) return false;
        for (unsigned long v = a; v <= b; ++v) {
            std::string digits = std::to_string(v);
            if (lo.size() > 1 && lo[0] == '0' && digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
            out.push_back(digits);
        }
    }
    return true;
}

// One name of a Slurm list, with any number of bracket groups.
bool name_expand(const std::string &name, std::vector<std::string> &out) {
    const std::size_t open = name.find('[');
    if (open == std::string::npos) {
        out.push_back(name);
        return name.find(']') == std::string::npos;
    }
    const std::size_t close = name.find(']', open);
    if (close == std::string::npos) return false;
    std::vector<std::string> numbers, tails;
    if (!ranges_expand(name.substr(open + 1, close - open - 1), numbers) || !name_expand(name.substr(close + 1), tails))
        return false;
    for (const auto &n : numbers)
        for (const auto &t : tails) out.push_back(name.substr(0, open) + n + t);
    return true;
}

} // namespace

bool slurm_hosts_expand(const std::string &text, std::vector<std::string> &hosts, std::string &error) {
    // Split at commas outside brackets; an unclosed bracket ends the last name.
    std::vector<std::string> names(1);
    int depth = 0;
    for (char c : text) {
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        if (c == ',' && depth == 0)
            names.emplace_back();
        else
            names.back() += c;
    }
    for (const auto &n : names) {
        std::vector<std::string> expanded;
        if (n.empty()) continue;
        if (!name_expand(n, expanded)) {
            error = "cannot read the host list '" + text + "' (at '" + n +
                    "'); fix: set SLUICE_SSH_NODES to the hosts, separated by commas";
            return false;
        }
        for (const auto &e : expanded) hosts_add(hosts, e);
    }
    return true;
}

bool hosts_find(std::vector<std::string> &hosts, std::string &source, std::string &error) {
    hosts.clear();
    const std::string &nodes = base::knob_string(base::Knob::SSH_NODES);
    const std::string &nodefile = base::knob_string(base::Knob::SSH_NODEFILE);
    const char *slurm = std::getenv("SLURM_JOB_NODELIST");
    const char *pbs = std::getenv("PBS_NODEFILE");
    if (!nodes.empty()) {
        source = "SLUICE_SSH_NODES";
        hosts_split(nodes, hosts);
    } else if (!nodefile.empty()) {
        source = "SLUICE_SSH_NODEFILE=" + nodefile;
        if (!nodefile_read(nodefile, "SLUICE_SSH_NODEFILE", hosts, error)) return false;
    } else if (slurm && *slurm) {
        source = "SLURM_JOB_NODELIST";
        if (!slurm_hosts_expand(slurm, hosts, error)) return false;
    } else if (pbs && *pbs) {
        source = std::string("PBS_NODEFILE=") + pbs;
        if (!nodefile_read(pbs, "PBS_NODEFILE", hosts, error)) return false;
    } else {
        error = "the ssh spawner has no host list; fix: set SLUICE_SSH_NODES=host1,host2,... or "
                "SLUICE_SSH_NODEFILE=file (or run inside a Slurm or PBS allocation)";
        return false;
    }
    if (hosts.empty()) {
        error = source + " names no host; fix: list at least one host";
        return false;
    }
    return true;
}

std::string host_address_part(const std::string &host) {
    const std::size_t at = host.rfind('@');
    return at == std::string::npos ? host : host.substr(at + 1);
}

std::vector<Subtree> subtrees_split(unsigned first, unsigned count, unsigned degree) {
    std::vector<Subtree> parts;
    const unsigned n = std::min(std::max(degree, 1u), count);
    for (unsigned i = 0, at = first; i < n; ++i) {
        const unsigned size = count / n + (i < count % n ? 1 : 0);
        parts.push_back({at, size});
        at += size;
    }
    return parts;
}

unsigned tree_depth(unsigned hosts, unsigned degree) {
    // Hops from sluicerun to the deepest host of each subtree.
    unsigned deepest = 0;
    for (const Subtree &s : subtrees_split(0, hosts, degree)) {
        unsigned depth = 1;
        for (unsigned below = s.count - 1; below > 0; ++depth) {
            // The largest subtree of the next level is the one that decides.
            below = subtrees_split(0, below, degree).front().count - 1;
        }
        deepest = std::max(deepest, depth);
    }
    return deepest;
}

} // namespace sluice::spawner::ssh
