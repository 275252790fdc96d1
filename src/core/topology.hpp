// src/core/topology.hpp - the machine as this process sees it, through
// hwloc: its binding, the NUMA nodes and packages that binding lies on,
// the network devices near it, and memory placed on its own NUMA node.
// hwloc reads the machine once per process (or the XML file HWLOC_XMLFILE
// names, with HWLOC_THISSYSTEM=1 for a binding read from this one).  A
// build without hwloc answers "not known" everywhere.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sluice::core::topology {

// Where this process runs.
struct Placement {
    bool known = false;                 // hwloc read the machine and the binding
    std::string why;                    // when not known
    std::string cpus;                   // the PUs it may run on, as a list ("0-3,8")
    bool bound = false;                 // on fewer PUs than the machine has
    std::vector<unsigned> numa;         // the NUMA nodes (OS indexes) those PUs are on
    std::vector<unsigned> packages;     // the packages (sockets), OS indexes
    std::vector<std::string> nics;      // network and InfiniBand devices attached within them
};

// This process now (its binding may have changed since the last call).
Placement here();

// One line for SLUICE_VERBOSE: "bound to PUs 0 (package 0, NUMA node 0), nearest NICs: mlx5_0".
std::string describe(const Placement &p);

// The machine, several lines, for sluice-info --topology: packages, NUMA
// nodes with their PUs and memory, network devices and where they attach.
std::string machine();

// The one package this process is bound within, or -1 (not bound within
// one, or not known).
int package();

// Places [addr, addr + length) on this process's NUMA node when its
// binding lies within one (before the pages are first touched; those
// already touched move).  True when placed; `said` tells what was done
// or why not, for SLUICE_VERBOSE.
bool memory_local(void *addr, std::size_t length, std::string &said);

} // namespace sluice::core::topology
