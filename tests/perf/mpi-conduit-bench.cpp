// tests/perf/mpi-conduit-bench.cpp - the mpi conduit (src/conduits/mpi)
// beside the MPI it runs on, in the same 2-rank job: Sluice's AM Short
// round trip against an 8 B MPI_Send/MPI_Recv ping-pong, and Sluice's 4 MiB
// Put and Get (64 in flight, then sluice_nbi_sync) against MPI_Put and
// MPI_Get of 4 MiB (64, then MPI_Win_flush) under lock_all on a window
// MPI_Win_create makes over memory the program allocated, as the
// conduit's window is over Sluice's segment (the target's reference), and
// on one MPI_Win_allocate made (MPI's own memory: on one host often shared
// memory the origin copies into; reported), and as two-sided messages
// (MPI_Isend to MPI_Irecv, what Put and Get by messages are made of;
// reported).  The two sides alternate in chunks, so both see the same
// machine.  Prints a table with the ratios and the targets, and
// CSV lines.  Built for each MPI libsluice-mpi is built for:
//   mpirun -n 2 tests/perf/mpi-conduit-bench [--reps R] [--quick] [--csv FILE]
// (SLUICE_NETWORK=mpi and SLUICE_ROUTE=network are set here unless given).
// The C API only: the deprecated C++ bindings warn under -Wextra.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpix_sluice.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr std::size_t big = std::size_t{4} << 20;  // the bandwidth rows' size
constexpr int window = 64;                          // transfers in flight per sync
constexpr sluice_handler_t h_ping = 200, h_pong = 201, h_stop = 202;

volatile int pongs = 0;
volatile int stop = 0;

void on_ping(sluice_token_t t, void *, std::size_t, const std::uint32_t *, unsigned) {
    sluice_am_reply_short(t, h_pong, nullptr, 0);
}
void on_pong(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) { pongs = pongs + 1; }
void on_stop(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) { stop = 1; }

double now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

