// tests/perf/client-section.cpp - the driver's side of the client rows
// (client-section.hpp): which jobs run, and the rows the report prints.
//
// Each repetition runs the client worker on smp at 2, 4 and 8 ranks, over
// udp and over ofi (tcp;ofi_rxm) at 2 ranks when those conduits probe, and
// mpi-reference --client at 2, 4 and 8 ranks for the collectives'
// references.  The 2-rank Sluice jobs take the suite's --bind; the larger
// ones, like every MPI job, are left to the scheduler.
#include "tests/perf/client-section.hpp"

#include "tests/perf/bench_common.hpp"
#include "tests/perf/driver.hpp"
#include "tests/perf/ofi-reference.hpp"

#include "conduits/registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace sluice::perf {
namespace {

const char *const client_ofi_provider = "tcp;ofi_rxm";
const int client_rank_counts[] = {2, 4, 8};

// Iterations of the collective rows at `ranks`: fewer once the job has more
// ranks than the machine has CPUs, where every round waits on the scheduler.
long reduce_iterations(int ranks, bool quick) {
    const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    const long base = ranks <= cpus ? 20000 : 2000;
    return std::max(50L, base / (quick ? 20 : 1));
}
long bcast_iterations(int ranks, bool quick) {
    const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    const long base = ranks <= cpus ? 1000 : 200;
    return std::max(10L, base / (quick ? 20 : 1));
}

bool conduit_probes(const char *name) {
    for (const auto &t : conduit::transport_registry())
        if (t.network && std::strcmp(t.name, name) == 0)
            return !t.probe || t.probe().empty();
    return false;
}

struct Plan {
    bool udp = false, ofi = false, ibv = false;
    bool decided = false;
    bool ran = false;
    std::string note;
};
Plan &plan_state() {
    static Plan p;
    return p;
}
const Plan &plan_decide() {
    Plan &p = plan_state();
    if (p.decided)
        return p;
    p.decided = true;
    p.udp = conduit_probes("udp");
    if (!p.udp)
        p.note += "client rows over udp skipped: the udp conduit is not built or does not probe; ";
    p.ofi = conduit_probes("ofi");
    if (p.ofi) {
        const std::string why = ofi_probe(client_ofi_provider);
        p.ofi = why.empty();
        if (!p.ofi)
            p.note += "client rows over ofi skipped: provider " + std::string(client_ofi_provider) + ": " + why + "; ";
    } else {
        p.note += "client rows over ofi skipped: the ofi conduit is not built or does not probe; ";
    }
    // ibv probes on an HCA, or on the software verbs NIC under softnic-run.
    p.ibv = conduit_probes("ibv");
    if (!p.ibv)
        p.note += "client rows over ibv skipped: no verbs device (run under tests/softnic/verbs/softnic-run); ";
    return p;
}

} // namespace

ClientPlan &client_plan() {
    static ClientPlan p;
    return p;
}

bool client_option(std::string_view arg) {
    if (arg == "--client")
        client_plan().mode = ClientPlan::Mode::only;
    else if (arg == "--no-client")
        client_plan().mode = ClientPlan::Mode::skip;
    else
        return false;
    return true;
}

bool client_wanted(const std::string &only) {
    if (only.empty())
        return true;
    const char *const whats[] = {"fadd_rtt", "pingpong", "am_short_rtt", "get_lat", "puts_1024x64",
                                 "puts_nbi_1024x64", "memcpy_1024x64", "put_loop_1024x64", "medium_flood_fixed",
                                 "medium_flood_prepared", "hot_fadd", "hot_cpu", "reduce_all_8", "bcast_1M",
                                 "shmem_put8", "shmem_get8", "shmem_put4M", "shmem_get4M", "shmem_fadd",
                                 "shmem_barrier_all", "shmem_sum_reduce_8"};
    for (const char *what : whats)
        for (const char *tag : {"smp", "udp", "ofi_tcp", "ibv"})
            if ((std::string("client_") + tag + "_" + what).find(only) != std::string::npos)
                return true;
    for (const char *metric : {"mpi_allreduce_8", "mpi_bcast_1M", "mpi_barrier"})
        if (std::string_view(metric).find(only) != std::string_view::npos)
            return true;
    return false;
}

