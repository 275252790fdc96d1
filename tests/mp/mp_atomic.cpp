// tests/mp/mp_atomic.cpp - atomic domains: the path every member agreed on,
// a hot spot of fetch-adds, a compare-and-swap lock, every (type, op) pair in
// every mode against a local reference, a domain over a split team, and
// every bad input (one error line each, nothing changed at the target).
//
// atomic [iterations] [--path=P] [--path32=P] [--bench]
//   --path=P    every member must report path P (cpu, am, cpu+am, ofi, ibv)
//               for a domain of 64-bit integers, the type every NIC path takes
//   --path32=P  the same for a domain of 32-bit integers (default: --path;
//               ibv's NIC atomics are 64-bit only)
//   --bench   rank 0 and 1 time fetch-add round trips against a cache-line
//             ping-pong and an AM Short round trip, and the hot spot against
//             plain CPU fetch_add (printed, not checked)
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

namespace sluice_test::mp {
namespace {

// Segment layout (offsets in every rank's segment).
constexpr std::size_t hot_word = 0;          // the hot spot (rank 0)
constexpr std::size_t lock_word = 64;        // CAS lock (last rank)
constexpr std::size_t lock_counter = 128;    // the counter it guards
constexpr std::size_t slots = 4096;          // one 8-byte slot per issuer: the (type, op) checks
constexpr std::size_t bad_slots = 8192;      // bad input targets
constexpr std::size_t team_word = 12288;     // split-team hot spot
constexpr std::size_t bench_words = 16384;   // --bench
constexpr std::size_t fetched_area = 65536;  // every rank's fetched values, at rank 0
constexpr std::uint64_t all_ops = SLUICE_AOP_BIT(SLUICE_OP_COUNT_) - 1;
constexpr std::uint64_t bitwise = SLUICE_AOP_BIT(SLUICE_OP_AND) | SLUICE_AOP_BIT(SLUICE_OP_FAND) |
                                  SLUICE_AOP_BIT(SLUICE_OP_OR) | SLUICE_AOP_BIT(SLUICE_OP_FOR) |
                                  SLUICE_AOP_BIT(SLUICE_OP_XOR) | SLUICE_AOP_BIT(SLUICE_OP_FXOR);

void *at(sluice_rank_t r, std::size_t offset) { return segments[r].base + offset; }

bool fetching(unsigned op) {
    return op == SLUICE_OP_GET || op == SLUICE_OP_SWAP || op == SLUICE_OP_FCAS ||
           (op >= SLUICE_OP_FADD && op % 2 == 0);
}

// ---- path ---------------------------------------------------------------
void check_path(sluice_ad_t ad, const std::string &expected) {
    const char *path = nullptr, *why = nullptr;
    TOK(sluice_ad_path(ad, &path, &why));
    TCHECK(path && why && *why, "path and why are set");
    if (me == 0) std::printf("atomic domain path: %s (%s)\n", path, why);
    if (!expected.empty())
        TCHECK(expected == path, "domain path is \"%s\", expected \"%s\" (%s)", path, expected.c_str(), why);
}

// ---- hot spot: every rank fetch-adds rank 0's word ------------------------
void hot_spot(unsigned iterations) {
    sluice_ad_t ad = nullptr;
    TOK(sluice_ad_create(sluice_team_job(), SLUICE_DT_U64,
                         SLUICE_AOP_BIT(SLUICE_OP_FADD) | SLUICE_AOP_BIT(SLUICE_OP_SET) |
                             SLUICE_AOP_BIT(SLUICE_OP_GET),
                         0, &ad));
    if (me == 0) TOK(sluice_ad_op_u64(ad, nullptr, 0, at(0, hot_word), SLUICE_OP_SET, 0, 0, 0));
    TOK(sluice_barrier());
    std::vector<std::uint64_t> got(iterations);
    for (unsigned i = 0; i < iterations; ++i)
        TOK(sluice_ad_op_u64(ad, &got[i], 0, at(0, hot_word), SLUICE_OP_FADD, 1, 0, 0));
    for (unsigned i = 1; i < iterations; ++i)
        TCHECK(got[i] > got[i - 1], "fetch-add %u of this rank got %llu after %llu", i,
               static_cast<unsigned long long>(got[i]), static_cast<unsigned long long>(got[i - 1]));
    // Every fetched value to rank 0, which checks each appears exactly once.
    TOK(sluice_put(0, static_cast<std::uint8_t *>(at(0, fetched_area)) + std::size_t{me} * iterations * 8, got.data(),
                   got.size() * 8));
    TOK(sluice_barrier());
    std::uint64_t final_value = 0;
    TOK(sluice_ad_op_u64(ad, &final_value, 0, at(0, hot_word), SLUICE_OP_GET, 0, 0, SLUICE_AD_ACQUIRE));
    const std::uint64_t total = std::uint64_t{iterations} * nranks;
    TCHECK(final_value == total, "hot spot holds %llu after %llu fetch-adds",
           static_cast<unsigned long long>(final_value), static_cast<unsigned long long>(total));
    if (me == 0) {
        std::vector<std::uint8_t> seen(total, 0);
        auto *all = static_cast<std::uint64_t *>(at(0, fetched_area));
        for (std::uint64_t k = 0; k < total; ++k) {
            TCHECK(all[k] < total, "fetched value %llu out of range", static_cast<unsigned long long>(all[k]));
            TCHECK(!seen[all[k]], "value %llu fetched twice", static_cast<unsigned long long>(all[k]));
            seen[all[k]] = 1;
        }
    }
    TOK(sluice_barrier());
    TOK(sluice_ad_destroy(ad));
}

// ---- a compare-and-swap lock guarding a plain counter ---------------------
void cas_lock(unsigned iterations) {
    const sluice_rank_t owner = nranks - 1;
    sluice_ad_t ad = nullptr;
    TOK(sluice_ad_create(sluice_team_job(), SLUICE_DT_I64,
                         SLUICE_AOP_BIT(SLUICE_OP_FCAS) | SLUICE_AOP_BIT(SLUICE_OP_SET), 0, &ad));
    if (me == owner) {
        TOK(sluice_ad_op_i64(ad, nullptr, owner, at(owner, lock_word), SLUICE_OP_SET, 0, 0, 0));
        std::memset(at(owner, lock_counter), 0, 8);
    }
    TOK(sluice_barrier());
    unsigned contended = 0;
    for (unsigned i = 0; i < iterations; ++i) {
        for (;;) {
            std::int64_t old = -1;
            TOK(sluice_ad_op_i64(ad, &old, owner, at(owner, lock_word), SLUICE_OP_FCAS, 0, me + 1,
                                 SLUICE_AD_ACQUIRE));
            if (old == 0) break;
            TCHECK(old >= 1 && old <= static_cast<std::int64_t>(nranks) && old != me + 1,
                   "the lock holds %lld while rank %u waits for it", static_cast<long long>(old), me);
            ++contended;
            TOK(sluice_poll());
        }
        std::uint64_t v = 0;
        TOK(sluice_get(&v, owner, at(owner, lock_counter), 8));
        ++v;
        TOK(sluice_put(owner, at(owner, lock_counter), &v, 8));
        TOK(sluice_ad_op_i64(ad, nullptr, owner, at(owner, lock_word), SLUICE_OP_SET, 0, 0, SLUICE_AD_RELEASE));
    }
    TOK(sluice_barrier());
    if (me == owner) {
        std::uint64_t v;
        std::memcpy(&v, at(owner, lock_counter), 8);
        TCHECK(v == std::uint64_t{iterations} * nranks, "the locked counter is %llu, expected %llu",
               static_cast<unsigned long long>(v), static_cast<unsigned long long>(std::uint64_t{iterations} * nranks));
    }
    (void)contended;
    TOK(sluice_ad_destroy(ad));
}

// ---- every (type, op) pair against a local reference -----------------------
template <class T>
T reference(unsigned op, T cur, T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        const U c = static_cast<U>(cur), x = static_cast<U>(a);
        switch (op) {
        case SLUICE_OP_ADD: case SLUICE_OP_FADD: return static_cast<T>(static_cast<U>(c + x));
        case SLUICE_OP_SUB: case SLUICE_OP_FSUB: return static_cast<T>(static_cast<U>(c - x));
        case SLUICE_OP_INC: case SLUICE_OP_FINC: return static_cast<T>(static_cast<U>(c + 1));
        case SLUICE_OP_DEC: case SLUICE_OP_FDEC: return static_cast<T>(static_cast<U>(c - 1));
        case SLUICE_OP_MULT: case SLUICE_OP_FMULT: return static_cast<T>(static_cast<U>(c * x));
        case SLUICE_OP_AND: case SLUICE_OP_FAND: return static_cast<T>(c & x);
        case SLUICE_OP_OR: case SLUICE_OP_FOR: return static_cast<T>(c | x);
        case SLUICE_OP_XOR: case SLUICE_OP_FXOR: return static_cast<T>(c ^ x);
        default: break;
        }
    } else {
        switch (op) {
        case SLUICE_OP_ADD: case SLUICE_OP_FADD: return cur + a;
        case SLUICE_OP_SUB: case SLUICE_OP_FSUB: return cur - a;
        case SLUICE_OP_INC: case SLUICE_OP_FINC: return cur + 1;
        case SLUICE_OP_DEC: case SLUICE_OP_FDEC: return cur - 1;
        case SLUICE_OP_MULT: case SLUICE_OP_FMULT: return cur * a;
        default: break;
        }
    }
    switch (op) {
    case SLUICE_OP_SET: case SLUICE_OP_SWAP: return a;
    case SLUICE_OP_GET: return cur;
    case SLUICE_OP_CAS: case SLUICE_OP_FCAS: return cur == a ? b : cur;
    case SLUICE_OP_MIN: case SLUICE_OP_FMIN: return std::min(cur, a);
    case SLUICE_OP_MAX: case SLUICE_OP_FMAX: return std::max(cur, a);
    default: TCHECK(false, "no reference for op %u", op); return cur;
    }
}

template <class T>
bool same(T x, T y) {
    return std::memcmp(&x, &y, sizeof x) == 0;
}
template <class T>
double shown(T v) {
    return static_cast<double>(v);
}

enum class Mode { blocking, nb, nbi };
const char *mode_name(Mode m) { return m == Mode::blocking ? "blocking" : m == Mode::nb ? "nb" : "nbi"; }

template <class T>
void every_pair(const char *type_name) {
    sluice::AtomicDomain<T> ad;
    const std::uint64_t ops = std::is_floating_point_v<T> ? all_ops & ~bitwise : all_ops;
    TCHECK(ad.create(sluice_team_job(), ops) == sluice::Status::ok, "create %s: %s", type_name,
           sluice_last_error());
    std::string_view path, why;
    TCHECK(ad.path(path, why) == sluice::Status::ok, "path: %s", sluice_last_error());
    if (me == 0)
        std::printf("atomic %s domain, every operation: %.*s (%.*s)\n", type_name, static_cast<int>(path.size()),
                    path.data(), static_cast<int>(why.size()), why.data());
    const sluice_rank_t target = (me + 1) % nranks;
    T *word = static_cast<T *>(at(target, slots + std::size_t{me} * 8));
    // Start values and operands: exact in floating point; signed ones go
    // negative, unsigned ones wrap.
    const T starts[2] = {static_cast<T>(std::is_signed_v<T> ? -37 : 1000 + me), static_cast<T>(12 + me)};
    const T operands[2] = {static_cast<T>(std::is_floating_point_v<T> ? 0.75 : 0x5a5), static_cast<T>(3)};
    for (Mode mode : {Mode::blocking, Mode::nb, Mode::nbi}) {
        for (unsigned op = 0; op < SLUICE_OP_COUNT_; ++op) {
            if (!(ops & SLUICE_AOP_BIT(op))) continue;
            for (int variant = 0; variant < 2; ++variant) {
                const T start = starts[variant];
                const T a = operands[variant];
                // CAS: the first variant matches, the second does not.
                const T op1 = (op == SLUICE_OP_CAS || op == SLUICE_OP_FCAS) ? (variant == 0 ? start : T(start + 1)) : a;
                const T op2 = static_cast<T>(99);
                TCHECK(ad.store(target, word, start) == sluice::Status::ok, "store: %s", sluice_last_error());
                T old = static_cast<T>(-5);
                T *result = fetching(op) ? &old : nullptr;
                const auto o = static_cast<sluice::AtomicOp>(op);
                if (mode == Mode::blocking) {
                    if (result) TCHECK(ad.fetch(o, old, target, word, op1, op2) == sluice::Status::ok, "op %u: %s", op, sluice_last_error());
                    else TCHECK(ad.op(o, target, word, op1, op2) == sluice::Status::ok, "op %u: %s", op, sluice_last_error());
                } else if (mode == Mode::nb) {
                    sluice::Event ev = nullptr;
                    TCHECK(ad.op_nb(ev, o, result, target, word, op1, op2) == sluice::Status::ok, "op_nb %u: %s", op,
                           sluice_last_error());
                    TOK(sluice_event_wait(ev));
                } else {
                    TCHECK(ad.op_nbi(o, result, target, word, op1, op2) == sluice::Status::ok, "op_nbi %u: %s", op,
                           sluice_last_error());
                    TOK(sluice_nbi_sync_cat(SLUICE_NBI_ATOMICS));
                }
                T now{};
                TCHECK(ad.load(now, target, word) == sluice::Status::ok, "load: %s", sluice_last_error());
                const T expected = reference<T>(op, start, op1, op2);
                TCHECK(same(now, expected), "%s %s op %u variant %d: word %g, expected %g", type_name,
                       mode_name(mode), op, variant, shown(now), shown(expected));
                if (result)
                    TCHECK(same(old, start), "%s %s op %u variant %d: fetched %g, expected %g", type_name,
                           mode_name(mode), op, variant, shown(old), shown(start));
            }
        }
    }
    // A batch in flight at once: nb to every rank, then nbi.
    const unsigned batch = 32;
    T *mine_at_each = static_cast<T *>(at(me, slots + std::size_t{me} * 8));
    (void)mine_at_each;
    TCHECK(ad.store(target, word, T(0)) == sluice::Status::ok, "store: %s", sluice_last_error());
    std::vector<sluice::Event> evs(batch);
    std::vector<T> olds(batch);
    for (unsigned i = 0; i < batch; ++i)
        TCHECK(ad.op_nb(evs[i], sluice::AtomicOp::fadd, &olds[i], target, word, T(1)) == sluice::Status::ok,
               "op_nb: %s", sluice_last_error());
    TCHECK(sluice::wait_all(evs) == sluice::Status::ok, "wait_all: %s", sluice_last_error());
    std::vector<std::uint8_t> seen(batch, 0);
    for (unsigned i = 0; i < batch; ++i) {
        const auto k = static_cast<unsigned>(olds[i]);
        TCHECK(k < batch && !seen[k], "batch fetch-add %u fetched %g", i, shown(olds[i]));
        seen[k] = 1;
    }
    for (unsigned i = 0; i < batch; ++i)
        TCHECK(ad.op_nbi(sluice::AtomicOp::add, nullptr, target, word, T(2)) == sluice::Status::ok, "op_nbi: %s",
               sluice_last_error());
    TOK(sluice_nbi_sync_cat(SLUICE_NBI_ATOMICS));
    T now{};
    TCHECK(ad.load(now, target, word) == sluice::Status::ok, "load: %s", sluice_last_error());
    TCHECK(same(now, static_cast<T>(3 * batch)), "%s batch: word %g, expected %u", type_name, shown(now), 3 * batch);
    bool swapped = false;
    T expected = T(3 * batch);
    TCHECK(ad.compare_exchange(swapped, target, word, expected, T(7)) == sluice::Status::ok && swapped,
           "compare_exchange that should succeed");
    expected = T(1);
    TCHECK(ad.compare_exchange(swapped, target, word, expected, T(9)) == sluice::Status::ok && !swapped &&
               same(expected, T(7)),
           "compare_exchange that should fail: swapped %d, expected now %g", swapped, shown(expected));
    TOK(sluice_barrier());
    TCHECK(ad.destroy() == sluice::Status::ok, "destroy: %s", sluice_last_error());
}

// ---- a domain over a split team ---------------------------------------------
void split_team(unsigned iterations) {
    sluice_team_t team = SLUICE_TEAM_NULL;
    TOK(sluice_team_split(sluice_team_job(), static_cast<int>(me % 2), static_cast<int>(nranks - me), &team));
    TCHECK(team != SLUICE_TEAM_NULL, "every rank has a colour");
    const sluice_rank_t size = sluice_team_size(team);
    sluice_rank_t root_job = 0;
    TOK(sluice_team_to_job(team, 0, &root_job));
    TCHECK(root_job % 2 == me % 2, "team rank 0 is job rank %u", root_job);
    sluice_ad_t ad = nullptr;
    TOK(sluice_ad_create(team, SLUICE_DT_U32, SLUICE_AOP_BIT(SLUICE_OP_FINC) | SLUICE_AOP_BIT(SLUICE_OP_GET), 0, &ad));
    if (me == root_job) std::memset(at(root_job, team_word), 0, 4);
    TOK(sluice_barrier());
    // Team rank 0's word, addressed by team rank.
    std::uint32_t last = 0;
    for (unsigned i = 0; i < iterations; ++i) {
        std::uint32_t old = 0;
        TOK(sluice_ad_op_u32(ad, &old, 0, at(root_job, team_word), SLUICE_OP_FINC, 0, 0, 0));
        TCHECK(i == 0 || old > last, "team fetch-inc went back: %u after %u", old, last);
        last = old;
    }
    TOK(sluice_barrier());
    std::uint32_t final_value = 0;
    TOK(sluice_ad_op_u32(ad, &final_value, 0, at(root_job, team_word), SLUICE_OP_GET, 0, 0, 0));
    TCHECK(final_value == iterations * size, "team word %u, expected %u", final_value, iterations * size);
    TERR(SLUICE_ERR_RANK, sluice_ad_op_u32(ad, &final_value, size, at(root_job, team_word), SLUICE_OP_GET, 0, 0, 0));
    TOK(sluice_barrier());
    TOK(sluice_ad_destroy(ad));
    TOK(sluice_team_destroy(team));
}

// ---- bad input ------------------------------------------------------------------
void bad_input() {
    const sluice_rank_t target = (me + 1) % nranks;
    auto *word = static_cast<std::uint64_t *>(at(target, bad_slots + std::size_t{me} * 8));
    sluice_ad_t ad = nullptr;
    const std::uint64_t ops = SLUICE_AOP_BIT(SLUICE_OP_FADD) | SLUICE_AOP_BIT(SLUICE_OP_SET) |
                              SLUICE_AOP_BIT(SLUICE_OP_GET);
    TOK(sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, ops, 0, &ad));
    TOK(sluice_ad_op_u64(ad, nullptr, target, word, SLUICE_OP_SET, 77, 0, 0));
    std::uint64_t result = 12345;
    sluice_event_t ev = SLUICE_EVENT_DONE;
    // Not in the domain's set; not an operation at all.
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(ad, nullptr, target, word, SLUICE_OP_ADD, 1, 0, 0));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(ad, &result, target, word, static_cast<sluice_aop_t>(99), 1, 0, 0));
    // Misaligned, outside the segment (past its end, and local memory).
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(ad, &result, target, reinterpret_cast<char *>(word) + 4, SLUICE_OP_FADD,
                                               1, 0, 0));
    TERR(SLUICE_ERR_SEGMENT, sluice_ad_op_u64(ad, &result, target, segments[target].base + segments[target].size,
                                              SLUICE_OP_FADD, 1, 0, 0));
    TERR(SLUICE_ERR_SEGMENT, sluice_ad_op_u64(ad, &result, target, segments[target].base + segments[target].size - 4,
                                              SLUICE_OP_FADD, 1, 0, 0));
    std::uint64_t local = 0;
    if (segments[target].base > reinterpret_cast<std::uint8_t *>(&local) ||
        segments[target].base + segments[target].size <= reinterpret_cast<std::uint8_t *>(&local))
        TERR(SLUICE_ERR_SEGMENT, sluice_ad_op_u64(ad, &result, target, &local, SLUICE_OP_FADD, 1, 0, 0));
    // A result for a non-fetching operation, none for a fetching one.
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(ad, &result, target, word, SLUICE_OP_SET, 5, 0, 0));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(ad, nullptr, target, word, SLUICE_OP_FADD, 5, 0, 0));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_nbi_u64(ad, nullptr, target, word, SLUICE_OP_FADD, 5, 0, 0));
    // Bad rank, null domain, wrong type, unknown flags, no event pointer.
    TERR(SLUICE_ERR_RANK, sluice_ad_op_u64(ad, &result, nranks, word, SLUICE_OP_FADD, 1, 0, 0));
    TERR(SLUICE_ERR_RANK, sluice_ad_op_nb_u64(ad, &result, nranks + 5, word, SLUICE_OP_FADD, 1, 0, 0, &ev));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(nullptr, &result, target, word, SLUICE_OP_FADD, 1, 0, 0));
    std::uint32_t result32 = 4321;
    TERR(SLUICE_ERR_ARGUMENT,
         sluice_ad_op_u32(ad, &result32, target, word, SLUICE_OP_FADD, 1, 0, 0));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(ad, &result, target, word, SLUICE_OP_FADD, 1, 0, 0x1));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_nb_u64(ad, &result, target, word, SLUICE_OP_FADD, 1, 0, 0, nullptr));
    TCHECK(result == 12345 && result32 == 4321 && ev == SLUICE_EVENT_DONE, "a failed call wrote its outputs");
    // Creation: every member passes the same bad arguments and gets the error.
    sluice_ad_t bad = nullptr;
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_DBL, SLUICE_AOP_BIT(SLUICE_OP_XOR), 0, &bad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_FLT, SLUICE_AOP_BIT(SLUICE_OP_FAND), 0, &bad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, 0, 0, &bad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, SLUICE_AOP_BIT(SLUICE_OP_COUNT_), 0, &bad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_USER, ops, 0, &bad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, ops, 0x4, &bad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, ops, 0, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(SLUICE_TEAM_NULL, SLUICE_DT_U64, ops, 0, &bad));
    if (nranks > 1) {
        // Members disagree: rank 0 asks for one more operation; all refuse.
        const std::uint64_t mine = me == 0 ? ops | SLUICE_AOP_BIT(SLUICE_OP_SWAP) : ops;
        TERR(SLUICE_ERR_ARGUMENT, sluice_ad_create(sluice_team_job(), SLUICE_DT_U64, mine, 0, &bad));
    }
    TCHECK(bad == nullptr, "a failed create wrote its output");
    const char *path = nullptr, *why = nullptr;
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_path(nullptr, &path, &why));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_path(ad, nullptr, &why));
    // Nothing changed at any target.
    TOK(sluice_barrier());
    std::uint64_t now = 0;
    TOK(sluice_ad_op_u64(ad, &now, target, word, SLUICE_OP_GET, 0, 0, 0));
    TCHECK(now == 77, "a failed operation changed the target: %llu", static_cast<unsigned long long>(now));
    std::uint64_t mine_here;
    std::memcpy(&mine_here, at(me, bad_slots + std::size_t{(me + nranks - 1) % nranks} * 8), 8);
    TCHECK(mine_here == 77, "my word changed: %llu", static_cast<unsigned long long>(mine_here));
    TOK(sluice_barrier());
    // After destroy: every use is refused.
    TOK(sluice_ad_destroy(ad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_op_u64(ad, &result, target, word, SLUICE_OP_FADD, 1, 0, 0));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_path(ad, &path, &why));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_destroy(ad));
    TERR(SLUICE_ERR_ARGUMENT, sluice_ad_destroy(nullptr));
}

