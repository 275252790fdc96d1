// tests/scale/scale_check.cpp - one job of the scale harness (scale.sh,
// tests/scale/README.md): the steps a large job takes, timed on rank 0.
//
//   scale_check run REPS     start-up to the first barrier (from
//                            SCALETEST_T0_NS, the wall clock before the
//                            launcher started), then REPS barriers and REPS
//                            allgathers of 8 bytes, each timed; then rank 0
//                            calls sluice_exit(3) and prints the wall clock
//                            as it does ("exit_at_ns").
//   scale_check kill         after the first barrier the last rank kills
//                            itself (SIGKILL) and prints the wall clock
//                            first ("kill_at_ns"); the others wait in a
//                            barrier that cannot end.
// Rank 0 prints "scale: KEY VALUE" lines; every check that fails prints
// "FAIL ..." and the rank exits 1.
#include <sluice.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

std::uint64_t wall_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

[[noreturn]] void fail(const char *what, sluice_status_t s) {
    std::printf("FAIL rank %u: %s: status %d\n", sluice_rank(), what, static_cast<int>(s));
    std::fflush(stdout);
    std::exit(1);
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2 || (std::strcmp(argv[1], "run") != 0 && std::strcmp(argv[1], "kill") != 0)) {
        std::fprintf(stderr, "usage: scale_check run REPS | kill\n");
        return 2;
    }
    const char *t0_text = std::getenv("SCALETEST_T0_NS");
    const std::uint64_t t0 = t0_text ? std::strtoull(t0_text, nullptr, 10) : 0;
    if (sluice_status_t s = sluice_init(&argc, &argv); s != SLUICE_OK) fail("sluice_init", s);
    if (sluice_status_t s = sluice_barrier(); s != SLUICE_OK) fail("first barrier", s);
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    if (me == 0) {
        std::printf("scale: ranks %u\n", n);
        if (t0) std::printf("scale: startup_s %.3f\n", static_cast<double>(wall_ns() - t0) / 1e9);
    }
    if (std::strcmp(argv[1], "kill") == 0) {
        if (me == n - 1) {
            std::printf("scale: kill_at_ns %llu\n", static_cast<unsigned long long>(wall_ns()));
            std::fflush(stdout);
            ::kill(::getpid(), SIGKILL);
        }
        (void)sluice_barrier();  // never ends: the job ends for the killed rank
        std::printf("FAIL rank %u: a barrier missing a rank ended\n", me);
        return 1;
    }
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 20;
    std::vector<double> barrier, allgather;
    std::vector<std::uint64_t> all(n);
    for (int i = 0; i < reps; ++i) {
        double t = now_us();
        if (sluice_status_t s = sluice_barrier(); s != SLUICE_OK) fail("barrier", s);
        barrier.push_back(now_us() - t);
        const std::uint64_t mine = (static_cast<std::uint64_t>(i) << 32) | me;
        t = now_us();
        if (sluice_status_t s = sluice_allgather(&mine, all.data(), sizeof mine); s != SLUICE_OK) fail("allgather", s);
        allgather.push_back(now_us() - t);
        for (sluice_rank_t r = 0; r < n; ++r)
            if (all[r] != ((static_cast<std::uint64_t>(i) << 32) | r)) {
                std::printf("FAIL rank %u: allgather %d: rank %u's 8 bytes are %#llx\n", me, i, r,
                            static_cast<unsigned long long>(all[r]));
                return 1;
            }
    }
    if (me == 0) {
        std::printf("scale: barrier_us %.1f\n", median(barrier));
        std::printf("scale: allgather_us %.1f\n", median(allgather));
    }
    if (sluice_status_t s = sluice_barrier(); s != SLUICE_OK) fail("last barrier", s);
    if (me == 0) {
        std::printf("scale: exit_at_ns %llu\n", static_cast<unsigned long long>(wall_ns()));
        std::fflush(stdout);
        sluice_exit(3);
    }
    // The others wait in the runtime for rank 0's exit to end them.
    for (;;) (void)sluice_barrier();
}
