/*
 * sluice.h - the C API of Sluice, a PGAS communication runtime.
 *
 * Every function here has the same meaning as its C++ counterpart in
 * <sluice/sluice.hpp>; the C++ API is a thin layer over this one.
 *
 * General rules
 * -------------
 * - Every call returns a sluice_status_t: SLUICE_OK (0) on success, a negative
 *   code on failure.  A failing call prints one line on stderr naming the rank,
 *   the operation and the fix (silence it with SLUICE_QUIET_ERRORS=1), and the
 *   same text stays available from sluice_last_error() on the calling thread.
 *   Outputs are written only on success.
 * - Ranks are 0 .. sluice_size()-1.  Out-of-range ranks give SLUICE_ERR_RANK.
 * - The library is thread-safe: any thread may call any function after
 *   sluice_init() returns, except where a rule below says otherwise.
 * - Progress: the library makes progress (runs handlers, completes
 *   non-blocking operations) only inside Sluice calls.  Every blocking call
 *   polls; a program that computes for long stretches should call
 *   sluice_poll() now and then.
 *
 * Handler rules
 * -------------
 * - A handler runs inside a Sluice call on the receiving rank (never in
 *   signal context, never with an internal lock held), on the thread that
 *   called it.
 * - A request handler may send at most one reply, to the requesting rank,
 *   with sluice_am_reply_*() and the token it was given.  It may not send
 *   requests, call sluice_poll(), a barrier, a blocking RMA or anything else
 *   that waits.  If it sends no reply, Sluice sends a hidden one where the
 *   conduit needs it for flow control.
 * - A reply handler may send nothing at all.
 * - Handlers must not block: debug builds (--enable-debug) check these rules.
 * - sluice_exit() may be called from any handler; it does not return.
 * - The Medium payload pointer is valid only until the handler returns.  A
 *   Long payload is already in the segment when the handler runs.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLUICE_VERSION_MAJOR 0
#define SLUICE_VERSION_MINOR 1

/* ---- status ------------------------------------------------------------ */
typedef int sluice_status_t;
enum {
    SLUICE_OK = 0,
    SLUICE_NOT_READY = 1,          /* sluice_event_test: not complete yet;
                                      SLUICE_FLAG_IMMEDIATE: would block */
    SLUICE_ERR_ARGUMENT = -1,      /* a bad argument (null, size, nargs) */
    SLUICE_ERR_RANK = -2,          /* rank out of range */
    SLUICE_ERR_HANDLER = -3,       /* handler unregistered or wrong category */
    SLUICE_ERR_SEGMENT = -4,       /* address range outside the segment */
    SLUICE_ERR_TOO_LARGE = -5,     /* payload above the category's maximum */
    SLUICE_ERR_CONTEXT = -6,       /* call not allowed here (handler rules) */
    SLUICE_ERR_STATE = -7,         /* not initialized, already attached, ... */
    SLUICE_ERR_RESOURCE = -8,      /* out of memory, shm, descriptors */
    SLUICE_ERR_BOOTSTRAP = -9,     /* the spawner failed */
    SLUICE_ERR_TRANSPORT = -10     /* the conduit failed */
};
const char *sluice_status_string(sluice_status_t status);
/* The message of the last failed call on this thread ("" if none). */
const char *sluice_last_error(void);

/* ---- init, ranks, hosts -------------------------------------------------- */
typedef uint32_t sluice_rank_t;

/* Collective.  Starts the runtime: finds the spawner, learns rank and size,
 * sets up the conduits.  argc/argv may be NULL.  A program started without a
 * launcher is a 1-rank job.  Calling it twice gives SLUICE_ERR_STATE. */
sluice_status_t sluice_init(int *argc, char ***argv);
/* Collective.  Drains outstanding operations, runs a barrier and releases
 * every resource.  When it returns on any rank, every AM request any rank
 * sent before calling it has run its handler, and the reply each handler
 * sent (and the hidden one) has run at the requester.  The process goes on
 * (MPI may still be used); Sluice may not be initialized again.  Returning
 * from main() without it is allowed: that is an exit with main's return
 * code. */
sluice_status_t sluice_finalize(void);
int sluice_initialized(void);
/* 1 if the calling thread is running a Sluice AM handler, else 0.  Code that
 * may be reached from a handler (a progress hook in another library, a
 * callback) asks before calling what handlers may not: sluice_poll,
 * blocking RMA, barriers. */
int sluice_in_handler(void);

sluice_rank_t sluice_rank(void);
sluice_rank_t sluice_size(void);
/* Host index of a rank: ranks with the same index share a host.  Host
 * indices are 0 .. sluice_host_count()-1, in order of each host's lowest rank. */
sluice_status_t sluice_host_of(sluice_rank_t rank, uint32_t *host);
uint32_t sluice_host_count(void);
/* Host name of a rank (valid until finalize). */
sluice_status_t sluice_host_name(sluice_rank_t rank, const char **name);
/* Ranks on my host, ascending.  *count is set to the number of such ranks;
 * up to `max` are written into `ranks` (may be NULL when max is 0). */
sluice_status_t sluice_host_ranks(sluice_rank_t *ranks, size_t max,
                                  size_t *count);

/* ---- segments ------------------------------------------------------------ */
/* Collective.  Every rank attaches one segment of `size` bytes (rounded up to
 * the page size; ranks may ask different sizes, 0 is allowed).  RMA and AM
 * Long target addresses must lie in the target rank's segment. */
sluice_status_t sluice_segment_attach(size_t size);
/* Base and size of `rank`'s segment, as addresses in that rank's space. */
sluice_status_t sluice_segment_info(sluice_rank_t rank, void **base,
                                    size_t *size);

