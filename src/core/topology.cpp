// src/core/topology.cpp - topology.hpp through hwloc (2.x).
#include "sluice_config.h"

#include "core/topology.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef SLUICE_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace sluice::core::topology {

namespace {

std::string numbers(const std::vector<unsigned> &v) {
    std::string out;
    for (unsigned x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
    return out;
}

} // namespace

#ifdef SLUICE_HAVE_HWLOC
namespace {

// Whether this machine has one NUMA node at most, by the kernel's count,
// without reading the whole topology (memory_local runs at every start-up);
// false when hwloc is told to read another machine.
bool one_node_here() {
    if (std::getenv("HWLOC_XMLFILE") || std::getenv("HWLOC_SYNTHETIC")) return false;
    DIR *d = ::opendir("/sys/devices/system/node");
    if (!d) return true;
    int nodes = 0;
    while (const dirent *e = ::readdir(d))
        nodes += std::strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9';
    ::closedir(d);
    return nodes <= 1;
}


// The machine, read once (with its I/O devices: the network ones are
// wanted), or null with the reason.
struct Machine {
    hwloc_topology_t t = nullptr;
    std::string why;
    Machine() {
        if (hwloc_topology_init(&t) != 0) {
            t = nullptr;
            why = "hwloc could not start";
            return;
        }
        hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
#if HWLOC_API_VERSION >= 0x00020100
        // The Linux backend finds PCI devices and their network devices in
        // sysfs; hwloc's libpciaccess component would add only their names,
        // looked up in pci.ids at a cost of 5 s per process under
        // AddressSanitizer.
        (void)hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
#endif
        if (hwloc_topology_load(t) != 0) {
            hwloc_topology_destroy(t);
            t = nullptr;
            why = "hwloc could not read this machine's topology";
        }
    }
};

// Kept to the end of the process, never destroyed: destroying the last
// topology unloads hwloc's PCI plugin, whose library state then leaks
// out of sight (LeakSanitizer reports it at every exit).
Machine &machine_read() {
    static Machine *m = new Machine;
    return *m;
}

std::string list(hwloc_const_bitmap_t set) {
    char *s = nullptr;
    if (hwloc_bitmap_list_asprintf(&s, set) < 0 || !s) return "?";
    std::string out = s;
    std::free(s);
    return out;
}

// The objects of `type` whose PUs meet `cpus`, by OS index.
std::vector<unsigned> meeting(hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_cpuset_t cpus) {
    std::vector<unsigned> out;
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_obj_by_type(t, type, o));)
        if (o->cpuset && hwloc_bitmap_intersects(o->cpuset, cpus)) out.push_back(o->os_index);
    return out;
}

bool network_device(hwloc_obj_t o) {
    return o->attr && (o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK || o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS);
}

// The PUs of the machine part a device attaches to (its first non-I/O
// ancestor), or null.
hwloc_const_cpuset_t locality(hwloc_topology_t t, hwloc_obj_t o) {
    const hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(t, o);
    return a ? a->cpuset : nullptr;
}

} // namespace

Placement here() {
    Placement p;
    Machine &m = machine_read();
    if (!m.t) {
        p.why = m.why;
        return p;
    }
    hwloc_cpuset_t cpus = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(m.t, cpus, HWLOC_CPUBIND_PROCESS) != 0) {
        hwloc_bitmap_free(cpus);
        p.why = hwloc_topology_is_thissystem(m.t) ? "hwloc cannot read this process's binding"
                                                  : "the topology is not this machine's (HWLOC_THISSYSTEM=1 to "
                                                    "read the binding against it)";
        return p;
    }
    hwloc_bitmap_and(cpus, cpus, hwloc_topology_get_topology_cpuset(m.t));
    p.known = true;
    p.cpus = list(cpus);
    p.bound = !hwloc_bitmap_isequal(cpus, hwloc_topology_get_topology_cpuset(m.t));
    p.numa = meeting(m.t, HWLOC_OBJ_NUMANODE, cpus);
    p.packages = meeting(m.t, HWLOC_OBJ_PACKAGE, cpus);
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(m.t, o));) {
        const hwloc_const_cpuset_t near = network_device(o) ? locality(m.t, o) : nullptr;
        if (near && hwloc_bitmap_intersects(near, cpus) && o->name) p.nics.push_back(o->name);
    }
    hwloc_bitmap_free(cpus);
    return p;
}

