// tests/mpi/hybrid_test.cpp - one rank of a hybrid MPI + Sluice job, started
// by mpirun (tests/mpi/hybrid.sh).  The mode names the order of
// initialization and finalization; every mode moves data with Sluice AM and
// Put and checks it, and uses MPI beside it.  Exit code 0 means the rank saw
// everything it expected.
#include <mpix_sluice.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

// tests/mpi/pmpi_count.cpp
long pmpi_calls();
extern const char *const pmpi_wrapped[];

namespace {

int failures = 0;
#define EXPECT(cond)                                                                      \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "hybrid_test: %s:%d: expected %s\n", __FILE__, __LINE__, \
                         #cond);                                                          \
            ++failures;                                                                   \
        }                                                                                 \
    } while (0)

std::atomic<int> pongs{0};
void on_ping(sluice_token_t t, void *, size_t, const uint32_t *args, unsigned) {
    uint32_t back = args[0] + 1;
    (void)sluice_am_reply_short(t, 2, &back, 1);
}
void on_pong(sluice_token_t, void *, size_t, const uint32_t *args, unsigned) {
    if (args[0] == sluice_rank() + 1) pongs.fetch_add(1);
}

// Pings every rank (itself included) and hands each rank's segment base to
// `rma`, then waits for every pong and meets the others in a barrier.
template <class Rma> void ping_all(Rma rma) {
    static bool registered = false;
    if (!registered) {
        EXPECT(sluice_handler_register(1, on_ping, SLUICE_AM_SHORT, 1) == SLUICE_OK);
        EXPECT(sluice_handler_register(2, on_pong, SLUICE_AM_SHORT, 1) == SLUICE_OK);
        EXPECT(sluice_barrier() == SLUICE_OK);  // registered everywhere before anyone sends
        registered = true;
    }
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    pongs.store(0);
    for (sluice_rank_t r = 0; r < n; ++r) {
        uint32_t arg = me;
        EXPECT(sluice_am_request_short(r, 1, &arg, 1) == SLUICE_OK);
        void *base = nullptr;
        size_t size = 0;
        EXPECT(sluice_segment_info(r, &base, &size) == SLUICE_OK);
        rma(r, static_cast<char *>(base));
    }
    while (pongs.load() < static_cast<int>(n)) EXPECT(sluice_poll() == SLUICE_OK);
    EXPECT(sluice_barrier() == SLUICE_OK);
}

// Every rank pings every rank and writes its rank into their segments; then
// each checks what the others wrote.
void sluice_traffic() {
    EXPECT(sluice_initialized());
    if (!sluice_initialized()) return;
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    EXPECT(sluice_segment_attach(4096) == SLUICE_OK);
    ping_all([&](sluice_rank_t r, char *base) {
        uint32_t value = 1000 + me;
        EXPECT(sluice_put(r, base + 4 * me, &value, 4) == SLUICE_OK);
    });
    void *mine = nullptr;
    size_t size = 0;
    EXPECT(sluice_segment_info(me, &mine, &size) == SLUICE_OK);
    for (sluice_rank_t r = 0; r < n; ++r) {
        uint32_t v;
        std::memcpy(&v, static_cast<char *>(mine) + 4 * r, 4);
        EXPECT(v == 1000 + r);
    }
    EXPECT(sluice_barrier() == SLUICE_OK);
}

// One round of every kind of Sluice traffic with every peer (segment of
// 1 MiB attached): AM round trips, Put and Get of 8 B to 32 KiB, a barrier,
// an allgather.
void sluice_data_path_round() {
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    static char buffer[1 << 16];
    ping_all([&](sluice_rank_t r, char *base) {
        char *mine = base + me * sizeof buffer;
        for (size_t len = 8; len <= sizeof buffer; len *= 8) {
            EXPECT(sluice_put(r, mine, buffer, len) == SLUICE_OK);
            EXPECT(sluice_get(buffer, r, mine, len) == SLUICE_OK);
        }
    });
    std::vector<uint32_t> all(n);
    uint32_t mine = me;
    EXPECT(sluice_allgather(&mine, all.data(), sizeof mine) == SLUICE_OK);
    for (sluice_rank_t r = 0; r < n; ++r) EXPECT(all[r] == r);
}