/* ---- active messages ----------------------------------------------------- */
typedef struct sluice_token *sluice_token_t;
typedef uint8_t sluice_handler_t; /* handler index, 0..255 */
typedef enum {
    SLUICE_AM_SHORT = 0,  /* arguments only */
    SLUICE_AM_MEDIUM = 1, /* arguments + payload delivered in a buffer */
    SLUICE_AM_LONG = 2    /* arguments + payload written into the segment */
} sluice_am_category_t;
#define SLUICE_AM_MAX_ARGS 16

/* The one handler signature.  Short: payload NULL, length 0.  Medium: a
 * buffer valid while the handler runs.  Long: the address in this rank's
 * segment where the payload was written.  `args` holds `nargs` values. */
typedef void (*sluice_handler_fn)(sluice_token_t token, void *payload,
                                  size_t length, const uint32_t *args,
                                  unsigned nargs);

/* Register `fn` at `index` for messages of `category` with exactly `nargs`
 * (0..16) arguments.  Call after sluice_init and before any message for that
 * index can arrive (register on every rank, then barrier).  Re-registering an
 * index replaces it. */
sluice_status_t sluice_handler_register(sluice_handler_t index,
                                        sluice_handler_fn fn,
                                        sluice_am_category_t category,
                                        unsigned nargs);

/* Largest payloads, for requests and replies alike, over every peer. */
size_t sluice_am_max_medium(void);
size_t sluice_am_max_long(void);

/* Memory this rank holds to receive active messages (docs/scale.md):
 *   credits, credit_bytes  the AM request credits this rank owns (what its
 *                          peers hold of it plus its bank) and the request
 *                          bytes one credit stands for; 0 and 0 when no
 *                          transport of the job uses flow control
 *                          (SLUICE_CREDIT_FLOW)
 *   credit_space           credits x credit_bytes: the most request bytes
 *                          its peers may have in flight to it at once
 *   receive_buffers        what its conduits set aside to receive into:
 *                          posted or ring buffers, and the kernel receive
 *                          buffers of its sockets (as the kernel granted) */
typedef struct sluice_receive_memory {
    size_t credits;
    size_t credit_bytes;
    size_t credit_space;
    size_t receive_buffers;
} sluice_receive_memory_t;
sluice_status_t sluice_receive_memory(sluice_receive_memory_t *memory);

/* Requests.  Completion: each returns once `payload` may be reused; delivery
 * is asynchronous.  Sending may poll (and so run handlers) while the
 * destination queue is full; it never drops a message.  A Long's `dest` must
 * lie in the target's segment, with the whole payload. */
sluice_status_t sluice_am_request_short(sluice_rank_t dest,
                                        sluice_handler_t handler,
                                        const uint32_t *args, unsigned nargs);
sluice_status_t sluice_am_request_medium(sluice_rank_t dest,
                                         sluice_handler_t handler,
                                         const void *payload, size_t length,
                                         const uint32_t *args, unsigned nargs);
sluice_status_t sluice_am_request_long(sluice_rank_t dest,
                                       sluice_handler_t handler,
                                       const void *payload, size_t length,
                                       void *dest_addr, const uint32_t *args,
                                       unsigned nargs);
/* The same with flags.  SLUICE_FLAG_IMMEDIATE: where the call would poll
 * while waiting for room (AM credits for the destination, the conduit's
 * send buffers or queue space), it returns SLUICE_NOT_READY at once
 * instead, having sent nothing and run no handler; call sluice_poll() and
 * try again.  A Long above the conduit's packed limit (a two-part Long) may
 * still poll until its payload has left, once it is under way.  Flags 0:
 * the calls above.  Other bits: SLUICE_ERR_ARGUMENT. */
#define SLUICE_FLAG_IMMEDIATE 0x1u
sluice_status_t sluice_am_request_short_f(sluice_rank_t dest,
                                          sluice_handler_t handler,
                                          const uint32_t *args, unsigned nargs,
                                          unsigned flags);
sluice_status_t sluice_am_request_medium_f(sluice_rank_t dest,
                                           sluice_handler_t handler,
                                           const void *payload, size_t length,
                                           const uint32_t *args, unsigned nargs,
                                           unsigned flags);
sluice_status_t sluice_am_request_long_f(sluice_rank_t dest,
                                         sluice_handler_t handler,
                                         const void *payload, size_t length,
                                         void *dest_addr, const uint32_t *args,
                                         unsigned nargs, unsigned flags);
/* Replies: only from a request handler, at most once, with its token. */
sluice_status_t sluice_am_reply_short(sluice_token_t token,
                                      sluice_handler_t handler,
                                      const uint32_t *args, unsigned nargs);
sluice_status_t sluice_am_reply_medium(sluice_token_t token,
                                       sluice_handler_t handler,
                                       const void *payload, size_t length,
                                       const uint32_t *args, unsigned nargs);
sluice_status_t sluice_am_reply_long(sluice_token_t token,
                                     sluice_handler_t handler,
                                     const void *payload, size_t length,
                                     void *dest_addr, const uint32_t *args,
                                     unsigned nargs);
/* The rank that sent the message a handler is running for. */
sluice_status_t sluice_token_source(sluice_token_t token, sluice_rank_t *src);

/* ---- RMA ----------------------------------------------------------------- */
/* The remote address range must lie in `rank`'s segment; the local buffer may
 * be anywhere.  Overlapping concurrent RMA to the same bytes is undefined.
 *
 * Blocking: returns when the data is in place (Put: visible at the target;
 * Get: in `dest`).  Non-blocking (_nb): returns an event; the source of a
 * Put and the destination of a Get may not be touched until the event
 * completes.  SLUICE_EVENT_DONE means it already completed.  Implicit (_nbi):
 * completes by sluice_nbi_sync() on the same thread. */
typedef struct sluice_event *sluice_event_t;
#define SLUICE_EVENT_DONE ((sluice_event_t)0)