// ---- --bench: figures for docs/atomics.md ---------------------------------------
enum : sluice_handler_t { h_ping = 230, h_pong };
std::atomic<unsigned> pongs{0};
void on_ping(sluice_token_t t, void *, std::size_t, const std::uint32_t *, unsigned) {
    (void)sluice_am_reply_short(t, h_pong, nullptr, 0);
}
void on_pong(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) { pongs.fetch_add(1); }

// The slowest rank's time for `iterations` of `body`, started together.
template <class F>
double timed_all(unsigned iterations, F body) {
    TOK(sluice_barrier());
    const double t0 = now_seconds();
    for (unsigned i = 0; i < iterations; ++i) body();
    double mine = now_seconds() - t0;
    std::vector<double> all(nranks);
    TOK(sluice_allgather(&mine, all.data(), sizeof mine));
    return *std::max_element(all.begin(), all.end());
}

void bench(unsigned iterations) {
    TOK(sluice_handler_register(h_ping, on_ping, SLUICE_AM_SHORT, 0));
    TOK(sluice_handler_register(h_pong, on_pong, SLUICE_AM_SHORT, 0));
    sluice_ad_t ad = nullptr;
    TOK(sluice_ad_create(sluice_team_job(), SLUICE_DT_U64,
                         SLUICE_AOP_BIT(SLUICE_OP_FADD) | SLUICE_AOP_BIT(SLUICE_OP_SET), 0, &ad));
    std::memset(at(me, bench_words), 0, 256);
    TOK(sluice_barrier());
    if (nranks >= 2) {
        // Rank 0 alone; rank 1 serves from its barrier's poll.
        if (me == 0) {
            std::uint64_t old = 0;
            void *word = at(1, bench_words + 64);
            for (unsigned i = 0; i < iterations / 10; ++i)
                TOK(sluice_ad_op_u64(ad, &old, 1, word, SLUICE_OP_FADD, 1, 0, 0));
            double t0 = now_seconds();
            for (unsigned i = 0; i < iterations; ++i) TOK(sluice_ad_op_u64(ad, &old, 1, word, SLUICE_OP_FADD, 1, 0, 0));
            const double fadd = (now_seconds() - t0) / iterations;
            t0 = now_seconds();
            for (unsigned i = 0; i < iterations; ++i) {
                TOK(sluice_am_request_short(1, h_ping, nullptr, 0));
                WAIT_UNTIL(pongs.load() == i + 1);
            }
            const double am = (now_seconds() - t0) / iterations;
            std::printf("BENCH 8 B fetch-add round trip %.3f us; AM Short round trip %.3f us; ratio %.2f\n",
                        fadd * 1e6, am * 1e6, fadd / am);
        }
        TOK(sluice_barrier());
        // A cache-line ping-pong through rank 1's mapped segment (one host).
        std::uint64_t probe = 0;
        auto *line = reinterpret_cast<std::uint64_t *>(
            me == 1 ? static_cast<char *>(at(1, bench_words + 128))
                    : sluice_mapped_view_(1, at(1, bench_words + 128), &probe, 8));
        std::uint8_t mapped = line != nullptr, all_mapped = 0;
        std::vector<std::uint8_t> flags(nranks);
        TOK(sluice_allgather(&mapped, flags.data(), 1));
        all_mapped = *std::min_element(flags.begin(), flags.end());
        // Fewer rounds: two spinning ranks crawl when the cores are shared.
        const unsigned rounds = std::min(iterations, 20000u);
        if (flags[0] && me <= 1) {
            const double t0 = now_seconds();
            for (std::uint64_t i = 0; i < rounds; ++i) {
                if (me == 0) {
                    __atomic_store_n(line, 2 * i + 1, __ATOMIC_RELEASE);
                    while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != 2 * i + 2) {}
                } else {
                    while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != 2 * i + 1) {}
                    __atomic_store_n(line, 2 * i + 2, __ATOMIC_RELEASE);
                }
            }
            if (me == 0)
                std::printf("BENCH cache-line ping-pong round trip %.3f us\n", (now_seconds() - t0) / rounds * 1e6);
        }
        TOK(sluice_barrier());
        // The hot spot against plain CPU fetch_add by the same processes.
        if (all_mapped) {
            auto *hot = reinterpret_cast<std::uint64_t *>(
                me == 0 ? static_cast<char *>(at(0, bench_words + 192))
                        : sluice_mapped_view_(0, at(0, bench_words + 192), &probe, 8));
            std::uint64_t old = 0;
            const double ad_time = timed_all(iterations, [&] {
                TOK(sluice_ad_op_u64(ad, &old, 0, at(0, bench_words + 192), SLUICE_OP_FADD, 1, 0, 0));
            });
            const double cpu_time = timed_all(iterations, [&] { old = __atomic_fetch_add(hot, 1, __ATOMIC_RELAXED); });
            if (me == 0)
                std::printf("BENCH hot spot, %u ranks: domain %.1f Mops/s, plain fetch_add %.1f Mops/s, ratio %.2f\n",
                            nranks, iterations * nranks / ad_time / 1e6, iterations * nranks / cpu_time / 1e6,
                            cpu_time / ad_time);
        }
    }
    TOK(sluice_barrier());
    TOK(sluice_ad_destroy(ad));
}

} // namespace

