// src/core/sluice_info.cpp - the `sluice-info` program: what this build of
// Sluice offers (knobs, conduits, spawners, AM limits) and the knob reference
// in markdown (docs/knobs.md is its output).  It reads the tables only and
// never starts the runtime (no sluice_init).
#include "sluice_config.h"

#include "base/knobs.hpp"
#include "conduits/transport.hpp"
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
    "usage: sluice-info [--knobs] [--conduits] [--spawners] [--limits] [--markdown]\n"
    "                   [--version] [--help]\n"
    "With no option, prints the knobs, conduits, spawners and limits.\n"
    "  --knobs     every SLUICE_* environment knob: type, default, value now, doc\n"
    "  --conduits  the conduits compiled in\n"
    "  --spawners  the bootstrap backends compiled in\n"
    "  --limits    AM limits (arguments, handler indices, payload sizes)\n"
    "  --markdown  the knob reference as markdown (this is docs/knobs.md)\n"
    "  --version   the Sluice version\n";

// "16K (16384 bytes)", or "1000 bytes" when not a whole number of K, M or G.
std::string size_text(std::size_t bytes) {
    const std::string plain = std::to_string(bytes) + " bytes";
    const char units[] = "KMG";
    for (int u = 2; u >= 0; --u) {
        const std::size_t unit = std::size_t{1} << (10 * (u + 1));
        if (bytes >= unit && bytes % unit == 0)
            return std::to_string(bytes / unit) + units[u] + " (" + plain + ")";
    }
    return plain;
}

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

void print_conduits() {
    std::printf("Conduits compiled in (peers on one host use a same-host conduit, "
                "the others the job's network conduit):\n");
    const auto &registry = sluice::conduit::transport_registry();
    std::size_t width = 0;
    for (const auto &t : registry) width = std::max(width, std::strlen(t.name));
    for (const auto &t : registry)
        std::printf("  %-*s  %-9s  %s\n", static_cast<int>(width), t.name,
                    t.network ? "network" : "same-host", t.description);
    if (registry.empty()) std::printf("  (none)\n");
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
    // Registered by libsluice-mpi in the programs that link it, not here.
    mpi_elsewhere = std::none_of(backends.begin(), backends.end(),
                                 [](const auto &b) { return std::strcmp(b.name, "mpi") == 0; });
    if (mpi_elsewhere)
        std::printf("  mpi        in programs linked with libsluice-mpi (mpirun, or MPIX_Sluice_init; "
                    "docs/mpi-hybrid.md)\n");
#endif
    if (!wanted.empty() && !chosen && !(mpi_elsewhere && wanted == "mpi"))
        std::printf("  warning: SLUICE_SPAWNER=%s names no compiled-in spawner\n", wanted.c_str());
}

void print_limits() {
    // The smp figures are its knobs as set now (a value outside the range of
    // src/base/knobs.def is refused); smp grows each ring to hold two of the
    // largest Medium messages.
    const std::size_t ring = sluice::base::knob_size(Knob::SMP_RING_SIZE);
    const std::size_t medium = sluice::base::knob_size(Knob::SMP_MAX_MEDIUM);
    std::printf("AM limits:\n");
    std::printf("  max AM arguments         %d (32-bit each)\n", SLUICE_AM_MAX_ARGS);
    std::printf("  handler indices          0..255 (the runtime's own handlers use a separate table)\n");
    std::printf("  smp max Medium payload   %s, SLUICE_SMP_MAX_MEDIUM (512 bytes to 1M)\n",
                size_text(medium).c_str());
    std::printf("  smp max Long payload     1M per message (Put and Get have no limit)\n");
    std::printf("  smp AM ring size         %s per queue, SLUICE_SMP_RING_SIZE (grown to hold\n"
                "                           two of the largest Medium messages when smaller)\n",
                size_text(ring).c_str());
}

// The whole of docs/knobs.md: `sluice-info --markdown > docs/knobs.md`.
void print_markdown() {
    std::printf(
        "# Sluice knobs\n"
        "\n"
        "<!-- Generated by `sluice-info --markdown` from src/base/knobs.def; edit the table "
        "there, then regenerate. -->\n"
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

int usage_error(const char *message, const char *arg) {
    std::fprintf(stderr, "sluice-info: %s '%s'\n%s", message, arg, usage_text);
    return 2;
}

} // namespace

int main(int argc, char **argv) {
    enum Section { knobs, conduits, spawners, limits, markdown, version };
    std::vector<Section> sections;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--knobs") sections.push_back(knobs);
        else if (a == "--conduits") sections.push_back(conduits);
        else if (a == "--spawners") sections.push_back(spawners);
        else if (a == "--limits") sections.push_back(limits);
        else if (a == "--markdown") sections.push_back(markdown);
        else if (a == "--version" || a == "-V") sections.push_back(version);
        else if (a == "--help" || a == "-h") {
            std::fputs(usage_text, stdout);
            return 0;
        } else if (a.size() > 1 && a[0] == '-') return usage_error("unknown option", argv[i]);
        else return usage_error("unexpected argument", argv[i]);
    }
    if (sections.empty()) sections = {version, knobs, conduits, spawners, limits};

    bool first = true;
    for (Section s : sections) {
        if (!first && s != markdown) std::printf("\n");
        first = false;
        switch (s) {
        case knobs: print_knobs(); break;
        case conduits: print_conduits(); break;
        case spawners: print_spawners(); break;
        case limits: print_limits(); break;
        case markdown: print_markdown(); break;
        case version: print_version(); break;
        }
    }
    return std::fflush(stdout) == 0 ? 0 : 1;
}
