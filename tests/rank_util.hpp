// tests/rank_util.hpp - helpers for the plain Sluice programs that the
// drivers run as ranks (tests/mp, tests/exit).
//
// A failed check prints one line
//     FAIL rank R case C (file:line): check `cond` failed: details
// on stderr and ends the job with code 1 (sluice_exit(1) once initialized,
// _exit(1) before).  Waits poll Sluice until a condition holds and fail with
// a "timed out waiting for ..." line after SLUICETEST_RANK_TIMEOUT seconds.
#pragma once

#include <sluice.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sched.h>
#include <string>
#include <unistd.h>

namespace sluice_test {

inline const char *g_case = "?";

inline double now_seconds() {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The host's monotonic clock in nanoseconds: one clock for every process
// of the host, so ranks on it can compare their times.
inline std::int64_t monotonic_ns() {
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline double rank_timeout() {
    const char *t = std::getenv("SLUICETEST_RANK_TIMEOUT");
    double v = t ? std::atof(t) : 0;
    return v > 0 ? v : 100.0;
}

inline bool reduced_subset() {
    const char *s = std::getenv("SLUICETEST_SUBSET");
    return s && *s && std::strcmp(s, "full") != 0;
}

inline int my_rank_or_minus() { return sluice_initialized() ? static_cast<int>(sluice_rank()) : -1; }

inline void write_stderr(const char *s, std::size_t n) {
    while (n) {
        ssize_t w = ::write(2, s, n);
        if (w <= 0) return;
        s += w;
        n -= static_cast<std::size_t>(w);
    }
}

[[noreturn]] inline void fail_at(const char *file, int line, const char *cond, const char *format, ...) {
    char buf[2048];
    int n = std::snprintf(buf, sizeof buf, "FAIL rank %d case %s (%s:%d): check `%s` failed: ",
                          my_rank_or_minus(), g_case, file, line, cond);
    if (n < 0) n = 0;
    va_list ap;
    va_start(ap, format);
    int m = std::vsnprintf(buf + n, sizeof buf - static_cast<std::size_t>(n) - 2, format, ap);
    va_end(ap);
    if (m > 0) n += m;
    if (n > static_cast<int>(sizeof buf) - 2) n = static_cast<int>(sizeof buf) - 2;
    buf[n++] = '\n';
    write_stderr(buf, static_cast<std::size_t>(n));
    if (sluice_initialized()) sluice_exit(1);
    ::_exit(1);
}

#define TCHECK(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) ::sluice_test::fail_at(__FILE__, __LINE__, #cond, __VA_ARGS__);     \
    } while (0)

// A Sluice call that must succeed.
#define TOK(call)                                                                        \
    do {                                                                                 \
        sluice_status_t tok_status_ = (call);                                            \
        if (tok_status_ != SLUICE_OK)                                                    \
            ::sluice_test::fail_at(__FILE__, __LINE__, #call " == SLUICE_OK",            \
                                   "returned %d (%s); last error: %s", tok_status_,      \
                                   sluice_status_string(tok_status_), sluice_last_error()); \
    } while (0)

// A Sluice call that must fail with `expected` (TERR) or with one of two
// codes where the API leaves the choice open (TERR2), with a message naming
// the rank and the fix in sluice_last_error().
#define TERR(expected, call)                                                             \
    do {                                                                                 \
        sluice_status_t terr_status_ = (call);                                           \
        ::sluice_test::check_error(__FILE__, __LINE__, #call, terr_status_, (expected),  \
                                   (expected));                                          \
    } while (0)
#define TERR2(expected, alternative, call)                                               \
    do {                                                                                 \
        sluice_status_t terr_status_ = (call);                                           \
        ::sluice_test::check_error(__FILE__, __LINE__, #call, terr_status_, (expected),  \
                                   (alternative));                                       \
    } while (0)

inline int g_errors_expected = 0;  // failed calls this rank made on purpose

inline void check_error(const char *file, int line, const char *call, sluice_status_t got,
                        sluice_status_t expected, sluice_status_t alternative) {
    if (got != expected && got != alternative) {
        if (expected == alternative)
            fail_at(file, line, call, "returned %d (%s), expected %d (%s); last error: %s", got,
                    sluice_status_string(got), expected, sluice_status_string(expected),
                    sluice_last_error());
        fail_at(file, line, call, "returned %d (%s), expected %d (%s) or %d (%s); last error: %s", got,
                sluice_status_string(got), expected, sluice_status_string(expected), alternative,
                sluice_status_string(alternative), sluice_last_error());
    }
    const char *msg = sluice_last_error();
    char rank_tag[48];
    std::snprintf(rank_tag, sizeof rank_tag, "sluice[rank %d]", my_rank_or_minus());
    if (!msg || !std::strstr(msg, "rank") || !std::strstr(msg, "fix"))
        fail_at(file, line, call, "error message must name the rank and the fix, got \"%s\"",
                msg ? msg : "(null)");
    if (sluice_initialized() && !std::strstr(msg, rank_tag))
        fail_at(file, line, call, "error message must start with \"%s\", got \"%s\"", rank_tag, msg);
    ++g_errors_expected;
}

// Writes SLUICETEST_PIDDIR/<pid> so the driver can check that this process
// is gone once the job has ended.
inline void record_pid() {
    const char *dir = std::getenv("SLUICETEST_PIDDIR");
    if (!dir || !*dir) return;
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%d", dir, static_cast<int>(::getpid()));
    int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
}

// Polls until pred() holds; fails with `what` after the rank timeout.
template <class Pred>
void wait_until(Pred pred, const char *file, int line, const char *what) {
    double deadline = now_seconds() + rank_timeout();
    while (!pred()) {
        sluice_status_t s = sluice_poll();
        if (s != SLUICE_OK)
            fail_at(file, line, what, "sluice_poll returned %d: %s", s, sluice_last_error());
        if (now_seconds() > deadline) fail_at(file, line, what, "timed out waiting");
        ::sched_yield();  // ranks are oversubscribed on small machines
    }
}
#define WAIT_UNTIL(cond) ::sluice_test::wait_until([&] { return (cond); }, __FILE__, __LINE__, #cond)

// Byte k of a test pattern: depends on the seed and on k, so a lost, shifted
// or stale byte shows.
inline std::uint8_t pattern_byte(std::uint32_t seed, std::size_t k) {
    std::uint32_t x = static_cast<std::uint32_t>(k) * 131u + static_cast<std::uint32_t>(k >> 9) * 7u +
                      seed * 0x9E3779B1u + (seed >> 16);
    return static_cast<std::uint8_t>(x ^ (x >> 8));
}
inline void pattern_fill(void *p, std::size_t n, std::uint32_t seed) {
    auto *b = static_cast<std::uint8_t *>(p);
    for (std::size_t k = 0; k < n; ++k) b[k] = pattern_byte(seed, k);
}
// Index of the first byte that differs from the pattern, or SIZE_MAX.
inline std::size_t pattern_mismatch(const void *p, std::size_t n, std::uint32_t seed) {
    auto *b = static_cast<const std::uint8_t *>(p);
    for (std::size_t k = 0; k < n; ++k)
        if (b[k] != pattern_byte(seed, k)) return k;
    return SIZE_MAX;
}
inline std::size_t fill_mismatch(const void *p, std::size_t n, std::uint8_t value) {
    auto *b = static_cast<const std::uint8_t *>(p);
    for (std::size_t k = 0; k < n; ++k)
        if (b[k] != value) return k;
    return SIZE_MAX;
}

#define TCHECK_PATTERN(ptr, len, seed, ...)                                                  \
    do {                                                                                     \
        std::size_t bad_ = ::sluice_test::pattern_mismatch((ptr), (len), (seed));            \
        if (bad_ != SIZE_MAX)                                                                \
            ::sluice_test::fail_at(__FILE__, __LINE__, "data matches the pattern",           \
                                   "byte %zu of %zu is 0x%02x, expected 0x%02x (seed %u): %s", \
                                   bad_, static_cast<std::size_t>(len),                     \
                                   static_cast<const std::uint8_t *>(                       \
                                       static_cast<const void *>(ptr))[bad_],               \
                                   ::sluice_test::pattern_byte((seed), bad_),               \
                                   static_cast<unsigned>(seed), __VA_ARGS__);               \
    } while (0)

inline unsigned long arg_number(int argc, char **argv, int index, unsigned long fallback) {
    return index < argc ? std::strtoul(argv[index], nullptr, 0) : fallback;
}

} // namespace sluice_test
