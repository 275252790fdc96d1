// tests/perf/mpi-reference.cpp - the Open MPI side of sluice-bench.  Built
// with $(MPICXX), started by the driver with `mpirun -n 2`:
//   --suite  Send/Recv round trip and one-way stream at the AM sizes,
//            MPI_Put/MPI_Get + MPI_Win_flush latency and bandwidth on an
//            MPI_Win_allocate window under lock_all, MPI_Barrier;
//   --client MPI_Allreduce of 8 B (one uint64_t, sum) and MPI_Barrier at any rank count, and
//            at 4 ranks MPI_Bcast of 1 MiB: the references of sluice-bench's
//            client rows (client-section.hpp), with the iteration counts the
//            driver gives both sides (--client-reduce-iters,
//            --client-bcast-iters) and the same timing;
//   --empty  MPI_Init and MPI_Finalize (the launch-time comparison).
// Sizes and iteration counts come from bench_common.hpp, as on the Sluice side.
#include "tests/perf/bench_common.hpp"

// The C API only: the deprecated C++ bindings warn under -Wextra.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace sluice::perf {
namespace {

struct MpiSuite {
    CommonOptions options;
    ResultFile results;
    int me = 0;
    int peer = 1;
    PageBuffer local;

    explicit MpiSuite(const CommonOptions &o)
        : options(o), results(o.out), local(largest_rma, 1) {}

    void meet() { MPI_Barrier(MPI_COMM_WORLD); }

