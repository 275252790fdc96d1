// src/core/sluice_info.cpp - the `sluice-info` program: what this build of
// Sluice offers (knobs, conduits, spawners, AM limits) and the knob reference
// in markdown (docs/knobs.md is its output).  It reads the tables only and
// never starts the runtime (no sluice_init).
#include "sluice_config.h"

#include "atomic/atomic.hpp"
#include "base/knobs.hpp"
#include "conduits/knobs.hpp"
#include "conduits/registry.hpp"
#include "core/topology.hpp"
#include "spawners/bootstrap.hpp"

#include <sluice.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using sluice::base::Knob;
using sluice::base::KnobInfo;
using sluice::base::KnobType;

const char usage_text[] =
    "usage: sluice-info [--knobs] [--conduits] [--spawners] [--limits] [--atomics] [--topology] [--markdown]\n"
    "                   [--conduit-list[=network|same-host]] [--version] [--help]\n"
    "With no option, prints the knobs, conduits, spawners and limits.\n"
    "  --knobs     every SLUICE_* environment knob: type, default, value now, doc\n"
    "  --conduits  the conduits compiled in: priority, probe here, which would be chosen\n"
    "  --conduit-list[=KIND]  for scripts: one line per conduit (of KIND), by priority:\n"
    "              name, kind and \"ok\" or why its probe fails, separated by tabs\n"
    "  --spawners  the bootstrap backends compiled in\n"
    "  --limits    AM limits (arguments, handler indices, payload sizes)\n"
    "  --atomics   the path an atomic domain takes over each conduit, and why\n"
    "  --topology  the machine as a rank started here sees it (hwloc): packages, NUMA nodes,\n"
    "              network devices and where they attach, and this process's placement\n"
    "  --markdown  the knob reference as markdown (this is docs/knobs.md)\n"
    "  --version   the Sluice version\n";

std::string markdown_cell(const char *text) {
    std::string out;
    for (const char *p = text; *p; ++p) {
        if (*p == '|') out += '\\';
        out += *p;
    }
    return out;
}

void print_version() {
    std::printf("sluice-info (Sluice) %s, API %d.%d\n", PACKAGE_VERSION, SLUICE_VERSION_MAJOR,
                SLUICE_VERSION_MINOR);
}

void print_knobs() {
    const std::vector<std::string> malformed = sluice::base::knobs_load();
    const auto &table = sluice::base::knob_table();
    std::printf("Knobs (environment variables, read at sluice_init; "
                "SLUICE_VERBOSEENV=1 lists them at run time):\n");
    for (std::size_t i = 0; i < table.size(); ++i) {
        const KnobInfo &k = table[i];
        if (k.internal) {
            std::printf("  %s  (internal, not for users)\n      %s\n", k.name, k.doc);
            continue;
        }
        const Knob id = static_cast<Knob>(i);
        std::printf("  %s  %s, default \"%s\"", k.name, sluice::base::knob_type_name(k.type),
                    k.default_value);
        if (const std::string range = sluice::base::knob_range_text(k); !range.empty())
            std::printf(", range %s", range.c_str());
        if (sluice::base::knob_is_set(id))
            std::printf(", set to \"%s\"", sluice::base::knob_string(id).c_str());
        std::printf("\n      %s\n", k.doc);
    }
    for (const std::string &m : malformed) std::printf("  error: %s\n", m.c_str());
    for (const std::string &w : sluice::base::knobs_unknown())
        std::printf("  warning: %s\n", w.c_str());
}

// The choice core would make in this environment, and why.
void print_choice(const std::vector<sluice::conduit::TransportInfo> &registry, bool network) {
    using namespace sluice::conduit;
    const ConduitChoice c = network ? conduit_choose(registry, true, sluice::base::knob_string(Knob::NETWORK),
                                                     "SLUICE_NETWORK")
                                    : conduit_choose(registry, false, "", "the same-host conduit");
    if (c.chosen) std::printf("  %s conduit here: %s (%s)\n", conduit_kind(network), c.chosen->name, c.how.c_str());
    else std::printf("  %s conduit here: none: %s\n", conduit_kind(network), c.error.c_str());
    for (const auto &[name, why] : c.others) std::printf("    not %s: %s\n", name.c_str(), why.c_str());
}

// libsluice-mpi's mpi conduit and mpi bootstrap, which register when it
// loads: loaded for the sections that list them (not for --conduit-list,
// which scripts read, nor in sluice-info-static, whose libsluice is its own
// and which the library's shared libsluice would duplicate).  Empty, or why
// it did not load.
std::string mpi_library_why = "not loaded";
std::string load_mpi_library() {
#if defined(SLUICE_MPI_INTEROP) && !defined(SLUICE_INFO_STATIC)
    return sluice::spawner::mpi_library_load(false);
#else
    return "not loaded";
#endif
}

