// tests/perf/references.cpp - what the driver measures itself: the bare
// cache-line ping-pong and memcpy; reading the jobs' result lines; the
// shared-memory census.
#include "tests/perf/bench_common.hpp"
#include "tests/perf/driver.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sched.h>
#include <signal.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::perf {
namespace {
// Called through a pointer so the compiler emits the library call a runtime
// would make, at every size.
void *(*volatile copy_function)(void *, const void *, std::size_t) = std::memcpy;
} // namespace

bool read_results(const std::string &path, Samples &samples) {
    std::ifstream f(path);
    if (!f)
        return false;
    std::string metric;
    std::size_t size = 0;
    double value = 0;
    bool any = false;
    while (f >> metric >> size >> value) {
        samples[{metric, size}].push_back(value);
        any = true;
    }
    return any;
}

// The udp conduit's counters (SLUICE_UDP_STATS=1: one line per rank at
// finalize, in the job's log), summed over the ranks: {prefix}_sent,
// _retransmitted, _refused (by the kernel), _duplicates (dropped).
void read_udp_stats(const std::string &log, const std::string &prefix, Samples &samples) {
    std::ifstream f(log);
    std::string line;
    double sums[4] = {};
    bool any = false;
    while (std::getline(f, line)) {
        const auto at = line.find("] udp: sent ");
        if (at == std::string::npos)
            continue;
        unsigned long long sent = 0, retransmitted = 0, acks = 0, refused = 0, duplicates = 0;
        if (std::sscanf(line.c_str() + at,
                        "] udp: sent %llu (retransmitted %llu, acks alone %llu, refused by the "
                        "kernel %llu)",
                        &sent, &retransmitted, &acks, &refused) != 4)
            continue;
        const auto dup = line.find("duplicate ");
        if (dup != std::string::npos)
            duplicates = std::strtoull(line.c_str() + dup + 10, nullptr, 10);
        sums[0] += static_cast<double>(sent);
        sums[1] += static_cast<double>(retransmitted);
        sums[2] += static_cast<double>(refused);
        sums[3] += static_cast<double>(duplicates);
        any = true;
    }
    if (!any)
        return;
    const char *names[4] = {"_sent", "_retransmitted", "_refused", "_duplicates"};
    for (int i = 0; i < 4; ++i)
        samples[{prefix + names[i], 0}].push_back(sums[i]);
}

void read_main_pool_stats(const std::string &log, const std::string &prefix, Samples &samples) {
    std::ifstream f(log);
    std::string line;
    double peak = 0, budget = 0, moves = 0;
    bool any = false;
    while (std::getline(f, line)) {
        const auto at = line.find("] firehose main pool ");
        const auto held = line.find("(peak ");
        if (at == std::string::npos || held == std::string::npos)
            continue;
        unsigned long long p = 0, b = 0, m = 0;
        if (std::sscanf(line.c_str() + held, "(peak %llu, budget %llu", &p, &b) != 2)
            continue;
        const auto colon = line.find(": ", at);
        if (colon != std::string::npos)
            m = std::strtoull(line.c_str() + colon + 2, nullptr, 10);
        peak = std::max(peak, static_cast<double>(p));
        budget = static_cast<double>(b);
        moves += static_cast<double>(m);
        any = true;
    }
    if (!any)
        return;
    samples[{prefix + "_peak_pinned", 0}].push_back(peak);
    samples[{prefix + "_budget", 0}].push_back(budget);
    samples[{prefix + "_moves", 0}].push_back(moves);
}

double median(std::vector<double> v) {
    if (v.empty())
        return nan_value;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {
// The newest value of `key` if `now` has more of them than `before`.
double added(const Samples &now, const Samples &before, const Key &key) {
    const auto n = now.find(key), b = before.find(key);
    const std::size_t old = b == before.end() ? 0 : b->second.size();
    return n == now.end() || n->second.size() <= old ? nan_value : n->second.back();
}
} // namespace

std::string job_state(const Samples &now, const Samples &before, double &first, double &last) {
    first = added(now, before, {"state_pingpong_first", 0});
    last = added(now, before, {"state_pingpong_last", 0});
    if (std::isnan(first) || std::isnan(last))
        return "";
    if (first >= busy_from_ns || last >= busy_from_ns)
        return "busy";
    const bool near_first = first < near_below_ns, near_last = last < near_below_ns;
    return near_first != near_last ? "mixed" : near_first ? "near" : "far";
}

void add_new(const Samples &now, const Samples &before, Samples &into) {
    for (const auto &[key, values] : now) {
        const auto b = before.find(key);
        const std::size_t old = b == before.end() ? 0 : b->second.size();
        if (values.size() > old)
            into[key].insert(into[key].end(), values.begin() + static_cast<std::ptrdiff_t>(old), values.end());
    }
}

std::vector<int> usable_cpus(std::size_t n) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    sched_getaffinity(0, sizeof allowed, &allowed);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < n; ++c)
        if (CPU_ISSET(c, &allowed))
            cpus.push_back(c);
    return cpus;
}
void pin_to(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
}

void reap_pair(pid_t responder, pid_t measurer, double timeout) {
    const double end = now_ns() + timeout * 1e9;
    for (pid_t child : {responder, measurer}) {
        if (child <= 0)
            continue;
        while (waitpid(child, nullptr, WNOHANG) == 0) {
            if (now_ns() > end) {  // both spin: bound the wait, then reap
                kill(responder, SIGKILL);
                kill(measurer, SIGKILL);
                waitpid(child, nullptr, 0);
                break;
            }
            usleep(1000);
        }
    }
}

