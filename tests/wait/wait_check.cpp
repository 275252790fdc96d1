// tests/wait/wait_check.cpp - what a waiting rank costs and whether it wakes
// (SLUICE_WAIT, src/base/status.hpp), driven by tests/wait/wait.sh.
//
//   wait_check pingpong N    ranks 0 and 1: N AM Short round trips, each
//                            pong waited for by sluice_poll_wait; then a
//                            barrier.  Prints "pingpong: N round trips, R ns
//                            each" on rank 0.
//   wait_check sleepy MS     rank 0 sleeps MS ms outside Sluice, then every
//                            rank enters a barrier; each rank prints the CPU
//                            time it spent in the barrier against the wall
//                            time and the context switches of its thread
//                            there ("sleepy: rank r cpu C ms of W ms,
//                            switches V voluntary I involuntary").
//   wait_check flag MS       rank 0 sleeps MS ms, then Puts a flag into rank
//                            1's segment; rank 1 waits for it with
//                            sluice_poll_wait (no message tells it); prints
//                            its CPU and wall time the same way.
//   wait_check flood K       every rank sends K AM Shorts to every other
//                            rank and waits for their replies, with a
//                            barrier after every round of 64; prints
//                            "flood: rank r done".
#include <sluice/sluice.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr sluice::HandlerIndex ping = 1, pong = 2;
std::atomic<std::uint64_t> pongs{0};

void check(sluice::Status s, const char *what) {
    if (s == sluice::Status::ok) return;
    std::fprintf(stderr, "wait_check: rank %u: %s failed: %s\n", sluice::rank(), what,
                 std::string(sluice::last_error()).c_str());
    sluice::exit(1);
}

void on_ping(sluice::Token t, void *, std::size_t, const std::uint32_t *a, unsigned) {
    check(sluice::reply_short(t, pong, a[0]), "reply");
}
void on_pong(sluice::Token, void *, std::size_t, const std::uint32_t *, unsigned) {
    pongs.fetch_add(1, std::memory_order_release);
}

double cpu_ms() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}
// The calling thread's voluntary and involuntary context switches: a wait
// that sleeps gives its core away (voluntary); one that spins loses it only
// when the scheduler takes it (involuntary).
struct Switches {
    long voluntary, involuntary;
};
Switches switches() {
    rusage u{};
    ::getrusage(RUSAGE_THREAD, &u);
    return {u.ru_nvcsw, u.ru_nivcsw};
}
double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void wait_pongs(std::uint64_t n) {
    while (pongs.load(std::memory_order_acquire) < n) check(sluice::poll_wait(), "poll_wait");
}

} // namespace

int main(int argc, char **argv) {
    check(sluice::init(&argc, &argv), "init");
    if (argc != 3) {
        std::fprintf(stderr, "usage: wait_check pingpong|sleepy|flag|flood N\n");
        sluice::exit(2);
    }
    const std::string mode = argv[1];
    const long n = std::atol(argv[2]);
    const sluice::Rank me = sluice::rank(), size = sluice::size();
    check(sluice::segment_attach(4096), "segment_attach");
    check(sluice::register_handler(ping, on_ping, sluice::Category::short_, 1), "register");
    check(sluice::register_handler(pong, on_pong, sluice::Category::short_, 1), "register");
    check(sluice::barrier(), "barrier");

    if (mode == "pingpong") {
        if (size < 2) sluice::exit(2);
        const double start = now_ms();
        if (me == 0)
            for (long i = 0; i < n; ++i) {
                check(sluice::request_short(1, ping, static_cast<std::uint32_t>(i)), "ping");
                wait_pongs(static_cast<std::uint64_t>(i) + 1);
            }
        const double took = now_ms() - start;
        check(sluice::barrier(), "barrier");
        if (me == 0) std::printf("pingpong: %ld round trips, %.0f ns each\n", n, took * 1e6 / static_cast<double>(n));
    } else if (mode == "sleepy") {
        if (me == 0) ::usleep(static_cast<useconds_t>(n * 1000));
        const double c0 = cpu_ms(), w0 = now_ms();
        const Switches s0 = switches();
        check(sluice::barrier(), "barrier");
        const Switches s1 = switches();
        std::printf("sleepy: rank %u cpu %.1f ms of %.1f ms, switches %ld voluntary %ld involuntary\n", me,
                    cpu_ms() - c0, now_ms() - w0, s1.voluntary - s0.voluntary, s1.involuntary - s0.involuntary);
    } else if (mode == "flag") {
        if (size < 2) sluice::exit(2);
        auto *flag = static_cast<volatile std::uint64_t *>(sluice::segment(me).base);
        if (me == 0) {
            ::usleep(static_cast<useconds_t>(n * 1000));
            const std::uint64_t one = 1;
            check(sluice::put(1, sluice::segment(1).base, &one, sizeof one), "put");
        } else if (me == 1) {
            const double c0 = cpu_ms(), w0 = now_ms();
            while (*flag != 1) check(sluice::poll_wait(), "poll_wait");
            std::printf("flag: rank 1 cpu %.1f ms of %.1f ms\n", cpu_ms() - c0, now_ms() - w0);
        }
        check(sluice::barrier(), "barrier");
    } else if (mode == "flood") {
        std::uint64_t sent = 0;
        for (long k = 0; k < n; ++k) {
            for (sluice::Rank r = 0; r < size; ++r)
                if (r != me) {
                    check(sluice::request_short(r, ping, static_cast<std::uint32_t>(k)), "request");
                    ++sent;
                }
            if (k % 64 == 63) {
                wait_pongs(sent);
                check(sluice::barrier(), "barrier");
            }
        }
        wait_pongs(sent);
        check(sluice::barrier(), "barrier");
        std::printf("flood: rank %u done\n", me);
    } else {
        std::fprintf(stderr, "wait_check: unknown mode %s\n", mode.c_str());
        sluice::exit(2);
    }
    std::fflush(stdout);
    return sluice::finalize() == sluice::Status::ok ? 0 : 1;
}