int client_rep(const ClientContext &c, int rep, Samples &samples) {
    const Plan &plan = plan_decide();
    plan_state().ran = true;
    int failures = 0;
    const std::string tag = std::to_string(rep);
    bool first = client_plan().mode == ClientPlan::Mode::only; // nothing before on the line
    auto job = [&](std::vector<std::string> cmd, const std::string &name, const std::string &what,
                   const std::vector<std::string> &env) {
        cmd.insert(cmd.end(), c.extra.begin(), c.extra.end());
        cmd.push_back("--out");
        cmd.push_back(c.tmp + "/" + name + ".txt");
        const std::string log = c.tmp + "/" + name + ".log";
        const JobResult r = run_job(cmd, log, c.timeout, env);
        read_results(c.tmp + "/" + name + ".txt", samples);
        if (!r.ok) {
            ++failures;
            show_failure(what.c_str(), cmd, r, log);
        }
        std::fprintf(stderr, "%s%s %.1fs", first ? " " : ", ", name.substr(0, name.rfind('-')).c_str(), r.seconds);
        first = false;
    };
    auto counts = [&](int ranks) {
        return std::vector<std::string>{"--client-reduce-iters", std::to_string(reduce_iterations(ranks, c.quick)),
                                        "--client-bcast-iters", std::to_string(bcast_iterations(ranks, c.quick))};
    };
    auto sluice = [&](int ranks, const std::string &client_tag) {
        std::vector<std::string> cmd{c.sluicerun};
        if (ranks == 2 && !c.bind.empty())
            cmd.push_back("--bind=" + c.bind);
        for (std::string a : {std::string("-n"), std::to_string(ranks), std::string("--"), c.self,
                              std::string("--worker"), std::string("client"), std::string("--client-tag"), client_tag})
            cmd.push_back(a);
        for (const std::string &a : counts(ranks))
            cmd.push_back(a);
        return cmd;
    };
    // The OpenSHMEM rows' worker, beside sluice-bench.
    const std::string shmem_worker = c.self.substr(0, c.self.rfind('/') + 1) + "sluice-bench-shmem";
    for (int n : client_rank_counts) {
        const std::string ranks = std::to_string(n);
        job(sluice(n, "smp"), "client-smp" + ranks + "-" + tag, "client rows, smp, " + ranks + " ranks", {});
        if (::access(shmem_worker.c_str(), X_OK) == 0) {
            std::vector<std::string> cmd{c.sluicerun};
            if (n == 2 && !c.bind.empty())
                cmd.push_back("--bind=" + c.bind);
            for (const std::string &a : {std::string("-n"), ranks, std::string("--"), shmem_worker})
                cmd.push_back(a);
            for (const std::string &a : counts(n))
                cmd.push_back(a);
            job(cmd, "client-shmem" + ranks + "-" + tag, "OpenSHMEM rows, smp, " + ranks + " ranks", {});
        }
        if (!c.mpirun.empty() && !c.mpi_reference.empty()) {
            std::vector<std::string> cmd{c.mpirun, "-n", ranks, "--oversubscribe", c.mpi_reference, "--client"};
            for (const std::string &a : counts(n))
                cmd.push_back(a);
            job(cmd, "client-mpi" + ranks + "-" + tag, "client rows, MPI reference, " + ranks + " ranks", {});
        }
    }
    if (plan.udp)
        job(sluice(2, "udp"), "client-udp-" + tag, "client rows over udp",
            {"SLUICE_ROUTE=network", "SLUICE_NETWORK=udp"});
    if (plan.ofi)
        job(sluice(2, "ofi_" + ofi_tag(client_ofi_provider)), "client-ofi-" + tag, "client rows over ofi",
            {"SLUICE_ROUTE=network", "SLUICE_NETWORK=ofi", std::string("SLUICE_OFI_PROVIDER=") + client_ofi_provider});
    if (plan.ibv)
        job(sluice(2, "ibv"), "client-ibv-" + tag, "client rows over ibv", {"SLUICE_ROUTE=network", "SLUICE_NETWORK=ibv"});
    return failures;
}

bool client_ran() { return plan_state().ran; }

std::string client_note() {
    const Plan &p = plan_decide();
    std::string note = "(client rows: fetch-add and strided Put at 2 ranks, rank 0 measuring, in chunks alternating "
                       "with the reference of the same job; hot spot, reduce-to-all and broadcast with every rank at "
                       "once, MPI's in mpi-reference --client jobs of the same run; ranks beyond the CPUs share them)";
    if (!p.note.empty())
        note += "\n   " + p.note.substr(0, p.note.size() - 2);
    return note;
}