sluice_status_t sluice_put(sluice_rank_t rank, void *dest, const void *src,
                           size_t length);
sluice_status_t sluice_get(void *dest, sluice_rank_t rank, const void *src,
                           size_t length);
sluice_status_t sluice_put_nb(sluice_rank_t rank, void *dest, const void *src,
                              size_t length, sluice_event_t *event);
sluice_status_t sluice_get_nb(void *dest, sluice_rank_t rank, const void *src,
                              size_t length, sluice_event_t *event);
sluice_status_t sluice_put_nbi(sluice_rank_t rank, void *dest, const void *src,
                               size_t length);
sluice_status_t sluice_get_nbi(void *dest, sluice_rank_t rank, const void *src,
                               size_t length);
/* The same with flags.  SLUICE_FLAG_IMMEDIATE: where the transfer would
 * first have to wait (the conduit's RDMA queue full, registrations busy,
 * earlier transfers still queued, or, over AM, no room for its first
 * request), SLUICE_NOT_READY at once, nothing started (no event).  On a
 * peer whose segment is mapped here (same host) the copy never waits. */
sluice_status_t sluice_put_nb_f(sluice_rank_t rank, void *dest, const void *src,
                                size_t length, sluice_event_t *event,
                                unsigned flags);
sluice_status_t sluice_get_nb_f(void *dest, sluice_rank_t rank, const void *src,
                                size_t length, sluice_event_t *event,
                                unsigned flags);
sluice_status_t sluice_put_nbi_f(sluice_rank_t rank, void *dest,
                                 const void *src, size_t length, unsigned flags);
sluice_status_t sluice_get_nbi_f(void *dest, sluice_rank_t rank,
                                 const void *src, size_t length, unsigned flags);
/* SLUICE_OK and the event is released, or SLUICE_NOT_READY (polls once). */
sluice_status_t sluice_event_test(sluice_event_t event);
/* Waits (polling) until complete and releases the event. */
sluice_status_t sluice_event_wait(sluice_event_t event);
sluice_status_t sluice_event_wait_all(sluice_event_t *events, size_t count);
/* Waits for every _nbi operation this thread issued. */
sluice_status_t sluice_nbi_sync(void);

/* ---- collectives, progress, exit ----------------------------------------- */
/* Collective.  Returns when every rank has entered it; polls while waiting.
 * Every AM request any rank sent before it entered the barrier has run its
 * handler before any rank returns (and so have the replies those handlers
 * sent to requests of the rank that returns); blocking Puts and Gets issued
 * before it are complete everywhere.  Non-blocking RMA is not waited for:
 * sync it first.  Requests sent by other threads while a thread is in the
 * barrier may or may not be included.  May be called before
 * sluice_segment_attach. */
sluice_status_t sluice_barrier(void);
/* Collective.  Every rank contributes `length` bytes (the same length on all
 * ranks, at most sluice_am_max_medium()); `out` receives size*length bytes in
 * rank order.  Called from one thread per rank at a time. */
sluice_status_t sluice_allgather(const void *in, void *out, size_t length);
/* Runs pending handlers and advances non-blocking operations.  Never
 * sleeps, whatever SLUICE_WAIT says. */
sluice_status_t sluice_poll(void);
/* The same, for a loop that waits on something a peer may change without a
 * message to this rank (a flag in the segment written by a Put or an
 * atomic): under SLUICE_WAIT=block, once such polls have found nothing for
 * SLUICE_WAIT_SPIN microseconds, each sleeps until work arrives or
 * SLUICE_WAIT_NAP microseconds pass.  Under spin, it is sluice_poll. */
sluice_status_t sluice_poll_wait(void);
/* Ends the whole job with `code`, from any rank, thread or handler.  Other
 * ranks are stopped wherever they are (in a barrier, a poll, or their own
 * code).  Does not return. */
#if defined(__cplusplus)
[[noreturn]]
#elif defined(__GNUC__)
__attribute__((noreturn))
#endif
void sluice_exit(int code);

/* ---- completion extras ---------------------------------------------------- */
/* Events of a list: test_some polls once and releases every completed event
 * of `events`, setting its entry to SLUICE_EVENT_DONE; SLUICE_OK when at
 * least one completed (or every entry was SLUICE_EVENT_DONE already),
 * SLUICE_NOT_READY when none did.  wait_some polls until test_some would
 * return SLUICE_OK.  Entries that are SLUICE_EVENT_DONE are skipped. */
sluice_status_t sluice_event_test_some(sluice_event_t *events, size_t count);
sluice_status_t sluice_event_wait_some(sluice_event_t *events, size_t count);
/* NBI sync by category: waits for the implicit operations of the given
 * categories this thread issued (outside access regions).  sluice_nbi_sync()
 * is sluice_nbi_sync_cat(SLUICE_NBI_ALL).  sluice_nbi_test_cat polls once
 * and returns SLUICE_OK when they completed, SLUICE_NOT_READY when some
 * have not (the same refusals as the sync: a bad mask, inside a handler or
 * an access region). */
#define SLUICE_NBI_PUTS 0x1u    /* sluice_put_nbi, VIS Puts _nbi */
#define SLUICE_NBI_GETS 0x2u    /* sluice_get_nbi, VIS Gets _nbi */
#define SLUICE_NBI_AMS 0x4u     /* Long requests sent with SLUICE_FLAG_NBI */
#define SLUICE_NBI_ATOMICS 0x8u /* atomic operations _nbi */
#define SLUICE_NBI_ALL 0xfu
sluice_status_t sluice_nbi_sync_cat(unsigned categories);
sluice_status_t sluice_nbi_test_cat(unsigned categories);
/* Access regions: every NBI operation this thread issues between begin and
 * end (of any category) completes the one event end writes
 * (SLUICE_EVENT_DONE when all completed already).  Regions do not nest, and
 * an NBI sync inside one is refused (SLUICE_ERR_STATE). */
