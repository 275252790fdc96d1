// tests/spawn/spawn_test.cpp - the Sluice program the spawner tests launch
// (tests/spawn/*.sh), under sluicerun with every spawner, srun and mpirun.
//
//   sluice-spawn-test MODE [ARGS...]
//   empty               init, finalize (the start-up benchmarks' program)
//   check               every rank agrees on the job: the allgather holds
//                       each rank once, an AM round trip to the next rank,
//                       a Put into it, a barrier; prints
//                       "rank R of N on HOST pid P spawner NAME" per rank
//   exit CODE RANK      RANK calls sluice_exit(CODE) while the others wait
//                       in a barrier: the launcher must return CODE
//   crash RANK          RANK dies by SIGSEGV while the others wait in a
//                       barrier: the launcher must return non-zero
//   hang                prints "ready R pid P" per rank, then polls forever
//                       (for SIGINT, scancel and kill tests)
//   env VAR...          prints "rank R VAR=value" (or "VAR unset") per rank
//   args ARG...         prints "rank R argc C" and "rank R arg[i]=<ARG>"
// Exit code 0 when the checks hold; 1 (with a line naming what failed).
#include <sluice.h>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr sluice_handler_t ping_handler = 10, pong_handler = 11;
std::atomic<int> pongs{0};

void on_ping(sluice_token_t token, void *, size_t, const uint32_t *args, unsigned nargs) {
    uint32_t value = nargs ? args[0] + 1 : 0;
    (void)sluice_am_reply_short(token, pong_handler, &value, 1);
}
void on_pong(sluice_token_t, void *, size_t, const uint32_t *args, unsigned nargs) {
    if (nargs == 1 && args[0] == sluice_rank() + 1) pongs.fetch_add(1);
}

[[noreturn]] void fail(const char *what) {
    std::fprintf(stderr, "sluice-spawn-test rank %u: FAILED: %s (%s)\n", sluice_rank(), what, sluice_last_error());
    std::fflush(nullptr);
    std::exit(1);
}
#define MUST(call) \
    do { \
        if ((call) != SLUICE_OK) fail(#call); \
    } while (0)

// Lines printed in rank order, so a test can compare whole outputs.
void print_in_order(const std::string &line) {
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    for (sluice_rank_t r = 0; r < n; ++r) {
        if (r == me) {
            std::fputs(line.c_str(), stdout);
            std::fflush(stdout);
        }
        MUST(sluice_barrier());
    }
}

const char *spawner_name() {
    const char *s = std::getenv("SLUICE_SPAWNER");
    return s && *s ? s : "auto";
}

int check() {
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    MUST(sluice_handler_register(ping_handler, on_ping, SLUICE_AM_SHORT, 1));
    MUST(sluice_handler_register(pong_handler, on_pong, SLUICE_AM_SHORT, 1));
    MUST(sluice_segment_attach(4096));
    uint32_t mine = me;
    std::vector<uint32_t> all(n);
    MUST(sluice_allgather(&mine, all.data(), sizeof mine));
    for (sluice_rank_t r = 0; r < n; ++r)
        if (all[r] != r) fail("the allgather does not hold every rank in order");
    const sluice_rank_t next = (me + 1) % n;
    uint32_t value = me;
    MUST(sluice_am_request_short(next, ping_handler, &value, 1));
    while (pongs.load() < 1) MUST(sluice_poll());
    void *base = nullptr;
    size_t size = 0;
    MUST(sluice_segment_info(next, &base, &size));
    uint64_t stamp = 0x5100000000ull + me;
    MUST(sluice_put(next, base, &stamp, sizeof stamp));
    MUST(sluice_barrier());
    void *mybase = nullptr;
    MUST(sluice_segment_info(me, &mybase, &size));
    uint64_t got = 0;
    std::memcpy(&got, mybase, sizeof got);
    if (got != 0x5100000000ull + (me + n - 1) % n) fail("the Put from the previous rank did not land");
    char host[256] = "?";
    (void)::gethostname(host, sizeof host - 1);
    print_in_order("rank " + std::to_string(me) + " of " + std::to_string(n) + " on " + host + " pid " +
                   std::to_string(::getpid()) + " spawner " + spawner_name() + "\n");
    return 0;
}

unsigned number(const char *text, const char *what) {
    char *end = nullptr;
    unsigned long v = text ? std::strtoul(text, &end, 10) : 0;
    if (!text || !*text || *end) {
        std::fprintf(stderr, "sluice-spawn-test: %s needs a number\n", what);
        std::exit(2);
    }
    return static_cast<unsigned>(v);
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: sluice-spawn-test empty|check|exit CODE RANK|crash RANK|hang|env VAR...|args ...\n");
        return 2;
    }
    const std::string mode = argv[1];
    MUST(sluice_init(&argc, &argv));
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    if (mode == "empty") {
        MUST(sluice_finalize());
        return 0;
    }
    if (mode == "check") {
        const int rc = check();
        MUST(sluice_finalize());
        return rc;
    }
    if (mode == "exit" || mode == "crash") {
        const unsigned code = mode == "exit" ? number(argc > 2 ? argv[2] : nullptr, "exit CODE") : 0;
        const unsigned who = number(argc > (mode == "exit" ? 3 : 2) ? argv[mode == "exit" ? 3 : 2] : nullptr, "RANK");
        MUST(sluice_barrier());
        if (me == who % n) {
            if (mode == "exit") sluice_exit(static_cast<int>(code));
            std::signal(SIGSEGV, SIG_DFL);
            std::raise(SIGSEGV);
        }
        // The others wait: the exit protocol (or the launcher) ends them.
        for (;;) (void)sluice_barrier();
    }
    if (mode == "hang") {
        std::printf("ready %u pid %d\n", me, static_cast<int>(::getpid()));
        std::fflush(stdout);
        for (;;) {
            (void)sluice_poll();
            ::usleep(1000);
        }
    }
    if (mode == "env") {
        std::string lines;
        for (int i = 2; i < argc; ++i) {
            const char *v = std::getenv(argv[i]);
            lines += "rank " + std::to_string(me) + " " + argv[i] + (v ? "=" + std::string(v) : " unset") + "\n";
        }
        print_in_order(lines);
        MUST(sluice_finalize());
        return 0;
    }
    if (mode == "args") {
        std::string lines = "rank " + std::to_string(me) + " argc " + std::to_string(argc - 2) + "\n";
        for (int i = 2; i < argc; ++i)
            lines += "rank " + std::to_string(me) + " arg[" + std::to_string(i - 2) + "]=<" + argv[i] + ">\n";
        print_in_order(lines);
        MUST(sluice_finalize());
        return 0;
    }
    std::fprintf(stderr, "sluice-spawn-test: unknown mode '%s'\n", mode.c_str());
    sluice_exit(2);
}
