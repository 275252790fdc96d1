// tests/perf/driver.cpp - sluice-bench run directly: one command measures
// Sluice and its references in the same run and compares them.
//
// Each repetition launches one Sluice job (sluicerun -n 2 sluice-bench
// --worker suite) and one MPI job (mpirun -n 2 mpi-reference --suite), then
// measures the bare cache-line ping-pong (two forked processes) and memcpy
// here.  Jobs write "metric size value" lines into a temporary folder; every
// figure is the median over the repetitions.  Launch times and shared memory
// per rank come after.  Every job runs under a hard time limit.
#include "tests/perf/driver.hpp"

#include "tests/perf/bench_common.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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
        "  --all-sizes         every power of 2 from 8 B to 4 MiB (default powers of 4)\n"
        "  --only NAME         only the figures whose name contains NAME (e.g. put_lat,\n"
        "                      am_short); no launch or memory figures unless NAME is\n"
        "                      launch or shm\n"
        "  --size N            sized figures at N bytes only\n"
        "  --csv FILE          CSV output (sluice-bench.csv)\n"
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
        } else if (a == "--timeout") {
            o.timeout = std::atof(value("--timeout").c_str());
        } else if (a == "--wait-idle") {
            o.wait_idle = std::atof(value("--wait-idle").c_str());
        } else if (a == "--keep") {
            o.keep = true;
        } else if (a == "--strict") {
            o.strict = true;
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
    return true;
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
        mpi_note = "MPI references skipped (--no-mpi)";
    }

    TempDir tmp;
    tmp.keep = o.keep;
    if (tmp.path.empty()) {
        std::perror("sluice-bench: mkdtemp");
        return 2;
    }

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
    std::printf("  sluice: %s --worker suite\n", describe(sluice_cmd).c_str());
    if (have_mpi)
        std::printf("  mpi:    %s\n", describe(mpi_cmd).c_str());
    else
        std::printf("  %s\n", mpi_note.c_str());
    std::fflush(stdout);

    Samples samples;
    int job_failures = 0;
    const long pingpong_iters = rtt_iterations(0, common.scale) * 5;
    int busy_reps = 0;
    double busiest = 0;
    const bool run_suite = o.only != "launch" && o.only != "shm";
    for (int rep = 0; run_suite && rep < o.reps; ++rep) {
        const double busy = wait_quiet(o.wait_idle);
        if (busy > 0.15)
            ++busy_reps;
        busiest = std::max(busiest, busy);
        std::fprintf(stderr, "rep %d/%d (machine %.0f%% busy before):", rep + 1, o.reps,
                     busy * 100);
        const std::string tag = std::to_string(rep);
        {
            auto cmd = sluice_cmd;
            for (const char *a : {"--worker", "suite", "--out"})
                cmd.push_back(a);
            cmd.push_back(tmp.path + "/sluice-" + tag + ".txt");
            cmd.insert(cmd.end(), extra.begin(), extra.end());
            const std::string log = tmp.path + "/sluice-" + tag + ".log";
            JobResult r = run_job(cmd, log, o.timeout);
            read_results(tmp.path + "/sluice-" + tag + ".txt", samples);
            if (!r.ok) {
                ++job_failures;
                show_failure("Sluice suite", cmd, r, log);
            }
            std::fprintf(stderr, " sluice %.1fs", r.seconds);
        }
        if (have_mpi) {
            auto cmd = mpi_cmd;
            cmd.push_back("--out");
            cmd.push_back(tmp.path + "/mpi-" + tag + ".txt");
            cmd.insert(cmd.end(), extra.begin(), extra.end());
            const std::string log = tmp.path + "/mpi-" + tag + ".log";
            JobResult r = run_job(cmd, log, o.timeout);
            read_results(tmp.path + "/mpi-" + tag + ".txt", samples);
            if (!r.ok) {
                ++job_failures;
                show_failure("MPI reference", cmd, r, log);
            }
            std::fprintf(stderr, ", mpi %.1fs", r.seconds);
        }
        const double t0 = now_ns();
        samples[{"pingpong", 0}].push_back(cacheline_pingpong(pingpong_iters, 60));
        samples[{"pause", 0}].push_back(pause_cost());
        measure_memcpy(common, samples);
        std::fprintf(stderr, ", ping-pong+memcpy %.1fs\n", (now_ns() - t0) / 1e9);
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

    Findings findings;
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