sluice_status_t sluice_nbi_region_begin(void);
sluice_status_t sluice_nbi_region_end(sluice_event_t *event);
/* Local completion.  sluice_put_nb_lc: like sluice_put_nb, and `*lc_event`
 * completes once `src` may be reused (possibly before the data is at the
 * target; SLUICE_EVENT_DONE when it may be reused at once).  A Long
 * request sent with SLUICE_FLAG_NBI (sluice_am_request_long_f) returns
 * before its payload has left: `payload` may be reused after
 * sluice_nbi_sync_cat(SLUICE_NBI_AMS) (or an access region's event). */
#define SLUICE_FLAG_NBI 0x2u
sluice_status_t sluice_put_nb_lc(sluice_rank_t rank, void *dest, const void *src, size_t length,
                                 sluice_event_t *lc_event, sluice_event_t *event);

/* ---- teams ---------------------------------------------------------------- */
/* A team is an ordered set of job ranks; a member's team rank is its index.
 * Three teams exist from sluice_init on: the job's (every rank, team rank =
 * job rank), my host's (the ranks of my host, in job-rank order), and the
 * team of one rank per host (the ranks whose index among their host's
 * ranks equals mine, in host order: the host leaders for index 0).  Teams
 * made by split and create are collective over the parent: every member of
 * the parent calls, in the same order as its other collectives on the
 * parent.  A team handle is valid on its members only.  Calls on
 * SLUICE_TEAM_NULL, or with a rank outside the team, fail with
 * SLUICE_ERR_ARGUMENT / SLUICE_ERR_RANK. */
typedef struct sluice_team *sluice_team_t;
#define SLUICE_TEAM_NULL ((sluice_team_t)0)
#define SLUICE_RANK_INVALID ((sluice_rank_t)0xffffffffu)
sluice_team_t sluice_team_job(void);
sluice_team_t sluice_team_host(void);
sluice_team_t sluice_team_across_hosts(void);
/* My rank in `team` and its size; SLUICE_RANK_INVALID (and an error
 * report) for SLUICE_TEAM_NULL or a destroyed team. */
sluice_rank_t sluice_team_rank(sluice_team_t team);
sluice_rank_t sluice_team_size(sluice_team_t team);
/* Rank translation; from_job gives SLUICE_ERR_RANK for a job rank that is
 * not a member. */
sluice_status_t sluice_team_to_job(sluice_team_t team, sluice_rank_t team_rank, sluice_rank_t *job_rank);
sluice_status_t sluice_team_from_job(sluice_team_t team, sluice_rank_t job_rank, sluice_rank_t *team_rank);
/* Collective over `parent`.  Members with the same colour form a team,
 * ordered by key, ties by parent rank; colour SLUICE_TEAM_NO_COLOR joins
 * none (*team = SLUICE_TEAM_NULL). */
#define SLUICE_TEAM_NO_COLOR (-1)
sluice_status_t sluice_team_split(sluice_team_t parent, int color, int key, sluice_team_t *team);
/* Collective over `parent`: every member passes the same list of `count`
 * distinct job ranks, all members of parent; they form the new team in
 * list order; members of parent not listed get SLUICE_TEAM_NULL. */
sluice_status_t sluice_team_create(sluice_team_t parent, const sluice_rank_t *job_ranks, size_t count,
                                   sluice_team_t *team);
/* Collective over `team` (not the three built-in teams). */
sluice_status_t sluice_team_destroy(sluice_team_t team);

/* ---- atomics -------------------------------------------------------------- */
/* An atomic domain is created collectively over a team for one type and a
 * set of operations; every member gets the same implementation, so every
 * update of a word goes through one agent (CPU atomics on mapped memory,
 * the NIC, or an AM to the target that applies CPU atomics there).  Use a
 * word only through one domain at a time, and not with plain loads and
 * stores while operations on it may be in flight.  Targets must lie in the
 * target rank's segment, aligned to the type's size. */
typedef enum {
    SLUICE_DT_I32 = 1,
    SLUICE_DT_U32 = 2,
    SLUICE_DT_I64 = 3,
    SLUICE_DT_U64 = 4,
    SLUICE_DT_FLT = 5,
    SLUICE_DT_DBL = 6,
    SLUICE_DT_USER = 7 /* reductions only: an element of any size */
} sluice_dt_t;
typedef enum {
    SLUICE_OP_SET = 0,  /* *addr = op1 */
    SLUICE_OP_GET,      /* result = *addr (fetching) */
    SLUICE_OP_SWAP,     /* result = *addr; *addr = op1 (fetching) */
    SLUICE_OP_CAS,      /* if (*addr == op1) *addr = op2 */
    SLUICE_OP_FCAS,     /* the same, result = old *addr */
    SLUICE_OP_ADD, SLUICE_OP_FADD,
    SLUICE_OP_SUB, SLUICE_OP_FSUB,
    SLUICE_OP_INC, SLUICE_OP_FINC, /* no operand */
    SLUICE_OP_DEC, SLUICE_OP_FDEC,
    SLUICE_OP_MULT, SLUICE_OP_FMULT,
    SLUICE_OP_MIN, SLUICE_OP_FMIN,
    SLUICE_OP_MAX, SLUICE_OP_FMAX,
    SLUICE_OP_AND, SLUICE_OP_FAND, /* integer types only */
    SLUICE_OP_OR, SLUICE_OP_FOR,
    SLUICE_OP_XOR, SLUICE_OP_FXOR,
    SLUICE_OP_COUNT_
} sluice_aop_t;
#define SLUICE_AOP_BIT(op) (UINT64_C(1) << (op))
/* Fetching forms of the arithmetic and bitwise operations: the result is
 * the value before the update. */
