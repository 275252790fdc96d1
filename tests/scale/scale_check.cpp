// tests/scale/scale_check.cpp - one job of the scale harness (scale.sh,
// tests/scale/README.md): the steps a large job takes, timed on rank 0.
//
//   scale_check run REPS     start-up to the first barrier (from
//                            SCALETEST_T0_NS, the wall clock before the
//                            launcher started), then REPS barriers and REPS
//                            allgathers of 8 bytes, each timed; then rank 0
//                            calls sluice_exit(3) and prints the wall clock
//                            as it does ("exit_at_ns").
//   scale_check traffic      the stencil and the hot spot only (below),
//                            then a barrier and sluice_finalize: the
//                            unlimited-credit reference (SLUICE_CREDIT_FLOW=0)
//                            that `run` is compared with.
//   scale_check kill         after the first barrier the last rank kills
//                            itself (SIGKILL) and prints the wall clock
//                            first ("kill_at_ns"); the others wait in a
//                            barrier that cannot end.
// `run` and `traffic` time two patterns between barriers, on rank 0:
//   stencil   each rank sends a 1 KiB Medium to its neighbours r +- 1 and
//             r +- w (w the square root of the ranks, a 2-D torus) and
//             waits for theirs, stencil_rounds times
//   hot spot  every rank but 0 sends hotspot_messages 1 KiB Mediums to
//             rank 0, which waits for them all
// and report the receive memory (sluice_receive_memory) over the ranks:
// the largest credit space and receive buffers of any rank.
// Rank 0 prints "scale: KEY VALUE" lines; every check that fails prints
// "FAIL ..." and the rank exits 1.
#include <sluice.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

constexpr int stencil_rounds = 30;
constexpr int hotspot_messages = 100;
constexpr std::size_t message_bytes = 1024;
constexpr sluice_handler_t count_handler = 200;

std::atomic<std::uint64_t> arrived{0};
// Messages this rank has been sent by the steps before the current one: a
// step's first messages may arrive while this rank is still in the
// barrier before it.
std::uint64_t expected = 0;

void count(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) {
    arrived.fetch_add(1, std::memory_order_relaxed);
}

void wait_arrived(std::uint64_t n) {
    while (arrived.load(std::memory_order_relaxed) < n)
        if (sluice_status_t s = sluice_poll_wait(); s != SLUICE_OK) fail("poll", s);
}

double timed_between_barriers(void (*step)()) {
    if (sluice_status_t s = sluice_barrier(); s != SLUICE_OK) fail("barrier before a step", s);
    const double t = now_us();
    step();
    if (sluice_status_t s = sluice_barrier(); s != SLUICE_OK) fail("barrier after a step", s);
    return (now_us() - t) / 1e6;
}

void send(sluice_rank_t to, const char *what) {
    static const std::vector<char> payload(message_bytes, 'x');
    if (sluice_status_t s = sluice_am_request_medium(to, count_handler, payload.data(), payload.size(), nullptr, 0);
        s != SLUICE_OK)
        fail(what, s);
}

// The distinct neighbours of this rank on the torus, itself excluded.
std::vector<sluice_rank_t> neighbours() {
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    sluice_rank_t w = 1;
    while ((w + 1) * (w + 1) <= n) ++w;
    std::vector<sluice_rank_t> v;
    for (sluice_rank_t d : {sluice_rank_t{1}, n - 1, w % n, (n - w % n) % n}) {
        const sluice_rank_t r = (me + d) % n;
        if (r != me && std::find(v.begin(), v.end(), r) == v.end()) v.push_back(r);
    }
    return v;
}

void stencil() {
    const std::vector<sluice_rank_t> v = neighbours();
    for (int i = 0; i < stencil_rounds; ++i) {
        for (sluice_rank_t r : v) send(r, "stencil send");
        // The neighbour relation is symmetric: as many arrive as were sent.
        wait_arrived(expected + (i + 1) * v.size());
    }
    expected += stencil_rounds * v.size();
}

void hotspot() {
    if (sluice_rank() != 0) {
        for (int i = 0; i < hotspot_messages; ++i) send(0, "hot spot send");
    } else {
        expected += std::uint64_t{hotspot_messages} * (sluice_size() - 1);
        wait_arrived(expected);
    }
}

// Both patterns, then the receive memory; printed on rank 0.
void traffic() {
    if (sluice_status_t s = sluice_handler_register(count_handler, count, SLUICE_AM_MEDIUM, 0); s != SLUICE_OK)
        fail("handler_register", s);
    const double st = timed_between_barriers(stencil);
    const double hs = timed_between_barriers(hotspot);
    sluice_receive_memory_t m;
    if (sluice_status_t s = sluice_receive_memory(&m); s != SLUICE_OK) fail("receive_memory", s);
    const std::uint64_t mine[2] = {m.credit_space, m.receive_buffers};
    std::vector<std::uint64_t> all(2 * sluice_size());
    if (sluice_status_t s = sluice_allgather(mine, all.data(), sizeof mine); s != SLUICE_OK) fail("allgather", s);
    if (sluice_rank() != 0) return;
    std::uint64_t credit_space = 0, buffers = 0;
    for (sluice_rank_t r = 0; r < sluice_size(); ++r) {
        credit_space = std::max(credit_space, all[2 * r]);
        buffers = std::max(buffers, all[2 * r + 1]);
    }
    std::printf("scale: stencil_s %.4f\n", st);
    std::printf("scale: hotspot_s %.4f\n", hs);
    std::printf("scale: credit_space_mib %.2f\n", static_cast<double>(credit_space) / (1 << 20));
    std::printf("scale: receive_buffers_mib %.2f\n", static_cast<double>(buffers) / (1 << 20));
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2 || (std::strcmp(argv[1], "run") != 0 && std::strcmp(argv[1], "kill") != 0 &&
                     std::strcmp(argv[1], "traffic") != 0)) {
        std::fprintf(stderr, "usage: scale_check run REPS | traffic | kill\n");
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
    if (std::strcmp(argv[1], "traffic") == 0) {
        traffic();
        if (sluice_status_t s = sluice_barrier(); s != SLUICE_OK) fail("last barrier", s);
        return sluice_finalize() == SLUICE_OK ? 0 : 1;
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
    traffic();
    if (sluice_status_t s = sluice_barrier(); s != SLUICE_OK) fail("last barrier", s);
    if (me == 0) {
        std::printf("scale: exit_at_ns %llu\n", static_cast<unsigned long long>(wall_ns()));
        std::fflush(stdout);
        sluice_exit(3);
    }
    // The others wait in the runtime for rank 0's exit to end them.
    for (;;) (void)sluice_barrier();
}