// MPI beside Sluice: the ranks agree on a sum.
void mpi_traffic(MPI_Comm comm) {
    int me = 0, n = 0, sum = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, comm);
    EXPECT(sum == n * (n - 1) / 2);
}

int world_rank();

// What the MPIX_ calls promise, on a Sluice job made of the odd ranks of a
// world of `wn` ranks.
void mpix_checks(MPI_Comm job, int wr, int wn) {
    const sluice_rank_t me = sluice_rank(), n = sluice_size();
    EXPECT(static_cast<int>(me) == wr / 2);
    int first = -1;
    // A second start, over another communicator, is refused and changes
    // nothing: the job is still the odd ranks.
    EXPECT(MPIX_Sluice_init(MPI_COMM_WORLD, nullptr, nullptr) == SLUICE_ERR_STATE);
    EXPECT(sluice_rank() == me && sluice_size() == n);
    EXPECT(MPIX_Sluice_rank_to_comm(MPI_COMM_WORLD, me, &first) == SLUICE_OK && first == wr);
    // Translation both ways, and the refusals.
    sluice_rank_t r = 99;
    EXPECT(MPIX_Sluice_rank_from_comm(MPI_COMM_WORLD, wr, &r) == SLUICE_OK && r == me);
    for (int w = 0; w < wn; ++w) {
        const sluice_status_t s = MPIX_Sluice_rank_from_comm(MPI_COMM_WORLD, w, &r);
        EXPECT(w % 2 ? s == SLUICE_OK && static_cast<int>(r) == w / 2 : s == SLUICE_ERR_RANK);
    }
    EXPECT(MPIX_Sluice_rank_from_comm(MPI_COMM_WORLD, wn, &r) == SLUICE_ERR_RANK);
    int cr = -1;
    for (sluice_rank_t s = 0; s < n; ++s)
        EXPECT(MPIX_Sluice_rank_to_comm(MPI_COMM_WORLD, s, &cr) == SLUICE_OK && cr == static_cast<int>(2 * s + 1));
    EXPECT(MPIX_Sluice_rank_to_comm(MPI_COMM_SELF, n - 1 - me, &cr) == (n == 1 ? SLUICE_OK : SLUICE_ERR_RANK));
    EXPECT(MPIX_Sluice_rank_to_comm(MPI_COMM_WORLD, n, &cr) == SLUICE_ERR_RANK);
    // A communicator of the Sluice ranks in reverse order, without rank 0
    // when there is more than one.
    std::vector<sluice_rank_t> list;
    for (sluice_rank_t s = n; s-- > (n > 1 ? 1u : 0u);) list.push_back(s);
    MPI_Comm sub = MPI_COMM_NULL;
    EXPECT(MPIX_Sluice_comm_create(list.data(), static_cast<int>(list.size()), &sub) == SLUICE_OK);
    if (me == 0 && n > 1) {
        EXPECT(sub == MPI_COMM_NULL);
    } else {
        EXPECT(sub != MPI_COMM_NULL);
        int sr = -1;
        MPI_Comm_rank(sub, &sr);
        EXPECT(sr == static_cast<int>(n - 1 - me));
        mpi_traffic(sub);
        MPI_Comm_free(&sub);
    }
    const sluice_rank_t bad = n;
    EXPECT(MPIX_Sluice_comm_create(&bad, 1, &sub) == SLUICE_ERR_RANK);
    // The window: MPI_Put lands where sluice_get reads, and the reverse.
    MPI_Win win;
    EXPECT(MPIX_Sluice_win_create(&win) == SLUICE_ERR_STATE);  // no segment yet
    EXPECT(sluice_segment_attach(4096) == SLUICE_OK);
    EXPECT(MPIX_Sluice_win_create(&win) == SLUICE_OK);
    const sluice_rank_t next = (me + 1) % n;
    void *next_base = nullptr;
    size_t size = 0;
    EXPECT(sluice_segment_info(next, &next_base, &size) == SLUICE_OK);
    uint32_t value = 7000 + me, back = 0;
    MPI_Win_lock_all(0, win);
    MPI_Put(&value, 4, MPI_BYTE, static_cast<int>(next), 128, 4, MPI_BYTE, win);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    // The phasing rule (docs/mpi-hybrid.md): an MPI phase ends with an MPI
    // collective.  MPICH completes a Put only when its target calls MPI, so
    // a Sluice barrier here would hang.
    MPI_Barrier(job);
    EXPECT(sluice_get(&back, next, static_cast<char *>(next_base) + 128, 4) == SLUICE_OK);
    EXPECT(back == 7000 + me);
    value = 9000 + me;
    EXPECT(sluice_put(next, static_cast<char *>(next_base) + 256, &value, 4) == SLUICE_OK);
    EXPECT(sluice_barrier() == SLUICE_OK);
    back = 0;
    MPI_Win_lock_all(0, win);
    MPI_Get(&back, 4, MPI_BYTE, static_cast<int>(next), 256, 4, MPI_BYTE, win);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    EXPECT(back == 9000 + me);
    MPI_Win_free(&win);
}