typedef struct sluice_ad *sluice_ad_t;
/* Collective over `team`: every member passes the same type and ops (a mask
 * of SLUICE_AOP_BIT(); no AND, OR, XOR on SLUICE_DT_FLT/DBL) and flags 0
 * (ordering is chosen per operation).  The domain's path is the same on
 * every member; a member whose arguments differ or are refused makes every
 * member fail.  The segment need not be attached yet. */
sluice_status_t sluice_ad_create(sluice_team_t team, sluice_dt_t type, uint64_t ops, unsigned flags,
                                 sluice_ad_t *ad);
/* Collective over the domain's team; no operation may be in flight. */
sluice_status_t sluice_ad_destroy(sluice_ad_t ad);
/* Which implementation the domain got ("cpu", "am", "cpu+am", or a NIC's,
 * e.g. "ofi"), and why, in one line.  Valid while the domain lives. */
sluice_status_t sluice_ad_path(sluice_ad_t ad, const char **path, const char **why);
/* Ordering flags (default relaxed): acquire (later accesses of this thread
 * are not performed before the operation), release (earlier ones are
 * complete before it). */
#define SLUICE_AD_ACQUIRE 0x100u
#define SLUICE_AD_RELEASE 0x200u
/* One operation on `addr` in the segment of team rank `rank`.  `result`
 * receives the old value for fetching operations (must be null for the
 * others); `op1`, `op2` are the operands (ignored where the operation has
 * none).  Blocking: returns when done; _nb: completes `*event` (result
 * written then); _nbi: completes by sluice_nbi_sync_cat(SLUICE_NBI_ATOMICS).
 * An operation not in the domain's set, a misaligned target or one outside
 * the segment fails and changes nothing. */
#define SLUICE_AD_DECLARE_(suffix, type)                                                                  \
    sluice_status_t sluice_ad_op_##suffix(sluice_ad_t ad, type *result, sluice_rank_t rank, void *addr,   \
                                          sluice_aop_t op, type op1, type op2, unsigned flags);          \
    sluice_status_t sluice_ad_op_nb_##suffix(sluice_ad_t ad, type *result, sluice_rank_t rank, void *addr, \
                                             sluice_aop_t op, type op1, type op2, unsigned flags,         \
                                             sluice_event_t *event);                                      \
    sluice_status_t sluice_ad_op_nbi_##suffix(sluice_ad_t ad, type *result, sluice_rank_t rank, void *addr, \
                                              sluice_aop_t op, type op1, type op2, unsigned flags);
SLUICE_AD_DECLARE_(i32, int32_t)
SLUICE_AD_DECLARE_(u32, uint32_t)
SLUICE_AD_DECLARE_(i64, int64_t)
SLUICE_AD_DECLARE_(u64, uint64_t)
SLUICE_AD_DECLARE_(flt, float)
SLUICE_AD_DECLARE_(dbl, double)
#undef SLUICE_AD_DECLARE_

/* ---- collectives on teams ---------------------------------------------------- */
/* Collective over `team`: every member calls the same collectives in the
 * same order, with the same root, sizes, type and operation (a size
 * mismatch is detected where data arrives and reported; other mismatches
 * are not).  Buffers may be anywhere in local memory; `dst` and `src` may
 * be the same only where said.  Blocking forms return when this rank's
 * part is done (its `dst` filled, its `src` reusable); _nb forms complete
 * `*event` then.  A collective may be called from one thread of a rank at a
 * time per team.  Algorithms: SLUICE_COLL_ALGORITHM (docs/collectives.md). */
typedef enum {
    SLUICE_REDUCE_SUM = 0,
    SLUICE_REDUCE_PROD,
    SLUICE_REDUCE_MIN,
    SLUICE_REDUCE_MAX,
    SLUICE_REDUCE_AND, /* integer types only */
    SLUICE_REDUCE_OR,
    SLUICE_REDUCE_XOR,
    SLUICE_REDUCE_USER /* `fn` below */
} sluice_reduce_op_t;
/* A user operation: inout[i] = inout[i] OP in[i] for `count` elements;
 * must be associative and commutative. */
typedef void (*sluice_reduce_fn)(void *inout, const void *in, size_t count, void *context);
sluice_status_t sluice_coll_barrier(sluice_team_t team);
sluice_status_t sluice_coll_barrier_nb(sluice_team_t team, sluice_event_t *event);
/* `nbytes` from root's `src` into every member's `dst` (root's too; src ==
 * dst allowed on root). */
sluice_status_t sluice_coll_broadcast(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                      size_t nbytes);
sluice_status_t sluice_coll_broadcast_nb(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                         size_t nbytes, sluice_event_t *event);
/* `count` elements of `type` (of `elem_size` bytes for SLUICE_DT_USER,
 * else 0 or the type's size) combined over the members into root's `dst`
 * (reduce) or every member's (reduce_all).  src == dst allowed. */
sluice_status_t sluice_coll_reduce(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                   sluice_dt_t type, size_t elem_size, size_t count, sluice_reduce_op_t op,
                                   sluice_reduce_fn fn, void *context);
sluice_status_t sluice_coll_reduce_nb(sluice_team_t team, sluice_rank_t root, void *dst, const void *src,
                                      sluice_dt_t type, size_t elem_size, size_t count, sluice_reduce_op_t op,
                                      sluice_reduce_fn fn, void *context, sluice_event_t *event);
sluice_status_t sluice_coll_reduce_all(sluice_team_t team, void *dst, const void *src, sluice_dt_t type,
                                       size_t elem_size, size_t count, sluice_reduce_op_t op,
                                       sluice_reduce_fn fn, void *context);
sluice_status_t sluice_coll_reduce_all_nb(sluice_team_t team, void *dst, const void *src, sluice_dt_t type,
                                          size_t elem_size, size_t count, sluice_reduce_op_t op,
                                          sluice_reduce_fn fn, void *context, sluice_event_t *event);
