// tests/perf/driver.cpp - sluice-bench run directly: one command measures
// Sluice and its references in the same run and compares them.
//
// Each repetition launches one Sluice job (sluicerun -n 2 sluice-bench
// --worker suite) and one MPI job (mpirun -n 2 mpi-reference --suite), then
// measures the bare cache-line ping-pong (two forked processes) and memcpy
// here.  Jobs write "metric size value" lines into a temporary folder; every
// figure is the median over the repetitions.  Launch times and shared memory
// per rank come after.  Every job runs under a hard time limit.
//
// The udp section (when the build has the udp conduit, or --udp alone) adds
// to each repetition a job over udp (SLUICE_ROUTE=network, sluice-bench
// --worker udp) and the forked bare UDP ping-pong, and after the repetitions
// one exactly-once job.
//
// The ofi section (when the build has an ofi conduit that probes, or --ofi
// alone) adds to each repetition one job per libfabric provider over the ofi
// conduit (SLUICE_NETWORK=ofi, SLUICE_OFI_PROVIDER, SLUICE_ROUTE=network,
// sluice-bench --worker ofi) with the bare libfabric reference inside it.
// The ibv, portals and gni sections (when those conduits probe, or --ibv,
// --portals, --gni alone) add one job each over their conduit, with bare
// verbs, bare Portals 4 or bare uGNI inside it; the gni job runs under the
// software uGNI NIC's softnic-run when the conduit does not probe here.
// The lapi section (--lapi alone) adds two, one per LAPI mode
// (SLUICE_LAPI_MODE=INTERRUPT and POLLING), with bare LAPI in the same
// mode inside each, under the software LAPI's softnic-run likewise
// (softnic-section.hpp).
#include "tests/perf/driver.hpp"

#include "tests/perf/bench_common.hpp"
#include "tests/perf/client-section.hpp"
#include "tests/perf/ofi-reference.hpp"
#include "tests/perf/softnic-section.hpp"
#include "tests/perf/sockets.hpp"

#include "conduits/registry.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SLUICE_BENCH_SLUICERUN
#define SLUICE_BENCH_SLUICERUN ""
#endif
#ifndef SLUICE_BENCH_MPIRUN
#define SLUICE_BENCH_MPIRUN ""
#endif
#ifndef SLUICE_BENCH_MPI_REFERENCE
#define SLUICE_BENCH_MPI_REFERENCE ""
#endif
// The software uGNI NIC's launcher script (tests/softnic/gni/softnic-run),
// in builds with the gni conduit.
#ifndef SLUICE_BENCH_GNI_SOFTNIC_RUN
#define SLUICE_BENCH_GNI_SOFTNIC_RUN ""
#endif
// The software LAPI's (tests/softnic/lapi/softnic-run), in builds with the
// lapi conduit.
#ifndef SLUICE_BENCH_LAPI_SOFTNIC_RUN
#define SLUICE_BENCH_LAPI_SOFTNIC_RUN ""
#endif

