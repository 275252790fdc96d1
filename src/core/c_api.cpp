// src/core/c_api.cpp - the C API: state checks, then the runtime.  No
// exception crosses this boundary (nothing below throws on the data path;
// allocation failures at start-up end in std::terminate, reported by the
// fatal-signal handler).
// The exported sluice_put and sluice_get are defined here, not the header's
// inline versions.
#define SLUICE_NO_INLINE_RMA
#include "core/runtime.hpp"

#include <sluice.h>

using sluice::base::Status;
using sluice::core::runtime;
namespace am = sluice::am;

namespace {

inline int code(Status s) { return static_cast<int>(s); }

inline bool running() { return runtime().running(); }

int not_running(const char *op) {
    return code(sluice::base::report(Status::state, op, "call sluice_init first (and not after sluice_finalize)",
                                     "Sluice is not running"));
}

#define SLUICE_REQUIRE_RUNNING(op) \
    if (__builtin_expect(!running(), 0)) return not_running(op)

using am::make_send;

// The flags of the _f calls: SLUICE_FLAG_IMMEDIATE or nothing.
bool flags_valid(unsigned flags, const char *op) {
    if ((flags & ~SLUICE_FLAG_IMMEDIATE) == 0) return true;
    (void)sluice::base::report(Status::argument, op, "pass 0 or SLUICE_FLAG_IMMEDIATE",
                               "unknown flags 0x%x", flags & ~SLUICE_FLAG_IMMEDIATE);
    return false;
}
// A request with `flags`: the plain path, or the one that never polls.
sluice_status_t request_f(sluice_rank_t dest, const am::Send &m, unsigned flags, const char *op) {
    if (!flags_valid(flags, op)) return SLUICE_ERR_ARGUMENT;
    if (flags & SLUICE_FLAG_IMMEDIATE) return code(runtime().am.request_immediate(dest, m, op));
    return code(runtime().am.request(dest, m, op));
}
} // namespace

