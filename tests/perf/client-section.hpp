// tests/perf/client-section.hpp - the client API's rows (atomics,
// collectives on teams, VIS, negotiated-payload AMs), each beside a
// reference measured in the same job or the same run.
//
// Worker side: the kind `client`, one rank of a job of 2, 4 or 8 ranks,
// told its conduit by --client-tag (smp, udp, ofi_<provider tag>; the driver
// sets the routing).  At 2 ranks rank 0 measures and rank 1 serves, as in
// the suite (the Suite of sluice-bench.cpp, a template argument like the ofi
// section's): 8 B fetch-add round trip interleaved with the conduit's
// reference (smp: the cache-line ping-pong; udp: the AM Short round trip;
// ofi: the 8 B blocking Get), a strided Put of 1024 pieces of 64 B beside
// memcpy of the same pieces (smp) or 1024 blocking contiguous Puts
// (network), and on smp the negotiated-payload Medium flood beside the
// fixed-payload one.  On smp every rank then works at once: the hot spot
// (every rank fetch-adds one word of rank 0) beside a CPU fetch_add loop on
// a word the same processes share, reduce-to-all of 8 B, and at 4 ranks a
// 1 MiB broadcast (their MPI counterparts run in mpi-reference --client).
//
// Driver side (client-section.cpp): the options, one repetition's jobs and
// the report's rows.
#pragma once

#include "tests/perf/bench_common.hpp"
#include "tests/perf/driver.hpp"
#include "tests/perf/worker.hpp"

#include <sluice.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

// The families are implemented beside this benchmark; a library without one
// yet links, and its rows say so instead of measuring.
#pragma weak sluice_team_job
#pragma weak sluice_ad_create
#pragma weak sluice_ad_destroy
#pragma weak sluice_ad_path
#pragma weak sluice_ad_op_u64
#pragma weak sluice_coll_reduce_all
#pragma weak sluice_coll_broadcast
#pragma weak sluice_puts
#pragma weak sluice_am_prepare_request
#pragma weak sluice_am_commit
#pragma weak sluice_am_cancel

namespace sluice::perf {

// ---- driver side (client-section.cpp) -------------------------------------------
struct ClientPlan {
    enum class Mode { auto_, only, skip } mode = Mode::auto_;
};
ClientPlan &client_plan();
// Takes --client / --no-client; false for any other argument.
bool client_option(std::string_view arg);
// Whether --only NAME (empty: everything) keeps any client row.
bool client_wanted(const std::string &only);

struct ClientContext {
    std::string sluicerun, self, bind; // bind: sluicerun --bind for the 2-rank jobs ("": none)
    std::string mpirun, mpi_reference; // empty: no MPI references
    std::string tmp;                   // the run's temporary folder
    std::vector<std::string> extra;    // --quick, --only ... for every worker
    bool quick = false;
    double timeout = 300;
};
// Runs one repetition's client jobs into `samples`; returns the failed jobs.
int client_rep(const ClientContext &c, int rep, Samples &samples);

struct ClientRow {
    std::string section, metric, size_label, reference_name, title;
    std::size_t size = 0;
    double sluice = nan_value, reference = nan_value;
    enum class Check { none, ratio_at_most, ratio_at_least } check = Check::none;
    double threshold = 0;
};
std::vector<ClientRow> client_rows(const Samples &samples);
// Whether client_rep ran, and what the notes under the table say about it.
bool client_ran();
std::string client_note();

// ---- worker side ------------------------------------------------------------------
// Iterations of the collective rows, the same on the MPI side: the driver
// passes them to both (--client-reduce-iters, --client-bcast-iters).
struct ClientCounts {
    long reduce = 0, bcast = 0;
};
inline ClientCounts client_counts_parse(int argc, char **argv) {
    ClientCounts c;
    for (int i = 1; i + 1 < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--client-reduce-iters")
            c.reduce = std::atol(argv[i + 1]);
        else if (a == "--client-bcast-iters")
            c.bcast = std::atol(argv[i + 1]);
    }
    return c;
}
inline std::string client_tag_parse(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string_view(argv[i]) == "--client-tag")
            return argv[i + 1];
    return {};
}