namespace sluice::perf {
namespace {

void usage(std::FILE *to) {
    std::fprintf(to,
        "usage: sluice-bench [options]\n"
        "  Measures Sluice on 2 ranks (AM round trip and flood, Put/Get latency and\n"
        "  bandwidth, barrier), launch time and shared memory per rank, and in the same\n"
        "  run the references: cache-line ping-pong, memcpy and Open MPI.  Prints a\n"
        "  table and the issue's targets, writes a CSV.\n"
        "  --reps R            repetitions, each a fresh job; figures are medians (5)\n"
        "  --quick             a fast run: 1/20 of the iterations, 3 repetitions\n"
        "  --all-sizes         every power of 2 from 8 B to 4 MiB (default powers of 4,\n"
        "                      plus 64 KiB and 4 MiB)\n"
        "  --only NAME         only the figures whose name contains NAME (e.g. put_lat,\n"
        "                      am_short); no launch or memory figures unless NAME is\n"
        "                      launch or shm\n"
        "  --size N            sized figures at N bytes only\n"
        "  --csv FILE          CSV output (sluice-bench.csv)\n"
        "  --plot FILE         the ratios (Sluice / reference) as bars, an SVG drawn by\n"
        "                      gnuplot\n"
        "  --sluicerun PATH    launcher (default: next to the build, then PATH)\n"
        "  --bind MODE         sluicerun --bind for the 2-rank suite (core; 'default'\n"
        "                      leaves the launcher's own choice)\n"
        "  --mpirun PATH       Open MPI launcher (configure's MPIRUN)\n"
        "  --mpi-reference P   the MPI side (built next to sluice-bench)\n"
        "  --no-mpi            skip the MPI references\n"
        "  --launch-ranks N    ranks of the launch-time comparison (8)\n"
        "  --shm-ranks LIST    rank counts of the memory measurement (2,8,32)\n"
        "  --skip-launch       no launch-time comparison\n"
        "  --skip-shm          no shared-memory measurement\n"
        "  --udp               only the udp section: the udp conduit (SLUICE_ROUTE=network)\n"
        "                      against bare UDP and TCP on 127.0.0.1, exactly-once\n"
        "                      delivery, default routing; a full run includes it when\n"
        "                      the build has the udp conduit\n"
        "  --no-udp            no udp section\n"
        "  --udp-count N       AM Short requests each way of the exactly-once check\n"
        "                      (1000000; --quick 50000)\n"
        "  --udp-any-transport run the udp section on whatever conduit the job gets\n"
        "                      (tests the benchmark itself; the figures are not udp's)\n"
        "  --ofi               only the ofi section: the ofi conduit (SLUICE_ROUTE=network)\n"
        "                      against the bare libfabric reference of the same provider;\n"
        "                      a full run includes it when the build has an ofi conduit\n"
        "                      that probes\n"
        "  --no-ofi            no ofi section\n"
        "  --ibv               only the ibv section: the ibv conduit (SLUICE_ROUTE=network) beside\n"
        "                      bare verbs on the same device; a full run includes it when the\n"
        "                      conduit probes (here: under tests/softnic/verbs/softnic-run)\n"
        "  --no-ibv            no ibv section\n"
        "  --portals           only the portals section: the portals conduit (SLUICE_ROUTE=network)\n"
        "                      beside bare Portals 4 on the conduit's NI; a full run includes it\n"
        "                      when the build has the portals conduit (--with-portals4) and it probes\n"
        "  --no-portals        no portals section\n"
        "  --portals-network NAME  run the portals section's jobs with SLUICE_NETWORK=NAME (tests\n"
        "                      the benchmark itself; the figures are not portals')\n"
        "  --gni               only the gni section: the gni conduit (SLUICE_ROUTE=network) beside\n"
        "                      bare uGNI on the same NIC; a full run includes it when the build has\n"
        "                      the gni conduit and it probes, or else under the software uGNI NIC\n"
        "                      (tests/softnic/gni/softnic-run, which the driver then runs the job in)\n"
        "  --no-gni            no gni section\n"
        "  --lapi              only the lapi section: the lapi conduit (SLUICE_ROUTE=network) beside\n"
        "                      bare LAPI (LAPI_Amsend, LAPI_Put, LAPI_Get, their counters), one job in\n"
        "                      each LAPI mode (SLUICE_LAPI_MODE=INTERRUPT, POLLING; the reference in\n"
        "                      the same); a full run includes it when the build has the lapi conduit\n"
        "                      and it probes, or else under the software LAPI\n"
        "                      (tests/softnic/lapi/softnic-run, which the driver then runs the jobs in)\n"
        "  --no-lapi           no lapi section\n"
        "  --ofi-providers L   libfabric providers, one job each (tcp;ofi_rxm,shm)\n"
        "  --ofi-network NAME  run the ofi section's jobs with SLUICE_NETWORK=NAME (tests\n"
        "                      the benchmark itself; the figures are not ofi's)\n"
        "  --client            only the client API's rows (atomics, collectives, VIS,\n"
        "                      negotiated AMs: smp at 2, 4, 8 ranks, udp, ofi tcp;ofi_rxm,\n"
        "                      and mpi-reference --client); a full run includes them\n"
        "  --no-client         no client API rows\n"
        "  --timeout SECONDS   hard limit per job (300)\n"
        "  --wait-idle SECONDS before each repetition, wait up to this long for the\n"
        "                      machine to be quiet (5; 0: do not wait)\n"
        "  --keep              keep the temporary folder with raw results and logs\n"
        "  --strict            exit 1 when a target fails\n");
}

bool parse_options(int argc, char **argv, Options &o) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char *name) -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "sluice-bench: %s needs a value\n", name);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--reps") {
            o.reps = std::max(1, std::atoi(value("--reps").c_str()));
            o.reps_given = true;
        } else if (a == "--quick") {
            o.quick = true;
        } else if (a == "--all-sizes") {
            o.all_sizes = true;
        } else if (a == "--only") {
            o.only = value("--only");
        } else if (a == "--size") {
            o.only_size = value("--size");
        } else if (a == "--csv") {
            o.csv = value("--csv");
        } else if (a == "--plot") {
            o.plot = value("--plot");
        } else if (a == "--sluicerun") {
            o.sluicerun = value("--sluicerun");
        } else if (a == "--bind") {
            o.bind = value("--bind");
            if (o.bind == "default")
                o.bind.clear();
        } else if (a == "--mpirun") {
            o.mpirun = value("--mpirun");
        } else if (a == "--mpi-reference") {
            o.mpi_reference = value("--mpi-reference");
        } else if (a == "--no-mpi") {
            o.no_mpi = true;
        } else if (a == "--launch-ranks") {
            o.launch_ranks = std::max(1, std::atoi(value("--launch-ranks").c_str()));
        } else if (a == "--shm-ranks") {
            o.shm_ranks.clear();
            std::stringstream list(value("--shm-ranks"));
            std::string item;
            while (std::getline(list, item, ','))
                if (std::atoi(item.c_str()) > 0)
                    o.shm_ranks.push_back(std::atoi(item.c_str()));
        } else if (a == "--skip-launch") {
            o.skip_launch = true;
        } else if (a == "--skip-shm") {
            o.skip_shm = true;
        } else if (a == "--udp") {
            o.udp = Options::Udp::only;
        } else if (a == "--no-udp") {
            o.udp = Options::Udp::skip;
        } else if (a == "--udp-count") {
            o.udp_count = std::max(1L, std::atol(value("--udp-count").c_str()));
        } else if (a == "--udp-any-transport") {
            o.udp_any_transport = true;
        } else if (a == "--ofi") {
            o.ofi = Options::Ofi::only;
        } else if (a == "--no-ofi") {
            o.ofi = Options::Ofi::skip;
        } else if (a == "--ibv") {
            o.ibv = Options::Ibv::only;
        } else if (a == "--no-ibv") {
            o.ibv = Options::Ibv::skip;
        } else if (a == "--portals") {
            o.portals = Options::Portals::only;
        } else if (a == "--no-portals") {
            o.portals = Options::Portals::skip;
        } else if (a == "--portals-network") {
            o.portals_network = value("--portals-network");
        } else if (a == "--gni") {
            o.gni = Options::Gni::only;
        } else if (a == "--no-gni") {
            o.gni = Options::Gni::skip;
        } else if (a == "--lapi") {
            o.lapi = Options::Lapi::only;
        } else if (a == "--no-lapi") {
            o.lapi = Options::Lapi::skip;
        } else if (a == "--ofi-providers") {
            o.ofi_providers.clear();
            std::stringstream list(value("--ofi-providers"));
            std::string item;
            while (std::getline(list, item, ','))
                if (!item.empty())
                    o.ofi_providers.push_back(item);
            if (o.ofi_providers.empty()) {
                std::fprintf(stderr, "sluice-bench: --ofi-providers: no provider given\n");
                return false;
            }
        } else if (a == "--ofi-network") {
            o.ofi_network = value("--ofi-network");
        } else if (a == "--timeout") {
            o.timeout = std::atof(value("--timeout").c_str());
        } else if (a == "--wait-idle") {
            o.wait_idle = std::atof(value("--wait-idle").c_str());
        } else if (a == "--keep") {
            o.keep = true;
        } else if (a == "--strict") {
            o.strict = true;
        } else if (client_option(a)) {
        } else if (a == "-h" || a == "--help") {
            usage(stdout);
            std::exit(0);
        } else {
            std::fprintf(stderr, "sluice-bench: unknown option %s\n", a.c_str());
            usage(stderr);
            return false;
        }
    }
    if (o.quick && !o.reps_given)
        o.reps = 3;
    if (!o.only.empty()) {
        o.skip_launch = o.skip_launch || o.only != "launch";
        o.skip_shm = o.skip_shm || o.only != "shm";
    }
    // --udp, --ofi, --ibv, --portals, --gni or --lapi alone: that section only
    // (several: those; the sections left on auto are skipped).
    const bool client_only = client_plan().mode == ClientPlan::Mode::only;
    const bool some_only = o.udp == Options::Udp::only || o.ofi == Options::Ofi::only ||
                           o.ibv == Options::Ibv::only || o.portals == Options::Portals::only ||
                           o.gni == Options::Gni::only || o.lapi == Options::Lapi::only || client_only;
    if (some_only) {
        o.skip_launch = o.skip_shm = true;
        o.no_mpi = o.no_mpi || !client_only; // the client rows' collectives have MPI references
        if (!client_only)
            client_plan().mode = ClientPlan::Mode::skip;
        if (o.udp == Options::Udp::auto_)
            o.udp = Options::Udp::skip;
        if (o.ofi == Options::Ofi::auto_)
            o.ofi = Options::Ofi::skip;
        if (o.ibv == Options::Ibv::auto_)
            o.ibv = Options::Ibv::skip;
        if (o.portals == Options::Portals::auto_)
            o.portals = Options::Portals::skip;
        if (o.gni == Options::Gni::auto_)
            o.gni = Options::Gni::skip;
        if (o.lapi == Options::Lapi::auto_)
            o.lapi = Options::Lapi::skip;
    }
    // Two providers with one tag would write the same rows.
    std::vector<std::string> tags;
    for (const auto &p : o.ofi_providers) {
        if (std::find(tags.begin(), tags.end(), ofi_tag(p)) != tags.end()) {
            std::fprintf(stderr, "sluice-bench: --ofi-providers: two providers named %s\n",
                         ofi_tag(p).c_str());
            return false;
        }
        tags.push_back(ofi_tag(p));
    }
    return true;
}

