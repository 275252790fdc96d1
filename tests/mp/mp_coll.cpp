// tests/mp/mp_coll.cpp - teams and collectives.
//
// team: the three built-in teams against sluice_host_ranks, rank
// translation, random splits (colour and key) and lists checked against a
// local computation of their members, destroy, and bad input.
// coll [iterations]: on random teams (the job's, random splits, random
// lists) with random roots and sizes, every collective, blocking and _nb,
// checked against a local reference computed from the data every rank can
// regenerate; reductions over every type and operation and a user one.
#include "tests/mp/mp_cases.hpp"

#include <sluice/team.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <tuple>

namespace sluice_test::mp {
namespace {

// The same sequence on every rank that uses the same seed.
struct Rng {
    std::uint64_t s;
    explicit Rng(std::uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
    std::uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    std::uint32_t below(std::uint32_t n) { return n ? static_cast<std::uint32_t>(next() % n) : 0; }
};

// Byte i of the data rank `job` contributes to collective `seq`.
std::uint8_t data_byte(std::uint64_t seq, sluice_rank_t job, std::size_t i) {
    std::uint64_t x = seq * 1000003u + job * 7919u + i * 31u;
    x ^= x >> 17;
    x *= 0xed5ad4bbu;
    x ^= x >> 11;
    return static_cast<std::uint8_t>(x);
}
void data_fill(void *p, std::size_t n, std::uint64_t seq, sluice_rank_t job) {
    auto *b = static_cast<std::uint8_t *>(p);
    for (std::size_t i = 0; i < n; ++i) b[i] = data_byte(seq, job, i);
}

// Members of a split as the API defines them: same colour, by key, ties by
// parent rank.
std::vector<sluice_rank_t> split_members(const std::vector<int> &colors, const std::vector<int> &keys, int color,
                                         const std::vector<sluice_rank_t> &parent_members) {
    std::vector<std::tuple<int, sluice_rank_t>> v;
    for (sluice_rank_t i = 0; i < colors.size(); ++i)
        if (colors[i] == color) v.emplace_back(keys[i], i);
    std::sort(v.begin(), v.end());
    std::vector<sluice_rank_t> out;
    for (auto &[k, i] : v) out.push_back(parent_members[i]);
    return out;
}

std::vector<sluice_rank_t> members_of(sluice_team_t t) {
    std::vector<sluice_rank_t> m(sluice_team_size(t));
    for (sluice_rank_t i = 0; i < m.size(); ++i) TOK(sluice_team_to_job(t, i, &m[i]));
    return m;
}

void check_members(sluice_team_t t, const std::vector<sluice_rank_t> &want, const char *what) {
    TCHECK(t != SLUICE_TEAM_NULL, "%s: a member got no team", what);
    TCHECK(sluice_team_size(t) == want.size(), "%s: size %u, expected %zu", what, sluice_team_size(t), want.size());
    const std::vector<sluice_rank_t> got = members_of(t);
    for (sluice_rank_t i = 0; i < want.size(); ++i) {
        TCHECK(got[i] == want[i], "%s: member %u is job rank %u, expected %u", what, i, got[i], want[i]);
        sluice_rank_t back = 99999;
        TOK(sluice_team_from_job(t, want[i], &back));
        TCHECK(back == i, "%s: from_job(%u) = %u, expected %u", what, want[i], back, i);
        if (want[i] == me) TCHECK(sluice_team_rank(t) == i, "%s: my rank %u, expected %u", what, sluice_team_rank(t), i);
    }
}

// A random team: the job's, a split or a list; null where I am not in it.
// `members` receives its members (job ranks) when I am.
sluice_team_t random_team(Rng &rng, std::vector<sluice_rank_t> &members, bool &made) {
    made = false;
    const std::uint32_t kind = rng.below(3);
    std::vector<sluice_rank_t> job(nranks);
    std::iota(job.begin(), job.end(), 0u);
    if (kind == 0 || nranks == 1) {
        members = job;
        return sluice_team_job();
    }
    if (kind == 1) {
        const std::uint32_t ncolors = 1 + rng.below(3);
        std::vector<int> colors(nranks), keys(nranks);
        for (sluice_rank_t r = 0; r < nranks; ++r) {
            colors[r] = rng.below(4) == 0 ? SLUICE_TEAM_NO_COLOR : static_cast<int>(rng.below(ncolors));
            keys[r] = static_cast<int>(rng.below(5)) - 2;
        }
        sluice_team_t t = SLUICE_TEAM_NULL;
        TOK(sluice_team_split(sluice_team_job(), colors[me], keys[me], &t));
        made = t != SLUICE_TEAM_NULL;
        if (colors[me] == SLUICE_TEAM_NO_COLOR) {
            TCHECK(t == SLUICE_TEAM_NULL, "colour NO_COLOR got a team");
            return t;
        }
        members = split_members(colors, keys, colors[me], job);
        check_members(t, members, "random split");
        return t;
    }
    std::vector<sluice_rank_t> list = job;
    for (sluice_rank_t i = nranks; i > 1; --i) std::swap(list[i - 1], list[rng.below(i)]);
    list.resize(1 + rng.below(nranks));
    sluice_team_t t = SLUICE_TEAM_NULL;
    TOK(sluice_team_create(sluice_team_job(), list.data(), list.size(), &t));
    const bool in = std::find(list.begin(), list.end(), me) != list.end();
    TCHECK(in == (t != SLUICE_TEAM_NULL), "create: member %d, got team %d", in, t != SLUICE_TEAM_NULL);
    made = in;
    if (in) {
        members = list;
        check_members(t, members, "random list");
    }
    return t;
}

// ---- reductions: the reference ----------------------------------------------

template <class T>
T ref_apply(sluice_reduce_op_t op, T a, T b) {
    switch (op) {
    case SLUICE_REDUCE_SUM: return static_cast<T>(a + b);
    case SLUICE_REDUCE_PROD: return static_cast<T>(a * b);
    case SLUICE_REDUCE_MIN: return a < b ? a : b;
    case SLUICE_REDUCE_MAX: return a > b ? a : b;
    default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
        case SLUICE_REDUCE_AND: return a & b;
        case SLUICE_REDUCE_OR: return a | b;
        case SLUICE_REDUCE_XOR: return a ^ b;
        default: break;
        }
    }
    return a;
}

// Element i of rank `job`'s contribution: small values so that sums and
// products of floats are exact whatever the order.
template <class T>
T element(std::uint64_t seq, sluice_rank_t job, std::size_t i, sluice_reduce_op_t op) {
    const std::uint8_t b = data_byte(seq, job, i);
    if (op == SLUICE_REDUCE_PROD) return static_cast<T>(1 + (b & 1));
    if constexpr (std::is_integral_v<T>) {
        if (op == SLUICE_REDUCE_SUM || op == SLUICE_REDUCE_MIN || op == SLUICE_REDUCE_MAX)
            return static_cast<T>(static_cast<T>(b) * static_cast<T>(0x01010101u) - static_cast<T>(1000));
        return static_cast<T>(static_cast<std::uint64_t>(b) * 0x0101010101010101ull ^ (job * 0x1111u));
    }
    return static_cast<T>(static_cast<int>(b) - 128);
}

// A user operation: element-wise (a, b) pairs, max of a, sum of b.
struct Pair {
    std::int32_t a;
    std::uint32_t b;
};
void pair_op(void *inout, const void *in, std::size_t count, void *context) {
    TCHECK(context == reinterpret_cast<void *>(0x5eed), "user op context %p", context);
    auto *x = static_cast<Pair *>(inout);
    const auto *y = static_cast<const Pair *>(in);
    for (std::size_t i = 0; i < count; ++i) {
        x[i].a = std::max(x[i].a, y[i].a);
        x[i].b += y[i].b;
    }
}

template <class T>
void check_reduce(sluice_team_t t, const std::vector<sluice_rank_t> &members, sluice_dt_t type, sluice_reduce_op_t op,
                  std::size_t count, std::uint64_t seq, sluice_rank_t root, bool all, bool nb, bool in_place) {
    std::vector<T> src(count), dst(count, T{}), want(count);
    for (std::size_t i = 0; i < count; ++i) {
        src[i] = element<T>(seq, me, i, op);
        want[i] = element<T>(seq, members[0], i, op);
        for (std::size_t m = 1; m < members.size(); ++m) want[i] = ref_apply<T>(op, want[i], element<T>(seq, members[m], i, op));
    }
    T *out = in_place ? src.data() : dst.data();
    const sluice_rank_t my = sluice_team_rank(t);
    if (all) {
        if (nb) {
            sluice_event_t ev;
            TOK(sluice_coll_reduce_all_nb(t, out, src.data(), type, 0, count, op, nullptr, nullptr, &ev));
            TOK(sluice_event_wait(ev));
        } else {
            TOK(sluice_coll_reduce_all(t, out, src.data(), type, sizeof(T), count, op, nullptr, nullptr));
        }
    } else if (nb) {
        sluice_event_t ev;
        TOK(sluice_coll_reduce_nb(t, root, out, src.data(), type, 0, count, op, nullptr, nullptr, &ev));
        TOK(sluice_event_wait(ev));
    } else {
        TOK(sluice_coll_reduce(t, root, out, src.data(), type, 0, count, op, nullptr, nullptr));
    }
    if (!all && my != root) return;
    for (std::size_t i = 0; i < count; ++i)
        TCHECK(std::memcmp(&out[i], &want[i], sizeof(T)) == 0,
               "reduce%s type %d op %d count %zu root %u: element %zu differs (team of %zu)", all ? "_all" : "",
               type, op, count, root, i, members.size());
}

void reduce_every_pair(sluice_team_t t, const std::vector<sluice_rank_t> &members, Rng &rng, std::uint64_t seq) {
    const sluice_rank_t size = sluice_team_size(t);
    for (int op = SLUICE_REDUCE_SUM; op <= SLUICE_REDUCE_XOR; ++op) {
        const auto o = static_cast<sluice_reduce_op_t>(op);
        const bool bitwise = op >= SLUICE_REDUCE_AND;
        const std::size_t count = rng.below(4) == 0 ? 1 + rng.below(5000) : 1 + rng.below(9);
        const sluice_rank_t root = rng.below(size);
        const bool all = rng.below(2), nb = rng.below(2), in_place = rng.below(2);
        check_reduce<std::int32_t>(t, members, SLUICE_DT_I32, o, count, seq + 1, root, all, nb, in_place);
        check_reduce<std::uint32_t>(t, members, SLUICE_DT_U32, o, count, seq + 2, root, !all, nb, in_place);
        check_reduce<std::int64_t>(t, members, SLUICE_DT_I64, o, count, seq + 3, root, all, !nb, in_place);
        check_reduce<std::uint64_t>(t, members, SLUICE_DT_U64, o, count, seq + 4, root, !all, !nb, !in_place);
        if (!bitwise) {
            check_reduce<float>(t, members, SLUICE_DT_FLT, o, count, seq + 5, root, all, nb, !in_place);
            check_reduce<double>(t, members, SLUICE_DT_DBL, o, count, seq + 6, root, !all, nb, in_place);
        }
    }
    // The user operation.
    const std::size_t count = 1 + rng.below(3000);
    std::vector<Pair> src(count), dst(count), want(count);
    for (std::size_t i = 0; i < count; ++i) {
        src[i] = {static_cast<std::int32_t>(data_byte(seq, me, i)) - 100, data_byte(seq, me, i + 1)};
        want[i] = {static_cast<std::int32_t>(data_byte(seq, members[0], i)) - 100, data_byte(seq, members[0], i + 1)};
        for (std::size_t m = 1; m < members.size(); ++m) {
            want[i].a = std::max(want[i].a, static_cast<std::int32_t>(data_byte(seq, members[m], i)) - 100);
            want[i].b += data_byte(seq, members[m], i + 1);
        }
    }
    TOK(sluice_coll_reduce_all(t, dst.data(), src.data(), SLUICE_DT_USER, sizeof(Pair), count, SLUICE_REDUCE_USER,
                               pair_op, reinterpret_cast<void *>(0x5eed)));
    for (std::size_t i = 0; i < count; ++i)
        TCHECK(dst[i].a == want[i].a && dst[i].b == want[i].b, "user reduce_all: element %zu (%d,%u) expected (%d,%u)",
               i, dst[i].a, dst[i].b, want[i].a, want[i].b);
}

// ---- the other collectives ------------------------------------------------------

std::size_t random_size(Rng &rng) {
    switch (rng.below(5)) {
    case 0: return 0;
    case 1: return 1 + rng.below(16);
    case 2: return 1 + rng.below(3000);
    case 3: return 20000 + rng.below(50000);
    default: return 65536 + rng.below(300000);
    }
}

void check_broadcast(sluice_team_t t, const std::vector<sluice_rank_t> &members, Rng &rng, std::uint64_t seq) {
    const std::size_t n = random_size(rng);
    const sluice_rank_t root = rng.below(sluice_team_size(t));
    const bool nb = rng.below(2);
    const bool mine = sluice_team_rank(t) == root;
    std::vector<std::uint8_t> src(n), dst(n, 0xee), want(n);
    data_fill(want.data(), n, seq, members[root]);
    if (mine) src = want;
    // The root may broadcast in place.
    const bool in_place = rng.below(2);
    void *to = mine && in_place ? src.data() : dst.data();
    if (nb) {
        sluice_event_t ev;
        TOK(sluice_coll_broadcast_nb(t, root, to, src.data(), n, &ev));
        TOK(sluice_event_wait(ev));
    } else {
        TOK(sluice_coll_broadcast(t, root, to, mine ? src.data() : nullptr, n));
    }
    TCHECK(n == 0 || std::memcmp(to, want.data(), n) == 0, "broadcast of %zu bytes from root %u differs", n, root);
}

void check_allgather(sluice_team_t t, const std::vector<sluice_rank_t> &members, Rng &rng, std::uint64_t seq) {
    const std::size_t n = rng.below(3) == 0 ? rng.below(40000) : rng.below(64);
    const std::size_t p = members.size();
    std::vector<std::uint8_t> src(n), dst(n * p), want(n * p);
    data_fill(src.data(), n, seq, me);
    for (std::size_t m = 0; m < p; ++m) data_fill(want.data() + m * n, n, seq, members[m]);
    if (rng.below(2)) {
        sluice_event_t ev;
        TOK(sluice_coll_allgather_nb(t, dst.data(), src.data(), n, &ev));
        TOK(sluice_event_wait(ev));
    } else {
        TOK(sluice_coll_allgather(t, dst.data(), src.data(), n));
    }
    TCHECK(dst == want, "allgather of %zu bytes per member differs", n);
}

void check_alltoall(sluice_team_t t, const std::vector<sluice_rank_t> &members, Rng &rng, std::uint64_t seq) {
    const std::size_t n = rng.below(3) == 0 ? rng.below(20000) : rng.below(64);
    const std::size_t p = members.size();
    const sluice_rank_t my = sluice_team_rank(t);
    std::vector<std::uint8_t> src(n * p), dst(n * p), want(n * p);
    // Block j of member i's source: seeded by (seq, i, j).
    for (std::size_t j = 0; j < p; ++j) data_fill(src.data() + j * n, n, seq * 64 + j, me);
    for (std::size_t i = 0; i < p; ++i) data_fill(want.data() + i * n, n, seq * 64 + my, members[i]);
    if (rng.below(2)) {
        sluice_event_t ev;
        TOK(sluice_coll_alltoall_nb(t, dst.data(), src.data(), n, &ev));
        TOK(sluice_event_wait(ev));
    } else {
        TOK(sluice_coll_alltoall(t, dst.data(), src.data(), n));
    }
    TCHECK(dst == want, "alltoall of %zu bytes per pair differs", n);
}

// A barrier holds: every member wrote into its successor's segment before
// it; afterwards every member sees its predecessor's word.
void check_barrier(sluice_team_t t, const std::vector<sluice_rank_t> &members, std::uint64_t seq) {
    const sluice_rank_t my = sluice_team_rank(t), p = static_cast<sluice_rank_t>(members.size());
    const sluice_rank_t next = members[(my + 1) % p];
    auto *word = reinterpret_cast<std::uint64_t *>(segments[next].base);
    TOK(sluice_put(next, word, &seq, sizeof seq));
    if (seq % 2) {
        sluice_event_t ev;
        TOK(sluice_coll_barrier_nb(t, &ev));
        TOK(sluice_event_wait(ev));
    } else {
        TOK(sluice_coll_barrier(t));
    }
    std::uint64_t seen = 0;
    TOK(sluice_get(&seen, me, my_segment(), sizeof seen));
    TCHECK(seen == seq, "after the barrier my word is %llu, expected %llu from my predecessor",
           static_cast<unsigned long long>(seen), static_cast<unsigned long long>(seq));
    // Nobody writes the word again before everyone has read it.
    TOK(sluice_coll_barrier(t));
}

// Several collectives in flight at once on two teams, completed in reverse.
void check_overlap(Rng &rng, std::uint64_t seq) {
    sluice_team_t job = sluice_team_job(), host = sluice_team_host();
    const std::size_t n = 1 + rng.below(2000);
    std::vector<std::uint8_t> b1(n), b2(n), g(n * nranks), mine(n), want(n * nranks);
    std::int64_t s1 = me, s2 = 0;
    data_fill(mine.data(), n, seq, me);
    for (sluice_rank_t r = 0; r < nranks; ++r) data_fill(want.data() + r * n, n, seq, r);
    const sluice_rank_t root = rng.below(nranks);
    if (me == root) b1 = mine;
    sluice_event_t ev[4];
    TOK(sluice_coll_broadcast_nb(job, root, b1.data(), b1.data(), n, &ev[0]));
    TOK(sluice_coll_reduce_all_nb(host, &s2, &s1, SLUICE_DT_I64, 0, 1, SLUICE_REDUCE_SUM, nullptr, nullptr, &ev[1]));
    TOK(sluice_coll_allgather_nb(job, g.data(), mine.data(), n, &ev[2]));
    TOK(sluice_coll_barrier_nb(job, &ev[3]));
    for (int i = 3; i >= 0; --i) TOK(sluice_event_wait(ev[i]));
    std::vector<std::uint8_t> root_data(n);
    data_fill(root_data.data(), n, seq, root);
    TCHECK(b1 == root_data, "overlapped broadcast differs");
    TCHECK(g == want, "overlapped allgather differs");
    size_t count = 0;
    TOK(sluice_host_ranks(nullptr, 0, &count));
    std::vector<sluice_rank_t> hr(count);
    TOK(sluice_host_ranks(hr.data(), count, &count));
    std::int64_t hs = 0;
    for (sluice_rank_t r : hr) hs += r;
    TCHECK(s2 == hs, "overlapped reduce_all on the host team: %lld, expected %lld", static_cast<long long>(s2),
           static_cast<long long>(hs));
}

// ---- bad input ---------------------------------------------------------------------

std::atomic<int> handler_split_status{1};
void on_split_in_handler(sluice_token_t, void *, std::size_t, const std::uint32_t *, unsigned) {
    sluice_team_t t = SLUICE_TEAM_NULL;
    handler_split_status.store(sluice_team_split(sluice_team_job(), 0, 0, &t));
}

void bad_team_calls() {
    sluice_rank_t r = 0;
    sluice_team_t t = SLUICE_TEAM_NULL;
    TCHECK(sluice_team_rank(SLUICE_TEAM_NULL) == SLUICE_RANK_INVALID, "rank of the null team");
    ++g_errors_expected;
    TCHECK(sluice_team_size(SLUICE_TEAM_NULL) == SLUICE_RANK_INVALID, "size of the null team");
    ++g_errors_expected;
    TERR(SLUICE_ERR_ARGUMENT, sluice_team_to_job(SLUICE_TEAM_NULL, 0, &r));
    TERR(SLUICE_ERR_RANK, sluice_team_to_job(sluice_team_job(), nranks, &r));
    TERR(SLUICE_ERR_ARGUMENT, sluice_team_to_job(sluice_team_job(), 0, nullptr));
    TERR(SLUICE_ERR_RANK, sluice_team_from_job(sluice_team_job(), nranks + 5, &r));
    TERR(SLUICE_ERR_ARGUMENT, sluice_team_split(sluice_team_job(), -7, 0, &t));
    TERR(SLUICE_ERR_ARGUMENT, sluice_team_destroy(sluice_team_job()));
    TERR(SLUICE_ERR_ARGUMENT, sluice_team_destroy(sluice_team_host()));
    TERR(SLUICE_ERR_ARGUMENT, sluice_team_split(SLUICE_TEAM_NULL, 0, 0, &t));
    // A list naming a rank twice (every member passes the same bad list).
    if (nranks >= 2) {
        const sluice_rank_t twice[2] = {1, 1};
        TERR(SLUICE_ERR_ARGUMENT, sluice_team_create(sluice_team_job(), twice, 2, &t));
        // Different lists on different members: every member refuses.
        const sluice_rank_t mine[1] = {me};
        TERR(SLUICE_ERR_ARGUMENT, sluice_team_create(sluice_team_job(), mine, 1, &t));
    }
    const sluice_rank_t outside[1] = {nranks};
    TERR(SLUICE_ERR_RANK, sluice_team_create(sluice_team_job(), outside, 1, &t));
    // A split from a handler.
    TOK(sluice_handler_register(231, on_split_in_handler, SLUICE_AM_SHORT, 0));
    TOK(sluice_barrier());
    TOK(sluice_am_request_short(me, 231, nullptr, 0));
    WAIT_UNTIL(handler_split_status.load() != 1);
    TCHECK(handler_split_status.load() == SLUICE_ERR_CONTEXT, "split from a handler returned %d",
           handler_split_status.load());
    ++g_errors_expected;
    // A destroyed team.
    sluice_team_t d = SLUICE_TEAM_NULL;
    TOK(sluice_team_split(sluice_team_job(), 0, 0, &d));
    TOK(sluice_team_destroy(d));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_barrier(d));
    TCHECK(sluice_team_rank(d) == SLUICE_RANK_INVALID, "rank of a destroyed team");
    ++g_errors_expected;
}

void bad_coll_calls() {
    sluice_team_t job = sluice_team_job();
    std::uint8_t buf[64] = {};
    std::int32_t i32 = 0;
    float f = 0;
    sluice_event_t ev;
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_barrier(SLUICE_TEAM_NULL));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_barrier_nb(job, nullptr));
    TERR(SLUICE_ERR_RANK, sluice_coll_broadcast(job, nranks, buf, buf, 8));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_broadcast(job, 0, nullptr, buf, 8));
    TERR(SLUICE_ERR_RANK, sluice_coll_reduce(job, nranks + 3, &i32, &i32, SLUICE_DT_I32, 0, 1, SLUICE_REDUCE_SUM,
                                             nullptr, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_reduce_all(job, &f, &f, SLUICE_DT_FLT, 0, 1, SLUICE_REDUCE_AND, nullptr,
                                                     nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_reduce_all(job, &f, &f, SLUICE_DT_DBL, 0, 1, SLUICE_REDUCE_XOR, nullptr,
                                                     nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_reduce_all(job, buf, buf, SLUICE_DT_USER, 8, 1, SLUICE_REDUCE_USER,
                                                     nullptr, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_reduce_all(job, buf, buf, SLUICE_DT_USER, 0, 1, SLUICE_REDUCE_USER,
                                                     pair_op, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_reduce_all(job, &i32, &i32, SLUICE_DT_I32, 8, 1, SLUICE_REDUCE_SUM,
                                                     nullptr, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_reduce_all(job, &i32, nullptr, SLUICE_DT_I32, 0, 1, SLUICE_REDUCE_SUM,
                                                     nullptr, nullptr));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_allgather(job, nullptr, buf, 8));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_alltoall(job, buf, nullptr, 8));
    TERR(SLUICE_ERR_ARGUMENT, sluice_coll_alltoall_nb(job, buf, buf, 1, nullptr));
    (void)ev;
    // Sizes that differ: rank 0 gathers 8 bytes more than the others; every
    // member sees a block of the wrong size and says so.
    if (nranks >= 2) {
        const std::size_t n = me == 0 ? 24 : 16;
        std::vector<std::uint8_t> src(n, 1), dst(24 * nranks);
        TERR(SLUICE_ERR_ARGUMENT, sluice_coll_allgather(job, dst.data(), src.data(), n));
    }
    // Counts that differ in a small reduce-to-all (the fast lane on a team
    // whose size is a power of two): every member fails, not only those
    // that meet rank 0's data.
    const char *algorithm = std::getenv("SLUICE_COLL_ALGORITHM");
    if (nranks >= 2 && (nranks & (nranks - 1)) == 0 && (!algorithm || std::string(algorithm) == "auto")) {
        std::int64_t in[2] = {1, 1}, out[2] = {};
        TERR(SLUICE_ERR_ARGUMENT, sluice_coll_reduce_all(job, out, in, SLUICE_DT_I64, 0, me == 0 ? 1 : 2,
                                                         SLUICE_REDUCE_SUM, nullptr, nullptr));
    }
    // Still works afterwards.
    std::int64_t one = 1, total = 0;
    TOK(sluice_coll_reduce_all(job, &total, &one, SLUICE_DT_I64, 0, 1, SLUICE_REDUCE_SUM, nullptr, nullptr));
    TCHECK(total == nranks, "reduce_all after the bad calls: %lld", static_cast<long long>(total));
}

} // namespace

int case_team(int, char **) {
    attach(4096);
    // Built-in teams.
    sluice_team_t job = sluice_team_job(), host = sluice_team_host(), across = sluice_team_across_hosts();
    std::vector<sluice_rank_t> all(nranks);
    std::iota(all.begin(), all.end(), 0u);
    check_members(job, all, "job team");
    size_t count = 0;
    TOK(sluice_host_ranks(nullptr, 0, &count));
    std::vector<sluice_rank_t> local(count);
    TOK(sluice_host_ranks(local.data(), count, &count));
    check_members(host, local, "host team");
    const sluice_rank_t index = static_cast<sluice_rank_t>(std::find(local.begin(), local.end(), me) - local.begin());
    std::vector<sluice_rank_t> want_across;
    for (std::uint32_t h = 0; h < sluice_host_count(); ++h) {
        std::vector<sluice_rank_t> on_h;
        for (sluice_rank_t r = 0; r < nranks; ++r) {
            std::uint32_t hr = 0;
            TOK(sluice_host_of(r, &hr));
            if (hr == h) on_h.push_back(r);
        }
        if (index < on_h.size()) want_across.push_back(on_h[index]);
    }
    check_members(across, want_across, "across-hosts team");
    // C++ API agrees.
    sluice::Team cj = sluice::Team::job();
    TCHECK(cj.rank() == me && cj.size() == nranks, "C++ job team: rank %u size %u", cj.rank(), cj.size());

    // Random splits, nested splits and lists.
    for (std::uint64_t round = 0; round < 12; ++round) {
        Rng rng(round + 77);
        std::vector<int> colors(nranks), keys(nranks);
        for (sluice_rank_t r = 0; r < nranks; ++r) {
            colors[r] = rng.below(5) == 0 ? SLUICE_TEAM_NO_COLOR : static_cast<int>(rng.below(3));
            keys[r] = static_cast<int>(rng.below(4));
        }
        sluice_team_t t = SLUICE_TEAM_NULL;
        TOK(sluice_team_split(job, colors[me], keys[me], &t));
        if (colors[me] == SLUICE_TEAM_NO_COLOR) {
            TCHECK(t == SLUICE_TEAM_NULL, "NO_COLOR got a team");
            continue;
        }
        const std::vector<sluice_rank_t> members = split_members(colors, keys, colors[me], all);
        check_members(t, members, "split");
        // The team works: the sum of its job ranks.
        std::int64_t mine = me, sum = 0, want = 0;
        for (sluice_rank_t m : members) want += m;
        TOK(sluice_coll_reduce_all(t, &sum, &mine, SLUICE_DT_I64, 0, 1, SLUICE_REDUCE_SUM, nullptr, nullptr));
        TCHECK(sum == want, "reduce_all on a split: %lld, expected %lld", static_cast<long long>(sum),
               static_cast<long long>(want));
        // A split of the split, by the reverse of team rank.
        const sluice_rank_t tr = sluice_team_rank(t), ts = sluice_team_size(t);
        sluice_team_t sub = SLUICE_TEAM_NULL;
        TOK(sluice_team_split(t, static_cast<int>(tr % 2), static_cast<int>(ts - tr), &sub));
        std::vector<sluice_rank_t> want_sub;
        for (sluice_rank_t i = ts; i-- > 0;)
            if (i % 2 == tr % 2) want_sub.push_back(members[i]);
        check_members(sub, want_sub, "nested split");
        // A list from the split: every other member, reversed.
        std::vector<sluice_rank_t> list;
        for (sluice_rank_t i = ts; i-- > 0;)
            if (i % 2 == 0) list.push_back(members[i]);
        sluice_team_t made = SLUICE_TEAM_NULL;
        TOK(sluice_team_create(t, list.data(), list.size(), &made));
        if (tr % 2 == 0) check_members(made, list, "create");
        else TCHECK(made == SLUICE_TEAM_NULL, "a rank not listed got a team");
        if (made) TOK(sluice_team_destroy(made));
        TOK(sluice_team_destroy(sub));
        TOK(sluice_team_destroy(t));
    }
    bad_team_calls();
    TOK(sluice_barrier());
    report_expected_errors();
    TOK(sluice_finalize());
    return 0;
}

int case_coll(int argc, char **argv) {
    const unsigned long iterations = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 20;
    attach(4096);
    for (unsigned long it = 0; it < iterations; ++it) {
        Rng rng(it * 131 + 5);
        std::vector<sluice_rank_t> members;
        bool made = false;
        sluice_team_t t = random_team(rng, members, made);
        // Every rank draws the same numbers: those outside the team draw
        // with their own copy and skip.
        const std::uint64_t seq = it * 100;
        if (t) {
            Rng r2(it * 7 + 1);
            check_broadcast(t, members, r2, seq + 10);
            reduce_every_pair(t, members, r2, seq + 20);
            check_allgather(t, members, r2, seq + 30);
            check_alltoall(t, members, r2, seq + 40);
            check_barrier(t, members, seq + 50);
            check_broadcast(t, members, r2, seq + 60);
        }
        if (made) TOK(sluice_team_destroy(t));
        TOK(sluice_barrier());
        check_overlap(rng, seq + 70);
    }
    bad_coll_calls();
    TOK(sluice_barrier());
    report_expected_errors();
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
