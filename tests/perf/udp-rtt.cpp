// tests/perf/udp-rtt.cpp - the udp AM Short round trip against a bare UDP
// ping-pong, in many short chunks alternating between the same two ranks:
// the instrument for comparing two builds of the library (README, "Comparing
// two builds").  sluice-bench's udp section measures the same thing in five
// chunks per job, each job a ratio whose spread (about +-0.04 on this VM) hides
// changes of a percent or two; here each of `chunks` pairs of chunks (bare,
// then AM, `per` round trips each) gives a ratio, and the job prints their
// median, which moves by about +-0.01 from job to job in a quiet hour of
// this VM (in a busy one by as much as the benchmark's).
//
//   SLUICE_ROUTE=network sluicerun -n 2 tests/perf/udp-rtt [chunks [per]]
//
// prints "ratio R am A bare B" (medians over the chunks; A and B in ns per
// round trip).  The bare side is a pair of connected UDP sockets on
// 127.0.0.1 spinning on recv(MSG_DONTWAIT), with no clock read in its loop.
#include <sluice.h>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <vector>

namespace {

std::atomic<bool> reply_seen{false};
std::atomic<long> served{0};

void on_request(sluice_token_t token, void *, size_t, const uint32_t *, unsigned) {
    served.store(served.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (sluice_am_reply_short(token, 2, nullptr, 0) != SLUICE_OK) sluice_exit(3);
}
void on_reply(sluice_token_t, void *, size_t, const uint32_t *, unsigned) {
    reply_seen.store(true, std::memory_order_relaxed);
}

double now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void check(sluice_status_t s, const char *what) {
    if (s == SLUICE_OK) return;
    std::fprintf(stderr, "udp-rtt rank %u: %s failed (%d)\n", sluice_rank(), what, static_cast<int>(s));
    sluice_exit(3);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// A UDP socket on 127.0.0.1 connected to the other rank's.
int bare_socket_open(unsigned me) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof a;
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr *>(&a), &length) == 0;
    std::uint16_t ports[2] = {0, 0};
    check(sluice_allgather(&a.sin_port, ports, sizeof ports[0]), "sluice_allgather");
    a.sin_port = ports[1 - me];
    if (!ok || connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        std::fprintf(stderr, "udp-rtt rank %u: cannot open a UDP socket on 127.0.0.1\n", me);
        sluice_exit(3);
    }
    return fd;
}

} // namespace

int main(int argc, char **argv) {
    check(sluice_init(&argc, &argv), "sluice_init");
    const int chunks = argc > 1 ? std::atoi(argv[1]) : 40;
    const int per = argc > 2 ? std::atoi(argv[2]) : 2000;
    const unsigned me = sluice_rank();
    if (sluice_size() != 2 || chunks < 1 || per < 1) {
        if (me == 0) std::fprintf(stderr, "usage: sluicerun -n 2 udp-rtt [chunks (40) [round trips per chunk (2000)]]\n");
        sluice_finalize();
        return 2;
    }
    check(sluice_handler_register(1, on_request, SLUICE_AM_SHORT, 0), "sluice_handler_register");
    check(sluice_handler_register(2, on_reply, SLUICE_AM_SHORT, 0), "sluice_handler_register");
    const int fd = bare_socket_open(me);
    check(sluice_barrier(), "sluice_barrier");

    std::vector<double> am, bare, ratio;
    char buffer[64] = {};
    constexpr int warm = 2;  // untimed pairs of chunks first
    for (int c = -warm; c < chunks; ++c) {
        check(sluice_barrier(), "sluice_barrier");
        double t0 = now_ns();
        for (int i = 0; i < per; ++i) {
            if (me == 0) (void)send(fd, buffer, 8, 0);
            while (recv(fd, buffer, sizeof buffer, MSG_DONTWAIT) < 0) {
            }
            if (me == 1) (void)send(fd, buffer, 8, 0);
        }
        const double bare_ns = (now_ns() - t0) / per;
        check(sluice_barrier(), "sluice_barrier");
        if (me == 0) {
            t0 = now_ns();
            for (int i = 0; i < per; ++i) {
                reply_seen.store(false, std::memory_order_relaxed);
                check(sluice_am_request_short(1, 1, nullptr, 0), "sluice_am_request_short");
                while (!reply_seen.load(std::memory_order_relaxed)) check(sluice_poll(), "sluice_poll");
            }
            const double am_ns = (now_ns() - t0) / per;
            if (c >= 0) {
                am.push_back(am_ns);
                bare.push_back(bare_ns);
                ratio.push_back(am_ns / bare_ns);
            }
        } else {
            // Counted from the start: rank 0 may leave the barrier first and
            // its first request may run here inside the barrier.
            const long goal = static_cast<long>(c + warm + 1) * per;
            while (served.load(std::memory_order_relaxed) < goal) check(sluice_poll(), "sluice_poll");
        }
    }
    if (me == 0) std::printf("ratio %.4f am %.1f bare %.1f\n", median(ratio), median(am), median(bare));
    close(fd);
    check(sluice_barrier(), "sluice_barrier");
    check(sluice_finalize(), "sluice_finalize");
    return 0;
}