extern "C" {

const char *sluice_status_string(sluice_status_t status) {
    return sluice::base::status_string(static_cast<Status>(status));
}
const char *sluice_last_error(void) { return sluice::base::last_error(); }

sluice_status_t sluice_init(int *argc, char ***argv) { return code(runtime().init(argc, argv)); }
sluice_status_t sluice_finalize(void) { return code(runtime().finalize()); }
int sluice_initialized(void) { return running() ? 1 : 0; }
int sluice_in_handler(void) { return am::AmEngine::in_handler() ? 1 : 0; }

sluice_rank_t sluice_rank(void) { return runtime().rank(); }
sluice_rank_t sluice_size(void) { return runtime().size(); }
uint32_t sluice_host_count(void) { return runtime().host_count(); }

sluice_status_t sluice_host_of(sluice_rank_t rank, uint32_t *host) {
    SLUICE_REQUIRE_RUNNING("host_of");
    if (rank >= runtime().size())
        return code(sluice::base::report(Status::rank, "host_of", "use a rank below sluice_size()", "rank %u of %u", rank,
                                         runtime().size()));
    if (!host) return code(sluice::base::report(Status::argument, "host_of", "pass an output pointer", "null output"));
    *host = runtime().host_of(rank);
    return SLUICE_OK;
}

sluice_status_t sluice_host_name(sluice_rank_t rank, const char **name) {
    SLUICE_REQUIRE_RUNNING("host_name");
    if (rank >= runtime().size())
        return code(sluice::base::report(Status::rank, "host_name", "use a rank below sluice_size()", "rank %u of %u", rank,
                                         runtime().size()));
    if (!name) return code(sluice::base::report(Status::argument, "host_name", "pass an output pointer", "null output"));
    *name = runtime().host_name(rank).c_str();
    return SLUICE_OK;
}

sluice_status_t sluice_host_ranks(sluice_rank_t *ranks, size_t max, size_t *count) {
    SLUICE_REQUIRE_RUNNING("host_ranks");
    if (!count || (max && !ranks))
        return code(sluice::base::report(Status::argument, "host_ranks", "pass count (and ranks when max > 0)",
                                         "null output"));
    const auto &local = runtime().host_ranks();
    for (size_t i = 0; i < local.size() && i < max; ++i) ranks[i] = local[i];
    *count = local.size();
    return SLUICE_OK;
}

sluice_status_t sluice_segment_attach(size_t size) {
    SLUICE_REQUIRE_RUNNING("segment_attach");
    return code(runtime().segment_attach(size));
}
sluice_status_t sluice_segment_info(sluice_rank_t rank, void **base, size_t *size) {
    SLUICE_REQUIRE_RUNNING("segment_info");
    return code(runtime().segment_info(rank, base, size));
}

sluice_status_t sluice_handler_register(sluice_handler_t index, sluice_handler_fn fn,
                                        sluice_am_category_t category, unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("handler_register");
    return code(runtime().am.handler_register(index, fn, static_cast<am::AmCategory>(category), nargs));
}

size_t sluice_am_max_medium(void) { return running() ? runtime().am.max_medium() : 0; }
size_t sluice_am_max_long(void) { return running() ? runtime().am.max_long() : 0; }

sluice_status_t sluice_receive_memory(sluice_receive_memory_t *memory) {
    SLUICE_REQUIRE_RUNNING("receive_memory");
    if (!memory)
        return code(sluice::base::report(Status::argument, "receive_memory", "pass a sluice_receive_memory_t to fill",
                                         "null output"));
    *memory = sluice_receive_memory_t{};
    if (const sluice::credit::Engine *c = runtime().am.credits()) {
        memory->credits = c->config().total_credits();
        memory->credit_bytes = c->config().credit_bytes;
        memory->credit_space = c->config().receive_bytes();
    }
    memory->receive_buffers = runtime().receive_buffer_bytes();
    return SLUICE_OK;
}

sluice_status_t sluice_am_request_short(sluice_rank_t dest, sluice_handler_t handler, const uint32_t *args,
                                        unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("am_request_short");
    return code(runtime().am.request_short(dest, handler, args, nargs, "am_request_short"));
}
sluice_status_t sluice_am_request_medium(sluice_rank_t dest, sluice_handler_t handler, const void *payload,
                                         size_t length, const uint32_t *args, unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("am_request_medium");
    return code(runtime().am.request(
        dest, make_send(am::AmCategory::medium, handler, payload, length, nullptr, args, nargs), "am_request_medium"));
}
sluice_status_t sluice_am_request_long(sluice_rank_t dest, sluice_handler_t handler, const void *payload,
                                       size_t length, void *dest_addr, const uint32_t *args, unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("am_request_long");
    return code(runtime().am.request(
        dest, make_send(am::AmCategory::long_, handler, payload, length, dest_addr, args, nargs), "am_request_long"));
}
sluice_status_t sluice_am_request_short_f(sluice_rank_t dest, sluice_handler_t handler, const uint32_t *args,
                                          unsigned nargs, unsigned flags) {
    SLUICE_REQUIRE_RUNNING("am_request_short_f");
    if (flags == 0) return code(runtime().am.request_short(dest, handler, args, nargs, "am_request_short_f"));
    return request_f(dest, make_send(am::AmCategory::short_, handler, nullptr, 0, nullptr, args, nargs), flags,
                     "am_request_short_f");
}
sluice_status_t sluice_am_request_medium_f(sluice_rank_t dest, sluice_handler_t handler, const void *payload,
                                           size_t length, const uint32_t *args, unsigned nargs, unsigned flags) {
    SLUICE_REQUIRE_RUNNING("am_request_medium_f");
    return request_f(dest, make_send(am::AmCategory::medium, handler, payload, length, nullptr, args, nargs), flags,
                     "am_request_medium_f");
}
sluice_status_t sluice_am_request_long_f(sluice_rank_t dest, sluice_handler_t handler, const void *payload,
                                         size_t length, void *dest_addr, const uint32_t *args, unsigned nargs,
                                         unsigned flags) {
    SLUICE_REQUIRE_RUNNING("am_request_long_f");
    const am::Send m = make_send(am::AmCategory::long_, handler, payload, length, dest_addr, args, nargs);
    // SLUICE_FLAG_NBI: the payload is released by the NBI sync of SLUICE_NBI_AMS.
    if (flags == SLUICE_FLAG_NBI)
        return code(runtime().am.request_nbi(dest, m, &sluice::rma::nbi_counter(sluice::rma::NbiCategory::ams),
                                             "am_request_long_f"));
    if (flags & SLUICE_FLAG_NBI) {
        (void)sluice::base::report(Status::argument, "am_request_long_f", "pass SLUICE_FLAG_NBI alone",
                                   "flags 0x%x: SLUICE_FLAG_NBI does not combine with others", flags);
        return SLUICE_ERR_ARGUMENT;
    }
    return request_f(dest, m, flags, "am_request_long_f");
}
sluice_status_t sluice_am_reply_short(sluice_token_t token, sluice_handler_t handler, const uint32_t *args,
                                      unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("am_reply_short");
    return code(runtime().am.reply_short(token, handler, args, nargs, "am_reply_short"));
}
sluice_status_t sluice_am_reply_medium(sluice_token_t token, sluice_handler_t handler, const void *payload,
                                       size_t length, const uint32_t *args, unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("am_reply_medium");
    return code(runtime().am.reply(
        token, make_send(am::AmCategory::medium, handler, payload, length, nullptr, args, nargs), "am_reply_medium"));
}
sluice_status_t sluice_am_reply_long(sluice_token_t token, sluice_handler_t handler, const void *payload,
                                     size_t length, void *dest_addr, const uint32_t *args, unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("am_reply_long");
    return code(runtime().am.reply(
        token, make_send(am::AmCategory::long_, handler, payload, length, dest_addr, args, nargs), "am_reply_long"));
}
sluice_status_t sluice_token_source(sluice_token_t token, sluice_rank_t *src) {
    if (!token || !src)
        return code(sluice::base::report(Status::argument, "token_source", "pass the handler's token and an output",
                                         "null argument"));
    *src = token->source;
    return SLUICE_OK;
}

sluice_status_t sluice_put(sluice_rank_t rank, void *dest, const void *src, size_t length) {
    SLUICE_REQUIRE_RUNNING("put");
    return code(runtime().rma.put(rank, dest, src, length, "put"));
}
sluice_status_t sluice_get(void *dest, sluice_rank_t rank, const void *src, size_t length) {
    SLUICE_REQUIRE_RUNNING("get");
    return code(runtime().rma.get(dest, rank, src, length, "get"));
}
sluice_status_t sluice_put_nb(sluice_rank_t rank, void *dest, const void *src, size_t length, sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("put_nb");
    return code(runtime().rma.put_nb(rank, dest, src, length, event));
}
sluice_status_t sluice_get_nb(void *dest, sluice_rank_t rank, const void *src, size_t length, sluice_event_t *event) {
    SLUICE_REQUIRE_RUNNING("get_nb");
    return code(runtime().rma.get_nb(dest, rank, src, length, event));
}
sluice_status_t sluice_put_nbi(sluice_rank_t rank, void *dest, const void *src, size_t length) {
    SLUICE_REQUIRE_RUNNING("put_nbi");
    return code(runtime().rma.put_nbi(rank, dest, src, length));
}
sluice_status_t sluice_get_nbi(void *dest, sluice_rank_t rank, const void *src, size_t length) {
    SLUICE_REQUIRE_RUNNING("get_nbi");
    return code(runtime().rma.get_nbi(dest, rank, src, length));
}
sluice_status_t sluice_put_nb_f(sluice_rank_t rank, void *dest, const void *src, size_t length, sluice_event_t *event,
                                unsigned flags) {
    SLUICE_REQUIRE_RUNNING("put_nb_f");
    if (!flags_valid(flags, "put_nb_f")) return SLUICE_ERR_ARGUMENT;
    return code(runtime().rma.put_nb(rank, dest, src, length, event, flags & SLUICE_FLAG_IMMEDIATE));
}
sluice_status_t sluice_get_nb_f(void *dest, sluice_rank_t rank, const void *src, size_t length, sluice_event_t *event,
                                unsigned flags) {
    SLUICE_REQUIRE_RUNNING("get_nb_f");
    if (!flags_valid(flags, "get_nb_f")) return SLUICE_ERR_ARGUMENT;
    return code(runtime().rma.get_nb(dest, rank, src, length, event, flags & SLUICE_FLAG_IMMEDIATE));
}
sluice_status_t sluice_put_nbi_f(sluice_rank_t rank, void *dest, const void *src, size_t length, unsigned flags) {
    SLUICE_REQUIRE_RUNNING("put_nbi_f");
    if (!flags_valid(flags, "put_nbi_f")) return SLUICE_ERR_ARGUMENT;
    return code(runtime().rma.put_nbi(rank, dest, src, length, flags & SLUICE_FLAG_IMMEDIATE));
}
sluice_status_t sluice_get_nbi_f(void *dest, sluice_rank_t rank, const void *src, size_t length, unsigned flags) {
    SLUICE_REQUIRE_RUNNING("get_nbi_f");
    if (!flags_valid(flags, "get_nbi_f")) return SLUICE_ERR_ARGUMENT;
    return code(runtime().rma.get_nbi(dest, rank, src, length, flags & SLUICE_FLAG_IMMEDIATE));
}
sluice_status_t sluice_event_test(sluice_event_t event) {
    SLUICE_REQUIRE_RUNNING("event_test");
    return code(runtime().rma.event_test(event));
}
sluice_status_t sluice_event_wait(sluice_event_t event) {
    SLUICE_REQUIRE_RUNNING("event_wait");
    return code(runtime().rma.event_wait(event));
}
sluice_status_t sluice_event_wait_all(sluice_event_t *events, size_t count) {
    SLUICE_REQUIRE_RUNNING("event_wait_all");
    if (count && !events)
        return code(sluice::base::report(Status::argument, "event_wait_all", "pass the event array", "null array"));
    for (size_t i = 0; i < count; ++i) {
        if (Status s = runtime().rma.event_wait(events[i]); s != Status::ok) return code(s);
        events[i] = SLUICE_EVENT_DONE;
    }
    return SLUICE_OK;
}
sluice_status_t sluice_nbi_sync(void) {
    SLUICE_REQUIRE_RUNNING("nbi_sync");
    return code(runtime().rma.nbi_sync());
}

sluice_status_t sluice_barrier(void) {
    SLUICE_REQUIRE_RUNNING("barrier");
    if (__builtin_expect(am::AmEngine::prepared(), 0)) return code(am::AmEngine::prepared_refuse("barrier"));
    return code(runtime().barrier());
}
sluice_status_t sluice_allgather(const void *in, void *out, size_t length) {
    SLUICE_REQUIRE_RUNNING("allgather");
    return code(runtime().allgather(in, out, length));
}
namespace {
[[gnu::always_inline]] inline sluice_status_t poll_checked(const char *op, sluice::core::Runtime::Poller who) {
    if (__builtin_expect(am::AmEngine::prepared(), 0)) return code(am::AmEngine::prepared_refuse(op));
    if (am::AmEngine::in_handler())
        return code(sluice::base::report(Status::context, op, "do not poll from a handler", "called from a handler"));
    runtime().poll(who);
    return SLUICE_OK;
}
} // namespace

sluice_status_t sluice_poll(void) {
    SLUICE_REQUIRE_RUNNING("poll");
    return poll_checked("poll", sluice::core::Runtime::Poller::program);
}
sluice_status_t sluice_poll_wait(void) {
    SLUICE_REQUIRE_RUNNING("poll_wait");
    return poll_checked("poll_wait", sluice::core::Runtime::Poller::program_wait);
}

void sluice_exit(int code) {
    auto &rt = runtime();
    if (!rt.running()) {
        std::fflush(nullptr);
        ::_exit(code);
    }
    rt.exit(code);
}

} // extern "C"