// Two processes on two CPUs, two flags in separate cache lines of a shared
// mapping, each spinning on its line.  Returns ns per round trip.
double cacheline_pingpong(long iters, double timeout) {
    const std::size_t bytes = 4096;
    void *page = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                      -1, 0);
    if (page == MAP_FAILED)
        return nan_value;
    auto *ping = new (static_cast<char *>(page)) std::atomic<std::uint64_t>(0);
    auto *pong = new (static_cast<char *>(page) + 256) std::atomic<std::uint64_t>(0);
    auto *result = reinterpret_cast<double *>(static_cast<char *>(page) + 512);
    *result = nan_value;

    const std::vector<int> cpus = usable_cpus(2);
    auto pin = [&](std::size_t which) {
        if (cpus.size() == 2)
            pin_to(cpus[which]);
    };
    const long warmup = warmup_of(iters);
    const std::uint64_t total = static_cast<std::uint64_t>(warmup + iters);

    pid_t responder = fork();
    if (responder == 0) {
        pin(1);
        for (std::uint64_t i = 1; i <= total; ++i) {
            while (ping->load(std::memory_order_acquire) != i) {
            }
            pong->store(i, std::memory_order_release);
        }
        _exit(0);
    }
    pid_t measurer = fork();
    if (measurer == 0) {
        pin(0);
        std::uint64_t i = 1;
        for (; i <= static_cast<std::uint64_t>(warmup); ++i) {
            ping->store(i, std::memory_order_release);
            while (pong->load(std::memory_order_acquire) != i) {
            }
        }
        const double t0 = now_ns();
        for (; i <= total; ++i) {
            ping->store(i, std::memory_order_release);
            while (pong->load(std::memory_order_acquire) != i) {
            }
        }
        *result = (now_ns() - t0) / static_cast<double>(iters);
        _exit(0);
    }
    reap_pair(responder, measurer, timeout);
    const double ns = *result;
    munmap(page, bytes);
    return ns;
}

// One x86 PAUSE (what a spin-wait step costs on this CPU), ns.
double pause_cost() {
#if defined(__x86_64__) || defined(__i386__)
    const long n = 1000000;
    const double t0 = now_ns();
    for (long i = 0; i < n; ++i)
        __builtin_ia32_pause();
    return (now_ns() - t0) / static_cast<double>(n);
#else
    return nan_value;
#endif
}

// Single-thread memcpy at each size (ns per copy), between buffers like the
// Sluice Put's: from a private page-aligned buffer into a shared mapping.
void measure_memcpy(const CommonOptions &o, Samples &samples) {
    PageBuffer heap(largest_rma, 1);
    if (!heap.data())
        return;
    void *shared = mmap(nullptr, largest_rma, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return;
    std::memset(shared, 2, largest_rma);
    void *dst = shared;
    const void *src = heap.data();
    // Plus 1 MiB, the reference of the two-part Long flood (report.cpp).
    std::vector<std::size_t> sizes = rma_sizes(o.all_sizes);
    if (std::find(sizes.begin(), sizes.end(), mib) == sizes.end())
        sizes.push_back(mib);
    for (std::size_t s : sizes) {
        const long iters = rma_iterations(s, o.scale);
        for (long i = 0; i < warmup_of(iters); ++i) {
            copy_function(dst, src, s);
            clobber_memory();
        }
        const double t0 = now_ns();
        for (long i = 0; i < iters; ++i) {
            copy_function(dst, src, s);
            clobber_memory();
        }
        samples[{"memcpy", s}].push_back((now_ns() - t0) / static_cast<double>(iters));
    }
    munmap(shared, largest_rma);
}

// Reads the "map"/"seg" lines of every rank (sluice-bench.cpp,
// record_shared_memory) and counts each shared-memory object once.
ShmFigure aggregate_shm(const std::string &dir, int ranks) {
    ShmFigure f;
    using Object = std::pair<std::string, unsigned long long>; // device, inode
    std::map<Object, double> object_bytes;                     // largest view
    std::map<Object, double> segment_bytes_in;
    std::vector<std::map<Object, double>> mapped(ranks);
    for (int r = 0; r < ranks; ++r) {
        std::ifstream in(dir + "/shm-" + std::to_string(r) + ".txt");
        if (!in)
            return f;
        std::string kind, dev;
        unsigned long long inode;
        double bytes;
        std::string line;
        while (std::getline(in, line)) {
            std::istringstream l(line);
            if (!(l >> kind >> dev >> inode >> bytes))
                continue;
            if (kind == "map")
                mapped[r][{dev, inode}] += bytes;
            else if (kind == "seg")
                segment_bytes_in[{dev, inode}] += bytes;
        }
        for (auto &[obj, bytes_mapped] : mapped[r])
            object_bytes[obj] = std::max(object_bytes[obj], bytes_mapped);
    }
    double total = 0;
    for (auto &[obj, bytes] : object_bytes)
        total += std::max(0.0, bytes - segment_bytes_in[obj]);
    double mapped_total = 0;
    for (auto &m : mapped)
        for (auto &[obj, bytes] : m)
            mapped_total += std::max(0.0, bytes - segment_bytes_in[obj]);
    f.ok = true;
    f.objects = object_bytes.size();
    f.per_rank = total / ranks;
    f.mapped_per_rank = mapped_total / ranks;
    return f;
}

} // namespace sluice::perf
