// tests/perf/report.cpp - from medians to the table, the CSV and the targets.
// One row per (figure, reference); a row may carry a target of the issue.
#include "tests/perf/bench_common.hpp"
#include "tests/perf/client-section.hpp"
#include "tests/perf/driver.hpp"
#include "tests/perf/ofi-reference.hpp"
#include "tests/perf/sockets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <tuple>

namespace sluice::perf {
namespace {

enum class Check { none, ratio_at_most, ratio_at_least, value_at_most };

struct Row {
    std::string section;
    std::string metric;
    std::size_t size = 0;
    std::string size_label;
    double sluice = nan_value;
    std::string reference_name;
    double reference = nan_value;
    Check check = Check::none;
    double threshold = 0;
    std::string title; // for the targets list
    std::string state; // the suite's rows: the state their repetitions ran in (README, "States")

    double ratio() const {
        return std::isnan(reference) || reference == 0 ? nan_value : sluice / reference;
    }
    std::string target() const {
        char b[64];
        switch (check) {
        case Check::none:
            return "";
        case Check::ratio_at_most:
            std::snprintf(b, sizeof b, "<=%gx", threshold);
            return b;
        case Check::ratio_at_least:
            std::snprintf(b, sizeof b, ">=%gx", threshold);
            return b;
        case Check::value_at_most:
            std::snprintf(b, sizeof b, "<=%g", threshold);
            return b;
        }
        return "";
    }
    std::string pass() const {
        switch (check) {
        case Check::none:
            return "";
        case Check::ratio_at_most:
            return std::isnan(ratio()) ? "n/a" : ratio() <= threshold ? "PASS" : "FAIL";
        case Check::ratio_at_least:
            return std::isnan(ratio()) ? "n/a" : ratio() >= threshold ? "PASS" : "FAIL";
        case Check::value_at_most:
            return std::isnan(sluice) ? "n/a" : sluice <= threshold ? "PASS" : "FAIL";
        }
        return "";
    }
};

std::string size_text(std::size_t s) {
    if (s == 0)
        return "-";
    if (s >= mib && s % mib == 0)
        return std::to_string(s / mib) + "M";
    if (s >= kib && s % kib == 0)
        return std::to_string(s / kib) + "K";
    return std::to_string(s);
}
std::string value_text(double v) {
    if (std::isnan(v))
        return "-";
    char b[32];
    const double a = std::fabs(v);
    // Below 0.1 (a software NIC's GB/s) two significant digits, not "0.01".
    std::snprintf(b, sizeof b, a >= 10000 ? "%.0f" : a >= 100 ? "%.1f" : a >= 0.1 || a == 0 ? "%.2f" : "%#.2g", v);
    return b;
}
std::string csv_number(double v) {
    if (std::isnan(v))
        return "";
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

// `all` with the values of the repetitions in `state` only, for every
// figure measured by state; the others (launch, memory, ...) as they are.
Samples within_state(const Samples &all, const std::map<std::string, Samples> &by_state, const std::string &state) {
    Samples view = all;
    for (const auto &entry : by_state)
        for (const auto &figure : entry.second)
            view.erase(figure.first);
    for (const auto &figure : by_state.at(state))
        view[figure.first] = figure.second;
    return view;
}

struct Report {
    const Options &options;
    const Samples &s;
    std::vector<Row> rows;
    bool have_mpi;
    std::string state; // stamped on the rows build() adds

    double med(const std::string &m, std::size_t size) const {
        auto it = s.find({m, size});
        return it == s.end() ? nan_value : median(it->second);
    }
    // Sizes measured for `metric`, ascending.
    std::vector<std::size_t> sizes_of(const std::string &metric) const {
        std::vector<std::size_t> v;
        for (auto it = s.lower_bound({metric, 0}); it != s.end() && it->first.first == metric;
             ++it)
            v.push_back(it->first.second);
        return v;
    }
    static double bandwidth(double ns, std::size_t bytes) {
        return std::isnan(ns) ? nan_value : static_cast<double>(bytes) / ns; // GB/s
    }
    Row &add(std::string section, std::string metric, std::size_t size, double sluice,
             std::string reference_name = "", double reference = nan_value) {
        Row r;
        r.section = std::move(section);
        r.metric = std::move(metric);
        r.size = size;
        r.sluice = sluice;
        r.reference_name = std::move(reference_name);
        r.reference = reference;
        r.state = state;
        rows.push_back(std::move(r));
        return rows.back();
    }
    static void target(Row &r, Check check, double threshold, std::string title) {
        r.check = check;
        r.threshold = threshold;
        r.title = std::move(title);
    }

    // The udp section (issue 6): every reference measured in the same job,
    // except the forked ping-pong.
    void build_udp() {
        const std::string rtt = "udp conduit (2 ranks, SLUICE_ROUTE=network, 127.0.0.1; ns "
                                "per round trip or operation)";
        const double am = med("udp_am_short_rtt", 0);
        const double bare = med("udp_pingpong_job", 0);
        target(add(rtt, "udp_am_short_rtt_ns", 0, am, "udp_pingpong_rtt_ns", bare),
               Check::ratio_at_most, 1.1,
               "udp AM Short round trip <= 1.1 x bare UDP 8 B round trip");
        add(rtt, "udp_am_short_rtt_ns", 0, am, "udp_pingpong_block_rtt_ns",
            med("udp_pingpong_job_block", 0));
        add(rtt, "udp_am_short_rtt_ns", 0, am, "udp_pingpong_forked_rtt_ns",
            med("udp_pingpong_forked", 0));
        add(rtt, "udp_am_short_rtt_ns", 0, am, "smp_am_short_rtt_ns", med("am_short_rtt", 0));
        add(rtt, "udp_am_short_rtt_p50_ns", 0, med("udp_am_short_rtt_p50", 0),
            "udp_pingpong_rtt_p50_ns", med("udp_pingpong_job_p50", 0));
        add(rtt, "udp_am_short_rtt_p99_ns", 0, med("udp_am_short_rtt_p99", 0),
            "udp_pingpong_rtt_ns", bare);
        target(add(rtt, "udp_put_lat_ns", 8, med("udp_put_lat", 8), "udp_pingpong_rtt_ns", bare),
               Check::ratio_at_most, 1.2, "udp 8 B blocking Put <= 1.2 x bare UDP round trip");
        target(add(rtt, "udp_get_lat_ns", 8, med("udp_get_lat", 8), "udp_pingpong_rtt_ns", bare),
               Check::ratio_at_most, 1.2, "udp 8 B blocking Get <= 1.2 x bare UDP round trip");
        // The MAC's cost: jobs of the round trip alone with SLUICE_UDP_MAC=1
        // and =0, alternating, each beside its own bare ping-pong (info: the
        // machine's drift between the jobs).
        target(add(rtt, "udp_am_short_rtt_mac_ns", 0, med("udp_mac_on_rtt", 0), "udp_am_short_rtt_mac_off_ns",
                   med("udp_mac_off_rtt", 0)),
               Check::ratio_at_most, 1.02, "udp AM Short round trip with the MAC <= 1.02 x without it");
        add(rtt, "udp_pingpong_mac_job_ns", 0, med("udp_mac_on_pingpong", 0), "udp_pingpong_mac_off_job_ns",
            med("udp_mac_off_pingpong", 0));
        // The conduit's own counters over the whole job (SLUICE_UDP_STATS), both ranks.
        add(rtt, "udp_job_retransmitted", 0, med("udp_job_retransmitted", 0), "udp_job_sent",
            med("udp_job_sent", 0));

        const std::string bw = "udp bandwidth (nbi, as above; GB/s)";
        const double tcp = bandwidth(med("udp_tcp_stream", largest_rma), largest_rma);
        target(add(bw, "udp_put_bw_GBps", largest_rma,
                   bandwidth(med("udp_put_bw", largest_rma), largest_rma), "tcp_stream_GBps",
                   tcp),
               Check::ratio_at_least, 0.6, "udp 4 MiB Put bandwidth >= 0.6 x bare TCP stream");
        add(bw, "udp_get_bw_GBps", largest_rma,
            bandwidth(med("udp_get_bw", largest_rma), largest_rma), "tcp_stream_GBps", tcp);

        const std::string once = "udp exactly-once (AM Short, both ways at once; messages)";
        const double count = med("udp_once_count", 0);
        const auto z = std::isnan(count) ? std::size_t{0} : static_cast<std::size_t>(count);
        target(add(once, "udp_once_lost", z, med("udp_once_lost", 0)), Check::value_at_most, 0,
               "udp: no AM lost (exactly-once run)");
        target(add(once, "udp_once_repeated", z, med("udp_once_repeated", 0)),
               Check::value_at_most, 0, "udp: no AM delivered twice (exactly-once run)");
        add(once, "udp_once_ns_per_am", z, med("udp_once_ns", 0));
        // The conduit's own counters (SLUICE_UDP_STATS), both ranks.
        add(once, "udp_once_datagrams_sent", z, med("udp_once_sent", 0));
        add(once, "udp_once_retransmitted", z, med("udp_once_retransmitted", 0));
        add(once, "udp_once_duplicates_dropped", z, med("udp_once_duplicates", 0));

        // One host, default routing: smp carries every peer and udp never
        // starts, so the round trip is smp's; the socket count checks that.
        const std::string route = "Default routing on one host (udp built in)";
        add(route, "default_am_short_rtt_ns", 0, med("am_short_rtt", 0),
            "cacheline_pingpong_rtt_ns", med("pingpong_job", 0));
        target(add(route, "default_udp_sockets", 0, med("route_udp_sockets", 0)),
               Check::value_at_most, 0,
               "one host, default routing: no UDP socket open (AM path = smp)");
    }

    // The ibv section: every reference is bare verbs on the same
    // device between the same two processes, measured in the same job
    // (ibv-section.hpp).  Here the device is the software NIC: the ratios
    // are the conduit's overhead over verbs, not InfiniBand figures.
    void build_ibv() {
        auto m = [&](const std::string &what, std::size_t z) { return med("ibv_" + what, z); };
        const std::string lat = "ibv conduit (2 ranks, SLUICE_ROUTE=network; ns per round trip or operation; "
                                "Put/Get from the segment; bare: verbs on the same device)";
        target(add(lat, "ibv_am_short_rtt_ns", 0, m("am_short_rtt", 0), "ibv_verbs_send_rtt_ns",
                   m("verbs_send_rtt", 0)),
               Check::ratio_at_most, 1.15, "ibv AM Short round trip <= 1.15 x bare verbs send ping-pong");
        target(add(lat, "ibv_put_lat_ns", 8, m("put_lat", 8), "ibv_verbs_write_lat_ns", m("verbs_write_lat", 8)),
               Check::ratio_at_most, 1.2, "ibv 8 B blocking Put <= 1.2 x bare RDMA write+completion");
        add(lat, "ibv_get_lat_ns", 8, m("get_lat", 8), "ibv_verbs_read_lat_ns", m("verbs_read_lat", 8));
        const std::string bw = "ibv bandwidth (GB/s; nbi: 64 per sync, bare: 64 posted then all reaped; "
                               "outside: from a buffer outside the segment, through firehose)";
        target(add(bw, "ibv_put_bw_GBps", largest_rma, bandwidth(m("put_bw", largest_rma), largest_rma),
                   "ibv_verbs_write_bw_GBps", bandwidth(m("verbs_write_bw", largest_rma), largest_rma)),
               Check::ratio_at_least, 0.9, "ibv 4 MiB Put bandwidth (nbi) >= 0.9 x bare RDMA write");
        add(bw, "ibv_get_bw_GBps", largest_rma, bandwidth(m("get_bw", largest_rma), largest_rma),
            "ibv_verbs_read_bw_GBps", bandwidth(m("verbs_read_bw", largest_rma), largest_rma));
        add(bw, "ibv_put_outside_bw_GBps", largest_rma, bandwidth(m("put_outside_bw", largest_rma), largest_rma),
            "ibv_put_bw_GBps", bandwidth(m("put_bw", largest_rma), largest_rma));
    }

    // The portals section: every reference is bare Portals 4 on
    // the NI the conduit opened, between the same two processes, measured in
    // the same job (portals-section.hpp).  Over the reference
    // implementation's UDP transport the ratios are the conduit's overhead
    // over that library, not Portals hardware figures.
    void build_portals() {
        auto m = [&](const std::string &what, std::size_t z) { return med("portals_" + what, z); };
        const std::string lat = "portals conduit (2 ranks, SLUICE_ROUTE=network; ns per round trip or operation; "
                                "Put/Get from the segment; bare: Portals 4 on the conduit's NI)";
        target(add(lat, "portals_am_short_rtt_ns", 0, m("am_short_rtt", 0), "portals_ptl_ping_rtt_ns",
                   m("ptl_ping_rtt", 0)),
               Check::ratio_at_most, 1.2, "portals AM Short round trip <= 1.2 x bare 8 B PtlPut ping-pong");
        target(add(lat, "portals_put_lat_ns", 8, m("put_lat", 8), "portals_ptl_put_lat_ns", m("ptl_put_lat", 8)),
               Check::ratio_at_most, 1.2, "portals 8 B blocking Put <= 1.2 x bare PtlPut+ACK");
        add(lat, "portals_am_short_rtt_ns", 0, m("am_short_rtt", 0), "portals_ptl_poll_rtt_ns",
            m("ptl_poll_rtt", 0));
        add(lat, "portals_get_lat_ns", 8, m("get_lat", 8), "portals_ptl_get_lat_ns", m("ptl_get_lat", 8));
        add(lat, "portals_chunk_ops", 0, m("chunk_ops", 0));
        const std::string bw = "portals bandwidth (GB/s; nbi: 64 per sync; bare: PtlPut/PtlGet cut as the conduit "
                               "cuts them, SLUICE_PORTALS_RMA_PIECE, SLUICE_PORTALS_MSG_LIMIT in flight)";
        target(add(bw, "portals_put_bw_GBps", largest_rma, bandwidth(m("put_bw", largest_rma), largest_rma),
                   "portals_ptl_put_bw_GBps", bandwidth(m("ptl_put_bw", largest_rma), largest_rma)),
               Check::ratio_at_least, 0.9, "portals 4 MiB Put bandwidth (nbi) >= 0.9 x bare PtlPut");
        add(bw, "portals_get_bw_GBps", largest_rma, bandwidth(m("get_bw", largest_rma), largest_rma),
            "portals_ptl_get_bw_GBps", bandwidth(m("ptl_get_bw", largest_rma), largest_rma));
    }

    // The gni section: every reference is bare uGNI on the same NIC between
    // the same two processes, measured in the same job (gni-section.hpp).
    // On the software NIC the ratios are the conduit's overhead over uGNI,
    // not Aries figures.
    void build_gni() {
        auto m = [&](const std::string &what, std::size_t z) { return med("gni_" + what, z); };
        const std::string lat = "gni conduit (2 ranks, SLUICE_ROUTE=network; ns per round trip or operation; "
                                "Put/Get from the segment; bare: uGNI on the same NIC)";
        target(add(lat, "gni_am_short_rtt_ns", 0, m("am_short_rtt", 0), "gni_smsg_rtt_ns", m("smsg_rtt", 0)),
               Check::ratio_at_most, 1.15, "gni AM Short round trip <= 1.15 x bare SMSG ping-pong");
        target(add(lat, "gni_put_lat_ns", 8, m("put_lat", 8), "gni_fma_put_lat_ns", m("fma_put_lat", 8)),
               Check::ratio_at_most, 1.2, "gni 8 B blocking Put <= 1.2 x bare FMA put+completion");
        add(lat, "gni_get_lat_ns", 8, m("get_lat", 8), "gni_fma_get_lat_ns", m("fma_get_lat", 8));
        add(lat, "gni_chunk_ops", 0, m("chunk_ops", 0));
        const std::string bw = "gni bandwidth (GB/s; nbi: 64 per sync, bare: 64 BTE posts then all reaped; "
                               "from the segment)";
        target(add(bw, "gni_put_bw_GBps", largest_rma, bandwidth(m("put_bw", largest_rma), largest_rma),
                   "gni_bte_put_bw_GBps", bandwidth(m("bte_put_bw", largest_rma), largest_rma)),
               Check::ratio_at_least, 0.9, "gni 4 MiB Put bandwidth (nbi) >= 0.9 x bare BTE put");
        target(add(bw, "gni_get_bw_GBps", largest_rma, bandwidth(m("get_bw", largest_rma), largest_rma),
                   "gni_bte_get_bw_GBps", bandwidth(m("bte_get_bw", largest_rma), largest_rma)),
               Check::ratio_at_least, 0.9, "gni 4 MiB Get bandwidth (nbi) >= 0.9 x bare BTE get");
        add(bw, "gni_put_outside_bw_GBps", largest_rma, bandwidth(m("put_outside_bw", largest_rma), largest_rma),
            "gni_put_bw_GBps", bandwidth(m("put_bw", largest_rma), largest_rma));
    }

    // The lapi section, one table per LAPI mode: every reference is bare
    // LAPI in the same mode between the same two processes, measured in
    // the same job (lapi-section.hpp).  On the software LAPI the ratios
    // are the conduit's overhead over LAPI, not an SP switch's figures.
    void build_lapi() {
        for (const char *mode : {"interrupt", "polling"}) {
            const std::string p = std::string("lapi_") + mode + "_";
            auto m = [&](const std::string &what, std::size_t z) { return med(p + what, z); };
            const std::string lat = std::string("lapi conduit, ") + mode +
                                    " mode (2 ranks, SLUICE_ROUTE=network; ns per round trip or operation; Put/Get "
                                    "from the segment; bare: LAPI in the same mode)";
            target(add(lat, p + "am_short_rtt_ns", 0, m("am_short_rtt", 0), p + "amsend_rtt_ns", m("amsend_rtt", 0)),
                   Check::ratio_at_most, 1.15,
                   std::string("lapi ") + mode + " AM Short round trip <= 1.15 x bare LAPI_Amsend ping-pong");
            target(add(lat, p + "put_lat_ns", 8, m("put_lat", 8), p + "bare_put_lat_ns", m("bare_put_lat", 8)),
                   Check::ratio_at_most, 1.2,
                   std::string("lapi ") + mode + " 8 B blocking Put <= 1.2 x bare LAPI_Put + counter wait");
            add(lat, p + "get_lat_ns", 8, m("get_lat", 8), p + "bare_get_lat_ns", m("bare_get_lat", 8));
            add(lat, p + "chunk_ops", 0, m("chunk_ops", 0));
        }
    }

    // The ofi section, one provider: every reference is the bare
    // libfabric loop of the same provider between the same two processes,
    // measured in the same job (ofi-section.hpp); the udp conduit's figures
    // of the same run beside them when the udp section ran.
    void build_ofi(const std::string &provider, bool udp_ran) {
        const std::string t = "ofi_" + ofi_tag(provider) + "_";
        auto m = [&](const std::string &what, std::size_t z) { return med(t + what, z); };
        const std::string lat = "ofi conduit, provider " + provider +
                                " (2 ranks, SLUICE_ROUTE=network; ns per round trip or operation)";
        const double am = m("am_short_rtt", 0);
        target(add(lat, t + "am_short_rtt_ns", 0, am, t + "fi_send_rtt_ns", m("fi_send_rtt", 0)),
               Check::ratio_at_most, 1.15,
               provider + " AM Short round trip <= 1.15 x bare fi_send ping-pong");
        add(lat, t + "am_short_rtt_ns", 0, am, t + "fi_inject_rtt_ns", m("fi_inject_rtt", 0));
        if (udp_ran)
            add(lat, t + "am_short_rtt_ns", 0, am, "udp_am_short_rtt_ns", med("udp_am_short_rtt", 0));
        for (std::string op : {"put", "get"}) {
            const std::string bare = op == "put" ? "fi_write" : "fi_read";
            const std::string name = op == "put" ? "Put" : "Get";
            target(add(lat, t + op + "_lat_ns", 8, m(op + "_lat", 8), t + bare + "_lat_ns",
                       m(bare + "_lat", 8)),
                   Check::ratio_at_most, 1.2,
                   provider + " 8 B blocking " + name + " <= 1.2 x bare " + bare + "+completion");
            if (udp_ran)
                add(lat, t + op + "_lat_ns", 8, m(op + "_lat", 8), "udp_" + op + "_lat_ns",
                    med("udp_" + op + "_lat", 8));
        }

        const std::string bw = "ofi " + provider + " bandwidth (GB/s; nbi: 64 per sync, bare: "
                               "64 posted then all reaped; blocking: one at a time)";
        for (std::string op : {"put", "get"}) {
            const std::string bare = op == "put" ? "fi_write" : "fi_read";
            const std::string name = op == "put" ? "Put" : "Get";
            for (std::size_t z : {rma_target_size, largest_rma}) {
                Row &nbi = add(bw, t + op + "_bw_GBps", z, bandwidth(m(op + "_bw", z), z),
                               t + bare + "_bw_GBps", bandwidth(m(bare + "_bw", z), z));
                if (z == largest_rma)
                    target(nbi, Check::ratio_at_least, 0.9,
                           provider + " 4 MiB " + name + " bandwidth (nbi) >= 0.9 x bare " + bare);
                add(bw, t + op + "_lat_GBps", z, bandwidth(m(op + "_lat", z), z),
                    t + bare + "_lat_GBps", bandwidth(m(bare + "_lat", z), z));
            }
            if (udp_ran)
                add(bw, t + op + "_bw_GBps", largest_rma,
                    bandwidth(m(op + "_bw", largest_rma), largest_rma), "udp_" + op + "_bw_GBps",
                    bandwidth(med("udp_" + op + "_bw", largest_rma), largest_rma));
        }

        const std::string fh = "ofi " + provider + " firehose (4 MiB blocking Put; local buffer "
                               "outside the segment vs inside; GB/s)";
        const double inside = bandwidth(m("put_inseg", largest_rma), largest_rma);
        target(add(fh, t + "put_outside_warm_GBps", largest_rma,
                   bandwidth(m("put_outside_warm", largest_rma), largest_rma),
                   t + "put_inseg_GBps", inside),
               Check::ratio_at_least, 0.9,
               provider + " 4 MiB Put from outside the segment, warm >= 0.9 x inside");
        add(fh, t + "put_outside_cold_GBps", largest_rma,
            bandwidth(m("put_outside_cold", largest_rma), largest_rma), t + "put_inseg_GBps",
            inside);

        // The main pool (the first provider's jobs only): the same random
        // Puts with the segment pinned on demand and registered whole.
        constexpr std::size_t put = 64 << 10;
        const double large = m("segment_large_put", put);
        if (std::isnan(large))
            return;
        const std::string seg = "ofi " + provider + " large segment (1 GiB; random 64 KiB Puts, 16 "
                                "per sync; SLUICE_SEGMENT=large under SLUICE_FIREHOSE_M=64M vs fast: "
                                "ns per Put; the main pool's moves and most bytes pinned)";
        add(seg, t + "segment_large_put_ns", put, large, t + "segment_fast_put_ns",
            m("segment_fast_put", put));
        add(seg, t + "main_pool_moves", 0, m("main_pool_moves", 0));
        target(add(seg, t + "main_pool_peak_pinned_bytes", 0, m("main_pool_peak_pinned", 0)),
               Check::value_at_most, 64.0 * 1024 * 1024,
               provider + " 1 GiB large segment: peers' bytes pinned at most <= 64 MiB budget");
    }

    // The suite job's rows and the driver's references (ping-pong, memcpy).
    void build() {
        const std::string am = "Active messages (2 ranks; ns per round trip or per message)";
        const double short_rtt = med("am_short_rtt", 0);
        // The reference is the ping-pong between the two rank processes,
        // interleaved with the AM round trip; the one the driver forks on
        // its own, seconds apart, is shown beside it.
        target(add(am, "am_short_rtt_ns", 0, short_rtt, "cacheline_pingpong_rtt_ns",
                   med("pingpong_job", 0)),
               Check::ratio_at_most, 1.2, "AM Short round trip <= 1.2 x cache-line ping-pong");
        add(am, "am_short_rtt_ns", 0, short_rtt, "pingpong_forked_rtt_ns", med("pingpong", 0));
        if (have_mpi)
            target(add(am, "am_short_rtt_ns", 0, short_rtt, "mpi_sendrecv_rtt_ns(8B)",
                       med("mpi_sendrecv_rtt", 8)),
                   Check::ratio_at_most, 1.0,
                   "AM Short round trip <= Open MPI 8 B Send/Recv round trip");
        for (const std::string cat : {"medium", "long"})
            for (std::size_t z : sizes_of("am_" + cat + "_rtt"))
                add(am, "am_" + cat + "_rtt_ns", z, med("am_" + cat + "_rtt", z),
                    have_mpi ? "mpi_sendrecv_rtt_ns" : "", med("mpi_sendrecv_rtt", z));
        add(am, "poll_empty_ns", 0, med("poll_empty", 0), "pause_instruction_ns",
            med("pause", 0));
        target(add(am, "am_short_flood_ns", 0, med("am_short_flood", 0),
                   have_mpi ? "mpi_send_stream_ns(8B)" : "", med("mpi_send_stream", 8)),
               Check::value_at_most, 60, "AM Short one-way flood <= 60 ns per message");
        for (const std::string cat : {"medium", "long"})
            for (std::size_t z : sizes_of("am_" + cat + "_flood"))
                add(am, "am_" + cat + "_flood_ns", z, med("am_" + cat + "_flood", z),
                    have_mpi ? "mpi_send_stream_ns" : "", med("mpi_send_stream", z));
        constexpr std::size_t k16 = std::size_t{16} << 10;
        if (const double f = med("am_medium_flood", k16); f > 0) {
            target(add(am, "am_medium_flood_ns", k16, f, "am_long_flood_ns", med("am_long_flood", k16)),
                   Check::ratio_at_most, 1.0, "16 KiB Medium flood <= Long flood");
            add(am, "am_medium_flood_ns", k16, f, "am_long_flood_4places_ns", med("am_long_flood_4places", k16));
        }
        // 1 MiB is above smp's packed-Long limit: the two-part Long (payload
        // copied into the peer's segment, then two AMs) against a memcpy of
        // 1 MiB measured in the same run.
        if (const double f = med("am_long_flood", mib); f > 0)
            target(add(am, "am_long_flood_GBps", mib, bandwidth(f, mib), "memcpy_GBps",
                       bandwidth(med("memcpy", mib), mib)),
                   Check::ratio_at_least, 0.9, "1 MiB two-part Long flood >= 0.9 x memcpy");

        const std::string lat = "Put/Get latency (blocking; ns per operation)";
        for (std::size_t z : rma_sizes(options.all_sizes)) {
            Row &put = add(lat, "put_lat_ns", z, med("put_lat", z),
                           have_mpi ? "mpi_put_flush_ns" : "", med("mpi_put_lat", z));
            Row &get = add(lat, "get_lat_ns", z, med("get_lat", z),
                           have_mpi ? "mpi_get_flush_ns" : "", med("mpi_get_lat", z));
            if (z != 8) continue;
            // Same-host 8 B Put/Get are inlined into the caller (<sluice.h>);
            // the memcpy row is one call of libc's memcpy of 8 B.
            target(put, Check::value_at_most, 2.5, "8 B blocking Put <= 2.5 ns");
            target(get, Check::value_at_most, 2.5, "8 B blocking Get <= 2.5 ns");
            add(lat, "put_lat_ns", z, med("put_lat", z), "memcpy_ns", med("memcpy", z));
            add(lat, "get_lat_ns", z, med("get_lat", z), "memcpy_ns", med("memcpy", z));
        }
        // The targets (tests/perf/README.md): Put and Get at least memcpy's bandwidth at 64 KiB and
        // 0.95 of it at 4 MiB, blocking (the latency loop's bytes per ns) and
        // NBI; memcpy is libc's, the same size in the same run.
        const auto copy_target = [&](Row &m, const std::string &op, std::size_t z,
                                     const char *how) {
            const std::string name = op == "put" ? "Put" : "Get";
            if (z == rma_target_size)
                target(m, Check::ratio_at_least, 1.0,
                       "64 KiB " + name + " bandwidth (" + how + ") >= 1.0 x memcpy");
            if (z == largest_rma)
                target(m, Check::ratio_at_least, 0.95,
                       "4 MiB " + name + " bandwidth (" + how + ") >= 0.95 x memcpy");
        };
        const std::string blocking = "Put/Get bandwidth (blocking: the latency loops; GB/s)";
        for (std::string op : {"put", "get"})
            for (std::size_t z : {rma_target_size, largest_rma})
                copy_target(add(blocking, op + "_lat_GBps", z, bandwidth(med(op + "_lat", z), z),
                                "memcpy_GBps", bandwidth(med("memcpy", z), z)),
                            op, z, "blocking");
        const std::string bw = "Put/Get bandwidth (nbi, 64 per sync; GB/s)";
        for (std::string op : {"put", "get"})
            for (std::size_t z : rma_sizes(options.all_sizes)) {
                const double v = bandwidth(med(op + "_bw", z), z);
                copy_target(add(bw, op + "_bw_GBps", z, v, "memcpy_GBps",
                                bandwidth(med("memcpy", z), z)),
                            op, z, "nbi");
                if (have_mpi)
                    add(bw, op + "_bw_GBps", z, v, "mpi_" + op + "_bw_GBps",
                        bandwidth(med("mpi_" + op + "_bw", z), z));
            }

        const std::string coll = "Barrier (2 ranks; ns)";
        Row &barrier = add(coll, "barrier_ns", 0, med("barrier", 0),
                           have_mpi ? "mpi_barrier_ns" : "", med("mpi_barrier", 0));
        if (have_mpi)
            target(barrier, Check::ratio_at_most, 0.7, "Barrier <= 0.7 x MPI_Barrier");
        add(coll, "barrier_after_am_ns", 0, med("barrier_after_am", 0), have_mpi ? "mpi_barrier_ns" : "",
            med("mpi_barrier", 0));
    }

    void build_launch_and_memory(const std::map<int, ShmFigure> &shm) {
        if (!options.skip_launch) {
            const std::string launch = "Launch (empty program, wall time; ms)";
            const int n = options.launch_ranks;
            const auto z = static_cast<std::size_t>(n);
            Row &l = add(launch, "launch_empty_ms", z, med("launch_sluicerun", z),
                         have_mpi ? "mpirun_empty_ms" : "", med("launch_mpirun", z));
            l.size_label = std::to_string(n) + " ranks";
            if (have_mpi)
                target(l, Check::ratio_at_most, 0.5,
                       "sluicerun -n " + std::to_string(n) + " <= 0.5 x mpirun -n " +
                           std::to_string(n) + " (empty program)");
        }
        if (!options.skip_shm) {
            const std::string mem = "Shared memory per rank outside the segment (bytes)";
            for (auto &[n, f] : shm) {
                const auto z = static_cast<std::size_t>(n);
                add(mem, "shm_per_rank_bytes", z, f.per_rank).size_label =
                    std::to_string(n) + " ranks";
                add(mem, "shm_mapped_per_rank_bytes", z, f.mapped_per_rank).size_label =
                    std::to_string(n) + " ranks";
            }
            auto a = shm.find(8), b = shm.find(32);
            if (a != shm.end() && b != shm.end()) {
                Row &g = add(mem, "shm_per_rank_growth", 32,
                             b->second.per_rank / a->second.per_rank, "linear(32/8)", 4.0);
                g.size_label = "32 vs 8";
                target(g, Check::ratio_at_most, 1.1,
                       "Shared memory per rank grows at most linearly (32 vs 8 ranks)");
            }
        }
    }

    void print_table() const {
        std::string section;
        std::printf("\n%-26s %9s %11s   %-27s %11s %7s  %-7s %s\n", "metric", "size",
                    "sluice", "reference", "value", "ratio", "target", "result");
        for (const Row &r : rows) {
            if (r.section != section) {
                section = r.section;
                std::printf("-- %s\n", section.c_str());
            }
            std::printf("%-26s %9s %11s   %-27s %11s %7s  %-7s %s\n", r.metric.c_str(),
                        (r.size_label.empty() ? size_text(r.size) : r.size_label).c_str(),
                        value_text(r.sluice).c_str(), r.reference_name.c_str(),
                        value_text(r.reference).c_str(), value_text(r.ratio()).c_str(),
                        r.target().c_str(), r.pass().c_str());
        }
    }

    bool write_csv(const std::string &path) const {
        std::ofstream f(path);
        if (!f)
            return false;
        f << "metric,size,sluice,reference_name,reference,ratio,target,pass,state\n";
        for (const Row &r : rows)
            f << r.metric << ',' << r.size << ',' << csv_number(r.sluice) << ','
              << r.reference_name << ',' << csv_number(r.reference) << ','
              << csv_number(r.ratio()) << ',' << r.target() << ',' << r.pass() << ',' << r.state << '\n';
        return static_cast<bool>(f);
    }

    // --plot: every row that has a ratio, as a bar of sluice / reference
    // (log scale, a line at 1), drawn by gnuplot into an SVG.  False with
    // the reason in `why`.
    bool write_plot(const std::string &path, std::string &why) const {
        const std::string data = path + ".dat";
        std::size_t n = 0;
        {
            std::ofstream f(data);
            if (!f) {
                why = "cannot write " + data;
                return false;
            }
            for (const Row &r : rows) {
                const double q = r.ratio();
                if (!(q > 0) || !std::isfinite(q)) continue;
                const std::string size = r.size_label.empty() ? size_text(r.size) : r.size_label;
                f << n++ << " " << q << " \"" << r.metric << (size.empty() ? "" : " " + size) << "\"\n";
            }
        }
        if (n == 0) {
            std::remove(data.c_str());
            why = "no row has a ratio";
            return false;
        }
        const std::size_t width = std::max<std::size_t>(800, 16 * n + 200);
        const std::string script =
            "set terminal svg size " + std::to_string(width) + ",640 noenhanced; set output '" + path + "'; "
            "set logscale y; set ylabel 'Sluice / reference'; set style fill solid 0.6; set boxwidth 0.7; "
            "set xtics rotate by -60 font ',9' nomirror; set key off; set grid ytics; "
            "plot '" + data + "' using 1:2:xtic(3) with boxes, 1 with lines lc rgb 'black'";
        const std::string command = "gnuplot -e \"" + script + "\" 2>&1";
        const int rc = std::system(command.c_str());
        std::remove(data.c_str());
        if (rc != 0) {
            why = "gnuplot failed (is gnuplot installed?)";
            return false;
        }
        return true;
    }

    // Prints the targets; returns the number that did not pass.
    int print_targets(bool heading = true) const {
        int failed = 0;
        if (heading)
            std::printf("\nTargets (issues 2, 6, 28 to 31, 43 and 47, gni; 2 ranks; medians of %d runs, references in "
                        "the same run):\n",
                        options.reps);
        for (const Row &r : rows) {
            if (r.check == Check::none)
                continue;
            const std::string p = r.pass();
            if (p != "PASS")
                ++failed;
            const std::string title = r.state.empty() ? r.title : r.title + " [" + r.state + "]";
            std::printf("  %-4s  %-62s %s", p == "n/a" ? "MISS" : p.c_str(),
                        title.c_str(), value_text(r.sluice).c_str());
            if (r.check == Check::value_at_most)
                std::printf(" (target %s)\n", r.target().c_str());
            else
                std::printf(" vs %s %s = %sx (target %s)\n", r.reference_name.c_str(),
                            value_text(r.reference).c_str(), value_text(r.ratio()).c_str(),
                            r.target().c_str());
        }
        return failed;
    }
};

} // namespace

int report(const Options &o, const Samples &samples, const Findings &f) {
    const bool have_mpi = f.have_mpi;
    const auto &shm = f.shm;
    const auto &mpi_note = f.mpi_note;
    // The suite's rows compare within one state: the state most repetitions
    // ran in gives the main table, each other state a table of its own.
    const auto reps_in = [&](const std::string &state) {
        const auto &v = f.by_state.at(state);
        const auto it = v.find({"state_pingpong_first", 0});
        return it == v.end() ? std::size_t{0} : it->second.size();
    };
    std::vector<std::string> states; // main first
    for (const auto &entry : f.by_state)
        states.push_back(entry.first);
    std::stable_sort(states.begin(), states.end(), [&](const std::string &a, const std::string &b) {
        const auto rank = [&](const std::string &s) {
            return std::tuple(s == "near" || s == "far", reps_in(s), s == "near");
        };
        return rank(a) > rank(b);
    });
    std::vector<Samples> views;
    for (const std::string &state : states)
        views.push_back(within_state(samples, f.by_state, state));
    Report report{o, views.empty() ? samples : views[0], {}, have_mpi, states.empty() ? "" : states[0]};
    const bool suite = o.udp != Options::Udp::only && o.ofi != Options::Ofi::only && o.ibv != Options::Ibv::only &&
                       o.portals != Options::Portals::only && o.gni != Options::Gni::only &&
                       o.lapi != Options::Lapi::only &&
                       client_plan().mode != ClientPlan::Mode::only;
    if (suite)
        report.build();
    report.state.clear();
    if (suite)
        report.build_launch_and_memory(shm);
    if (f.udp)
        report.build_udp();
    for (const auto &p : f.ofi_providers)
        report.build_ofi(p, f.udp);
    if (f.ibv)
        report.build_ibv();
    if (f.portals)
        report.build_portals();
    if (f.gni)
        report.build_gni();
    if (f.lapi)
        report.build_lapi();
    if (client_ran())
        for (const ClientRow &c : client_rows(samples)) {
            Row &r = report.add(c.section, c.metric, c.size, c.sluice, c.reference_name, c.reference);
            r.size_label = c.size_label;
            if (c.check != ClientRow::Check::none)
                Report::target(r, c.check == ClientRow::Check::ratio_at_most ? Check::ratio_at_most
                                                                             : Check::ratio_at_least,
                               c.threshold, c.title);
        }
    std::vector<Report> others;
    for (std::size_t i = 1; suite && i < states.size(); ++i) {
        others.push_back(Report{o, views[i], {}, have_mpi, states[i]});
        others.back().build();
    }
    if (!o.only.empty() || !o.only_size.empty()) {
        const auto empty = [](const Row &r) { return std::isnan(r.sluice) && std::isnan(r.reference); };
        std::erase_if(report.rows, empty);
        for (Report &other : others)
            std::erase_if(other.rows, empty);
    }
    report.print_table();
    if (!states.empty() && suite)
        std::printf("   (the suite's rows above: its %zu repetition(s) in state %s, job ping-pong %s ns%s)\n",
                    reps_in(states[0]), states[0].c_str(),
                    value_text(report.med("state_pingpong_first", 0)).c_str(),
                    states.size() > 1 ? "; the other states' below" : "");
    for (const Report &other : others) {
        std::printf("\nThe suite in state %s: %zu repetition(s), job ping-pong %s ns%s\n", other.state.c_str(),
                    reps_in(other.state), value_text(other.med("state_pingpong_first", 0)).c_str(),
                    other.state == "mixed"  ? " (the state changed during the job: these ratios mix both)"
                    : other.state == "busy" ? " (other work shared the CPUs)"
                                            : "");
        other.print_table();
    }
    if (!shm.empty()) {
        std::printf("   (shm_per_rank: distinct shared-memory objects outside the segments "
                    "/ ranks; shm_mapped: what each rank maps, segments excluded)\n");
    }
    const double mm = report.med("info_am_max_medium", 0);
    const double ml = report.med("info_am_max_long", 0);
    if (!std::isnan(mm))
        std::printf("   (AM max Medium %.0f B, max Long %.0f B)\n", mm, ml);
    if (!mpi_note.empty())
        std::printf("   %s\n", mpi_note.c_str());
    if (f.udp) {
        const double sockets = report.med("udp_conduit_sockets", 0);
        const double resends = report.med("udp_pingpong_resends", 0);
        if (!std::isnan(sockets))
            std::printf("   (udp jobs: %.0f UDP socket(s) per rank open before the bare "
                        "references)\n", sockets);
        if (!std::isnan(resends))
            std::printf("   (bare UDP ping-pong: %.0f ping(s) sent again after %.0f us "
                        "without an answer, median per job)\n",
                        resends, UdpPingPong::resend_ns / 1e3);
        std::printf("   (udp_am_short_rtt_p50/p99: over the single round trips of a job; "
                    "the other round trips are means, as everywhere; udp_pingpong_rtt_p50 the same over "
                    "the bare spinning ping-pong's)\n");
    }
    if (!f.udp_note.empty())
        std::printf("   %s\n", f.udp_note.c_str());
    if (!f.ofi_providers.empty())
        std::printf("   (ofi: the bare reference is libfabric alone, same provider, same two "
                    "processes, same job; its choices are in the job logs, --keep)\n");
    if (!f.ofi_note.empty())
        std::printf("   %s\n", f.ofi_note.c_str());
    if (f.ibv)
        std::printf("   (ibv: the bare reference is verbs alone on the same device between the same two "
                    "processes; on the software NIC the ratios measure the conduit's overhead, not "
                    "InfiniBand)\n");
    if (!f.ibv_note.empty())
        std::printf("   %s\n", f.ibv_note.c_str());
    if (f.portals)
        std::printf("   (portals: the bare reference is Portals 4 alone on the NI the conduit opened, between the "
                    "same two processes; over the reference implementation's UDP transport the ratios measure the "
                    "conduit's overhead over that library, not Portals hardware)\n");
    if (!f.portals_note.empty())
        std::printf("   %s\n", f.portals_note.c_str());
    if (f.gni)
        std::printf("   (gni: the bare reference is uGNI alone on the same NIC, a domain of its own in each of the same "
                    "two processes%s; the ratios measure the conduit's overhead over uGNI, not an Aries)\n",
                    f.gni_softnic ? ", on the software uGNI NIC (tests/softnic/gni/softnic-run)" : "");
    if (!f.gni_note.empty())
        std::printf("   %s\n", f.gni_note.c_str());
    if (f.lapi)
        std::printf("   (lapi: the bare reference is LAPI alone in the same mode on the handle the conduit opened (LAPI "
                    "allows one per process), between the same two processes%s; the ratios measure the conduit's "
                    "overhead over LAPI, not an SP switch)\n",
                    f.lapi_softnic ? ", on the software LAPI (tests/softnic/lapi/softnic-run)" : "");
    if (!f.lapi_note.empty())
        std::printf("   %s\n", f.lapi_note.c_str());
    if (client_ran())
        std::printf("   %s\n", client_note().c_str());
    if (f.busy_reps > 0)
        std::printf("   WARNING: %d of %d repetitions started while other work kept the "
                    "CPUs up to %.0f%% busy; the figures are unreliable\n",
                    f.busy_reps, o.reps, f.busiest * 100);
    int failed = report.print_targets();
    for (const Report &other : others) {
        // A job that changed state mixes both, a busy one measured the other
        // work: their tables are shown, their targets are not judged.
        if (other.state == "near" || other.state == "far")
            failed += other.print_targets(false);
        report.rows.insert(report.rows.end(), other.rows.begin(), other.rows.end());
    }
    if (report.write_csv(o.csv))
        std::printf("\nCSV: %s\n", o.csv.c_str());
    else
        std::fprintf(stderr, "sluice-bench: cannot write %s\n", o.csv.c_str());
    if (!o.plot.empty()) {
        std::string why;
        if (report.write_plot(o.plot, why))
            std::printf("plot: %s\n", o.plot.c_str());
        else
            std::fprintf(stderr, "sluice-bench: no plot %s: %s\n", o.plot.c_str(), why.c_str());
    }
    return failed;
}

} // namespace sluice::perf
