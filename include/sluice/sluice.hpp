// sluice/sluice.hpp - the C++ API of Sluice.
//
// The same calls as <sluice.h>, with the same completion and handler rules
// (read the comment at the top of sluice.h), in namespace sluice, with
// variadic AM arguments and [[nodiscard]] statuses.  No call throws.
#pragma once

#include <sluice.h>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace sluice {

enum class Status : int {
    ok = SLUICE_OK,
    not_ready = SLUICE_NOT_READY,
    argument = SLUICE_ERR_ARGUMENT,
    rank = SLUICE_ERR_RANK,
    handler = SLUICE_ERR_HANDLER,
    segment = SLUICE_ERR_SEGMENT,
    too_large = SLUICE_ERR_TOO_LARGE,
    context = SLUICE_ERR_CONTEXT,
    state = SLUICE_ERR_STATE,
    resource = SLUICE_ERR_RESOURCE,
    bootstrap = SLUICE_ERR_BOOTSTRAP,
    transport = SLUICE_ERR_TRANSPORT,
};

using Rank = sluice_rank_t;
using Token = sluice_token_t;
using HandlerIndex = sluice_handler_t;
using HandlerFn = sluice_handler_fn;
using Event = sluice_event_t;
inline constexpr Event event_done = SLUICE_EVENT_DONE;
inline constexpr unsigned max_am_args = SLUICE_AM_MAX_ARGS;

enum class Category : int {
    short_ = SLUICE_AM_SHORT,
    medium = SLUICE_AM_MEDIUM,
    long_ = SLUICE_AM_LONG,
};

inline std::string_view to_string(Status s) {
    return sluice_status_string(static_cast<int>(s));
}
inline std::string_view last_error() { return sluice_last_error(); }

namespace detail {
inline Status wrap(sluice_status_t s) { return static_cast<Status>(s); }
template <class... A>
std::array<std::uint32_t, sizeof...(A)> pack(A... a) {
    static_assert(sizeof...(A) <= SLUICE_AM_MAX_ARGS, "at most 16 AM arguments");
    return {static_cast<std::uint32_t>(a)...};
}
} // namespace detail

[[nodiscard]] inline Status init(int *argc = nullptr, char ***argv = nullptr) {
    return detail::wrap(sluice_init(argc, argv));
}
[[nodiscard]] inline Status finalize() { return detail::wrap(sluice_finalize()); }
inline bool initialized() { return sluice_initialized() != 0; }
inline bool in_handler() { return sluice_in_handler() != 0; }
inline Rank rank() { return sluice_rank(); }
inline Rank size() { return sluice_size(); }
inline std::uint32_t host_count() { return sluice_host_count(); }
inline std::uint32_t host_of(Rank r) {
    std::uint32_t h = UINT32_MAX;
    (void)sluice_host_of(r, &h);
    return h;
}
inline std::string_view host_name(Rank r) {
    const char *n = "";
    (void)sluice_host_name(r, &n);
    return n;
}
inline std::vector<Rank> host_ranks() {
    std::size_t count = 0;
    (void)sluice_host_ranks(nullptr, 0, &count);
    std::vector<Rank> v(count);
    (void)sluice_host_ranks(v.data(), v.size(), &count);
    return v;
}

[[nodiscard]] inline Status segment_attach(std::size_t bytes) {
    return detail::wrap(sluice_segment_attach(bytes));
}
struct Segment {
    void *base = nullptr;
    std::size_t size = 0;
};
inline Segment segment(Rank r) {
    Segment s;
    (void)sluice_segment_info(r, &s.base, &s.size);
    return s;
}

[[nodiscard]] inline Status register_handler(HandlerIndex index, HandlerFn fn,
                                             Category category, unsigned nargs) {
    return detail::wrap(sluice_handler_register(
        index, fn, static_cast<sluice_am_category_t>(category), nargs));
}
inline std::size_t max_medium() { return sluice_am_max_medium(); }
inline std::size_t max_long() { return sluice_am_max_long(); }
inline Rank source(Token t) {
    Rank r = UINT32_MAX;
    (void)sluice_token_source(t, &r);
    return r;
}