// The strided shape: 1024 pieces of 64 B, 128 B apart on both sides.
inline constexpr std::size_t client_pieces = 1024;
inline constexpr std::size_t client_piece = 64;
inline constexpr std::ptrdiff_t client_stride = 128;
inline constexpr std::size_t client_strided_bytes = client_pieces * client_piece;
inline constexpr int client_nbi_depth = 16; // strided Puts in flight in the NBI row
inline constexpr std::size_t client_flood_bytes = 4 * kib;
inline constexpr std::size_t client_bcast_bytes = 1 * mib;
// Offsets in the segment past the suite's 4 MiB of RMA targets.
inline constexpr std::size_t client_fadd_offset = largest_rma;
inline constexpr std::size_t client_hot_offset = largest_rma + 256;

// A page every rank of the job maps (rank 0 creates it, the others open it,
// then its name is removed): the CPU fetch_add reference's word.
class ClientSharedPage {
public:
    explicit ClientSharedPage(sluice_rank_t me) {
        std::vector<std::uint32_t> pids(sluice_size());
        const auto mine = static_cast<std::uint32_t>(getpid());
        check(sluice_allgather(&mine, pids.data(), sizeof mine), "sluice_allgather");
        const std::string name = "/sluice-bench-client." + std::to_string(pids[0]);
        int fd = -1;
        if (me == 0) {
            fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
            if (fd >= 0 && ftruncate(fd, bytes) != 0) {
                close(fd);
                fd = -1;
            }
        }
        check(sluice_barrier(), "sluice_barrier");
        if (me != 0)
            fd = shm_open(name.c_str(), O_RDWR, 0);
        if (fd >= 0) {
            void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
            if (p != MAP_FAILED)
                page_ = static_cast<char *>(p);
        }
        check(sluice_barrier(), "sluice_barrier");
        if (me == 0)
            shm_unlink(name.c_str());
        if (!page_) {
            std::fprintf(stderr, "sluice-bench worker rank %u: cannot map the shared page %s\n", me, name.c_str());
            sluice_exit(3);
        }
    }
    ~ClientSharedPage() {
        if (page_)
            munmap(page_, bytes);
    }
    ClientSharedPage(const ClientSharedPage &) = delete;
    ClientSharedPage &operator=(const ClientSharedPage &) = delete;
    std::atomic<std::uint64_t> &word() { return *reinterpret_cast<std::atomic<std::uint64_t> *>(page_); }

private:
    static constexpr std::size_t bytes = 4096;
    char *page_ = nullptr;
};

// The flood's handlers: the target counts, and answers the end marker with
// the count so the sender knows every message ran.
enum : sluice_handler_t { h_client_flood = 120, h_client_end, h_client_ack };
struct ClientHandlerState {
    std::atomic<std::uint64_t> received{0};
    std::atomic<std::uint64_t> acknowledged{0};
    std::atomic<bool> acked{false};
};
inline ClientHandlerState client_state;
inline void client_on_flood(sluice_token_t, void *, size_t, const uint32_t *, unsigned) {
    client_state.received.store(client_state.received.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
}
inline void client_on_end(sluice_token_t t, void *, size_t, const uint32_t *, unsigned) {
    const std::uint64_t n = client_state.received.load(std::memory_order_relaxed);
    const uint32_t args[2] = {static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32)};
    check(sluice_am_reply_short(t, h_client_ack, args, 2), "sluice_am_reply_short");
}
inline void client_on_ack(sluice_token_t, void *, size_t, const uint32_t *args, unsigned) {
    client_state.acknowledged.store(args[0] | static_cast<std::uint64_t>(args[1]) << 32, std::memory_order_relaxed);
    client_state.acked.store(true, std::memory_order_relaxed);
}