void print_conduits() {
    const auto &registry = sluice::conduit::transport_registry();
    std::printf("Conduits compiled in, by priority (peers on one host use the same-host conduit,\n"
                "the others the network conduit; SLUICE_NETWORK names it, else the highest\n"
                "priority whose probe succeeds is chosen):\n");
    std::size_t width = 0;
    for (const auto &t : registry) width = std::max(width, std::strlen(t.name));
    for (const auto &t : registry) {
        const std::string why_not = t.probe ? t.probe() : std::string();
        std::printf("  %-*s  %-9s  priority %3d  %s\n", static_cast<int>(width), t.name,
                    sluice::conduit::conduit_kind(t.network), t.priority, t.description);
        std::printf("  %*s  capabilities: %s\n", static_cast<int>(width), "", t.capabilities);
        std::printf("  %*s  probe here: %s\n", static_cast<int>(width), "",
                    why_not.empty() ? "ok" : ("fails: " + why_not).c_str());
    }
    if (registry.empty()) std::printf("  (none)\n");
#ifdef SLUICE_MPI_INTEROP
    if (std::none_of(registry.begin(), registry.end(), [](const auto &t) { return std::strcmp(t.name, "mpi") == 0; }))
        std::printf("  %-*s  %-9s  in libsluice-mpi, not loaded here (%s); programs linked with it, or started with "
                    "SLUICE_SPAWNER=mpi, have it\n",
                    static_cast<int>(width), "mpi", sluice::conduit::conduit_kind(true), mpi_library_why.c_str());
#endif
    print_choice(registry, false);
    print_choice(registry, true);
}

// --conduit-list[=KIND]: "name<TAB>kind<TAB>ok|why not" per conduit.
int print_conduit_list(const std::string &kind) {
    if (!kind.empty() && kind != "network" && kind != "same-host")
        return std::fprintf(stderr, "sluice-info: --conduit-list=%s: use network or same-host\n", kind.c_str()), 2;
    for (const auto &t : sluice::conduit::transport_registry()) {
        const char *k = sluice::conduit::conduit_kind(t.network);
        if (!kind.empty() && kind != k) continue;
        const std::string why_not = t.probe ? t.probe() : std::string();
        std::printf("%s\t%s\t%s\n", t.name, k, why_not.empty() ? "ok" : why_not.c_str());
    }
    return 0;
}

void print_spawners() {
    std::printf("Spawners (bootstrap backends) compiled in; chosen in this order: the launcher's\n"
                "environment, SLUICE_SPAWNER, what the environment shows, the configure default:\n");
    const auto &backends = sluice::spawner::bootstrap_backends();
    const std::string &wanted = sluice::base::knob_string(Knob::SPAWNER);
    // The backend select_bootstrap() would take in this environment.
    const sluice::spawner::BootstrapBackend *chosen = nullptr;
    for (const auto &b : backends) {
        if (wanted.empty() ? (b.probe && b.probe()) : wanted == b.name) {
            chosen = &b;
            break;
        }
    }
    std::size_t width = 0;
    for (const auto &b : backends) width = std::max(width, std::strlen(b.name));
    for (const auto &b : backends) {
        if (&b != chosen) std::printf("  %s\n", b.name);
        else
            std::printf("  %-*s  (chosen %s)\n", static_cast<int>(width), b.name,
                        wanted.empty() ? "in this environment" : "by SLUICE_SPAWNER");
    }
    if (backends.empty()) std::printf("  (none)\n");
    bool mpi_elsewhere = false;
#ifdef SLUICE_MPI_INTEROP
    // Registered by libsluice-mpi when it loads.
    mpi_elsewhere = std::none_of(backends.begin(), backends.end(),
                                 [](const auto &b) { return std::strcmp(b.name, "mpi") == 0; });
    if (mpi_elsewhere)
        std::printf("  mpi        in libsluice-mpi, not loaded here (%s); programs linked with it, or started "
                    "by mpirun with SLUICE_SPAWNER=mpi, have it (docs/mpi-hybrid.md)\n",
                    mpi_library_why.c_str());
#endif
    if (!wanted.empty() && !chosen && !(mpi_elsewhere && wanted == "mpi"))
        std::printf("  warning: SLUICE_SPAWNER=%s names no compiled-in spawner\n", wanted.c_str());
}

void print_limits() {
    std::printf("AM limits:\n");
    std::printf("  max AM arguments         %d (32-bit each)\n", SLUICE_AM_MAX_ARGS);
    std::printf("  handler indices          0..255 (the runtime's own handlers use a separate table)\n");
    // Each conduit's own, from its registration (its knobs as set now).
    for (const auto &t : sluice::conduit::transport_registry())
        if (t.limits) std::fputs(t.limits().c_str(), stdout);
}