template <class... A>
[[nodiscard]] Status request_short(Rank dest, HandlerIndex h, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(sluice_am_request_short(dest, h, a.data(), a.size()));
}
template <class... A>
[[nodiscard]] Status request_medium(Rank dest, HandlerIndex h, const void *payload,
                                    std::size_t length, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(
        sluice_am_request_medium(dest, h, payload, length, a.data(), a.size()));
}
template <class... A>
[[nodiscard]] Status request_long(Rank dest, HandlerIndex h, const void *payload,
                                  std::size_t length, void *dest_addr, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(sluice_am_request_long(dest, h, payload, length, dest_addr,
                                               a.data(), a.size()));
}
// The same with a flag first: Flag::immediate (SLUICE_FLAG_IMMEDIATE)
// returns Status::not_ready instead of polling where the call would wait
// for room (<sluice.h> says exactly when).
enum class Flag : unsigned { none = 0, immediate = SLUICE_FLAG_IMMEDIATE };
template <class... A>
[[nodiscard]] Status request_short(Flag f, Rank dest, HandlerIndex h, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(sluice_am_request_short_f(dest, h, a.data(), a.size(), static_cast<unsigned>(f)));
}
template <class... A>
[[nodiscard]] Status request_medium(Flag f, Rank dest, HandlerIndex h, const void *payload,
                                    std::size_t length, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(sluice_am_request_medium_f(dest, h, payload, length, a.data(), a.size(),
                                                   static_cast<unsigned>(f)));
}
template <class... A>
[[nodiscard]] Status request_long(Flag f, Rank dest, HandlerIndex h, const void *payload,
                                  std::size_t length, void *dest_addr, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(sluice_am_request_long_f(dest, h, payload, length, dest_addr, a.data(), a.size(),
                                                 static_cast<unsigned>(f)));
}
template <class... A>
[[nodiscard]] Status reply_short(Token t, HandlerIndex h, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(sluice_am_reply_short(t, h, a.data(), a.size()));
}
template <class... A>
[[nodiscard]] Status reply_medium(Token t, HandlerIndex h, const void *payload,
                                  std::size_t length, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(
        sluice_am_reply_medium(t, h, payload, length, a.data(), a.size()));
}
template <class... A>
[[nodiscard]] Status reply_long(Token t, HandlerIndex h, const void *payload,
                                std::size_t length, void *dest_addr, A... args) {
    auto a = detail::pack(args...);
    return detail::wrap(
        sluice_am_reply_long(t, h, payload, length, dest_addr, a.data(), a.size()));
}

[[nodiscard]] inline Status put(Rank r, void *dest, const void *src, std::size_t n) {
    return detail::wrap(sluice_put(r, dest, src, n));
}
[[nodiscard]] inline Status get(void *dest, Rank r, const void *src, std::size_t n) {
    return detail::wrap(sluice_get(dest, r, src, n));
}
[[nodiscard]] inline Status put_nb(Rank r, void *dest, const void *src,
                                   std::size_t n, Event &ev) {
    return detail::wrap(sluice_put_nb(r, dest, src, n, &ev));
}
[[nodiscard]] inline Status get_nb(void *dest, Rank r, const void *src,
                                   std::size_t n, Event &ev) {
    return detail::wrap(sluice_get_nb(dest, r, src, n, &ev));
}
[[nodiscard]] inline Status put_nbi(Rank r, void *dest, const void *src, std::size_t n) {
    return detail::wrap(sluice_put_nbi(r, dest, src, n));
}
[[nodiscard]] inline Status get_nbi(void *dest, Rank r, const void *src, std::size_t n) {
    return detail::wrap(sluice_get_nbi(dest, r, src, n));
}
[[nodiscard]] inline Status put_nb(Flag f, Rank r, void *dest, const void *src, std::size_t n, Event &ev) {
    return detail::wrap(sluice_put_nb_f(r, dest, src, n, &ev, static_cast<unsigned>(f)));
}
[[nodiscard]] inline Status get_nb(Flag f, void *dest, Rank r, const void *src, std::size_t n, Event &ev) {
    return detail::wrap(sluice_get_nb_f(dest, r, src, n, &ev, static_cast<unsigned>(f)));
}
[[nodiscard]] inline Status put_nbi(Flag f, Rank r, void *dest, const void *src, std::size_t n) {
    return detail::wrap(sluice_put_nbi_f(r, dest, src, n, static_cast<unsigned>(f)));
}
[[nodiscard]] inline Status get_nbi(Flag f, void *dest, Rank r, const void *src, std::size_t n) {
    return detail::wrap(sluice_get_nbi_f(dest, r, src, n, static_cast<unsigned>(f)));
}
[[nodiscard]] inline Status test(Event ev) { return detail::wrap(sluice_event_test(ev)); }
[[nodiscard]] inline Status wait(Event ev) { return detail::wrap(sluice_event_wait(ev)); }
[[nodiscard]] inline Status wait_all(std::span<Event> evs) {
    return detail::wrap(sluice_event_wait_all(evs.data(), evs.size()));
}
[[nodiscard]] inline Status nbi_sync() { return detail::wrap(sluice_nbi_sync()); }

[[nodiscard]] inline Status barrier() { return detail::wrap(sluice_barrier()); }
[[nodiscard]] inline Status allgather(const void *in, void *out, std::size_t n) {
    return detail::wrap(sluice_allgather(in, out, n));
}
inline Status poll() { return detail::wrap(sluice_poll()); }
inline Status poll_wait() { return detail::wrap(sluice_poll_wait()); }
[[noreturn]] inline void exit(int code) { sluice_exit(code); }

} // namespace sluice

// The client families: teams and collectives, atomic domains, VIS and
// completion extras, negotiated-payload AMs.
#include <sluice/team.hpp>
#include <sluice/atomic.hpp>
#include <sluice/vis.hpp>
#include <sluice/am_prepare.hpp>