std::string machine() {
    Machine &m = machine_read();
    if (!m.t) return "  " + m.why + "\n";
    hwloc_topology_t t = m.t;
    std::string out;
    char line[512];
    std::snprintf(line, sizeof line, "  %d package(s), %d NUMA node(s), %d core(s), %d PU(s)%s\n",
                  hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE), hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE),
                  hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE), hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU),
                  hwloc_topology_is_thissystem(t) ? "" : " (read from a file: not this machine's)");
    out += line;
    for (hwloc_obj_t pkg = nullptr; (pkg = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, pkg));) {
        std::snprintf(line, sizeof line, "  package %u: PUs %s, NUMA node(s) %s\n", pkg->os_index, list(pkg->cpuset).c_str(),
                      numbers(meeting(t, HWLOC_OBJ_NUMANODE, pkg->cpuset)).c_str());
        out += line;
    }
    for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));) {
        std::snprintf(line, sizeof line, "  NUMA node %u: PUs %s, %llu MiB\n", n->os_index, list(n->cpuset).c_str(),
                      static_cast<unsigned long long>(n->attr ? n->attr->numanode.local_memory >> 20 : 0));
        out += line;
    }
    bool any = false;
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(t, o));) {
        if (!network_device(o) || !o->name) continue;
        const hwloc_const_cpuset_t near = locality(t, o);
        const std::vector<unsigned> pkgs = near ? meeting(t, HWLOC_OBJ_PACKAGE, near) : std::vector<unsigned>{};
        const std::vector<unsigned> nodes = near ? meeting(t, HWLOC_OBJ_NUMANODE, near) : std::vector<unsigned>{};
        std::snprintf(line, sizeof line, "  NIC %s (%s): near PUs %s, package(s) %s, NUMA node(s) %s\n", o->name,
                      o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ? "InfiniBand/RDMA" : "network",
                      near ? list(near).c_str() : "?", numbers(pkgs).c_str(), numbers(nodes).c_str());
        out += line;
        any = true;
    }
    if (!any) out += "  no network device known to hwloc\n";
    return out;
}

int package() {
    const Placement p = here();
    return p.known && p.packages.size() == 1 ? static_cast<int>(p.packages[0]) : -1;
}

bool memory_local(void *addr, std::size_t length, std::string &said) {
    if (one_node_here()) {
        said = "one NUMA node: nothing to choose";
        return false;
    }
    // Whole pages within the range (a page shared with another's memory
    // is left where it is).
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t start = (reinterpret_cast<std::uintptr_t>(addr) + page - 1) & ~(page - 1);
    const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(addr) + length) & ~(page - 1);
    if (end <= start) {
        said = "less than a page: left where it is";
        return false;
    }
    addr = reinterpret_cast<void *>(start);
    length = end - start;
    Machine &m = machine_read();
    if (!m.t) {
        said = m.why;
        return false;
    }
    const Placement p = here();
    if (!p.known) {
        said = p.why;
        return false;
    }
    if (hwloc_get_nbobjs_by_type(m.t, HWLOC_OBJ_NUMANODE) < 2) {
        said = "one NUMA node: nothing to choose";
        return false;
    }
    if (p.numa.size() != 1) {
        said = "bound across " + std::to_string(p.numa.size()) + " NUMA nodes: left to first touch";
        return false;
    }
    hwloc_nodeset_t nodes = hwloc_bitmap_alloc();
    hwloc_bitmap_only(nodes, p.numa[0]);
    const int rc = hwloc_set_area_membind(m.t, addr, length, nodes, HWLOC_MEMBIND_BIND,
                                          HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_MIGRATE);
    hwloc_bitmap_free(nodes);
    said = rc == 0 ? "on NUMA node " + std::to_string(p.numa[0])
                   : "NUMA node " + std::to_string(p.numa[0]) + " refused (hwloc_set_area_membind failed)";
    return rc == 0;
}

#else

Placement here() {
    Placement p;
    p.why = "this build has no hwloc";
    return p;
}

std::string machine() { return "  this build has no hwloc (install libhwloc-dev and configure again)\n"; }

int package() { return -1; }

bool memory_local(void *, std::size_t, std::string &said) {
    said = "this build has no hwloc";
    return false;
}

#endif

std::string describe(const Placement &p) {
    if (!p.known) return "placement not known: " + p.why;
    std::string out = std::string(p.bound ? "bound to PUs " : "not bound (PUs ") + p.cpus + (p.bound ? " (" : ", ");
    out += "package " + numbers(p.packages) + ", NUMA node " + numbers(p.numa) + ")";
    std::string nics;
    for (const std::string &n : p.nics) nics += (nics.empty() ? "" : ", ") + n;
    out += ", nearest NICs: " + (nics.empty() ? std::string("none known") : nics);
    return out;
}

} // namespace sluice::core::topology