// The whole of docs/knobs.md: `sluice-info --markdown > docs/knobs.md`.
// --atomics: the path of a domain whose members all reach each other over
// one conduit (sluice_ad_path says the same for a live domain).
void print_atomics() {
    const auto &registry = sluice::conduit::transport_registry();
    std::printf("Atomic domain paths (one agent per domain: every update of a word by CPU atomics,\n"
                "directly on a mapped segment or by the target's AM handler):\n");
    std::size_t width = 0;
    for (const auto &t : registry) width = std::max(width, std::strlen(t.name));
    for (const auto &t : registry) {
        const char *path = nullptr, *why = nullptr;
        // A conduit with NIC atomics says so in its capabilities line; its
        // path is named after it, as sluice_ad_path names it.
        const bool nic = std::strstr(t.capabilities, "NIC atomics") != nullptr;
        sluice::atomic::conduit_path(!t.network, nic, path, why);
        std::printf("  %-*s  %-7s  %s\n", static_cast<int>(width), t.name, t.network && nic ? t.name : path, why);
    }
    std::printf("  %-*s  %-7s  %s\n", static_cast<int>(width), "mixed", "cpu+am",
                "members on several hosts, several per host: mapped targets by CPU atomics, the rest by AM");
}

void print_markdown() {
    std::printf(
        "# Sluice knobs\n"
        "\n"
        "<!-- Generated by `sluice-info --markdown` from src/base/knobs.def and each conduit's "
        "src/conduits/NAME/knobs.def; edit the tables there, then regenerate. -->\n"
        "\n"
        "Every knob is an environment variable, read when the runtime starts. Set it in the\n"
        "environment of `sluicerun` (or of a 1-rank program); `SLUICE_VERBOSEENV=1` prints\n"
        "every knob in effect and where its value came from, and an unknown `SLUICE_*`\n"
        "variable gets a warning with the closest name. Types: `bool` takes 1/0, yes/no,\n"
        "true/false or on/off; `size` takes bytes with an optional K, M or G suffix\n"
        "(powers of 1024). A value that does not parse, or lies outside the knob's range,\n"
        "is refused: the job does not start, and the error names the knob, the value, the\n"
        "range and what the knob does.\n"
        "\n"
        "| Variable | Type | Default | Range | Description |\n"
        "|---|---|---|---|---|\n");
    for (const KnobInfo &k : sluice::base::knob_table()) {
        if (k.internal) {
            std::printf("| `%s` | internal | not for users | | %s |\n", k.name,
                        markdown_cell(k.doc).c_str());
            continue;
        }
        std::string def = *k.default_value ? "`" + markdown_cell(k.default_value) + "`" : "(empty)";
        const std::string range = sluice::base::knob_range_text(k);
        std::printf("| `%s` | %s | %s | %s | %s |\n", k.name, sluice::base::knob_type_name(k.type),
                    def.c_str(), markdown_cell(range.c_str()).c_str(), markdown_cell(k.doc).c_str());
    }
}

void print_topology() {
    std::printf("Topology (hwloc; HWLOC_XMLFILE names another machine's):\n%s",
                sluice::core::topology::machine().c_str());
    std::printf("  this process: %s\n", sluice::core::topology::describe(sluice::core::topology::here()).c_str());
}

int usage_error(const char *message, const char *arg) {
    std::fprintf(stderr, "sluice-info: %s '%s'\n%s", message, arg, usage_text);
    return 2;
}

} // namespace

int main(int argc, char **argv) {
    sluice::conduit::knobs_register();
    enum Section { knobs, conduits, spawners, limits, atomics, topology, markdown, version };
    std::vector<Section> sections;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--knobs") sections.push_back(knobs);
        else if (a == "--conduits") sections.push_back(conduits);
        else if (a == "--spawners") sections.push_back(spawners);
        else if (a == "--limits") sections.push_back(limits);
        else if (a == "--atomics") sections.push_back(atomics);
        else if (a == "--topology") sections.push_back(topology);
        else if (a == "--markdown") sections.push_back(markdown);
        else if (a == "--version" || a == "-V") sections.push_back(version);
        else if (a == "--conduit-list") return print_conduit_list("");
        else if (a.rfind("--conduit-list=", 0) == 0) return print_conduit_list(a.substr(15));
        else if (a == "--help" || a == "-h") {
            std::fputs(usage_text, stdout);
            return 0;
        } else if (a.size() > 1 && a[0] == '-') return usage_error("unknown option", argv[i]);
        else return usage_error("unexpected argument", argv[i]);
    }
    if (sections.empty()) sections = {version, knobs, conduits, spawners, limits, atomics};
    if (std::any_of(sections.begin(), sections.end(),
                    [](Section s) { return s == conduits || s == spawners || s == limits || s == atomics; }))
        mpi_library_why = load_mpi_library();

    bool first = true;
    for (Section s : sections) {
        if (!first && s != markdown) std::printf("\n");
        first = false;
        switch (s) {
        case knobs: print_knobs(); break;
        case conduits: print_conduits(); break;
        case spawners: print_spawners(); break;
        case limits: print_limits(); break;
        case atomics: print_atomics(); break;
        case topology: print_topology(); break;
        case markdown: print_markdown(); break;
        case version: print_version(); break;
        }
    }
    return std::fflush(stdout) == 0 ? 0 : 1;
}