/* Every member's `nbytes` of `src` into `dst` (team size x nbytes, in team
 * rank order). */
sluice_status_t sluice_coll_allgather(sluice_team_t team, void *dst, const void *src, size_t nbytes);
sluice_status_t sluice_coll_allgather_nb(sluice_team_t team, void *dst, const void *src, size_t nbytes,
                                         sluice_event_t *event);
/* Block j of `src` (nbytes each) goes to member j, which stores it as its
 * block i (i: the sender's team rank) of `dst`. */
sluice_status_t sluice_coll_alltoall(sluice_team_t team, void *dst, const void *src, size_t nbytes);
sluice_status_t sluice_coll_alltoall_nb(sluice_team_t team, void *dst, const void *src, size_t nbytes,
                                        sluice_event_t *event);

/* ---- VIS: vector, indexed and strided Put and Get ---------------------------- */
/* Non-contiguous transfers between local memory and one rank's segment.
 * The remote side of each piece must lie in the target's segment; remote
 * destinations of a Put (local destinations of a Get) must not overlap
 * (SLUICE_ERR_ARGUMENT); sources may.  Both sides hold the same number of
 * bytes in total; pieces are matched in order, byte for byte, whatever
 * their cuts.  Completion as for sluice_put / _nb / _nbi. */
typedef struct {
    void *addr;
    size_t len;
} sluice_memvec_t;
/* Vector: lists of (address, length). */
sluice_status_t sluice_putv(sluice_rank_t rank, size_t dst_count, const sluice_memvec_t *dst_list, size_t src_count,
                            const sluice_memvec_t *src_list);
sluice_status_t sluice_putv_nb(sluice_rank_t rank, size_t dst_count, const sluice_memvec_t *dst_list, size_t src_count,
                               const sluice_memvec_t *src_list, sluice_event_t *event);
sluice_status_t sluice_putv_nbi(sluice_rank_t rank, size_t dst_count, const sluice_memvec_t *dst_list,
                                size_t src_count, const sluice_memvec_t *src_list);
sluice_status_t sluice_getv(size_t dst_count, const sluice_memvec_t *dst_list, sluice_rank_t rank, size_t src_count,
                            const sluice_memvec_t *src_list);
sluice_status_t sluice_getv_nb(size_t dst_count, const sluice_memvec_t *dst_list, sluice_rank_t rank,
                               size_t src_count, const sluice_memvec_t *src_list, sluice_event_t *event);
sluice_status_t sluice_getv_nbi(size_t dst_count, const sluice_memvec_t *dst_list, sluice_rank_t rank,
                                size_t src_count, const sluice_memvec_t *src_list);
/* Indexed: lists of addresses, every piece of one side the same length. */
sluice_status_t sluice_puti(sluice_rank_t rank, size_t dst_count, void *const *dst_list, size_t dst_len,
                            size_t src_count, void *const *src_list, size_t src_len);
sluice_status_t sluice_puti_nb(sluice_rank_t rank, size_t dst_count, void *const *dst_list, size_t dst_len,
                               size_t src_count, void *const *src_list, size_t src_len, sluice_event_t *event);
sluice_status_t sluice_puti_nbi(sluice_rank_t rank, size_t dst_count, void *const *dst_list, size_t dst_len,
                                size_t src_count, void *const *src_list, size_t src_len);
sluice_status_t sluice_geti(size_t dst_count, void *const *dst_list, size_t dst_len, sluice_rank_t rank,
                            size_t src_count, void *const *src_list, size_t src_len);
sluice_status_t sluice_geti_nb(size_t dst_count, void *const *dst_list, size_t dst_len, sluice_rank_t rank,
                               size_t src_count, void *const *src_list, size_t src_len, sluice_event_t *event);
sluice_status_t sluice_geti_nbi(size_t dst_count, void *const *dst_list, size_t dst_len, sluice_rank_t rank,
                                size_t src_count, void *const *src_list, size_t src_len);
/* Strided, GASNet's and OpenSHMEM's shape: an element is `elem_size`
 * contiguous bytes; dimension d (0 <= d < levels) holds count[d] of the
 * previous dimension's blocks, `strides[d]` bytes apart (on each side its
 * own strides; the counts are shared).  levels 0 is one element. */
sluice_status_t sluice_puts(sluice_rank_t rank, void *dst, const ptrdiff_t *dst_strides, const void *src,
                            const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels);
sluice_status_t sluice_puts_nb(sluice_rank_t rank, void *dst, const ptrdiff_t *dst_strides, const void *src,
                               const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels,
                               sluice_event_t *event);
sluice_status_t sluice_puts_nbi(sluice_rank_t rank, void *dst, const ptrdiff_t *dst_strides, const void *src,
                                const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels);
sluice_status_t sluice_gets(void *dst, const ptrdiff_t *dst_strides, sluice_rank_t rank, const void *src,
                            const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels);
sluice_status_t sluice_gets_nb(void *dst, const ptrdiff_t *dst_strides, sluice_rank_t rank, const void *src,
                               const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels,
                               sluice_event_t *event);
sluice_status_t sluice_gets_nbi(void *dst, const ptrdiff_t *dst_strides, sluice_rank_t rank, const void *src,
                                const ptrdiff_t *src_strides, size_t elem_size, const size_t *count, size_t levels);