int case_atomic(int argc, char **argv) {
    unsigned iterations = 2000;
    std::string expected_path, expected_path32;
    bool benchmark = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--path=", 0) == 0) expected_path = a.substr(7);
        else if (a.rfind("--path32=", 0) == 0) expected_path32 = a.substr(9);
        else if (a == "--bench") benchmark = true;
        else iterations = static_cast<unsigned>(std::strtoul(argv[i], nullptr, 0));
    }
    attach(std::size_t{1} << 20);
    TCHECK(fetched_area + std::size_t{iterations} * nranks * 8 <= segments[0].size, "%u iterations do not fit",
           iterations);

    if (expected_path32.empty()) expected_path32 = expected_path;
    for (const sluice_dt_t type : {SLUICE_DT_U64, SLUICE_DT_I32}) {
        sluice_ad_t probe = nullptr;
        TOK(sluice_ad_create(sluice_team_job(), type, SLUICE_AOP_BIT(SLUICE_OP_ADD), 0, &probe));
        check_path(probe, type == SLUICE_DT_U64 ? expected_path : expected_path32);
        TOK(sluice_ad_destroy(probe));
    }

    if (benchmark) {
        bench(iterations);
        TOK(sluice_finalize());
        return 0;
    }
    hot_spot(iterations);
    cas_lock(std::max(1u, iterations / 10));
    every_pair<std::int32_t>("i32");
    every_pair<std::uint32_t>("u32");
    every_pair<std::int64_t>("i64");
    every_pair<std::uint64_t>("u64");
    every_pair<float>("flt");
    every_pair<double>("dbl");
    split_team(std::max(1u, iterations / 4));
    bad_input();
    TOK(sluice_barrier());
    report_expected_errors();
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