std::vector<ClientRow> client_rows(const Samples &s) {
    auto med = [&](const std::string &m, std::size_t z) {
        auto it = s.find({m, z});
        return it == s.end() ? nan_value : median(it->second);
    };
    auto gbps = [](double ns, std::size_t bytes) { return std::isnan(ns) ? nan_value : static_cast<double>(bytes) / ns; };
    auto rate = [](double ns) { return std::isnan(ns) ? nan_value : 1e3 / ns; }; // Mops/s from ns per op
    std::vector<ClientRow> rows;
    auto add = [&](const std::string &section, const std::string &metric, std::size_t size, double v,
                   const std::string &ref_name, double ref) -> ClientRow & {
        ClientRow r;
        r.section = section;
        r.metric = metric;
        r.size = size;
        r.sluice = v;
        r.reference_name = ref_name;
        r.reference = ref;
        rows.push_back(std::move(r));
        return rows.back();
    };
    auto target = [](ClientRow &r, ClientRow::Check check, double threshold, std::string title) {
        r.check = check;
        r.threshold = threshold;
        r.title = std::move(title);
    };
    const auto at_most = ClientRow::Check::ratio_at_most, at_least = ClientRow::Check::ratio_at_least;
    const Plan &plan = plan_decide();
    const std::string ofi = "ofi_" + ofi_tag(client_ofi_provider);

    const std::string lat = "Client API: fetch-add (u64, blocking, 2 ranks; ns per round trip)";
    target(add(lat, "smp_fadd_rtt_ns", 8, med("client_smp_fadd_rtt", 8), "cacheline_pingpong_rtt_ns",
               med("client_smp_pingpong", 0)),
           at_most, 1.5, "smp 8 B fetch-add round trip <= 1.5 x cache-line ping-pong");
    if (plan.udp)
        target(add(lat, "udp_fadd_rtt_ns", 8, med("client_udp_fadd_rtt", 8), "udp_am_short_rtt_ns",
                   med("client_udp_am_short_rtt", 0)),
               at_most, 1.1, "udp 8 B fetch-add <= 1.1 x udp AM Short round trip");
    if (plan.ofi)
        target(add(lat, ofi + "_fadd_rtt_ns", 8, med("client_" + ofi + "_fadd_rtt", 8), ofi + "_get_lat_ns",
                   med("client_" + ofi + "_get_lat", 8)),
               at_most, 1.2, std::string(client_ofi_provider) + " 8 B fetch-add <= 1.2 x its 8 B blocking Get");
    if (plan.ibv)
        target(add(lat, "ibv_fadd_rtt_ns", 8, med("client_ibv_fadd_rtt", 8), "ibv_get_lat_ns", med("client_ibv_get_lat", 8)),
               at_most, 1.2, "ibv 8 B fetch-add <= 1.2 x its 8 B blocking Get");

    const std::string hot = "Client API: hot spot (every rank fetch-adds one word of rank 0, smp; Mops/s over all ranks)";
    for (std::size_t n : {std::size_t{2}, std::size_t{8}}) {
        ClientRow &r = add(hot, "smp_hot_fadd_Mops", n, rate(med("client_smp_hot_fadd", n)), "cpu_fetch_add_Mops",
                           rate(med("client_smp_hot_cpu", n)));
        r.size_label = std::to_string(n) + " ranks";
        target(r, at_least, 0.8,
               "hot spot, " + std::to_string(n) + " ranks, smp: fetch-add rate >= 0.8 x CPU fetch_add loop");
    }

    const std::string coll = "Client API: collectives on the job team (smp; ns per call, GB/s)";
    for (std::size_t n : {std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
        ClientRow &r = add(coll, "smp_reduce_all_ns", n, med("client_smp_reduce_all_8", n), "mpi_allreduce_ns",
                           med("mpi_allreduce_8", n));
        r.size_label = std::to_string(n) + " ranks";
        target(r, at_most, 1.0, "reduce-to-all 8 B, " + std::to_string(n) + " ranks, smp <= MPI_Allreduce");
    }
    {
        ClientRow &r = add(coll, "smp_bcast_1M_GBps", 4, gbps(med("client_smp_bcast_1M", 4), client_bcast_bytes),
                           "mpi_bcast_1M_GBps", gbps(med("mpi_bcast_1M", 4), client_bcast_bytes));
        r.size_label = "4 ranks";
        target(r, at_least, 0.9, "broadcast 1 MiB, 4 ranks, smp >= 0.9 x MPI_Bcast bandwidth");
    }

    const std::string vis = "Client API: strided Put, 1024 pieces of 64 B, blocking (2 ranks; GB/s)";
    const std::size_t z = client_strided_bytes;
    target(add(vis, "smp_puts_GBps", z, gbps(med("client_smp_puts_1024x64", z), z), "memcpy_pieces_GBps",
               gbps(med("client_smp_memcpy_1024x64", z), z)),
           at_least, 0.8, "smp strided Put 1024 x 64 B >= 0.8 x memcpy of the pieces");
    if (plan.udp)
        target(add(vis, "udp_puts_GBps", z, gbps(med("client_udp_puts_1024x64", z), z), "udp_1024_puts_GBps",
                   gbps(med("client_udp_put_loop_1024x64", z), z)),
               at_least, 5, "udp strided Put 1024 x 64 B >= 5 x 1024 blocking Puts");
    if (plan.ofi)
        target(add(vis, ofi + "_puts_GBps", z, gbps(med("client_" + ofi + "_puts_1024x64", z), z),
                   ofi + "_1024_puts_GBps", gbps(med("client_" + ofi + "_put_loop_1024x64", z), z)),
               at_least, 5, std::string(client_ofi_provider) + " strided Put 1024 x 64 B >= 5 x 1024 blocking Puts");

    // OpenSHMEM (libsluice-shmem) beside Sluice's own calls and MPI, smp.
    const std::string sh = "OpenSHMEM (libsluice-shmem) beside Sluice's own calls and MPI (smp; ns per call, GB/s)";
    {
        const std::size_t mb = std::size_t{4} << 20;
        target(add(sh, "shmem_putmem_ns", 8, med("client_smp_shmem_put8", 8), "sluice_put_ns",
                   med("client_smp_shmem_sluice_put8", 8)),
               at_most, 1.1, "shmem_putmem 8 B <= 1.1 x sluice_put");
        target(add(sh, "shmem_getmem_ns", 8, med("client_smp_shmem_get8", 8), "sluice_get_ns",
                   med("client_smp_shmem_sluice_get8", 8)),
               at_most, 1.1, "shmem_getmem 8 B <= 1.1 x sluice_get");
        target(add(sh, "shmem_putmem_GBps", mb, gbps(med("client_smp_shmem_put4M", mb), mb), "sluice_put_GBps",
                   gbps(med("client_smp_shmem_sluice_put4M", mb), mb)),
               at_least, 1 / 1.1, "shmem_putmem 4 MiB bandwidth >= sluice_put's / 1.1");
        target(add(sh, "shmem_getmem_GBps", mb, gbps(med("client_smp_shmem_get4M", mb), mb), "sluice_get_GBps",
                   gbps(med("client_smp_shmem_sluice_get4M", mb), mb)),
               at_least, 1 / 1.1, "shmem_getmem 4 MiB bandwidth >= sluice_get's / 1.1");
        target(add(sh, "shmem_fetch_add_ns", 8, med("client_smp_shmem_fadd", 8), "sluice_ad_fadd_ns",
                   med("client_smp_shmem_sluice_fadd", 8)),
               at_most, 1.1, "shmem_long_atomic_fetch_add <= 1.1 x sluice_ad_op_u64 FADD");
        for (std::size_t n : {std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
            ClientRow &b = add(sh, "shmem_barrier_all_ns", n, med("client_smp_shmem_barrier_all", n), "mpi_barrier_ns",
                               med("mpi_barrier", n));
            b.size_label = std::to_string(n) + " ranks";
            target(b, at_most, 1.0, "shmem_barrier_all, " + std::to_string(n) + " ranks <= MPI_Barrier");
            ClientRow &r = add(sh, "shmem_sum_reduce_ns", n, med("client_smp_shmem_sum_reduce_8", n), "mpi_allreduce_ns",
                               med("mpi_allreduce_8", n));
            r.size_label = std::to_string(n) + " ranks";
            target(r, at_most, 1.0, "shmem_long_sum_reduce 8 B, " + std::to_string(n) + " ranks <= MPI_Allreduce");
        }
    }

    // Reported, no target: the pipelined loop GASNet's testvisperf runs.
    const std::string visn = "Client API: strided Put, 1024 pieces of 64 B, 16 NBI in flight, then one sync (2 ranks; GB/s)";
    for (const std::string &tag : {std::string("smp"), std::string("udp"), ofi})
        if (tag == "smp" || (tag == "udp" && plan.udp) || (tag == ofi && plan.ofi))
            add(visn, tag + "_puts_nbi_GBps", z, gbps(med("client_" + tag + "_puts_nbi_1024x64", z), z),
                tag + "_puts_GBps", gbps(med("client_" + tag + "_puts_1024x64", z), z));

    const std::string am = "Client API: Medium flood, 4 KiB payload produced per message (smp, 2 ranks; GB/s)";
    const std::size_t f = client_flood_bytes;
    target(add(am, "smp_prepared_flood_GBps", f, gbps(med("client_smp_medium_flood_prepared", f), f),
               "fixed_medium_flood_GBps", gbps(med("client_smp_medium_flood_fixed", f), f)),
           at_least, 1.1, "negotiated-payload Medium flood 4 KiB >= 1.1 x fixed-payload flood");
    return rows;
}

} // namespace sluice::perf
