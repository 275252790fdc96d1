// contrib/examples/heat.cpp - a hybrid MPI + Sluice program: 2-D heat
// diffusion by Jacobi iteration on a grid split over a 2-D grid of ranks.
//
// The same solver runs twice in one job, with two halo exchanges:
//   mpi     MPI_Isend / MPI_Irecv of the four edges, then MPI_Waitall;
//   sluice  sluice_put of each edge into the neighbour's segment, then a
//           Short AM that tells the neighbour it is there.
// Both test convergence with MPI_Allreduce every 10 iterations.  The program
// checks that the two give bit-identical grids and prints the time per
// iteration of each and their ratio.
//
//   mpirun -n 4 contrib/examples/heat [--cells N] [--iterations K] [--bench]
//
// --bench runs both versions 6 times (alternating which goes first) at
// 64 x 64 and at 1024 x 1024 cells per rank and prints the medians (a table
// and CSV lines).
#include <mpix_sluice.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const char *what) {
    std::fprintf(stderr, "heat: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
    std::exit(2);
}
void check(sluice_status_t s, const char *what) {
    if (s != SLUICE_OK) die(what);
}

enum Side { north, south, west, east, sides };

// One rank's block of `n` x `n` cells, with a ghost layer all around.
struct Block {
    int n = 0;
    int px = 0, py = 0, dims[2] = {0, 0};  // my place in the grid of ranks
    int neighbour[sides] = {-1, -1, -1, -1};
    std::vector<double> cur, next;
    double &at(std::vector<double> &g, int i, int j) { return g[static_cast<std::size_t>(i) * (n + 2) + j]; }

    void init(int cells, MPI_Comm cart) {
        n = cells;
        int periods[2] = {0, 0}, coords[2];
        int me;
        MPI_Comm_rank(cart, &me);
        MPI_Cart_get(cart, 2, dims, periods, coords);
        py = coords[0];
        px = coords[1];
        MPI_Cart_shift(cart, 0, 1, &neighbour[north], &neighbour[south]);
        MPI_Cart_shift(cart, 1, 1, &neighbour[west], &neighbour[east]);
        cur.assign(static_cast<std::size_t>(n + 2) * (n + 2), 0.0);
        // A hot west edge of the whole domain, the rest cold.
        if (px == 0)
            for (int i = 0; i <= n + 1; ++i) at(cur, i, 0) = 100.0;
        next = cur;
    }
    // The edge cells to send to `s` (packed), and where received ones go.
    void pack(Side s, double *out) {
        for (int k = 0; k < n; ++k) out[k] = edge_cell(s, k);
    }
    double &edge_cell(Side s, int k) {
        switch (s) {
        case north: return at(cur, 1, k + 1);
        case south: return at(cur, n, k + 1);
        case west: return at(cur, k + 1, 1);
        default: return at(cur, k + 1, n);
        }
    }
    double &ghost_cell(Side s, int k) {
        switch (s) {
        case north: return at(cur, 0, k + 1);
        case south: return at(cur, n + 1, k + 1);
        case west: return at(cur, k + 1, 0);
        default: return at(cur, k + 1, n + 1);
        }
    }
    void unpack(Side s, const double *in) {
        for (int k = 0; k < n; ++k) ghost_cell(s, k) = in[k];
    }
    // One Jacobi sweep from cur into next, then the two swap (the domain's
    // fixed edge lives in both).  With `measure`, returns the largest change
    // (only the convergence test needs it; the plain sweep vectorizes).
    double sweep(bool measure) {
        double diff = 0;
        const int w = n + 2;
        for (int i = 1; i <= n; ++i) {
            const double *up = &cur[static_cast<std::size_t>(i - 1) * w], *row = up + w, *down = row + w;
            double *out = &next[static_cast<std::size_t>(i) * w];
            for (int j = 1; j <= n; ++j) out[j] = 0.25 * (up[j] + down[j] + row[j - 1] + row[j + 1]);
            if (measure)
                for (int j = 1; j <= n; ++j) diff = std::max(diff, std::fabs(out[j] - row[j]));
        }
        cur.swap(next);
        return diff;
    }
};

Side opposite(Side s) { return static_cast<Side>(s ^ 1); }