// Splits MPI_COMM_WORLD by the parity of the world rank.  The ranks of
// parity `sluice_half` run `body(half, world rank, world size)`, which starts
// Sluice over `half`, and then finalize Sluice; then every rank uses MPI on
// its half.
template <class Body> void on_half_of_world(int sluice_half, Body body) {
    int wr = 0, wn = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, wr % 2, wr, &half);
    if (wr % 2 == sluice_half) {
        body(half, wr, wn);
        EXPECT(sluice_finalize() == SLUICE_OK);
    }
    mpi_traffic(half);
    MPI_Comm_free(&half);
}

int world_rank() {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

// How many shared-memory segments of this job (SLUICE_JOB_ID, set by
// hybrid.sh) exist on this host.
int segment_files() {
    const char *job = std::getenv("SLUICE_JOB_ID");
    if (!job) return 0;
    const std::string prefix = std::string("sluice.") + job + ".seg.";
    int count = 0;
    if (DIR *d = ::opendir("/dev/shm")) {
        while (dirent *e = ::readdir(d))
            if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) ++count;
        ::closedir(d);
    }
    return count;
}

// Waits, at most `seconds`, until `done()`; says whether it came.
// Whether the process whose pid is in `pid_file` is stopped (state T).
bool process_stopped(const std::string &pid_file) {
    int pid = 0;
    if (FILE *f = std::fopen(pid_file.c_str(), "r")) {
        if (std::fscanf(f, "%d", &pid) != 1) pid = 0;
        std::fclose(f);
    }
    if (pid <= 0) return false;
    char state = 0;
    if (FILE *f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r")) {
        // pid (comm) state ...; comm may hold spaces, so read after the last ')'.
        char line[512];
        if (std::fgets(line, sizeof line, f))
            if (const char *paren = std::strrchr(line, ')')) state = paren[2];
        std::fclose(f);
    }
    return state == 'T';
}

template <class Done> bool wait_for(Done done, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        ::usleep(1000);
    }
    return true;
}

// Spins in the program's own code, never calling Sluice or MPI, until the
// exit ends the process (hybrid.sh's timeout ends it otherwise).
[[noreturn]] void spin_forever() {
    static std::atomic<unsigned long> spins{0};
    for (;;) spins.fetch_add(1, std::memory_order_relaxed);
}

// A thread that calls sluice_exit(code) once `go` is set.
std::atomic<bool> go{false};
std::thread exit_thread(int code) {
    return std::thread([code] {
        while (!go.load()) ::usleep(100);
        sluice_exit(code);
    });
}