    // Round trip: rank 0 sends, rank 1 receives and sends back the same size.
    double round_trip(std::size_t n) {
        const long iters = rtt_iterations(n, options.scale);
        const int count = static_cast<int>(n);
        auto loop = [&](long k) {
            for (long i = 0; i < k; ++i) {
                if (me == 0) {
                    MPI_Send(local.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(local.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(local.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    MPI_Send(local.data(), count, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                }
            }
        };
        loop(warmup_of(iters));
        const double t0 = now_ns();
        loop(iters);
        return (now_ns() - t0) / static_cast<double>(iters);
    }

    // One-way stream: back-to-back sends, then a zero-byte acknowledgement.
    double stream(std::size_t n) {
        const long iters = flood_iterations(n, options.scale);
        const int count = static_cast<int>(n);
        auto loop = [&](long k) {
            if (me == 0) {
                for (long i = 0; i < k; ++i)
                    MPI_Send(local.data(), count, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
                MPI_Recv(nullptr, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                for (long i = 0; i < k; ++i)
                    MPI_Recv(local.data(), count, MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                MPI_Send(nullptr, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
            }
        };
        loop(warmup_of(iters));
        const double t0 = now_ns();
        loop(iters);
        return (now_ns() - t0) / static_cast<double>(iters);
    }

    // Rank 0 times op(i, count) over a loop of `count`; rank 1 waits in the
    // barrier that ends the figure (which gives progress to a target that
    // needs it).
    template <class Op> double rank0_loop(long iters, Op op) {
        double result = 0;
        if (me == 0) {
            const long warmup = warmup_of(iters);
            for (long i = 0; i < warmup; ++i)
                op(i, warmup);
            const double t0 = now_ns();
            for (long i = 0; i < iters; ++i)
                op(i, iters);
            result = (now_ns() - t0) / static_cast<double>(iters);
        }
        return result;
    }

    int run() {
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        int size = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (size != 2) {
            if (me == 0)
                std::fprintf(stderr, "mpi-reference: needs 2 ranks, got %d\n", size);
            return 2;
        }
        peer = 1 - me;
        if (me == 0 && !results.ok()) {
            std::fprintf(stderr, "mpi-reference: cannot write %s\n", options.out.c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        // Each figure on its own; --only NAME keeps the matching ones.
        auto measure = [&](const char *metric, std::size_t size, auto how) {
            if (!options.wanted(metric, size))
                return;
            const double t = how();
            if (me == 0)
                results.add(metric, size, t);
            meet();
        };
        meet();
        for (std::size_t s : am_sizes())
            measure("mpi_sendrecv_rtt", s, [&] { return round_trip(s); });
        for (std::size_t s : am_sizes())
            measure("mpi_send_stream", s, [&] { return stream(s); });

        void *base = nullptr;
        MPI_Win win;
        MPI_Win_allocate(static_cast<MPI_Aint>(segment_bytes), 1, MPI_INFO_NULL,
                         MPI_COMM_WORLD, &base, &win);
        MPI_Win_lock_all(0, win);
        meet();
        for (std::size_t s : rma_sizes(options.all_sizes)) {
            const int n = static_cast<int>(s);
            const long iters = rma_iterations(s, options.scale);
            measure("mpi_put_lat", s, [&] {
                return rank0_loop(iters, [&](long, long) {
                    MPI_Put(local.data(), n, MPI_BYTE, peer, 0, n, MPI_BYTE, win);
                    MPI_Win_flush(peer, win);
                });
            });
            measure("mpi_get_lat", s, [&] {
                return rank0_loop(iters, [&](long, long) {
                    MPI_Get(local.data(), n, MPI_BYTE, peer, 0, n, MPI_BYTE, win);
                    MPI_Win_flush(peer, win);
                });
            });
            // Bandwidth: rma_window operations per flush, as on the Sluice side.
            measure("mpi_put_bw", s, [&] {
                return rank0_loop(iters, [&](long i, long count) {
                    MPI_Put(local.data(), n, MPI_BYTE, peer, 0, n, MPI_BYTE, win);
                    if ((i + 1) % rma_window == 0 || i + 1 == count)
                        MPI_Win_flush(peer, win);
                });
            });
            measure("mpi_get_bw", s, [&] {
                return rank0_loop(iters, [&](long i, long count) {
                    MPI_Get(local.data(), n, MPI_BYTE, peer, 0, n, MPI_BYTE, win);
                    if ((i + 1) % rma_window == 0 || i + 1 == count)
                        MPI_Win_flush(peer, win);
                });
            });
        }
        MPI_Win_unlock_all(win);
        MPI_Win_free(&win);

        if (!options.wanted("mpi_barrier"))
            return 0;
        const long iters = barrier_iterations(options.scale);
        for (long i = 0; i < warmup_of(iters); ++i)
            MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = now_ns();
        for (long i = 0; i < iters; ++i)
            MPI_Barrier(MPI_COMM_WORLD);
        const double t = (now_ns() - t0) / static_cast<double>(iters);
        if (me == 0)
            results.add("mpi_barrier", 0, t);
        return 0;
    }
};

// The client rows' references.  Timed on rank 0 as the Sluice side times
// them: reduce-to-all from a barrier to the last call's return, broadcast
// between two barriers.
struct MpiClient {
    CommonOptions options;
    ResultFile results;
    long reduce_iters = 0, bcast_iters = 0;

    MpiClient(const CommonOptions &o, int argc, char **argv) : options(o), results(o.out) {
        for (int i = 1; i + 1 < argc; ++i) {
            const std::string_view a = argv[i];
            if (a == "--client-reduce-iters")
                reduce_iters = std::atol(argv[i + 1]);
            else if (a == "--client-bcast-iters")
                bcast_iters = std::atol(argv[i + 1]);
        }
    }

    int run() {
        int me = 0, size = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        const auto n = static_cast<std::size_t>(size);
        if (reduce_iters > 0 && options.wanted("mpi_allreduce_8", n)) {
            const std::uint64_t in = static_cast<std::uint64_t>(me) + 1;
            std::uint64_t out = 0;
            for (long i = 0; i < warmup_of(reduce_iters); ++i)
                MPI_Allreduce(&in, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = now_ns();
            for (long i = 0; i < reduce_iters; ++i)
                MPI_Allreduce(&in, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            const double t = now_ns() - t0;
            MPI_Barrier(MPI_COMM_WORLD);
            if (me == 0 && out == n * (n + 1) / 2)
                results.add("mpi_allreduce_8", n, t / static_cast<double>(reduce_iters));
        }
        if (reduce_iters > 0 && options.wanted("mpi_barrier", n)) {
            for (long i = 0; i < warmup_of(reduce_iters); ++i)
                MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = now_ns();
            for (long i = 0; i < reduce_iters; ++i)
                MPI_Barrier(MPI_COMM_WORLD);
            const double t = now_ns() - t0;
            if (me == 0)
                results.add("mpi_barrier", n, t / static_cast<double>(reduce_iters));
        }
        if (size == 4 && bcast_iters > 0 && options.wanted("mpi_bcast_1M", n)) {
            PageBuffer buffer(mib, me == 0 ? 7 : 0);
            for (long i = 0; i < warmup_of(bcast_iters); ++i)
                MPI_Bcast(buffer.data(), static_cast<int>(mib), MPI_BYTE, 0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = now_ns();
            for (long i = 0; i < bcast_iters; ++i)
                MPI_Bcast(buffer.data(), static_cast<int>(mib), MPI_BYTE, 0, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t = now_ns() - t0;
            if (me == 0)
                results.add("mpi_bcast_1M", n, t / static_cast<double>(bcast_iters));
        }
        return 0;
    }
};

} // namespace
} // namespace sluice::perf

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rc = 0;
    bool suite = false, client = false;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--suite")
            suite = true;
        if (std::string_view(argv[i]) == "--client")
            client = true;
    }
    if (suite) {
        sluice::perf::MpiSuite s(sluice::perf::parse_common(argc, argv));
        rc = s.run();
    } else if (client) {
        sluice::perf::MpiClient c(sluice::perf::parse_common(argc, argv), argc, argv);
        rc = c.run();
    }
    MPI_Finalize();
    return rc;
}