template <class Suite> class ClientSection {
public:
    ClientSection(Suite &s, int argc, char **argv)
        : s_(s), tag_(client_tag_parse(argc, argv)), counts_(client_counts_parse(argc, argv)) {}

    int run() {
        if (tag_.empty()) {
            std::fprintf(stderr, "sluice-bench: the client kind needs --client-tag\n");
            return 2;
        }
        check(sluice_handler_register(h_client_flood, client_on_flood, SLUICE_AM_MEDIUM, 0), "sluice_handler_register");
        check(sluice_handler_register(h_client_end, client_on_end, SLUICE_AM_SHORT, 0), "sluice_handler_register");
        check(sluice_handler_register(h_client_ack, client_on_ack, SLUICE_AM_SHORT, 2), "sluice_handler_register");
        const sluice_rank_t n = sluice_size();
        if (n == 2) {
            std::size_t peer_size = 0;
            if (!s_.start(peer_size))
                return 2;
        } else {
            s_.me = sluice_rank();
            check(sluice_segment_attach(segment_bytes), "sluice_segment_attach");
        }
        const bool smp = tag_ == "smp";
        have_atomics_ = sluice_team_job && sluice_ad_create && sluice_ad_destroy && sluice_ad_op_u64;
        missing("atomics", have_atomics_);
        if (have_atomics_) {
            // Collective over the job: every rank, whatever it measures.
            const uint64_t ops = SLUICE_AOP_BIT(SLUICE_OP_FADD) | SLUICE_AOP_BIT(SLUICE_OP_SET) |
                                 SLUICE_AOP_BIT(SLUICE_OP_GET);
            have_atomics_ = soft(sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, ops, 0, &ad_), "sluice_ad_create");
            const char *path = "?", *why = "";
            if (have_atomics_ && sluice_ad_path && sluice_ad_path(ad_, &path, &why) == SLUICE_OK && s_.me == 0)
                std::fprintf(stderr, "sluice-bench: client %s: atomic domain path %s (%s)\n", tag_.c_str(), path, why);
        }
        if (n == 2) {
            if (smp)
                s_.pingpong_page_open();
            fadd_phase();
            strided_phase();
            if (smp)
                flood_phase();
        }
        if (smp) {
            if (n == 2 || n == 8)
                hot_spot();
            reduce_all();
            if (n == 4)
                broadcast();
        }
        if (have_atomics_)
            check(sluice_ad_destroy(ad_), "sluice_ad_destroy");
        check(sluice_finalize(), "sluice_finalize");
        return 0;
    }

