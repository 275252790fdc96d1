// spawners/ssh/hosts.hpp - where an ssh job runs: the host list, the block
// placement of ranks on hosts, and the tree of control processes.
#pragma once

#include <string>
#include <vector>

namespace sluice::spawner::ssh {

// The hosts, in order, duplicates dropped (the first keeps its place), from
// SLUICE_SSH_NODES, else SLUICE_SSH_NODEFILE, else SLURM_JOB_NODELIST, else
// PBS_NODEFILE.  `source` names the one used.  False with "what; fix: how".
bool hosts_find(std::vector<std::string> &hosts, std::string &source, std::string &error);

// Slurm's compressed host list: "n[1-3,5],gpu[08-09]" -> n1 n2 n3 n5 gpu08
// gpu09 (zero padding kept; several bracket groups in one name multiply).
bool slurm_hosts_expand(const std::string &text, std::vector<std::string> &hosts, std::string &error);

// "user@host" -> "host": the name to look up when an address is needed.
std::string host_address_part(const std::string &host);

// Ranks in blocks over hosts: the first ranks % hosts hosts get one more.
struct Placement {
    unsigned ranks = 0, hosts = 0;
    unsigned count(unsigned host) const { return ranks / hosts + (host < ranks % hosts ? 1 : 0); }
    unsigned first(unsigned host) const { return host * (ranks / hosts) + (host < ranks % hosts ? host : ranks % hosts); }
};

// A part of the tree: hosts [first, first + count).  Its first host runs the
// control process that starts the others (through subtrees_split of the
// rest), so every subtree holds a contiguous block of ranks.
struct Subtree {
    unsigned first = 0, count = 0;
};

// Hosts [first, first + count) cut into at most `degree` subtrees of nearly
// equal size, in order.
std::vector<Subtree> subtrees_split(unsigned first, unsigned count, unsigned degree);

// ssh round trips in sequence before the last host runs: the tree's depth
// below sluicerun, which starts the subtrees of all hosts.
unsigned tree_depth(unsigned hosts, unsigned degree);

} // namespace sluice::spawner::ssh