// ---- the MPI halo exchange ---------------------------------------------------
struct MpiHalo {
    Block &b;
    MPI_Comm cart;
    std::vector<double> out[sides], in[sides];
    MpiHalo(Block &block, MPI_Comm c) : b(block), cart(c) {
        for (int s = 0; s < sides; ++s) {
            out[s].resize(b.n);
            in[s].resize(b.n);
        }
    }
    void exchange() {
        MPI_Request req[2 * sides];
        int count = 0;
        for (int s = 0; s < sides; ++s) {
            if (b.neighbour[s] < 0) continue;
            MPI_Irecv(in[s].data(), b.n, MPI_DOUBLE, b.neighbour[s], opposite(Side(s)), cart, &req[count++]);
        }
        for (int s = 0; s < sides; ++s) {
            if (b.neighbour[s] < 0) continue;
            b.pack(Side(s), out[s].data());
            MPI_Isend(out[s].data(), b.n, MPI_DOUBLE, b.neighbour[s], s, cart, &req[count++]);
        }
        MPI_Waitall(count, req, MPI_STATUSES_IGNORE);
        for (int s = 0; s < sides; ++s)
            if (b.neighbour[s] >= 0) b.unpack(Side(s), in[s].data());
    }
};

// ---- the Sluice halo exchange ---------------------------------------------------
// My segment holds, for each side and each iteration parity, a slot where
// the neighbour on that side puts its edge.  A Short AM (side, iteration)
// follows each Put; the handler counts arrivals per parity.  A neighbour is
// at most one iteration ahead (it needs my edge to go on), so two parities
// never collide.
std::atomic<int> arrived[2];
void on_halo(sluice_token_t, void *, size_t, const uint32_t *args, unsigned) {
    arrived[args[0] & 1].fetch_add(1, std::memory_order_release);
}
constexpr sluice_handler_t h_halo = 10;

struct SluiceHalo {
    Block &b;
    std::vector<double> out;
    std::vector<char *> peer_base;  // each neighbour's segment, in its address space
    char *my_base = nullptr;
    std::size_t slot_bytes = 0;
    std::uint32_t iteration = 0;
    int expected = 0;

    SluiceHalo(Block &block, MPI_Comm cart) : b(block), out(block.n) {
        slot_bytes = sizeof(double) * static_cast<std::size_t>(b.n);
        peer_base.assign(sides, nullptr);
        for (int s = 0; s < sides; ++s) {
            if (b.neighbour[s] < 0) continue;
            ++expected;
            sluice_rank_t r;
            check(MPIX_Sluice_rank_from_comm(cart, b.neighbour[s], &r), "rank translation");
            void *base;
            size_t size;
            check(sluice_segment_info(r, &base, &size), "sluice_segment_info");
            peer_base[s] = static_cast<char *>(base);
            peer_rank[s] = r;
        }
        void *mine;
        size_t size;
        check(sluice_segment_info(sluice_rank(), &mine, &size), "sluice_segment_info");
        my_base = static_cast<char *>(mine);
    }
    sluice_rank_t peer_rank[sides] = {};
    std::size_t slot(Side from, unsigned parity) const { return (static_cast<std::size_t>(from) * 2 + parity) * slot_bytes; }

    void exchange() {
        const unsigned parity = iteration & 1;
        for (int s = 0; s < sides; ++s) {
            if (b.neighbour[s] < 0) continue;
            b.pack(Side(s), out.data());
            // My side s is the neighbour's side opposite(s).
            check(sluice_put(peer_rank[s], peer_base[s] + slot(opposite(Side(s)), parity), out.data(), slot_bytes),
                  "sluice_put");
            const uint32_t arg = iteration;
            check(sluice_am_request_short(peer_rank[s], h_halo, &arg, 1), "sluice_am_request_short");
        }
        while (arrived[parity].load(std::memory_order_acquire) < expected) check(sluice_poll(), "sluice_poll");
        arrived[parity].fetch_sub(expected, std::memory_order_relaxed);
        for (int s = 0; s < sides; ++s)
            if (b.neighbour[s] >= 0)
                b.unpack(Side(s), reinterpret_cast<const double *>(my_base + slot(Side(s), parity)));
        ++iteration;
    }
};

struct Result {
    double seconds_per_iteration = 0;
    int iterations = 0;
    std::vector<double> grid;
};