private:
    Suite &s_;
    std::string tag_;
    ClientCounts counts_;
    sluice_ad_t ad_ = nullptr;
    bool have_atomics_ = false;

    std::string metric(const char *what) const { return "client_" + tag_ + "_" + what; }
    bool wanted(const char *what, std::size_t size = 0) const { return s_.options.wanted(metric(what), size); }
    void add(const char *what, std::size_t size, double v) {
        if (s_.me == 0)
            s_.results.add(metric(what), size, v);
    }
    void missing(const char *family, bool have) const {
        if (!have && s_.me == 0)
            std::fprintf(stderr, "sluice-bench: client %s: this library has no %s yet; their rows are left out\n",
                         tag_.c_str(), family);
    }
    // A call of a family that fails leaves its rows out rather than the job.
    bool soft(sluice_status_t st, const char *what) const {
        if (st == SLUICE_OK)
            return true;
        std::fprintf(stderr, "sluice-bench worker rank %u: client %s: %s failed: %s: %s; its rows are left out\n",
                     s_.me, tag_.c_str(), what, sluice_status_string(st), sluice_last_error());
        return false;
    }
    void *segment_of(sluice_rank_t r, std::size_t offset) const {
        void *base = nullptr;
        std::size_t size = 0;
        check(sluice_segment_info(r, &base, &size), "sluice_segment_info");
        return static_cast<char *>(base) + offset;
    }

    // 8 B fetch-add round trip (blocking, result fetched) on a word of the
    // peer's segment, in five chunks alternating with the conduit's reference.
    void fadd_phase() {
        const bool smp = tag_ == "smp", udp = tag_ == "udp";
        const char *ref = smp ? "pingpong" : udp ? "am_short_rtt" : "get_lat";
        const std::size_t ref_size = smp || udp ? 0 : 8;
        if (!have_atomics_ || (!wanted("fadd_rtt", 8) && !wanted(ref, ref_size)))
            return;
        s_.phase([&] {
            void *word = static_cast<char *>(s_.peer_base) + client_fadd_offset;
            bool ok = true;
            std::uint64_t last = 0;
            auto fadd = [&] {
                std::uint64_t old = 0;
                ok = ok && sluice_ad_op_u64(ad_, &old, s_.peer, word, SLUICE_OP_FADD, 1, 0, 0) == SLUICE_OK;
                last = old;
            };
            const long iters = rtt_iterations(0, s_.options.scale);
            constexpr int chunks = 5;
            const auto per = static_cast<std::uint32_t>(std::max<long>(iters / chunks, smp ? 1000 : 200));
            const std::uint32_t lead = per / 10;
            auto reference = [&](std::uint32_t k) -> double {
                if (smp)
                    return s_.pingpong_chunk(k + lead, lead);
                if (udp)
                    return Suite::timed(k, [&] { s_.am_short_round_trip(); });
                return Suite::timed(k, [&] { s_.get8(); });
            };
            ok = sluice_ad_op_u64(ad_, nullptr, s_.peer, word, SLUICE_OP_SET, 0, 0, 0) == SLUICE_OK;
            (void)Suite::timed(lead, fadd); // warm-up of both paths
            (void)reference(lead);
            double f = 0, r = 0;
            for (int c = 0; c < chunks && ok; ++c) {
                r += reference(per);
                f += Suite::timed(per, fadd);
            }
            // Every fetch saw the one before it: the word counts them all.
            const std::uint64_t expect = lead + static_cast<std::uint64_t>(per) * chunks - 1;
            if (!ok || last != expect) {
                std::fprintf(stderr, "sluice-bench: client %s: fetch-add %s (last fetched %" PRIu64 ", expected %" PRIu64
                                     "); row left out\n", tag_.c_str(), ok ? "gave wrong values" : "failed", last, expect);
                return;
            }
            const double n = static_cast<double>(per) * chunks;
            add("fadd_rtt", 8, f / n);
            add(ref, ref_size, r / n);
        });
    }

    // One strided Put of 1024 x 64 B (blocking) into the peer's segment,
    // beside memcpy of the same pieces between local buffers (smp) or a
    // loop of 1024 blocking 64 B Puts (network); three chunks alternating.
    void strided_phase() {
        const bool smp = tag_ == "smp";
        const char *ref = smp ? "memcpy_1024x64" : "put_loop_1024x64";
        missing("VIS", sluice_puts != nullptr);
        if (!sluice_puts || (!wanted("puts_1024x64", client_strided_bytes) && !wanted(ref, client_strided_bytes)))
            return;
        s_.phase([&] {
            const std::size_t span = client_pieces * static_cast<std::size_t>(client_stride);
            char *src = s_.local.data(); // the suite's 4 MiB local buffer
            char *copy_to = src + span;
            char *remote = static_cast<char *>(s_.peer_base);
            const ptrdiff_t strides[1] = {client_stride};
            const size_t count[1] = {client_pieces};
            bool ok = true;
            auto puts = [&] {
                ok = ok && sluice_puts(s_.peer, remote, strides, src, strides, client_piece, count, 1) == SLUICE_OK;
            };
            // The same Put, client_nbi_depth in flight (GASNet's testvisperf
            // loop): each issued NBI, then one sync.
            auto puts_nbi = [&] {
                for (int i = 0; i < client_nbi_depth; ++i)
                    ok = ok && sluice_puts_nbi(s_.peer, remote, strides, src, strides, client_piece, count, 1) ==
                                   SLUICE_OK;
                ok = ok && sluice_nbi_sync() == SLUICE_OK;
            };
            auto memcpy_pieces = [&] {
                for (std::size_t i = 0; i < client_pieces; ++i)
                    std::memcpy(copy_to + i * client_stride, src + i * client_stride, client_piece);
                clobber_memory();
            };
            auto put_loop = [&] {
                for (std::size_t i = 0; i < client_pieces; ++i)
                    check(sluice_put(s_.peer, remote + i * client_stride, src + i * client_stride, client_piece),
                          "sluice_put");
            };
            // Network: a loop of 1024 blocking Puts takes milliseconds.
            const long per_s = smp ? std::max(20L, rma_iterations(client_strided_bytes, s_.options.scale) / 3)
                                   : std::max(4L, 60 / s_.options.scale.divisor);
            const long per_r = smp ? per_s : std::max(2L, 12 / s_.options.scale.divisor);
            (void)Suite::timed(per_s / 4 + 1, puts);
            (void)(smp ? Suite::timed(per_r / 4 + 1, memcpy_pieces) : Suite::timed(1, put_loop));
            const long per_n = std::max(1L, per_s / client_nbi_depth);
            const bool nbi = wanted("puts_nbi_1024x64", client_strided_bytes);
            if (nbi)
                (void)Suite::timed(per_n / 4 + 1, puts_nbi);
            double t = 0, r = 0, n = 0;
            for (int c = 0; c < 3 && ok; ++c) {
                t += Suite::timed(per_s, puts);
                r += smp ? Suite::timed(per_r, memcpy_pieces) : Suite::timed(per_r, put_loop);
                if (nbi)
                    n += Suite::timed(per_n, puts_nbi);
            }
            if (!ok) {
                std::fprintf(stderr, "sluice-bench: client %s: sluice_puts failed: %s; row left out\n", tag_.c_str(),
                             sluice_last_error());
                return;
            }
            add("puts_1024x64", client_strided_bytes, t / (3.0 * static_cast<double>(per_s)));
            add(ref, client_strided_bytes, r / (3.0 * static_cast<double>(per_r)));
            if (nbi)
                add("puts_nbi_1024x64", client_strided_bytes,
                    n / (3.0 * static_cast<double>(per_n) * client_nbi_depth));
        });
    }

    // Medium flood of 4 KiB whose payload is produced per message: into a
    // local buffer then sent (fixed payload: the library copies it), or
    // straight into the prepared buffer (negotiated: no copy).
    void flood_phase() {
        const bool have = sluice_am_prepare_request && sluice_am_commit && sluice_am_cancel;
        missing("negotiated-payload AMs", have);
        if (!have || (!wanted("medium_flood_prepared", client_flood_bytes) &&
                      !wanted("medium_flood_fixed", client_flood_bytes)))
            return;
        s_.phase([&] {
            const std::size_t z = client_flood_bytes;
            char *buffer = s_.local.data();
            bool ok = true;
            std::uint8_t stamp = 0;
            auto fixed = [&] {
                std::memset(buffer, ++stamp, z);
                check(sluice_am_request_medium(s_.peer, h_client_flood, buffer, z, nullptr, 0), "sluice_am_request_medium");
            };
            auto prepared = [&] {
                void *place = nullptr;
                std::size_t size = 0;
                ok = ok && sluice_am_prepare_request(SLUICE_AM_MEDIUM, s_.peer, z, z, 0, 0, &place, &size) == SLUICE_OK;
                if (!ok)
                    return;
                std::memset(place, ++stamp, z);
                ok = sluice_am_commit(h_client_flood, z, nullptr, nullptr, 0) == SLUICE_OK;
            };
            std::uint64_t sent = 0;
            auto batch = [&](long k, auto issue) {
                const double t0 = now_ns();
                for (long i = 0; i < k && ok; ++i)
                    issue();
                sent += static_cast<std::uint64_t>(k);
                do {
                    client_state.acked.store(false, std::memory_order_relaxed);
                    check(sluice_am_request_short(s_.peer, h_client_end, nullptr, 0), "sluice_am_request_short");
                    while (!client_state.acked.load(std::memory_order_relaxed))
                        check(sluice_poll(), "sluice_poll");
                } while (ok && client_state.acknowledged.load(std::memory_order_relaxed) < sent);
                return now_ns() - t0;
            };
            const long per = std::max(100L, flood_iterations(z, s_.options.scale) / 3);
            (void)batch(per / 4 + 1, fixed);
            (void)batch(per / 4 + 1, prepared);
            double f = 0, p = 0;
            for (int c = 0; c < 3 && ok; ++c) {
                f += batch(per, fixed);
                p += batch(per, prepared);
            }
            if (!ok) {
                std::fprintf(stderr, "sluice-bench: client smp: negotiated Medium failed: %s; row left out\n",
                             sluice_last_error());
                return;
            }
            add("medium_flood_fixed", z, f / (3.0 * static_cast<double>(per)));
            add("medium_flood_prepared", z, p / (3.0 * static_cast<double>(per)));
        });
    }

    // Every rank at once: `k` fetch-adds each on one word of rank 0, and
    // `k` CPU fetch_adds each on a word all of them map, in three chunks
    // alternating; ns per operation over all ranks, from rank 0's clock
    // between two barriers.
    void hot_spot() {
        const auto n = static_cast<std::size_t>(sluice_size());
        if (!have_atomics_ || (!wanted("hot_fadd", n) && !wanted("hot_cpu", n)))
            return;
        ClientSharedPage page(s_.me);
        void *word = segment_of(0, client_hot_offset);
        const Scale &sc = s_.options.scale;
        // 200000 per rank and chunk: at 8 ranks on 2 cores a chunk lasts
        // several scheduler slices, so the barriers around it are a small part.
        const long k = std::max(200L, 200000L * sc.multiplier / sc.divisor);
        bool ok = true;
        auto fadd = [&] {
            std::uint64_t old = 0;
            ok = ok && sluice_ad_op_u64(ad_, &old, 0, word, SLUICE_OP_FADD, 1, 0, 0) == SLUICE_OK;
        };
        auto cpu = [&] { page.word().fetch_add(1, std::memory_order_relaxed); };
        auto all = [&](auto op) {
            check(sluice_barrier(), "sluice_barrier");
            const double t0 = now_ns();
            for (long i = 0; i < k; ++i)
                op();
            check(sluice_barrier(), "sluice_barrier");
            return now_ns() - t0;
        };
        if (s_.me == 0)
            ok = sluice_ad_op_u64(ad_, nullptr, 0, word, SLUICE_OP_SET, 0, 0, 0) == SLUICE_OK;
        (void)all(cpu);
        (void)all(fadd);
        double f = 0, c = 0;
        for (int r = 0; r < 3; ++r) {
            c += all(cpu);
            f += all(fadd);
        }
        std::uint64_t total = 0;
        if (s_.me == 0)
            ok = ok && sluice_ad_op_u64(ad_, &total, 0, word, SLUICE_OP_GET, 0, 0, 0) == SLUICE_OK;
        const std::uint64_t expect = 4 * static_cast<std::uint64_t>(k) * n;
        if (s_.me == 0 && (!ok || total != expect)) {
            std::fprintf(stderr, "sluice-bench: client smp: hot spot at %zu ranks: %s (word %" PRIu64 ", expected %" PRIu64
                                 "); row left out\n", n, ok ? "lost updates" : "an operation failed", total, expect);
            return;
        }
        const double ops = 3.0 * static_cast<double>(k) * static_cast<double>(n);
        add("hot_fadd", n, f / ops);
        add("hot_cpu", n, c / ops);
    }

    // 8 B (one u64, sum) reduce-to-all over the job team, ns per call on
    // rank 0 after a barrier; the result is checked once at the end.
    void reduce_all() {
        const auto n = static_cast<std::size_t>(sluice_size());
        missing("collectives", sluice_coll_reduce_all != nullptr);
        if (!sluice_coll_reduce_all || !sluice_team_job || !wanted("reduce_all_8", n) || counts_.reduce <= 0)
            return;
        const sluice_team_t team = sluice_team_job();
        const std::uint64_t in = s_.me + 1;
        std::uint64_t out = 0;
        bool ok = true;
        auto one = [&] {
            ok = ok && sluice_coll_reduce_all(team, &out, &in, SLUICE_DT_U64, 0, 1, SLUICE_REDUCE_SUM, nullptr,
                                              nullptr) == SLUICE_OK;
        };
        for (long i = 0; i < warmup_of(counts_.reduce); ++i)
            one();
        check(sluice_barrier(), "sluice_barrier");
        const double t0 = now_ns();
        for (long i = 0; i < counts_.reduce; ++i)
            one();
        const double t = now_ns() - t0;
        check(sluice_barrier(), "sluice_barrier");
        if (!ok || out != n * (n + 1) / 2) {
            std::fprintf(stderr, "sluice-bench worker rank %u: client smp: reduce-to-all at %zu ranks %s; row left out\n",
                         s_.me, n, ok ? "gave a wrong sum" : "failed");
            return;
        }
        add("reduce_all_8", n, t / static_cast<double>(counts_.reduce));
    }

    // 1 MiB broadcast from team rank 0, ns per call between two barriers.
    void broadcast() {
        const auto n = static_cast<std::size_t>(sluice_size());
        missing("broadcast", sluice_coll_broadcast != nullptr);
        if (!sluice_coll_broadcast || !sluice_team_job || !wanted("bcast_1M", n) || counts_.bcast <= 0)
            return;
        const sluice_team_t team = sluice_team_job();
        PageBuffer src(client_bcast_bytes, 7), dst(client_bcast_bytes, 0);
        bool ok = true;
        auto one = [&] {
            ok = ok && sluice_coll_broadcast(team, 0, dst.data(), src.data(), client_bcast_bytes) == SLUICE_OK;
        };
        for (long i = 0; i < warmup_of(counts_.bcast); ++i)
            one();
        check(sluice_barrier(), "sluice_barrier");
        const double t0 = now_ns();
        for (long i = 0; i < counts_.bcast; ++i)
            one();
        check(sluice_barrier(), "sluice_barrier");
        const double t = now_ns() - t0;
        if (!ok || dst.data()[0] != 7 || dst.data()[client_bcast_bytes - 1] != 7) {
            std::fprintf(stderr, "sluice-bench worker rank %u: client smp: broadcast at %zu ranks %s; row left out\n",
                         s_.me, n, ok ? "delivered wrong bytes" : "failed");
            return;
        }
        add("bcast_1M", n, t / static_cast<double>(counts_.bcast));
    }
};

} // namespace sluice::perf