/* ---- negotiated-payload AMs ---------------------------------------------------- */
/* Prepare a Medium or Long request (or, in a request handler, a reply)
 * whose payload is written in place: the call returns a buffer of `*size`
 * bytes, least <= *size <= most, where the conduit can send from
 * (its send ring or registered buffer where it has one, else a buffer of
 * the library's); write the payload there, then commit with its final
 * length (<= *size), handler and arguments, or cancel.  `nargs` is the
 * argument count the commit will pass.  One prepared message per thread:
 * any other Sluice AM call, sluice_poll or sluice_barrier on the thread
 * before the commit or cancel fails with SLUICE_ERR_STATE, the message
 * stays prepared (other calls, such as team collectives, are not checked:
 * do not make them meanwhile).  A handler that returns with its reply
 * prepared has it cancelled (reported).  Credits are taken at prepare.
 * flags: 0 or SLUICE_FLAG_IMMEDIATE (SLUICE_NOT_READY instead of waiting
 * for credits or room).  least above sluice_am_max_*_for():
 * SLUICE_ERR_TOO_LARGE; least > most: SLUICE_ERR_ARGUMENT. */
sluice_status_t sluice_am_prepare_request(sluice_am_category_t category, sluice_rank_t dest, size_t least,
                                          size_t most, unsigned nargs, unsigned flags, void **buffer, size_t *size);
sluice_status_t sluice_am_prepare_reply(sluice_am_category_t category, sluice_token_t token, size_t least,
                                        size_t most, unsigned nargs, unsigned flags, void **buffer, size_t *size);
/* Sends the prepared message: `length` bytes of the buffer, the handler
 * (registered for the category with `nargs` arguments) and the arguments;
 * `dest_addr` is the Long's address in the target's segment (NULL for a
 * Medium).  A length above the prepared size fails (SLUICE_ERR_TOO_LARGE)
 * and sends nothing; the message stays prepared. */
sluice_status_t sluice_am_commit(sluice_handler_t handler, size_t length, void *dest_addr, const uint32_t *args,
                                 unsigned nargs);
/* Drops the prepared message; nothing is sent. */
sluice_status_t sluice_am_cancel(void);
/* The largest Medium or Long payload to `dest` with `nargs` arguments
 * (what a prepare may ask as least); sluice_am_max_medium/long are the
 * least of these over every peer. */
size_t sluice_am_max_medium_for(sluice_rank_t dest, unsigned nargs);
size_t sluice_am_max_long_for(sluice_rank_t dest, unsigned nargs);

/* ---- same-host Put/Get inlined (internal) ------------------------------- */
/* A blocking sluice_put or sluice_get to a rank whose segment is mapped into
 * this process (a peer on the same host under the smp conduit) is a copy
 * inlined into the caller (memcpy, or from SLUICE_COPY_BULK_MIN_ bytes the
 * library's copy): after sluice_segment_attach the library publishes
 * where each such segment is mapped, and the inline code below checks the
 * rank, the null local buffer and the segment bounds before it copies.
 * Anything else (another rank, a bad argument, no segment yet, Sluice not
 * running) calls the library, which checks it all and reports.
 *
 * Release builds of the library do not check the handler context on this
 * path: a Put from inside a handler to such a peer just copies.  A library
 * configured with --enable-debug publishes nothing, so every call is checked
 * there.  Define SLUICE_NO_INLINE_RMA before including this header to call
 * the library for every Put and Get.  The names below ending in '_' are not
 * part of the API: use sluice_put and sluice_get. */
struct sluice_mapped_segment_ {
    uintptr_t base; /* the segment's address on its owner */
    uintptr_t size; /* 0 when it is not mapped here */
    char *view;     /* where it is mapped here; null when it is not */
};
struct sluice_mapped_ {
    const struct sluice_mapped_segment_ *peers; /* one per rank */
    sluice_rank_t size;                         /* 0 while nothing is published */
};
extern struct sluice_mapped_ sluice_mapped_;

/* Where `length` bytes at `remote` of `rank` are mapped here, or null.  It
 * runs in the caller's loop, so it does no more than it must: a peer that
 * is not mapped has size 0, and the bounds test then lets through only a
 * zero length at offset 0, whose address (null + 0) is null as well; one
 * test fewer than asking for the view separately (docs/performance.md,
 * "8 B Put and Get"). */
static inline char *sluice_mapped_view_(sluice_rank_t rank, const void *remote, const void *local,
                                        size_t length) {
    const struct sluice_mapped_segment_ *p;
    uintptr_t offset;
    if (rank >= sluice_mapped_.size || !local) return 0;
    p = &sluice_mapped_.peers[rank];
    offset = (uintptr_t)remote - p->base;
    if (offset > p->size || length > p->size - offset) return 0;
    return (char *)((uintptr_t)p->view + offset);
}
/* The library's copy for SLUICE_COPY_BULK_MIN_ bytes and more, past the
 * first-level cache, where it is faster than memcpy (src/rma/copy.cpp). */
#define SLUICE_COPY_BULK_MIN_ ((size_t)32 * 1024)
void sluice_copy_bulk_(void *to, const void *from, size_t length);
/* memcpy, with the scalar sizes a program puts and gets most (a double, a
 * 64- or 32-bit integer) as single moves rather than a library call. */
static inline void sluice_copy_(void *to, const void *from, size_t length) {
    if (length == 8) memcpy(to, from, 8);
    else if (length == 4) memcpy(to, from, 4);
    else if (length >= SLUICE_COPY_BULK_MIN_) sluice_copy_bulk_(to, from, length);
    else memcpy(to, from, length);
}
static inline sluice_status_t sluice_put_inline_(sluice_rank_t rank, void *dest, const void *src,
                                                 size_t length) {
    char *view = sluice_mapped_view_(rank, dest, src, length);
    if (!view) return sluice_put(rank, dest, src, length);
    sluice_copy_(view, src, length);
    return SLUICE_OK;
}
static inline sluice_status_t sluice_get_inline_(void *dest, sluice_rank_t rank, const void *src,
                                                 size_t length) {
    const char *view = sluice_mapped_view_(rank, src, dest, length);
    if (!view) return sluice_get(dest, rank, src, length);
    sluice_copy_(dest, view, length);
    return SLUICE_OK;
}
#ifndef SLUICE_NO_INLINE_RMA
#define sluice_put(rank, dest, src, length) sluice_put_inline_(rank, dest, src, length)
#define sluice_get(dest, rank, src, length) sluice_get_inline_(dest, rank, src, length)
#endif