// Runs the solver with halo exchange `Halo` until converged or `max_it`.
template <class Halo> Result solve(int cells, int max_it, MPI_Comm cart) {
    Block b;
    b.init(cells, cart);
    Halo halo(b, cart);
    MPI_Barrier(cart);
    const double t0 = MPI_Wtime();
    int it = 0;
    for (; it < max_it; ++it) {
        halo.exchange();
        const bool test = (it + 1) % 10 == 0;
        const double diff = b.sweep(test);
        if (test) {
            double global = 0;
            MPI_Allreduce(&diff, &global, 1, MPI_DOUBLE, MPI_MAX, cart);
            if (global < 1e-6) {
                ++it;
                break;
            }
        }
    }
    const double t = MPI_Wtime() - t0;
    double slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, cart);
    return {slowest / it, it, b.cur};
}

struct Pair {
    double mpi = 0, sluice = 0;
    bool identical = true;
};

// Both solvers, in the order `sluice_first` says (benchmark repetitions
// alternate it, so drift on a busy machine favours neither).  Phasing rule:
// an MPI phase ends in an MPI collective, a Sluice phase in a Sluice barrier.
Pair run_both(int cells, int iterations, MPI_Comm cart, bool sluice_first = false) {
    Result m, s;
    if (sluice_first) {
        s = solve<SluiceHalo>(cells, iterations, cart);
        check(sluice_barrier(), "sluice_barrier");
        m = solve<MpiHalo>(cells, iterations, cart);
    } else {
        m = solve<MpiHalo>(cells, iterations, cart);
        s = solve<SluiceHalo>(cells, iterations, cart);
        check(sluice_barrier(), "sluice_barrier");
    }
    int same = m.iterations == s.iterations && m.grid == s.grid, all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, cart);
    return {m.seconds_per_iteration, s.seconds_per_iteration, all == 1};
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace

int main(int argc, char **argv) {
    int cells = 64, iterations = 2000;
    bool bench = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--cells" && i + 1 < argc) cells = std::atoi(argv[++i]);
        else if (a == "--iterations" && i + 1 < argc) iterations = std::atoi(argv[++i]);
        else if (a == "--bench") bench = true;
        else {
            std::fprintf(stderr, "usage: %s [--cells N] [--iterations K] [--bench]\n", argv[0]);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    int world, me;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    int dims[2] = {0, 0}, periods[2] = {0, 0};
    MPI_Dims_create(world, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Comm_rank(cart, &me);
    check(MPIX_Sluice_init(cart, &argc, &argv), "MPIX_Sluice_init");
    check(sluice_handler_register(h_halo, on_halo, SLUICE_AM_SHORT, 1), "sluice_handler_register");
    const int largest = bench ? std::max(cells, 1024) : cells;
    check(sluice_segment_attach(sizeof(double) * static_cast<std::size_t>(largest) * 2 * sides),
          "sluice_segment_attach");
    check(sluice_barrier(), "sluice_barrier");

    int status = 0;
    if (!bench) {
        const Pair p = run_both(cells, iterations, cart);
        if (me == 0)
            std::printf("heat: %d ranks (%d x %d), %d x %d cells per rank: MPI halo %.2f us/iteration, "
                        "Sluice halo %.2f us/iteration, ratio %.2f; grids %s\n",
                        world, dims[0], dims[1], cells, cells, p.mpi * 1e6, p.sluice * 1e6, p.sluice / p.mpi,
                        p.identical ? "identical" : "DIFFER");
        status = p.identical ? 0 : 1;
    } else {
        if (me == 0) std::printf("%-12s %12s %12s %8s\n", "cells/rank", "MPI us/it", "Sluice us/it", "ratio");
        std::string csv = "cells_per_rank,mpi_us_per_iteration,sluice_us_per_iteration,ratio\n";
        for (int n : {64, 1024}) {
            std::vector<double> m, s;
            for (int rep = 0; rep < 6; ++rep) {
                const Pair p = run_both(n, n == 64 ? 2000 : 200, cart, rep % 2 == 1);
                if (!p.identical) status = 1;
                m.push_back(p.mpi * 1e6);
                s.push_back(p.sluice * 1e6);
            }
            const double mm = median(m), ms = median(s);
            if (me == 0) {
                std::printf("%4d x %-5d %12.2f %12.2f %8.2f\n", n, n, mm, ms, ms / mm);
                char line[128];
                std::snprintf(line, sizeof line, "%d,%.3f,%.3f,%.3f\n", n, mm, ms, ms / mm);
                csv += line;
            }
        }
        if (me == 0) std::printf("\nCSV (medians of 6 runs, %d ranks):\n%s%s", world, csv.c_str(),
                                 status ? "grids DIFFER\n" : "grids identical in every run\n");
    }
    check(sluice_finalize(), "sluice_finalize");
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return status;
}
