// tests/mp/mp_args.cpp - 0 to 16 AM arguments in every category, through the
// C API and the variadic C++ API, in requests and replies.
#include "tests/mp/mp_cases.hpp"

#include <sluice/sluice.hpp>

#include <array>
#include <atomic>
#include <utility>

namespace sluice_test::mp {
namespace {

constexpr unsigned kinds = 17;  // 0..16 arguments
// Handler index of each (category, request/reply, nargs).
constexpr sluice_handler_t index_of(int category, bool reply, unsigned n) {
    return static_cast<sluice_handler_t>(100 + (category * 2 + (reply ? 1 : 0)) * kinds + n);
}
static_assert(100 + (SLUICE_AM_LONG * 2 + 1) * kinds + 16 <= 255, "handler indices fit in 0..255");

std::uint32_t arg_value(sluice_rank_t from, sluice_rank_t to, unsigned n, unsigned i, bool reply) {
    return (from << 24) ^ (to << 16) ^ (n << 8) ^ (i * 0x9E3779B1u) ^ (reply ? 0x80000000u : 0u);
}
std::uint32_t payload_seed(sluice_rank_t from, unsigned n) { return from * 977 + n; }
// Long payloads of (from, n) go here in the target's segment; replies in the
// second half.
std::size_t long_offset(sluice_rank_t from, unsigned n, bool reply) {
    return (reply ? 65536 : 0) + (from * kinds + n) * 64 + 1;
}

std::atomic<std::uint64_t> requests_seen{0}, replies_seen{0};

template <std::size_t N>
using Args = std::array<std::uint32_t, N>;

// The C++ API with exactly N arguments taken from v.
template <std::size_t N>
sluice::Status cpp_request(int category, sluice::Rank dest, sluice::HandlerIndex h, const void *payload,
                           std::size_t len, void *dest_addr, const std::uint32_t *v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        if (category == SLUICE_AM_SHORT) return sluice::request_short(dest, h, v[I]...);
        if (category == SLUICE_AM_MEDIUM) return sluice::request_medium(dest, h, payload, len, v[I]...);
        return sluice::request_long(dest, h, payload, len, dest_addr, v[I]...);
    }(std::make_index_sequence<N>{});
}
template <std::size_t N>
sluice::Status cpp_reply(int category, sluice::Token t, sluice::HandlerIndex h, const void *payload,
                         std::size_t len, void *dest_addr, const std::uint32_t *v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        if (category == SLUICE_AM_SHORT) return sluice::reply_short(t, h, v[I]...);
        if (category == SLUICE_AM_MEDIUM) return sluice::reply_medium(t, h, payload, len, v[I]...);
        return sluice::reply_long(t, h, payload, len, dest_addr, v[I]...);
    }(std::make_index_sequence<N>{});
}
using RequestFn = sluice::Status (*)(int, sluice::Rank, sluice::HandlerIndex, const void *, std::size_t, void *,
                                     const std::uint32_t *);
using ReplyFn = sluice::Status (*)(int, sluice::Token, sluice::HandlerIndex, const void *, std::size_t, void *,
                                   const std::uint32_t *);
template <std::size_t... N>
constexpr std::array<RequestFn, sizeof...(N)> request_table(std::index_sequence<N...>) {
    return {&cpp_request<N>...};
}
template <std::size_t... N>
constexpr std::array<ReplyFn, sizeof...(N)> reply_table(std::index_sequence<N...>) {
    return {&cpp_reply<N>...};
}
constexpr auto cpp_requests = request_table(std::make_index_sequence<kinds>{});
constexpr auto cpp_replies = reply_table(std::make_index_sequence<kinds>{});

void check_args(const char *what, sluice_rank_t from, const std::uint32_t *args, unsigned nargs, unsigned n,
                bool reply) {
    TCHECK(nargs == n, "%s from %u: nargs %u, sent %u", what, from, nargs, n);
    for (unsigned i = 0; i < n; ++i)
        TCHECK(args[i] == arg_value(from, me, n, i, reply), "%s from %u with %u args: arg %u is 0x%08x, sent 0x%08x",
               what, from, n, i, args[i], arg_value(from, me, n, i, reply));
}