void check(sluice_status_t s, const char *what) {
    if (s == SLUICE_OK) return;
    std::fprintf(stderr, "mpi-conduit-bench: %s failed: %s\n", what, sluice_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

struct Bench {
    int me = 0;
    long rtt_iters = 20000, bw_rounds = 2;
    void *seg = nullptr, *peer_seg = nullptr;
    std::vector<char> local = std::vector<char>(big, 1);
    std::vector<char> created = std::vector<char>(big, 2);  // MPI_Win_create's memory
    char *allocated = nullptr;                            // MPI_Win_allocate's
    MPI_Win win_created = MPI_WIN_NULL, win_allocated = MPI_WIN_NULL;

    // Rank 1 serves Sluice (polls) until rank 0's stop AM.
    void serve() {
        while (!stop) check(sluice_poll(), "sluice_poll");
        stop = 0;
    }
    void stop_server() { check(sluice_am_request_short(1, h_stop, nullptr, 0), "stop request"); }

    double sluice_rtt() {
        double t = 0;
        if (me == 0) {
            const double t0 = now_ns();
            for (long i = 0; i < rtt_iters; ++i) {
                const int want = pongs + 1;
                check(sluice_am_request_short(1, h_ping, nullptr, 0), "sluice_am_request_short");
                while (pongs < want) check(sluice_poll(), "sluice_poll");
            }
            t = (now_ns() - t0) / static_cast<double>(rtt_iters);
            stop_server();
        } else {
            serve();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        return t;
    }
    double mpi_rtt() {
        char b[8] = {};
        const double t0 = now_ns();
        for (long i = 0; i < rtt_iters; ++i) {
            if (me == 0) {
                MPI_Send(b, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
                MPI_Recv(b, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(b, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
            }
        }
        const double t = (now_ns() - t0) / static_cast<double>(rtt_iters);
        MPI_Barrier(MPI_COMM_WORLD);
        return t;
    }
    // The ping-pong a runtime that must not block can make of MPI: 16 B
    // (a packed Short's size) into a ring of 16 persistent receives, each
    // waited for by MPI_Test and posted again by MPI_Start, as the conduit
    // receives; the floor of any polled receive (reported).
    double mpi_polled_rtt() {
        constexpr int ring = 16;
        char b[16] = {}, in[ring][64];
        MPI_Request r[ring];
        for (int j = 0; j < ring; ++j) {
            MPI_Recv_init(in[j], sizeof in[j], MPI_BYTE, MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &r[j]);
            MPI_Start(&r[j]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now_ns();
        for (long i = 0; i < rtt_iters; ++i) {
            if (me == 0) MPI_Send(b, sizeof b, MPI_BYTE, 1, 8, MPI_COMM_WORLD);
            MPI_Request &head = r[i % ring];
            for (int done = 0; !done;) MPI_Test(&head, &done, MPI_STATUS_IGNORE);
            if (me == 1) MPI_Send(b, sizeof b, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
            MPI_Start(&head);
        }
        const double t = (now_ns() - t0) / static_cast<double>(rtt_iters);
        for (MPI_Request &x : r) {
            MPI_Cancel(&x);
            MPI_Wait(&x, MPI_STATUS_IGNORE);
            MPI_Request_free(&x);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        return t;
    }
    // GB/s of rounds x window transfers of 4 MiB.
    double sluice_bw(bool put) {
        double gbps = 0;
        if (me == 0) {
            const double t0 = now_ns();
            for (long r = 0; r < bw_rounds; ++r) {
                for (int i = 0; i < window; ++i)
                    check(put ? sluice_put_nbi(1, peer_seg, local.data(), big) : sluice_get_nbi(local.data(), 1, peer_seg, big),
                          put ? "sluice_put_nbi" : "sluice_get_nbi");
                check(sluice_nbi_sync(), "sluice_nbi_sync");
            }
            gbps = static_cast<double>(big) * window * bw_rounds / (now_ns() - t0);
            stop_server();
        } else {
            serve();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        return gbps;
    }
    double mpi_bw(bool put, MPI_Win win) {
        double gbps = 0;
        if (me == 0) {
            const double t0 = now_ns();
            for (long r = 0; r < bw_rounds; ++r) {
                for (int i = 0; i < window; ++i) {
                    if (put) MPI_Put(local.data(), static_cast<int>(big), MPI_BYTE, 1, 0, static_cast<int>(big), MPI_BYTE, win);
                    else MPI_Get(local.data(), static_cast<int>(big), MPI_BYTE, 1, 0, static_cast<int>(big), MPI_BYTE, win);
                }
                MPI_Win_flush(1, win);
            }
            gbps = static_cast<double>(big) * window * bw_rounds / (now_ns() - t0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        return gbps;
    }
    // GB/s of the same transfers as two-sided messages, 64 in flight, each
    // MPI_Isend into a posted MPI_Irecv (from rank 1 for a Get's
    // direction): what Put and Get by messages are made of (reported).
    double mpi_two_sided_bw(bool put) {
        std::vector<MPI_Request> r(window);
        const bool sends = (me == 0) == put;
        char *buffer = me == 0 ? local.data() : created.data();
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now_ns();
        for (long round = 0; round < bw_rounds; ++round) {
            for (auto &x : r) {
                if (sends) MPI_Isend(buffer, static_cast<int>(big), MPI_BYTE, 1 - me, 9, MPI_COMM_WORLD, &x);
                else MPI_Irecv(buffer, static_cast<int>(big), MPI_BYTE, 1 - me, 9, MPI_COMM_WORLD, &x);
            }
            MPI_Waitall(window, r.data(), MPI_STATUSES_IGNORE);
        }
        const double gbps = static_cast<double>(big) * window * bw_rounds / (now_ns() - t0);
        MPI_Barrier(MPI_COMM_WORLD);
        return gbps;
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
    int reps = 5;
    bool quick = false;
    std::string csv;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else {
            std::fprintf(stderr, "usage: mpirun -n 2 mpi-conduit-bench [--reps R] [--quick] [--csv FILE]\n");
            return 2;
        }
    }
    setenv("SLUICE_NETWORK", "mpi", 0);
    setenv("SLUICE_ROUTE", "network", 0);
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    Bench b;
    int n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &b.me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) {
        if (b.me == 0) std::fprintf(stderr, "mpi-conduit-bench: run it on 2 ranks (mpirun -n 2)\n");
        MPI_Finalize();
        return 2;
    }
    check(MPIX_Sluice_init(MPI_COMM_WORLD, &argc, &argv), "MPIX_Sluice_init");
    check(sluice_segment_attach(big), "sluice_segment_attach");
    std::size_t size = 0;
    check(sluice_segment_info(b.me, &b.seg, &size), "sluice_segment_info");
    check(sluice_segment_info(1 - b.me, &b.peer_seg, &size), "sluice_segment_info");
    check(sluice_handler_register(h_ping, on_ping, SLUICE_AM_SHORT, 0), "register");
    check(sluice_handler_register(h_pong, on_pong, SLUICE_AM_SHORT, 0), "register");
    check(sluice_handler_register(h_stop, on_stop, SLUICE_AM_SHORT, 0), "register");
    check(sluice_barrier(), "sluice_barrier");
    if (quick) b.rtt_iters = 2000, b.bw_rounds = 1;

    // The round trips first, before the reference windows exist (an MPI
    // may visit every window at each progress call, which the polling
    // side makes more of), then the bandwidths.  Each part is warmed, then
    // alternates: a repetition is the mean of three chunks of each; the
    // figures are the medians over repetitions.
    std::vector<double> s_rtt, m_rtt, s_put, m_put, s_get, m_get, a_put, a_get, t_put, t_get, p_rtt, r_rtt, r_put, r_get,
        rp_rtt;
    b.sluice_rtt(), b.mpi_rtt(), b.mpi_polled_rtt();
    for (int r = 0; r < reps; ++r) {
        double v[3] = {};
        for (int c = 0; c < 3; ++c) v[0] += b.sluice_rtt() / 3, v[1] += b.mpi_rtt() / 3, v[2] += b.mpi_polled_rtt() / 3;
        s_rtt.push_back(v[0]), m_rtt.push_back(v[1]), p_rtt.push_back(v[2]);
        r_rtt.push_back(v[0] / v[1]), rp_rtt.push_back(v[0] / v[2]);
    }
    MPI_Win_create(b.created.data(), static_cast<MPI_Aint>(big), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b.win_created);
    MPI_Win_allocate(static_cast<MPI_Aint>(big), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b.allocated, &b.win_allocated);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, b.win_created);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, b.win_allocated);
    b.sluice_bw(true), b.mpi_bw(true, b.win_created), b.sluice_bw(false), b.mpi_bw(false, b.win_created),
        b.mpi_bw(true, b.win_allocated), b.mpi_bw(false, b.win_allocated), b.mpi_two_sided_bw(true),
        b.mpi_two_sided_bw(false);
    for (int r = 0; r < reps; ++r) {
        double v[8] = {};
        for (int c = 0; c < 3; ++c) {
            v[0] += b.sluice_bw(true) / 3, v[1] += b.mpi_bw(true, b.win_created) / 3;
            v[2] += b.sluice_bw(false) / 3, v[3] += b.mpi_bw(false, b.win_created) / 3;
            v[4] += b.mpi_bw(true, b.win_allocated) / 3, v[5] += b.mpi_bw(false, b.win_allocated) / 3;
            v[6] += b.mpi_two_sided_bw(true) / 3, v[7] += b.mpi_two_sided_bw(false) / 3;
        }
        s_put.push_back(v[0]), m_put.push_back(v[1]), s_get.push_back(v[2]), m_get.push_back(v[3]);
        a_put.push_back(v[4]), a_get.push_back(v[5]), t_put.push_back(v[6]), t_get.push_back(v[7]);
        r_put.push_back(v[0] / v[1]), r_get.push_back(v[2] / v[3]);
    }
    if (b.me == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int length = 0;
        MPI_Get_library_version(version, &length);
        std::string lib(version, static_cast<std::size_t>(length));
        lib = lib.substr(0, lib.find_first_of("\n,"));
        std::printf("mpi conduit beside %s, 2 ranks, %d repetitions (medians; ratio = median of the per-repetition ratios)\n",
                    lib.c_str(), reps);
        std::printf("%-28s %12s %12s %7s  %s\n", "figure", "Sluice(mpi)", "MPI", "ratio", "target");
        auto row = [&](const char *name, double s, double m, double ratio, const char *target, bool met) {
            std::printf("%-28s %12.2f %12.2f %7.2f  %s %s\n", name, s, m, ratio, target, met ? "PASS" : "FAIL");
        };
        const double rr = median(r_rtt), rp = median(r_put), rg = median(r_get);
        row("am_short_rtt_ns / 8B send", median(s_rtt), median(m_rtt), rr, "<=1.2x", rr <= 1.2);
        std::printf("%-28s %12.2f %12.2f %7.2f  (polled MPI: 16 B, MPI_Test on persistent receives; reported)\n",
                    "am_short_rtt_ns / polled", median(s_rtt), median(p_rtt), median(rp_rtt));
        row("put_bw_GBps 4M / MPI_Put", median(s_put), median(m_put), rp, ">=0.9x", rp >= 0.9);
        row("get_bw_GBps 4M / MPI_Get", median(s_get), median(m_get), rg, ">=0.9x", rg >= 0.9);
        std::printf("%-28s %12.2f %12.2f %7.2f  (MPI_Win_allocate's window, reported)\n", "put_bw_GBps 4M / allocated",
                    median(s_put), median(a_put), median(s_put) / median(a_put));
        std::printf("%-28s %12.2f %12.2f %7.2f  (MPI_Win_allocate's window, reported)\n", "get_bw_GBps 4M / allocated",
                    median(s_get), median(a_get), median(s_get) / median(a_get));
        std::printf("%-28s %12.2f %12.2f %7.2f  (MPI_Isend to MPI_Irecv, 64 in flight, reported)\n",
                    "put_bw_GBps 4M / two-sided", median(s_put), median(t_put), median(s_put) / median(t_put));
        std::printf("%-28s %12.2f %12.2f %7.2f  (MPI_Isend to MPI_Irecv, 64 in flight, reported)\n",
                    "get_bw_GBps 4M / two-sided", median(s_get), median(t_get), median(s_get) / median(t_get));
        std::FILE *f = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
        const char *head = "metric,size,sluice,mpi,ratio,library\n";
        std::printf("CSV: %s", head);
        if (f) std::fputs(head, f);
        char line[256];
        const struct { const char *m; const char *size; double s, p, r; } rows[] = {
            {"mpi_am_short_rtt_ns", "0", median(s_rtt), median(m_rtt), rr},
            {"mpi_am_short_rtt_ns_polled", "0", median(s_rtt), median(p_rtt), median(rp_rtt)},
            {"mpi_put_bw_GBps", "4194304", median(s_put), median(m_put), rp},
            {"mpi_get_bw_GBps", "4194304", median(s_get), median(m_get), rg},
            {"mpi_put_allocated_bw_GBps", "4194304", median(s_put), median(a_put), median(s_put) / median(a_put)},
            {"mpi_get_allocated_bw_GBps", "4194304", median(s_get), median(a_get), median(s_get) / median(a_get)},
            {"mpi_put_two_sided_bw_GBps", "4194304", median(s_put), median(t_put), median(s_put) / median(t_put)},
            {"mpi_get_two_sided_bw_GBps", "4194304", median(s_get), median(t_get), median(s_get) / median(t_get)},
        };
        for (const auto &x : rows) {
            std::snprintf(line, sizeof line, "%s,%s,%.3f,%.3f,%.3f,%s\n", x.m, x.size, x.s, x.p, x.r, lib.c_str());
            std::printf("CSV: %s", line);
            if (f) std::fputs(line, f);
        }
        if (f) std::fclose(f);
    }
    for (MPI_Win *w : {&b.win_created, &b.win_allocated}) {
        MPI_Win_unlock_all(*w);
        MPI_Win_free(w);
    }
    check(sluice_finalize(), "sluice_finalize");
    MPI_Finalize();
    return 0;
}
