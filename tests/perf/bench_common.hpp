// tests/perf/bench_common.hpp - what the driver, the Sluice worker and the
// MPI reference share: the clock, the message sizes, the iteration counts and
// the result lines.  Both sides of a comparison take their sizes and counts
// from here, so a ratio compares the same loop on the same data.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <time.h>
#include <vector>

namespace sluice::perf {

inline double now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

inline constexpr std::size_t kib = 1024;
inline constexpr std::size_t mib = 1024 * 1024;
inline constexpr std::size_t largest_rma = 4 * mib;
// Segment each rank attaches: room for the largest RMA and AM Long target.
inline constexpr std::size_t segment_bytes = largest_rma + 64 * kib;
// RMA bandwidth loops issue this many operations between two syncs.
inline constexpr int rma_window = 64;

// A page-aligned buffer (its own mapping), filled with one byte value: the
// local side of every RMA and copy the benchmark times, Sluice's and the
// references', as the bare libfabric reference's registered regions are.
// A heap buffer of megabytes starts 16 bytes into a page, and a copy
// between buffers at different offsets within a cache line runs slower.
class PageBuffer {
public:
    PageBuffer() = default;
    PageBuffer(std::size_t n, char fill) { assign(n, fill); }
    PageBuffer(const PageBuffer &) = delete;
    PageBuffer &operator=(const PageBuffer &) = delete;
    ~PageBuffer() { release(); }
    // False when the mapping fails (data() is then null).
    bool assign(std::size_t n, char fill) {
        release();
        void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return false;
        base_ = static_cast<char *>(p);
        size_ = n;
        std::memset(base_, fill, n);
        return true;
    }
    char *data() const { return base_; }
    std::size_t size() const { return size_; }

private:
    void release() {
        if (base_)
            munmap(base_, size_);
        base_ = nullptr;
        size_ = 0;
    }
    char *base_ = nullptr;
    std::size_t size_ = 0;
};

// Put/Get/memcpy sizes: powers of 4 from 8 B, plus 64 KiB and 4 MiB, the
// sizes of the bandwidth targets (tests/perf/README.md) (--all-sizes: every power of 2 from
// 8 B to 4 MiB).
inline constexpr std::size_t rma_target_size = 64 * kib;
inline std::vector<std::size_t> rma_sizes(bool all_sizes) {
    std::vector<std::size_t> v;
    for (std::size_t s = 8; s <= largest_rma; s *= all_sizes ? 2 : 4)
        v.push_back(s);
    for (std::size_t s : {rma_target_size, largest_rma})
        if (std::find(v.begin(), v.end(), s) == v.end())
            v.push_back(s);
    std::sort(v.begin(), v.end());
    return v;
}

// AM payload sizes (Medium keeps those at most the Medium maximum; the MPI
// Send/Recv reference measures all of them).
inline std::vector<std::size_t> am_sizes() {
    return {8, 1 * kib, 16 * kib, 64 * kib, 1 * mib};
}

// How the amount of work shrinks with --quick.
struct Scale {
    long divisor = 1;
    long multiplier = 1; // --longer K: K times the iterations (for profiling)
};

// Iterations of a loop whose cost grows with `size` past `knee` bytes, so each
// timed loop lasts about the same time at every size.
inline long iterations(long base, std::size_t size, std::size_t knee, long minimum,
                       const Scale &scale) {
    long n = base / static_cast<long>(1 + size / knee) * scale.multiplier / scale.divisor;
    return std::max(n, minimum);
}
inline long rtt_iterations(std::size_t size, const Scale &s) {
    return iterations(20000, size, 4096, 8, s);
}
inline long flood_iterations(std::size_t size, const Scale &s) {
    return iterations(200000, size, 1024, 16, s);
}
inline long rma_iterations(std::size_t size, const Scale &s) {
    return iterations(1000000, size, 256, 8, s);
}
inline long barrier_iterations(const Scale &s) { return iterations(20000, 0, 1, 50, s); }
inline long warmup_of(long iters) { return iters / 10 + 2; }

// One measured figure: "metric size value" (value in ns per operation, or in
// the unit the metric's name says).
class ResultFile {
public:
    explicit ResultFile(const std::string &path)
        : file_(path.empty() ? nullptr : std::fopen(path.c_str(), "w")) {}
    ~ResultFile() {
        if (file_)
            std::fclose(file_);
    }
    ResultFile(const ResultFile &) = delete;
    ResultFile &operator=(const ResultFile &) = delete;
    bool ok() const { return file_ != nullptr; }
    // A figure that could not be measured (NaN) is left out: the reader
    // stops at a value it cannot parse.
    void add(std::string_view metric, std::size_t size, double value) {
        if (!file_ || std::isnan(value))
            return;
        std::fprintf(file_, "%.*s %zu %.6g\n", static_cast<int>(metric.size()),
                     metric.data(), size, value);
        std::fflush(file_);
    }

private:
    std::FILE *file_;
};

// Options every measuring program understands.
struct CommonOptions {
    std::string out;
    bool quick = false;
    bool all_sizes = false;
    std::string only;          // measure only metrics whose name contains this
    std::size_t only_size = 0; // --size N: sized figures at N bytes only
    long count = 0;            // --count N: messages of the exactly-once worker
    bool any_transport = false; // --any-transport: udp kinds accept any conduit
    Scale scale;

    bool wanted(std::string_view metric, std::size_t size = 0) const {
        return (only.empty() || metric.find(only) != std::string_view::npos) &&
               (only_size == 0 || size == 0 || size == only_size);
    }
};

inline CommonOptions parse_common(int argc, char **argv) {
    CommonOptions o;
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--out" && i + 1 < argc)
            o.out = argv[++i];
        else if (a == "--quick")
            o.quick = true;
        else if (a == "--all-sizes")
            o.all_sizes = true;
        else if (a == "--only" && i + 1 < argc)
            o.only = argv[++i];
        else if (a == "--size" && i + 1 < argc)
            o.only_size = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--count" && i + 1 < argc)
            o.count = std::atol(argv[++i]);
        else if (a == "--any-transport")
            o.any_transport = true;
        else if (a == "--longer" && i + 1 < argc)
            o.scale.multiplier = std::max(1L, std::atol(argv[++i]));
    }
    o.scale.divisor = o.quick ? 20 : 1;
    return o;
}

// Keeps the compiler from dropping or merging the copies a loop times.
inline void clobber_memory() { asm volatile("" ::: "memory"); }

} // namespace sluice::perf