const conduit::TransportInfo *network_conduit(const char *name) {
    for (const auto &t : conduit::transport_registry())
        if (t.network && std::strcmp(t.name, name) == 0)
            return &t;
    return nullptr;
}
bool build_has_udp() { return network_conduit("udp") != nullptr; }
// "" when the build has the network conduit `name` and it probes here.
std::string network_conduit_missing(const char *name) {
    const conduit::TransportInfo *t = network_conduit(name);
    if (!t)
        return std::string("this build has no ") + name + " conduit (sluice-info --conduits)";
    const std::string why = t->probe ? t->probe() : "";
    return why.empty() ? why : std::string("the ") + name + " conduit does not probe: " + why;
}

// --only NAME keeps `metric` (a name as the jobs write it)?
bool only_keeps(const Options &o, const std::string &metric) {
    return o.only.empty() || metric.find(o.only) != std::string::npos;
}

} // namespace

int driver_main(int argc, char **argv) {
    Options o;
    if (!parse_options(argc, argv, o))
        return 2;
    const double start = now_ns();
    std::printf("sluice-bench: %s, %ld CPUs; %d repetitions%s\n", cpu_model().c_str(),
                sysconf(_SC_NPROCESSORS_ONLN), o.reps, o.quick ? " (quick)" : "");
    CommonOptions common;
    common.quick = o.quick;
    common.all_sizes = o.all_sizes;
    common.scale.divisor = o.quick ? 20 : 1;

    // Open MPI refuses root without these; they reach only our children.
    if (geteuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    }
    // Routing is the benchmark's to choose: default for the suite,
    // SLUICE_ROUTE=network for the udp jobs only.
    if (const char *route = std::getenv("SLUICE_ROUTE")) {
        std::printf("  (SLUICE_ROUTE=%s ignored: the suite runs with default routing, the "
                    "udp section sets its own)\n", route);
        unsetenv("SLUICE_ROUTE");
    }
    const bool udp_only = o.udp == Options::Udp::only;
    const bool ofi_only = o.ofi == Options::Ofi::only;
    const bool ibv_only = o.ibv == Options::Ibv::only;
    const bool portals_only = o.portals == Options::Portals::only;
    const bool gni_only = o.gni == Options::Gni::only;
    const bool lapi_only = o.lapi == Options::Lapi::only;
    const bool client_only = client_plan().mode == ClientPlan::Mode::only;
    std::string udp_note;
    bool udp = false;
    if (o.udp == Options::Udp::skip) {
        udp_note = ofi_only || ibv_only || portals_only || gni_only || lapi_only || client_only ? "" : "udp section skipped (--no-udp)";
    } else if (o.udp_any_transport) {
        udp = true;
        udp_note = "--udp-any-transport: the udp section ran on whatever conduit the job got; "
                   "its figures are not udp's unless the build routes them there";
    } else if (build_has_udp()) {
        udp = o.only != "launch" && o.only != "shm";
    } else if (udp_only) {
        std::fprintf(stderr, "sluice-bench: --udp: this build has no udp conduit "
                             "(sluice-info --conduits)\n");
        return 2;
    } else {
        udp_note = "udp section skipped: this build has no udp conduit (sluice-info --conduits)";
    }
    // The ofi section: the conduit must be built in and probe, and each
    // provider must be one fi_getinfo offers (the bare reference's probe).
    std::vector<std::string> ofi_providers;
    std::string ofi_note;
    if (o.ofi == Options::Ofi::skip) {
        ofi_note = ofi_only || udp_only || ibv_only || portals_only || gni_only || lapi_only || client_only ? "" : "ofi section skipped (--no-ofi)";
    } else if (o.only != "launch" && o.only != "shm") {
        const std::string missing =
            o.ofi_network == "ofi" ? network_conduit_missing("ofi") : std::string();
        if (!missing.empty()) {
            ofi_note = "ofi section skipped: " + missing;
        } else {
            for (const auto &p : o.ofi_providers) {
                const std::string why = ofi_probe(p);
                if (why.empty())
                    ofi_providers.push_back(p);
                else
                    ofi_note += (ofi_note.empty() ? "" : "; ") + ("provider " + p +
                                                                  " skipped: " + why);
            }
            if (o.ofi_network != "ofi")
                ofi_note += (ofi_note.empty() ? "" : "; ") +
                            ("--ofi-network " + o.ofi_network + ": the ofi section ran over " +
                             o.ofi_network + "; its Sluice figures are not ofi's");
        }
        if (ofi_only && ofi_providers.empty()) {
            std::fprintf(stderr, "sluice-bench: --ofi: %s\n", ofi_note.c_str());
            return 2;
        }
    }

    // The ibv section: the conduit must be built in and probe.
    bool ibv = false;
    std::string ibv_note;
    if (o.ibv == Options::Ibv::skip) {
        ibv_note = udp_only || ofi_only || portals_only || gni_only || lapi_only || client_only ? "" : "ibv section skipped (--no-ibv)";
    } else if (o.only != "launch" && o.only != "shm") {
        ibv_note = network_conduit_missing("ibv");
        ibv = ibv_note.empty();
        if (!ibv)
            ibv_note = "ibv section skipped: " + ibv_note +
                       " (run the benchmark under tests/softnic/verbs/softnic-run for the software NIC)";
        if (ibv_only && !ibv) {
            std::fprintf(stderr, "sluice-bench: --ibv: %s\n", ibv_note.c_str());
            return 2;
        }
    }

    // The portals section: the conduit must be built in and probe.
    bool portals = false;
    std::string portals_note;
    if (o.portals == Options::Portals::skip) {
        portals_note = udp_only || ofi_only || ibv_only || gni_only || lapi_only || client_only ? "" : "portals section skipped (--no-portals)";
    } else if (o.only != "launch" && o.only != "shm") {
        // The bare reference needs Portals 4 in the build, which has it
        // with the conduit (tests/perf/Makefile.inc).
        portals_note = network_conduit_missing("portals");
        portals = portals_note.empty();
        if (!portals)
            portals_note = "portals section skipped: " + portals_note +
                           " (configure --with-portals4=$(tests/portals/with-portals4 --prefix) builds it)";
        else if (o.portals_network != "portals")
            portals_note = "--portals-network " + o.portals_network + ": the portals section ran over " +
                           o.portals_network + "; its Sluice figures are not portals'";
        if (portals_only && !portals) {
            std::fprintf(stderr, "sluice-bench: --portals: %s\n", portals_note.c_str());
            return 2;
        }
    }

    const std::string self = self_path();
    const std::string here = build_dir_of_self();
    if (o.sluicerun.empty()) {
        const char *env = std::getenv("SLUICE_BENCH_SLUICERUN");
        o.sluicerun = first_executable({env ? env : "", SLUICE_BENCH_SLUICERUN,
                                        here + "/../../sluicerun", here + "/sluicerun",
                                        "sluicerun"});
    }
    if (o.sluicerun.empty()) {
        std::fprintf(stderr, "sluice-bench: sluicerun not found; pass --sluicerun PATH\n");
        return 2;
    }
    {
        const std::string real = unwrap_libtool(o.sluicerun);
        if (real != o.sluicerun)
            std::printf("  (%s is libtool's wrapper script; running %s)\n",
                        o.sluicerun.c_str(), real.c_str());
        o.sluicerun = real;
    }
    std::string mpi_note;
    bool have_mpi = !o.no_mpi;
    if (have_mpi) {
        // A path given on the command line must exist; otherwise search.
        o.mpi_reference = o.mpi_reference.empty()
                              ? first_executable({SLUICE_BENCH_MPI_REFERENCE,
                                                  here + "/mpi-reference"})
                              : first_executable({o.mpi_reference});
        o.mpirun = o.mpirun.empty()
                       ? first_executable({SLUICE_BENCH_MPIRUN, "mpirun.openmpi", "mpirun"})
                       : first_executable({o.mpirun});
        if (o.mpi_reference.empty())
            mpi_note = "MPI not available: no mpi-reference program (configure found no "
                       "mpicxx); MPI references skipped";
        else if (o.mpirun.empty())
            mpi_note = "MPI not available: no mpirun; MPI references skipped";
        have_mpi = mpi_note.empty();
    } else {
        mpi_note = udp_only || ofi_only || ibv_only || portals_only || gni_only || lapi_only ? "" : "MPI references skipped (--no-mpi)";
    }

    TempDir tmp;
    tmp.keep_it(o.keep);
    if (tmp.path.empty()) {
        std::perror("sluice-bench: mkdtemp");
        return 2;
    }

    // The gni and lapi sections: their conduit probes here, or the build's
    // software NIC runs their jobs (softnic-section.hpp).
    auto plan = [&](SoftnicSection &p, const SoftNic &nic, bool skip, bool only, const char *option) {
        if (skip) {
            if (!udp_only && !ofi_only && !ibv_only && !portals_only && !gni_only && !lapi_only && !client_only)
                p.note = std::string(nic.conduit) + " section skipped (--no-" + nic.conduit + ")";
            return true;
        }
        if (o.only == "launch" || o.only == "shm")
            return true;
        softnic_plan(p, nic, network_conduit_missing(nic.conduit), network_conduit(nic.conduit) != nullptr, tmp.path,
                     o.timeout);
        if (only && !p.on) {
            std::fprintf(stderr, "sluice-bench: %s: %s\n", option, p.note.c_str());
            return false;
        }
        return true;
    };
    SoftnicSection gni, lapi;
    if (!plan(gni, {"gni", "the software uGNI NIC", SLUICE_BENCH_GNI_SOFTNIC_RUN, "SOFTNIC_GNI_FABRIC"},
              o.gni == Options::Gni::skip, gni_only, "--gni") ||
        !plan(lapi, {"lapi", "the software LAPI", SLUICE_BENCH_LAPI_SOFTNIC_RUN, "SOFTNIC_LAPI_FABRIC"},
              o.lapi == Options::Lapi::skip, lapi_only, "--lapi"))
        return 2;

    // sluicerun --bind: keep it only if this launcher accepts it (-t: dry run).
    if (!o.bind.empty()) {
        std::vector<std::string> probe{o.sluicerun, "-t", "--bind=" + o.bind, "-n", "2",
                                       "--", "/bin/true"};
        if (!run_job(probe, tmp.path + "/bind-probe.log", 30).ok) {
            std::fprintf(stderr,
                         "sluice-bench: %s does not accept --bind=%s; using its default\n",
                         o.sluicerun.c_str(), o.bind.c_str());
            o.bind.clear();
        }
    }

    std::vector<std::string> extra;
    if (o.quick)
        extra.push_back("--quick");
    if (o.all_sizes)
        extra.push_back("--all-sizes");
    if (!o.only.empty() && o.only != "launch" && o.only != "shm") {
        extra.push_back("--only");
        extra.push_back(o.only);
    }
    if (!o.only_size.empty()) {
        extra.push_back("--size");
        extra.push_back(o.only_size);
    }

    std::vector<std::string> sluice_cmd{o.sluicerun};
    if (!o.bind.empty())
        sluice_cmd.push_back("--bind=" + o.bind);
    for (const char *a : {"-n", "2", "--"})
        sluice_cmd.push_back(a);
    sluice_cmd.push_back(self);
    std::vector<std::string> mpi_cmd{o.mpirun, "-n", "2", o.mpi_reference, "--suite"};
    // The udp jobs print the conduit's counters at finalize (into their logs).
    // They name the network: the first that probes may be another (ibv under
    // softnic-run).
    std::vector<std::string> network_route{"SLUICE_ROUTE=network", "SLUICE_UDP_STATS=1"};
    if (!o.udp_any_transport)
        network_route.push_back("SLUICE_NETWORK=udp");
    std::vector<std::string> udp_extra = extra;
    if (o.udp_any_transport)
        udp_extra.push_back("--any-transport");
    if (!udp_only && !ofi_only && !ibv_only && !portals_only && !gni_only && !lapi_only && !client_only)
        std::printf("  sluice: %s --worker suite\n", describe(sluice_cmd).c_str());
    if (have_mpi && !client_only)
        std::printf("  mpi:    %s\n", describe(mpi_cmd).c_str());
    else if (!mpi_note.empty())
        std::printf("  %s\n", mpi_note.c_str());
    if (udp)
        std::printf("  udp:    SLUICE_ROUTE=network%s %s --worker udp (and exactly-once)\n",
                    o.udp_any_transport ? "" : " SLUICE_NETWORK=udp", describe(sluice_cmd).c_str());
    // On one host the conduit and the bare reference both take the
    // provider's loopback domain where it has one (tcp's "lo").
    // The conduit's counters go to the job logs (--keep).
    std::vector<std::string> ofi_env{"SLUICE_ROUTE=network", "SLUICE_NETWORK=" + o.ofi_network};
    if (o.ofi_network == "ofi")
        ofi_env.push_back("SLUICE_OFI_STATS=1");
    for (const auto &p : ofi_providers)
        std::printf("  ofi:    %s SLUICE_OFI_PROVIDER='%s' %s --worker ofi\n",
                    describe(ofi_env).c_str(), p.c_str(), describe(sluice_cmd).c_str());
    const std::vector<std::string> ibv_env{"SLUICE_ROUTE=network", "SLUICE_NETWORK=ibv", "SLUICE_IBV_STATS=1"};
    if (ibv)
        std::printf("  ibv:    %s %s --worker ibv\n", describe(ibv_env).c_str(), describe(sluice_cmd).c_str());
    // The conduit's counters go to the job logs (--keep).
    std::vector<std::string> portals_env{"SLUICE_ROUTE=network", "SLUICE_NETWORK=" + o.portals_network};
    if (o.portals_network == "portals")
        portals_env.push_back("SLUICE_PORTALS_STATS=1");
    if (portals)
        std::printf("  portals: %s %s --worker portals\n", describe(portals_env).c_str(),
                    describe(sluice_cmd).c_str());
    // A section's job: softnic-run (when the section runs on its software
    // NIC), then the Sluice command; the conduit's counters go to the job
    // logs (--keep).
    auto section_cmd = [&](const SoftnicSection &p) {
        std::vector<std::string> cmd = p.prefix;
        cmd.insert(cmd.end(), sluice_cmd.begin(), sluice_cmd.end());
        return cmd;
    };
    std::vector<std::string> gni_env{"SLUICE_ROUTE=network", "SLUICE_NETWORK=gni", "SLUICE_GNI_STATS=1"};
    gni_env.insert(gni_env.end(), gni.env.begin(), gni.env.end());
    if (gni.on)
        std::printf("  gni:    %s %s --worker gni%s\n", describe(gni_env).c_str(), describe(section_cmd(gni)).c_str(),
                    gni.softnic ? " (on the software uGNI NIC)" : "");
    // One lapi job per LAPI mode.
    const char *const lapi_modes[] = {"INTERRUPT", "POLLING"};
    std::vector<std::string> lapi_env{"SLUICE_ROUTE=network", "SLUICE_NETWORK=lapi", "SLUICE_LAPI_STATS=1"};
    lapi_env.insert(lapi_env.end(), lapi.env.begin(), lapi.env.end());
    if (lapi.on)
        std::printf("  lapi:   %s SLUICE_LAPI_MODE=INTERRUPT|POLLING %s --worker lapi%s\n", describe(lapi_env).c_str(),
                    describe(section_cmd(lapi)).c_str(), lapi.softnic ? " (on the software LAPI)" : "");
    std::fflush(stdout);

    Samples samples;
    Findings findings;
    int job_failures = 0;
    const long pingpong_iters = rtt_iterations(0, common.scale) * 5;
    int busy_reps = 0;
    double busiest = 0;
    const bool client = client_plan().mode != ClientPlan::Mode::skip && client_wanted(o.only);
    const bool run_suite = o.only != "launch" && o.only != "shm" && !udp_only && !ofi_only && !ibv_only &&
                           !portals_only && !gni_only && !lapi_only && !client_only;
    ClientContext client_context;
    client_context.sluicerun = o.sluicerun;
    client_context.self = self;
    client_context.bind = o.bind;
    if (have_mpi) {
        client_context.mpirun = o.mpirun;
        client_context.mpi_reference = o.mpi_reference;
    }
    client_context.tmp = tmp.path;
    client_context.extra = extra;
    client_context.quick = o.quick;
    client_context.timeout = o.timeout;
    // --udp alone: the default-routing AM round trip comes from a suite job
    // of its own (the full run has it from the suite).
    const bool default_job = udp_only && only_keeps(o, "am_short_rtt");
    bool udp_failed = false; // a failed udp job is not run again (each may take --timeout)
    // Runs one worker job writing NAME.txt and NAME.log in the temporary
    // folder, collects its figures (and, with `udp_prefix`, the conduit's
    // counters from its log) and reports a failure as `what`.
    auto collect = [&](std::vector<std::string> cmd, const std::string &name, const char *what,
                       const std::vector<std::string> &env = {}, const char *udp_prefix = nullptr) {
        cmd.push_back(tmp.path + "/" + name + ".txt");
        const std::string log = tmp.path + "/" + name + ".log";
        JobResult r = run_job(cmd, log, o.timeout, env);
        read_results(tmp.path + "/" + name + ".txt", samples);
        if (udp_prefix)
            read_udp_stats(log, udp_prefix, samples);
        if (!r.ok) {
            ++job_failures;
            show_failure(what, cmd, r, log);
        }
        return r;
    };
    std::vector<std::string> ofi_failed; // a failed provider is not run again
    bool large_failed = false;           // nor a failed large-segment job
    bool ibv_failed = false;  // nor a failed ibv job
    bool portals_failed = false; // nor a failed portals job
    bool gni_failed = false;     // nor a failed gni job
    bool lapi_failed = false;    // nor a failed lapi job
    // One job of the gni or lapi section, NAME-TAG.txt and .log in the
    // temporary folder; `failed` set when it fails.
    auto section_job = [&](const SoftnicSection &p, const char *kind, const std::string &name, const std::string &what,
                           const std::vector<std::string> &env, bool &failed) {
        auto cmd = section_cmd(p);
        for (const char *a : {"--worker", kind})
            cmd.push_back(a);
        cmd.insert(cmd.end(), extra.begin(), extra.end());
        cmd.push_back("--out");
        JobResult r = collect(cmd, name, what.c_str(), env);
        if (!r.ok) {
            failed = true;
            std::fprintf(stderr, "sluice-bench: the %s job is not run again in the later repetitions\n", kind);
        }
        return r.seconds;
    };
    for (int rep = 0;
         (run_suite || udp || !ofi_providers.empty() || ibv || portals || gni.on || lapi.on || client) && rep < o.reps;
         ++rep) {
        const double busy = wait_quiet(o.wait_idle);
        if (busy > 0.15)
            ++busy_reps;
        busiest = std::max(busiest, busy);
        std::fprintf(stderr, "rep %d/%d (machine %.0f%% busy before):", rep + 1, o.reps,
                     busy * 100);
        const std::string tag = std::to_string(rep);
        const Samples before = samples;
        if (run_suite) {
            auto cmd = sluice_cmd;
            for (const char *a : {"--worker", "suite"})
                cmd.push_back(a);
            cmd.insert(cmd.end(), extra.begin(), extra.end());
            cmd.push_back("--out");
            JobResult r = collect(cmd, "sluice-" + tag, "Sluice suite");
            std::fprintf(stderr, " sluice %.1fs", r.seconds);
        }
        if (have_mpi && !client_only) {
            auto cmd = mpi_cmd;
            cmd.insert(cmd.end(), extra.begin(), extra.end());
            cmd.push_back("--out");
            JobResult r = collect(cmd, "mpi-" + tag, "MPI reference");
            std::fprintf(stderr, ", mpi %.1fs", r.seconds);
        }
        if (run_suite) {
            const double t0 = now_ns();
            samples[{"pingpong", 0}].push_back(cacheline_pingpong(pingpong_iters, 60));
            samples[{"pause", 0}].push_back(pause_cost());
            measure_memcpy(common, samples);
            std::fprintf(stderr, ", ping-pong+memcpy %.1fs", (now_ns() - t0) / 1e9);
            double first = nan_value, last = nan_value;
            const std::string state = job_state(samples, before, first, last);
            if (!state.empty()) {
                std::fprintf(stderr, ", state %s (job ping-pong %.0f then %.0f ns)", state.c_str(), first, last);
                add_new(samples, before, findings.by_state[state]);
            }
        }
        if (udp && default_job) {
            auto cmd = sluice_cmd;
            for (const char *a : {"--worker", "suite", "--only", "am_short_rtt"})
                cmd.push_back(a);
            if (o.quick)
                cmd.push_back("--quick");
            cmd.push_back("--out");
            JobResult r = collect(cmd, "default-" + tag, "Sluice AM round trip, default routing");
            std::fprintf(stderr, " default-routing %.1fs", r.seconds);
        }
        if (udp && !udp_failed) {
            auto cmd = sluice_cmd;
            for (const char *a : {"--worker", "udp"})
                cmd.push_back(a);
            cmd.insert(cmd.end(), udp_extra.begin(), udp_extra.end());
            cmd.push_back("--out");
            JobResult r = collect(cmd, "udp-" + tag, "Sluice over udp (SLUICE_ROUTE=network)", network_route,
                                  "udp_job");
            if (!r.ok) {
                udp_failed = true;
                std::fprintf(stderr, "sluice-bench: the udp job is not run again in the "
                                     "later repetitions\n");
            }
            std::fprintf(stderr, "%sudp %.1fs", udp_only && !default_job ? " " : ", ",
                         r.seconds);
            // The MAC's cost: two short jobs of the AM round trip alone,
            // with SLUICE_UDP_MAC=1 and =0, their order alternating from
            // one repetition to the next.  Their figures are kept apart
            // from the main job's under names of their own.
            if (!udp_failed && only_keeps(o, "udp_am_short_rtt_mac")) {
                for (int k = 0; k < 2; ++k) {
                    const bool mac = (k + rep) % 2 == 0;
                    auto cmd = sluice_cmd;
                    for (const char *a : {"--worker", "udp", "--only", "udp_am_short_rtt"})
                        cmd.push_back(a);
                    if (o.quick)
                        cmd.push_back("--quick");
                    if (o.udp_any_transport)
                        cmd.push_back("--any-transport");
                    cmd.push_back("--out");
                    const std::string name = std::string("udp-mac-") + (mac ? "on-" : "off-") + tag;
                    cmd.push_back(tmp.path + "/" + name + ".txt");
                    auto env = network_route;
                    env.push_back(mac ? "SLUICE_UDP_MAC=1" : "SLUICE_UDP_MAC=0");
                    const std::string log = tmp.path + "/" + name + ".log";
                    JobResult r = run_job(cmd, log, o.timeout, env);
                    Samples job;
                    read_results(tmp.path + "/" + name + ".txt", job);
                    const std::string as = mac ? "udp_mac_on" : "udp_mac_off";
                    for (const char *metric : {"udp_am_short_rtt", "udp_pingpong_job"})
                        for (double v : job[{metric, 0}])
                            samples[{as + (std::string(metric) == "udp_am_short_rtt" ? "_rtt" : "_pingpong"), 0}]
                                .push_back(v);
                    if (!r.ok) {
                        ++job_failures;
                        show_failure("Sluice over udp, MAC on or off", cmd, r, log);
                    }
                    std::fprintf(stderr, ", mac %s %.1fs", mac ? "on" : "off", r.seconds);
                }
            }
            if (only_keeps(o, "udp_pingpong_forked")) {
                const double t0 = now_ns();
                samples[{"udp_pingpong_forked", 0}].push_back(udp_pingpong_forked(
                    rtt_iterations(0, common.scale), UdpWait::spin, 60));
                std::fprintf(stderr, ", udp ping-pong %.1fs", (now_ns() - t0) / 1e9);
            }
        }
        for (const auto &p : ofi_providers) {
            if (std::find(ofi_failed.begin(), ofi_failed.end(), p) != ofi_failed.end())
                continue;
            auto cmd = sluice_cmd;
            for (const char *a : {"--worker", "ofi"})
                cmd.push_back(a);
            cmd.insert(cmd.end(), extra.begin(), extra.end());
            cmd.push_back("--out");
            auto env = ofi_env;
            env.push_back("SLUICE_OFI_PROVIDER=" + p);
            const std::string what = "Sluice over ofi, provider " + p;
            JobResult r = collect(cmd, "ofi-" + ofi_tag(p) + "-" + tag, what.c_str(), env);
            if (!r.ok) {
                ofi_failed.push_back(p);
                std::fprintf(stderr, "sluice-bench: the %s job is not run again in the later "
                                     "repetitions\n", p.c_str());
            }
            std::fprintf(stderr, "%sofi %s %.1fs", run_suite || udp || p != ofi_providers[0]
                                                       ? ", " : " ", p.c_str(), r.seconds);
        }
        if (ibv && !ibv_failed) {
            auto cmd = sluice_cmd;
            for (const char *a : {"--worker", "ibv"})
                cmd.push_back(a);
            cmd.insert(cmd.end(), extra.begin(), extra.end());
            cmd.push_back("--out");
            JobResult r = collect(cmd, "ibv-" + tag, "Sluice over ibv", ibv_env);
            if (!r.ok) {
                ibv_failed = true;
                std::fprintf(stderr, "sluice-bench: the ibv job is not run again in the later repetitions\n");
            }
            std::fprintf(stderr, "%sibv %.1fs", run_suite || udp || !ofi_providers.empty() ? ", " : " ", r.seconds);
        }
        if (portals && !portals_failed) {
            auto cmd = sluice_cmd;
            for (const char *a : {"--worker", "portals"})
                cmd.push_back(a);
            cmd.insert(cmd.end(), extra.begin(), extra.end());
            cmd.push_back("--out");
            JobResult r = collect(cmd, "portals-" + tag, "Sluice over portals", portals_env);
            if (!r.ok) {
                portals_failed = true;
                std::fprintf(stderr, "sluice-bench: the portals job is not run again in the later repetitions\n");
            }
            std::fprintf(stderr, "%sportals %.1fs", run_suite || udp || !ofi_providers.empty() || ibv ? ", " : " ",
                         r.seconds);
        }
        if (gni.on && !gni_failed) {
            const double seconds = section_job(gni, "gni", "gni-" + tag, "Sluice over gni", gni_env, gni_failed);
            std::fprintf(stderr, "%sgni %.1fs", run_suite || udp || !ofi_providers.empty() || ibv || portals ? ", " : " ",
                         seconds);
        }
        for (const char *mode : lapi_modes) {
            if (!lapi.on || lapi_failed)
                break;
            auto env = lapi_env;
            env.push_back(std::string("SLUICE_LAPI_MODE=") + mode);
            const double seconds = section_job(lapi, "lapi", "lapi-" + std::string(mode) + "-" + tag,
                                               std::string("Sluice over lapi, ") + mode, env, lapi_failed);
            std::fprintf(stderr, "%slapi %s %.1fs",
                         run_suite || udp || !ofi_providers.empty() || ibv || portals || gni.on || mode != lapi_modes[0]
                             ? ", "
                             : " ",
                         mode, seconds);
        }
        // Firehose's main pool (first provider only): random 64 KiB Puts over
        // a 1 GiB segment pinned on demand under 64 MiB, and registered whole.
        if (!ofi_providers.empty() && !large_failed &&
            only_keeps(o, "ofi_" + ofi_tag(ofi_providers[0]) + "_segment_large_put")) {
            const std::string &p = ofi_providers[0];
            for (const char *mode : {"large", "fast"}) {
                auto cmd = sluice_cmd;
                for (const char *a : {"--worker", "ofi-large"})
                    cmd.push_back(a);
                if (o.quick)
                    cmd.push_back("--quick");
                cmd.push_back("--out");
                auto env = ofi_env;
                env.push_back("SLUICE_OFI_PROVIDER=" + p);
                env.push_back(std::string("SLUICE_SEGMENT=") + mode);
                env.push_back("SLUICE_FIREHOSE_M=64M");
                env.push_back("SLUICE_FIREHOSE_STATS=1");
                const std::string name = "ofi-" + ofi_tag(p) + "-segment-" + mode + "-" + tag;
                const std::string what = "random Puts over a 1 GiB segment, SLUICE_SEGMENT=" +
                                         std::string(mode);
                JobResult r = collect(cmd, name, what.c_str(), env);
                if (mode == std::string("large"))
                    read_main_pool_stats(tmp.path + "/" + name + ".log",
                                         "ofi_" + ofi_tag(p) + "_main_pool", samples);
                if (!r.ok)
                    large_failed = true;
                std::fprintf(stderr, ", segment %s %.1fs", mode, r.seconds);
            }
        }
        if (client)
            job_failures += client_rep(client_context, rep, samples);
        std::fprintf(stderr, "\n");
    }
    if (udp && !udp_failed && only_keeps(o, "udp_once")) {
        auto cmd = sluice_cmd;
        for (const char *a : {"--worker", "exactly-once"})
            cmd.push_back(a);
        if (o.quick)
            cmd.push_back("--quick");
        if (o.udp_count > 0) {
            cmd.push_back("--count");
            cmd.push_back(std::to_string(o.udp_count));
        }
        if (o.udp_any_transport)
            cmd.push_back("--any-transport");
        cmd.push_back("--out");
        JobResult r = collect(cmd, "once", "exactly-once over udp (SLUICE_ROUTE=network)", network_route, "udp_once");
        std::fprintf(stderr, "exactly-once over udp: %.1fs\n", r.seconds);
    }

    if (!o.skip_launch) {
        // One unmeasured launch of each first (page cache), then alternate.
        const int n = o.launch_ranks;
        const int reps = std::max(o.reps, 3);
        std::vector<std::string> sl{o.sluicerun, "-n", std::to_string(n), "--", self,
                                    "--worker", "empty"};
        std::vector<std::string> ml{o.mpirun, "-n", std::to_string(n), "--oversubscribe",
                                    o.mpi_reference, "--empty"};
        std::fprintf(stderr, "launch: %d x sluicerun -n %d%s", reps, n,
                     have_mpi ? (" and mpirun -n " + std::to_string(n)).c_str() : "");
        for (int i = 0; i <= reps; ++i) {
            const std::string log = tmp.path + "/launch.log";
            JobResult r = run_job(sl, log, o.timeout);
            if (!r.ok) {
                ++job_failures;
                show_failure("sluicerun (empty program)", sl, r, log);
            } else if (i > 0) {
                samples[{"launch_sluicerun", static_cast<std::size_t>(n)}].push_back(
                    r.seconds * 1e3);
            }
            if (!have_mpi)
                continue;
            r = run_job(ml, log, o.timeout);
            if (!r.ok) {
                ++job_failures;
                show_failure("mpirun (empty program)", ml, r, log);
            } else if (i > 0) {
                samples[{"launch_mpirun", static_cast<std::size_t>(n)}].push_back(
                    r.seconds * 1e3);
            }
        }
        std::fprintf(stderr, "\n");
    }

    std::map<int, ShmFigure> &shm = findings.shm;
    if (!o.skip_shm) {
        for (int n : o.shm_ranks) {
            const std::string dir = tmp.path + "/shm-" + std::to_string(n);
            mkdir(dir.c_str(), 0700);
            std::vector<std::string> cmd{o.sluicerun, "-n", std::to_string(n), "--", self,
                                         "--worker", "shm", "--out", dir};
            const std::string log = dir + ".log";
            std::fprintf(stderr, "shared memory: %d ranks\n", n);
            JobResult r = run_job(cmd, log, o.timeout);
            if (!r.ok) {
                ++job_failures;
                show_failure("shared-memory census", cmd, r, log);
                continue;
            }
            shm[n] = aggregate_shm(dir, n);
        }
    }

    {
        std::ofstream raw(tmp.path + "/samples.txt");
        for (auto &[key, values] : samples) {
            raw << key.first << ' ' << key.second;
            for (double v : values)
                raw << ' ' << v;
            raw << '\n';
        }
    }

    findings.have_mpi = have_mpi;
    findings.mpi_note = mpi_note;
    findings.udp = udp;
    findings.udp_note = udp_note;
    findings.ofi_providers = ofi_providers;
    findings.ofi_note = ofi_note;
    findings.ibv = ibv;
    findings.ibv_note = ibv_note;
    findings.portals = portals;
    findings.portals_note = portals_note;
    findings.gni = gni.on;
    findings.gni_softnic = gni.softnic;
    findings.gni_note = gni.note;
    findings.lapi = lapi.on;
    findings.lapi_softnic = lapi.softnic;
    findings.lapi_note = lapi.note;
    findings.busy_reps = busy_reps;
    findings.busiest = busiest;
    const int failed = report(o, samples, findings);
    if (o.keep)
        std::printf("raw results and logs: %s\n", tmp.path.c_str());
    std::printf("total %.0f s; %d of the targets not met; %d job(s) failed\n",
                (now_ns() - start) / 1e9, failed, job_failures);
    if (job_failures)
        return 2;
    return o.strict && failed ? 1 : 0;
}

} // namespace sluice::perf