// What the other threads of a rank do while one thread exits.
void busy(const std::string &what) {
    const sluice_rank_t next = (sluice_rank() + 1) % sluice_size();
    void *base = nullptr;
    size_t size = 0;
    (void)sluice_segment_info(next, &base, &size);
    uint32_t value = 1;
    for (;;) {
        if (what == "barrier") (void)sluice_barrier();
        else if (what == "poll") (void)sluice_poll();
        else if (what == "send") (void)sluice_put(next, base, &value, sizeof value);
        else spin_forever();
    }
}

} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    int finalized = 0, provided = 0;
    if (mode == "mpi-first") {
        // The application owns MPI; Sluice shares it and leaves it running.
        MPI_Init(&argc, &argv);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        EXPECT(static_cast<int>(sluice_rank()) == world_rank());
        sluice_traffic();
        mpi_traffic(MPI_COMM_WORLD);
        EXPECT(sluice_finalize() == SLUICE_OK);
        MPI_Finalized(&finalized);
        EXPECT(!finalized);
        mpi_traffic(MPI_COMM_WORLD);
        MPI_Finalize();
    } else if (mode == "sluice-first") {
        // Sluice initializes MPI; the application uses it while Sluice runs,
        // and Sluice finalizes it.
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        int initialized = 0;
        MPI_Initialized(&initialized);
        EXPECT(initialized);
        mpi_traffic(MPI_COMM_WORLD);
        sluice_traffic();
        EXPECT(sluice_finalize() == SLUICE_OK);
        MPI_Finalized(&finalized);
        EXPECT(finalized);
    } else if (mode == "mpi-finalize-first") {
        // MPI_Finalize with Sluice still running: Sluice quiesces first.
        MPI_Init(&argc, &argv);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        sluice_traffic();
        MPI_Finalize();
        EXPECT(!sluice_initialized());
    } else if (mode == "thread-level") {
        // A progress thread needs more than MPI_THREAD_SINGLE: refused, clearly.
        MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
        setenv("SLUICE_PROGRESS_THREAD", "1", 1);
        setenv("SLUICE_QUIET_ERRORS", "1", 1);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_ERR_BOOTSTRAP);
        const std::string error = sluice_last_error();
        EXPECT(error.find("MPI_THREAD_SINGLE") != std::string::npos);
        EXPECT(error.find("SLUICE_PROGRESS_THREAD") != std::string::npos);
        EXPECT(!sluice_initialized());
        mpi_traffic(MPI_COMM_WORLD);
        MPI_Finalize();
    } else if (mode == "subset") {
        // A Sluice job over half of MPI_COMM_WORLD (the even world ranks);
        // the odd ones only do MPI.
        MPI_Init(&argc, &argv);
        on_half_of_world(0, [&](MPI_Comm half, int, int) {
            EXPECT(MPIX_Sluice_init(half, &argc, &argv) == SLUICE_OK);
            int hr = 0, hn = 0;
            MPI_Comm_rank(half, &hr);
            MPI_Comm_size(half, &hn);
            EXPECT(static_cast<int>(sluice_rank()) == hr);
            EXPECT(static_cast<int>(sluice_size()) == hn);
            sluice_traffic();
        });
        mpi_traffic(MPI_COMM_WORLD);
        MPI_Finalize();
    } else if (mode == "data-path") {
        // No MPI call between start-up and finalize while Sluice moves data:
        // thousands of AMs, Puts and Gets of every size, barriers, allgathers.
        MPI_Init(&argc, &argv);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        EXPECT(sluice_segment_attach(1 << 20) == SLUICE_OK);
        EXPECT(sluice_barrier() == SLUICE_OK);
        const long before = pmpi_calls();
        for (int round = 0; round < 50; ++round) sluice_data_path_round();
        const long during = pmpi_calls() - before;
        if (during != 0) std::fprintf(stderr, "hybrid_test: %ld MPI calls on the data path\n", during);
        EXPECT(during == 0);
        EXPECT(sluice_finalize() == SLUICE_OK);
        EXPECT(pmpi_calls() > before);  // the counter does see the library's calls
        MPI_Finalize();
    } else if (mode == "mpix") {
        // Rank translation, communicators of Sluice ranks and an MPI window
        // on the segments, on a Sluice job of the odd world ranks (the even
        // ones only do MPI), so that world and Sluice ranks differ.
        MPI_Init(&argc, &argv);
        setenv("SLUICE_QUIET_ERRORS", "1", 1);
        on_half_of_world(1, [&](MPI_Comm odd, int wr, int wn) {
            sluice_rank_t r = 99;
            EXPECT(MPIX_Sluice_rank_from_comm(MPI_COMM_WORLD, wr, &r) == SLUICE_ERR_STATE);
            EXPECT(MPIX_Sluice_init(odd, &argc, &argv) == SLUICE_OK);
            mpix_checks(odd, wr, wn);
        });
        MPI_Finalize();
    } else if (mode == "exit-one") {
        // sluice_exit(3) on the last rank while the others wait in a Sluice
        // barrier: the job ends with code 3 (checked by hybrid.sh).
        MPI_Init(&argc, &argv);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        if (sluice_rank() == sluice_size() - 1) sluice_exit(3);
        (void)sluice_barrier();
        return 1;  // not reached: the exit ends every rank
    } else if (mode == "mpi-abort-one") {
        // MPI_Abort(4) on the last rank while the others wait in a Sluice
        // barrier: the job ends with code 4.
        MPI_Init(&argc, &argv);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        if (sluice_rank() == sluice_size() - 1) MPI_Abort(MPI_COMM_WORLD, 4);
        (void)sluice_barrier();
        return 1;
    } else if (mode == "exit-before-attach" || mode == "exit-stopped-attach") {
        // sluice_exit(7) on the last rank between sluice_init and
        // segment_attach, once every other rank has created its segment
        // inside segment_attach: code 7, and hybrid.sh checks no segment is
        // left.  exit-stopped-attach: rank 0 is stopped (SIGSTOP) there
        // first, so it never answers the exit protocol and never unlinks
        // its segment; the exiting rank aborts the job and must unlink it.
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        const int others = static_cast<int>(sluice_size()) - 1;
        const bool stop_rank0 = mode == "exit-stopped-attach";
        const std::string stopped_file = std::string("/tmp/sluice-hybrid-stopped.") +
                                         (std::getenv("SLUICE_JOB_ID") ? std::getenv("SLUICE_JOB_ID") : "none");
        if (stop_rank0 && sluice_rank() == 0) {
            std::thread([=] {
                (void)wait_for([&] { return segment_files() >= others; }, 5.0);
                if (FILE *f = std::fopen(stopped_file.c_str(), "w")) {
                    std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
                    std::fclose(f);
                }
                ::raise(SIGSTOP);
            }).detach();
        }
        if (static_cast<int>(sluice_rank()) == others) {
            // A bounded wait: a Sluice that creates no segment before its
            // peers meet in segment_attach exits after it all the same.
            (void)wait_for([&] { return segment_files() >= others; }, 5.0);
            if (stop_rank0) {
                const bool stopped = wait_for([&] { return process_stopped(stopped_file); }, 10.0);
                ::unlink(stopped_file.c_str());
                if (!stopped) {
                    std::fprintf(stderr, "hybrid_test: rank 0 did not stop inside segment_attach\n");
                    sluice_exit(8);
                }
            }
            sluice_exit(7);
        }
        (void)sluice_segment_attach(4096);
        (void)sluice_barrier();
        return 1;
    } else if (mode.rfind("thread-exit-", 0) == 0) {
        // thread-exit-WHAT: Sluice initializes MPI; on the last rank a second
        // thread calls sluice_exit(7) while the main thread (and the main
        // thread of every other rank) does WHAT: barrier, poll, send, spin,
        // or exits too ("all": four threads of every rank exit with 7).
        const std::string what = mode.substr(std::strlen("thread-exit-"));
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        EXPECT(sluice_segment_attach(4096) == SLUICE_OK);
        EXPECT(sluice_barrier() == SLUICE_OK);
        const bool last = sluice_rank() == sluice_size() - 1;
        std::vector<std::thread> threads;
        if (last || what == "all") threads.push_back(exit_thread(7));
        if (what == "all")
            for (int i = 0; i < 2; ++i) threads.push_back(exit_thread(7));
        go.store(true);
        if (what == "all") sluice_exit(7);
        busy(what);
    } else if (mode == "exit-spin") {
        // sluice_exit(5) on the last rank while the others spin in their own
        // code and never call Sluice or MPI again.
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        EXPECT(sluice_barrier() == SLUICE_OK);
        if (sluice_rank() == sluice_size() - 1) sluice_exit(5);
        spin_forever();
    } else if (mode == "signal-barrier" || mode == "signal-spin") {
        // SIGINT to the last rank while the others wait in a barrier; or
        // SIGTERM to the last rank while every rank spins in its own code
        // (the exit must still run, out of the signal handler).
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        EXPECT(sluice_barrier() == SLUICE_OK);
        const bool spin = mode == "signal-spin";
        if (sluice_rank() == sluice_size() - 1) ::kill(::getpid(), spin ? SIGTERM : SIGINT);
        if (spin) spin_forever();
        for (;;) (void)sluice_barrier();
    } else if (mode == "mpi-abort-in-mpi") {
        // MPI_Abort(4) on a communicator of the program's own, on the last
        // rank, while the others wait in an MPI barrier on it, Sluice
        // running.  MPICH then ends the others by calling exit() from
        // inside their barrier: Sluice's exit hook must not call MPI there
        // (UCX asserts, and the job ends with 6).
        MPI_Init(&argc, &argv);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        EXPECT(sluice_barrier() == SLUICE_OK);
        if (sluice_rank() == sluice_size() - 1) MPI_Abort(comm, 4);
        MPI_Barrier(comm);
        return 1;
    } else if (mode == "return-from-main") {
        // Return from main with MPI and Sluice both initialized.
        MPI_Init(&argc, &argv);
        EXPECT(sluice_init(&argc, &argv) == SLUICE_OK);
        sluice_traffic();
        return failures ? 1 : 0;
    } else if (mode == "wrapped") {
        // For hybrid.sh: the MPI functions pmpi_count.cpp counts.
        for (const char *const *w = pmpi_wrapped; *w; ++w) std::printf("%s\n", *w);
        return 0;
    } else if (mode == "mpix-before-mpi") {
        // MPIX_Sluice_init needs MPI: a clear error, not a crash.
        setenv("SLUICE_QUIET_ERRORS", "1", 1);
        EXPECT(MPIX_Sluice_init(MPI_COMM_WORLD, &argc, &argv) == SLUICE_ERR_STATE);
        EXPECT(std::string(sluice_last_error()).find("MPI_Init") != std::string::npos);
        // Then a proper MPI program: MPICH's hydra, whose processes never
        // connect to it, can die of SIGPIPE (exit 141) when 4 of them end
        // before it has written to them.
        MPI_Init(&argc, &argv);
        MPI_Finalize();
    } else {
        std::fprintf(stderr, "usage: %s mpi-first|sluice-first|mpi-finalize-first|thread-level|subset|data-path|"
                             "mpix|mpix-before-mpi|exit-one|mpi-abort-one|return-from-main|exit-before-attach|exit-stopped-attach|"
                             "thread-exit-{barrier,poll,send,spin,all}|exit-spin|signal-barrier|signal-spin|wrapped\n",
                     argv[0]);
        return 2;
    }
    return failures ? 1 : 0;
}