/* Inline atomics.  A domain's handle starts with what the integer
 * sluice_ad_op_<type> calls need to update a word of a member this process
 * maps with one CPU atomic in the caller's loop: the members the domain
 * reaches by CPU atomics (every member on path "cpu", the mapped ones on
 * "cpu+am"; the same agent the library uses, so the two mix).  Relaxed
 * set, get, swap, compare-and-swap, add, sub, inc and dec (and their
 * fetching forms) on such a member run here; every other call, and every
 * call the library would refuse, goes to the library, which checks and
 * reports.  Like the inline Put and Get, this path does not check the
 * handler context, is off in --enable-debug builds (nothing is mapped
 * there) and with SLUICE_NO_INLINE_RMA. */
struct sluice_ad_inline_ {
    const sluice_rank_t *job; /* team rank -> job rank */
    const uint8_t *direct;    /* per team rank: reached by CPU atomics */
    uint64_t ops;             /* the domain's operations; 0 once destroyed */
    sluice_rank_t size;       /* team size */
    int type;                 /* sluice_dt_t */
};
#if defined(__GNUC__) || defined(__clang__)
/* Operations SET (0) to FDEC (12) run inline; of them these fetch. */
#define SLUICE_AD_INLINE_FETCHING_                                                                     \
    (1u << SLUICE_OP_GET | 1u << SLUICE_OP_SWAP | 1u << SLUICE_OP_FCAS | 1u << SLUICE_OP_FADD |          \
     1u << SLUICE_OP_FSUB | 1u << SLUICE_OP_FINC | 1u << SLUICE_OP_FDEC)
#define SLUICE_AD_INLINE_(suffix, T, dt)                                                                 \
    static inline sluice_status_t sluice_ad_op_##suffix##_inline_(sluice_ad_t ad, T *result,            \
                                                                  sluice_rank_t rank, void *addr,     \
                                                                  sluice_aop_t op, T op1, T op2,      \
                                                                  unsigned flags) {                   \
        const struct sluice_ad_inline_ *p = (const struct sluice_ad_inline_ *)(const void *)ad;         \
        T *w = 0, old = 0;                                                                              \
        if (p && p->type == (dt) && rank < p->size && flags == 0 && (unsigned)op <= SLUICE_OP_FDEC &&   \
            ((p->ops >> (unsigned)op) & 1) && !(SLUICE_AD_INLINE_FETCHING_ >> (unsigned)op & 1) == !result && \
            p->direct[rank] && !((uintptr_t)addr & (sizeof(T) - 1)))                                    \
            w = (T *)(void *)sluice_mapped_view_(p->job[rank], addr, p, sizeof(T));                     \
        if (!w) return sluice_ad_op_##suffix(ad, result, rank, addr, op, op1, op2, flags);              \
        switch (op) {                                                                                   \
        case SLUICE_OP_SET: __atomic_store_n(w, op1, __ATOMIC_RELAXED); break;                          \
        case SLUICE_OP_GET: old = __atomic_load_n(w, __ATOMIC_RELAXED); break;                          \
        case SLUICE_OP_SWAP: old = __atomic_exchange_n(w, op1, __ATOMIC_RELAXED); break;                \
        case SLUICE_OP_CAS:                                                                             \
        case SLUICE_OP_FCAS:                                                                            \
            old = op1;                                                                                  \
            __atomic_compare_exchange_n(w, &old, op2, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);           \
            break;                                                                                      \
        case SLUICE_OP_ADD:                                                                             \
        case SLUICE_OP_FADD: old = __atomic_fetch_add(w, op1, __ATOMIC_RELAXED); break;                 \
        case SLUICE_OP_SUB:                                                                             \
        case SLUICE_OP_FSUB: old = __atomic_fetch_sub(w, op1, __ATOMIC_RELAXED); break;                 \
        case SLUICE_OP_INC:                                                                             \
        case SLUICE_OP_FINC: old = __atomic_fetch_add(w, 1, __ATOMIC_RELAXED); break;                   \
        default: old = __atomic_fetch_sub(w, 1, __ATOMIC_RELAXED); break; /* DEC, FDEC */               \
        }                                                                                               \
        if (result) *result = old;                                                                      \
        return SLUICE_OK;                                                                               \
    }
SLUICE_AD_INLINE_(i32, int32_t, SLUICE_DT_I32)
SLUICE_AD_INLINE_(u32, uint32_t, SLUICE_DT_U32)
SLUICE_AD_INLINE_(i64, int64_t, SLUICE_DT_I64)
SLUICE_AD_INLINE_(u64, uint64_t, SLUICE_DT_U64)
#undef SLUICE_AD_INLINE_
#undef SLUICE_AD_INLINE_FETCHING_
#ifndef SLUICE_NO_INLINE_RMA
#define sluice_ad_op_i32(ad, result, rank, addr, op, op1, op2, flags) \
    sluice_ad_op_i32_inline_(ad, result, rank, addr, op, op1, op2, flags)
#define sluice_ad_op_u32(ad, result, rank, addr, op, op1, op2, flags) \
    sluice_ad_op_u32_inline_(ad, result, rank, addr, op, op1, op2, flags)
#define sluice_ad_op_i64(ad, result, rank, addr, op, op1, op2, flags) \
    sluice_ad_op_i64_inline_(ad, result, rank, addr, op, op1, op2, flags)
#define sluice_ad_op_u64(ad, result, rank, addr, op, op1, op2, flags) \
    sluice_ad_op_u64_inline_(ad, result, rank, addr, op, op1, op2, flags)
#endif
#endif

#ifdef __cplusplus
}
#endif
#endif /* SLUICE_H */