void check_payload(int category, const char *what, sluice_rank_t from, const void *payload, std::size_t length,
                   unsigned n, bool reply) {
    if (category == SLUICE_AM_SHORT) {
        TCHECK(length == 0, "%s: Short with length %zu", what, length);
        return;
    }
    TCHECK(length == n + 1, "%s from %u: length %zu, sent %u", what, from, length, n + 1);
    TCHECK_PATTERN(payload, length, payload_seed(from, n) + (reply ? 1 : 0), "%s payload from %u", what, from);
    if (category == SLUICE_AM_LONG)
        TCHECK(payload == my_segment() + long_offset(from, n, reply), "%s: Long payload landed at %p", what, payload);
}

std::uint8_t reply_buffer[kinds + 1];

template <int Category>
void on_request(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args,
                unsigned nargs) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(nargs <= 16, "nargs %u", nargs);
    unsigned n = nargs;
    check_args("request", src, args, nargs, n, false);
    check_payload(Category, "request", src, payload, length, n, false);
    std::uint32_t values[16];
    for (unsigned i = 0; i < n; ++i) values[i] = arg_value(me, src, n, i, true);
    pattern_fill(reply_buffer, n + 1, payload_seed(me, n) + 1);
    sluice::Status s = cpp_replies[n](Category, token, index_of(Category, true, n), reply_buffer, n + 1,
                                      segments[src].base + long_offset(me, n, true), values);
    TOK(static_cast<sluice_status_t>(s));
    requests_seen.fetch_add(1);
}

template <int Category>
void on_reply(sluice_token_t token, void *payload, std::size_t length, const std::uint32_t *args, unsigned nargs) {
    sluice_rank_t src = UINT32_MAX;
    TOK(sluice_token_source(token, &src));
    TCHECK(nargs <= 16, "nargs %u", nargs);
    check_args("reply", src, args, nargs, nargs, true);
    check_payload(Category, "reply", src, payload, length, nargs, true);
    replies_seen.fetch_add(1);
}

template <int Category>
void register_category() {
    for (unsigned n = 0; n < kinds; ++n) {
        TOK(sluice_handler_register(index_of(Category, false, n), on_request<Category>,
                                    static_cast<sluice_am_category_t>(Category), n));
        TOK(sluice_handler_register(index_of(Category, true, n), on_reply<Category>,
                                    static_cast<sluice_am_category_t>(Category), n));
    }
}

} // namespace

int case_args(int, char **) {
    attach(2 * 65536);
    register_category<SLUICE_AM_SHORT>();
    register_category<SLUICE_AM_MEDIUM>();
    register_category<SLUICE_AM_LONG>();
    TOK(sluice_barrier());
    std::uint64_t sent = 0;
    std::uint8_t payload[kinds + 1];
    for (int category : {SLUICE_AM_SHORT, SLUICE_AM_MEDIUM, SLUICE_AM_LONG}) {
        for (unsigned n = 0; n < kinds; ++n) {
            for (sluice_rank_t d = 0; d < nranks; ++d) {
                std::uint32_t values[16];
                for (unsigned i = 0; i < n; ++i) values[i] = arg_value(me, d, n, i, false);
                pattern_fill(payload, n + 1, payload_seed(me, n));
                sluice_handler_t h = index_of(category, false, n);
                void *dest_addr = segments[d].base + long_offset(me, n, false);
                // Through the C API ...
                if (category == SLUICE_AM_SHORT)
                    TOK(sluice_am_request_short(d, h, n ? values : nullptr, n));
                else if (category == SLUICE_AM_MEDIUM)
                    TOK(sluice_am_request_medium(d, h, payload, n + 1, n ? values : nullptr, n));
                else
                    TOK(sluice_am_request_long(d, h, payload, n + 1, dest_addr, n ? values : nullptr, n));
                // ... wait for it so the Long slot is free again, then the C++ API.
                ++sent;
                WAIT_UNTIL(replies_seen.load() == sent);
                TOK(static_cast<sluice_status_t>(cpp_requests[n](category, d, h, payload, n + 1, dest_addr, values)));
                ++sent;
                WAIT_UNTIL(replies_seen.load() == sent);
            }
        }
    }
    std::uint64_t expected = 2ull * 3 * kinds * nranks;
    WAIT_UNTIL(requests_seen.load() == expected);
    TOK(sluice_barrier());
    TCHECK(replies_seen.load() == expected && requests_seen.load() == expected, "requests %llu replies %llu",
           static_cast<unsigned long long>(requests_seen.load()),
           static_cast<unsigned long long>(replies_seen.load()));
    TOK(sluice_finalize());
    return 0;
}

} // namespace sluice_test::mp
