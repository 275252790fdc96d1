// tests/perf/copy-pattern.cpp - the memory system's share of a same-host AM
// Medium round trip, with no runtime at all.
//
// Two processes pinned to CPUs 0 and 1 share one anonymous mapping.  A
// round trip: A copies SIZE bytes from a private buffer into the next slot
// of its region and raises a flag; B copies that slot into the same slot of
// its own region and raises its flag; A waits for it.  That is what an AM
// Medium round trip does with its payload (a copy into shared memory each
// way, the handler reading the request in place), so the figure bounds a
// runtime that uses the same layout.  The slots cycle through REGION bytes
// STRIDE apart; the table shows how much the placement alone moves the
// time.
//
//   tests/perf/copy-pattern [SIZE (16384)] [ITERATIONS (20000)]
//
// Prints a table and a CSV (region,stride,ns): each region and stride is the
// median of 3 runs.  A benchmark, not a test.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)sched_setaffinity(0, sizeof set, &set);
}

// One run: ns per round trip, or a negative value if the child failed.
double run(std::size_t size, std::size_t region, std::size_t stride, long iterations) {
    const std::size_t slots = std::max<std::size_t>(region / stride, 1);
    const std::size_t flags = 2 * 4096;
    const std::size_t bytes = flags + 2 * slots * stride;
    char *shared = static_cast<char *>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    if (shared == MAP_FAILED) {
        std::perror("copy-pattern: mmap");
        std::exit(1);
    }
    auto *a_flag = new (shared) std::atomic<long>(0);
    auto *b_flag = new (shared + 4096) std::atomic<long>(0);
    char *a_region = shared + flags;
    char *b_region = a_region + slots * stride;
    std::memset(a_region, 0, 2 * slots * stride);
    const pid_t child = fork();
    if (child < 0) {
        std::perror("copy-pattern: fork");
        std::exit(1);
    }
    if (child == 0) {
        pin(1);
        for (long i = 1; i <= iterations; ++i) {
            while (a_flag->load(std::memory_order_acquire) < i) {
            }
            const std::size_t at = static_cast<std::size_t>(i - 1) % slots * stride;
            std::memcpy(b_region + at, a_region + at, size);
            b_flag->store(i, std::memory_order_release);
        }
        _exit(0);
    }
    pin(0);
    std::vector<char> source(size, 1);
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 1; i <= iterations; ++i) {
        const std::size_t at = static_cast<std::size_t>(i - 1) % slots * stride;
        std::memcpy(a_region + at, source.data(), size);
        a_flag->store(i, std::memory_order_release);
        while (b_flag->load(std::memory_order_acquire) < i) {
        }
    }
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iterations;
    int status = 0;
    (void)waitpid(child, &status, 0);
    munmap(shared, bytes);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ns : -1;
}

} // namespace

int main(int argc, char **argv) {
    const std::size_t size = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 16384;
    const long iterations = argc > 2 ? std::strtol(argv[2], nullptr, 0) : 20000;
    if (size == 0 || size > (std::size_t{1} << 24) || iterations <= 0) {
        std::fprintf(stderr, "usage: copy-pattern [SIZE (1..16 MiB, default 16384)] [ITERATIONS (> 0)]\n");
        return 2;
    }
    // Strides: the payload alone rounded to a line, the payload plus a line
    // (a header beside it), and the payload rounded up to whole 4 KiB pages
    // with one page more (a block allocator with a header, as GASNet-EX's).
    const std::size_t line = (size + 63) & ~std::size_t{63};
    const std::size_t strides[] = {line, line + 64, ((size + 4095) & ~std::size_t{4095}) + 4096};
    const std::size_t regions[] = {std::size_t{64} << 10, std::size_t{256} << 10, std::size_t{1} << 20,
                                   std::size_t{2} << 20, std::size_t{4} << 20};
    std::printf("%zu-byte copy each way, round trip in ns (median of 3 runs of %ld)\n", size, iterations);
    std::printf("%10s", "region");
    for (std::size_t s : strides) std::printf("  stride %-8zu", s);
    std::printf("\n");
    std::vector<double> table;
    for (std::size_t r : regions) {
        std::printf("%8zuK", r >> 10);
        for (std::size_t s : strides) {
            double t[3];
            for (double &x : t)
                if ((x = run(size, std::max(r, s), s, iterations)) < 0) {
                    std::fprintf(stderr, "copy-pattern: the second process failed\n");
                    return 1;
                }
            std::sort(t, t + 3);
            table.push_back(t[1]);
            std::printf("  %15.0f", t[1]);
            std::fflush(stdout);
        }
        std::printf("\n");
    }
    std::printf("\nregion,stride,ns\n");
    std::size_t k = 0;
    for (std::size_t r : regions)
        for (std::size_t s : strides) std::printf("%zu,%zu,%.0f\n", r, s, table[k++]);
    return 0;
}
