// tests/mp/mp_threads.cpp - 4 threads per rank issue AMs and RMA at once;
// each thread checks its own data.  A fifth registers the two handlers
// again, as they are, all the while: registration races no delivery.
#include "tests/mp/mp_cases.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

namespace sluice_test::mp {
namespace {

constexpr unsigned threads_per_rank = 4;
constexpr std::size_t region = 128 * 1024;  // per (source rank, thread) in every segment
enum : sluice_handler_t { h_thread_request = 80, h_thread_reply };

std::atomic<std::uint64_t> replies[threads_per_rank];
std::atomic<std::uint64_t> requests_handled{0};
unsigned am_iterations = 0;

std::uint32_t am_seed(sluice_rank_t src, unsigned t, unsigned i) { return (src << 20) ^ (t << 16) ^ i; }
// Up to 2000 bytes, within the largest Medium (portals: 800).
std::size_t am_length(unsigned t, unsigned i) {
    return (i * 37 + t * 11) % std::min<std::size_t>(2000, sluice_am_max_medium()) + 1;
}

void on_request(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(nargs == 3 && args[0] == src, "thread request: nargs %u", nargs);
    unsigned t = args[1], i = args[2];
    TCHECK(t < threads_per_rank && i < am_iterations, "thread %u iteration %u", t, i);
    TCHECK(length == am_length(t, i), "thread %u message %u from %u: length %zu", t, i, src, length);
    TCHECK_PATTERN(payload, length, am_seed(src, t, i), "thread %u message %u from %u", t, i, src);
    std::uint32_t reply[3] = {me, t, i};
    TOK(sluice_am_reply_short(token, h_thread_reply, reply, 3));
    requests_handled.fetch_add(1);
}

void on_reply(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(nargs == 3 && args[0] == src, "thread reply: nargs %u", nargs);
    unsigned t = args[1];
    TCHECK(t < threads_per_rank && args[2] < am_iterations, "reply for thread %u iteration %u", t, args[2]);
    replies[t].fetch_add(1);
}

void rma_op(bool put, unsigned mode, sluice_rank_t rank, std::uint8_t *remote, std::uint8_t *local, std::size_t len) {
    switch (mode % 3) {
    case 0:
        if (put) TOK(sluice_put(rank, remote, local, len));
        else TOK(sluice_get(local, rank, remote, len));
        break;
    case 1: {
        sluice_event_t ev = SLUICE_EVENT_DONE;
        if (put) TOK(sluice_put_nb(rank, remote, local, len, &ev));
        else TOK(sluice_get_nb(local, rank, remote, len, &ev));
        TOK(sluice_event_wait(ev));
        break;
    }
    case 2:
        // Two halves, then this thread's sync: it must not wait for (or
        // complete) other threads' operations only.
        if (put) {
            TOK(sluice_put_nbi(rank, remote, local, len / 2));
            TOK(sluice_put_nbi(rank, remote + len / 2, local + len / 2, len - len / 2));
        } else {
            TOK(sluice_get_nbi(local, rank, remote, len / 2));
            TOK(sluice_get_nbi(local + len / 2, rank, remote + len / 2, len - len / 2));
        }
        TOK(sluice_nbi_sync());
        break;
    }
}

void worker(unsigned t, unsigned rma_iterations) {
    std::vector<std::uint8_t> out(region), in(region);
    std::uint8_t payload[2048];
    unsigned rma_done = 0;
    for (unsigned i = 0; i < std::max(am_iterations, rma_iterations); ++i) {
        if (i < am_iterations) {
            sluice_rank_t d = (me + 1 + i) % nranks;
            std::size_t len = am_length(t, i);
            pattern_fill(payload, len, am_seed(me, t, i));
            std::uint32_t args[3] = {me, t, i};
            TOK(sluice_am_request_medium(d, h_thread_request, payload, len, args, 3));
        }
        if (i < rma_iterations) {
            sluice_rank_t d = (me + 1 + i / 2) % nranks;
            std::uint8_t *remote = segments[d].base + (me * threads_per_rank + t) * region;
            std::size_t off = i % 8;
            std::size_t len = 1 + (i * 7919u + t * 131u) % (region - 16);
            std::uint32_t seed = am_seed(me, t, i) ^ 0x00ABCDEFu;
            pattern_fill(out.data(), len, seed);
            rma_op(true, i, d, remote + off, out.data(), len);
            std::memset(in.data(), 0x5C, len + 1);
            rma_op(false, i + 1, d, remote + off, in.data(), len);
            TCHECK_PATTERN(in.data(), len, seed, "thread %u RMA %u (%zu B at offset %zu) with rank %u", t, i, len, off,
                           d);
            TCHECK(in[len] == 0x5C, "thread %u RMA %u: Get wrote past its end", t, i);
            ++rma_done;
        }
    }
    TCHECK(rma_done == rma_iterations, "thread %u did %u RMAs", t, rma_done);
    WAIT_UNTIL(replies[t].load() == am_iterations);
}

} // namespace

// threads <AMs per thread> <RMAs per thread>
int case_threads(int argc, char **argv) {
    am_iterations = static_cast<unsigned>(arg_number(argc, argv, 2, 400));
    unsigned rma_iterations = static_cast<unsigned>(arg_number(argc, argv, 3, 150));
    attach(static_cast<std::size_t>(nranks) * threads_per_rank * region + 4096);
    TOK(sluice_handler_register(h_thread_request, on_request, SLUICE_AM_MEDIUM, 3));
    TOK(sluice_handler_register(h_thread_reply, on_reply, SLUICE_AM_SHORT, 3));
    TOK(sluice_barrier());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads_per_rank; ++t) pool.emplace_back(worker, t, rma_iterations);
    std::atomic<bool> workers_done{false};
    std::thread registrar([&] {
        while (!workers_done.load()) {
            TOK(sluice_handler_register(h_thread_request, on_request, SLUICE_AM_MEDIUM, 3));
            TOK(sluice_handler_register(h_thread_reply, on_reply, SLUICE_AM_SHORT, 3));
            std::this_thread::yield();
        }
    });
    for (auto &th : pool) th.join();
    workers_done.store(true);
    registrar.join();
    // Every rank gets threads x iterations requests in total.
    std::uint64_t expected = static_cast<std::uint64_t>(threads_per_rank) * am_iterations;
    WAIT_UNTIL(requests_handled.load() == expected);
    TOK(sluice_barrier());
    for (unsigned t = 0; t < threads_per_rank; ++t)
        TCHECK(replies[t].load() == am_iterations, "thread %u got %llu replies", t,
               static_cast<unsigned long long>(replies[t].load()));
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
