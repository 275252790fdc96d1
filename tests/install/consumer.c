/* consumer.c - a Sluice user program built against the installed files only
 * (tests/install/install.sh): <sluice.h> from the installed include
 * directory, libsluice found by pkg-config or CMake.
 *
 * Each rank registers a Short request handler that replies to a Short reply
 * handler, sends one request to the next rank and polls until the reply is
 * back; Puts a value into the next rank's segment, checks after a barrier
 * that its own segment holds the value its left neighbour put there, and
 * Gets the value back from the next rank.  Rank 0 prints one line; any
 * failure prints a line on stderr and ends the job with code 1. */
#include <sluice.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { H_REQUEST = 200, H_REPLY = 201 };
#define MAGIC 0x5100u

static volatile uint32_t reply_value;
static volatile int reply_count;

static void fail(const char *what, sluice_status_t st) {
    fprintf(stderr, "consumer: rank %u: %s failed: %s (%s)\n", (unsigned)sluice_rank(), what,
            sluice_status_string(st), sluice_last_error());
    sluice_exit(1);
}

#define CHECK(call)                                \
    do {                                           \
        sluice_status_t st_ = (call);              \
        if (st_ != SLUICE_OK) fail(#call, st_);    \
    } while (0)

/* Request: reply with the argument plus 1 and our rank. */
static void on_request(sluice_token_t token, void *payload, size_t length, const uint32_t *args,
                       unsigned nargs) {
    uint32_t reply[2];
    (void)payload;
    (void)length;
    (void)nargs;
    reply[0] = args[0] + 1;
    reply[1] = sluice_rank();
    if (sluice_am_reply_short(token, H_REPLY, reply, 2) != SLUICE_OK) sluice_exit(1);
}

static void on_reply(sluice_token_t token, void *payload, size_t length, const uint32_t *args,
                     unsigned nargs) {
    sluice_rank_t src = 0;
    (void)payload;
    (void)length;
    (void)nargs;
    if (sluice_token_source(token, &src) != SLUICE_OK || src != args[1]) sluice_exit(1);
    reply_value = args[0];
    reply_count = reply_count + 1;
}

int main(int argc, char **argv) {
    sluice_rank_t me, n, next, prev;
    uint32_t arg;
    uint64_t value, got = 0, *mine;
    void *base = NULL, *next_base = NULL;
    size_t size = 0;

    if (sluice_init(&argc, &argv) != SLUICE_OK) {
        fprintf(stderr, "consumer: sluice_init failed: %s\n", sluice_last_error());
        return 1;
    }
    me = sluice_rank();
    n = sluice_size();
    if (n == 0 || me >= n) fail("sluice_rank/sluice_size", SLUICE_ERR_STATE);
    next = (me + 1) % n;
    prev = (me + n - 1) % n;

    CHECK(sluice_segment_attach(4096));
    CHECK(sluice_handler_register(H_REQUEST, on_request, SLUICE_AM_SHORT, 1));
    CHECK(sluice_handler_register(H_REPLY, on_reply, SLUICE_AM_SHORT, 2));
    CHECK(sluice_barrier()); /* every rank has registered */

    /* AM round trip to the next rank. */
    arg = MAGIC + me;
    CHECK(sluice_am_request_short(next, H_REQUEST, &arg, 1));
    while (reply_count == 0) CHECK(sluice_poll());
    if (reply_count != 1 || reply_value != MAGIC + me + 1) {
        fprintf(stderr, "consumer: rank %u: reply %u (count %d), expected %u\n", (unsigned)me,
                (unsigned)reply_value, reply_count, MAGIC + me + 1);
        sluice_exit(1);
    }

    /* Put into the next rank's segment, Get it back. */
    CHECK(sluice_segment_info(me, &base, &size));
    CHECK(sluice_segment_info(next, &next_base, &size));
    if (size < sizeof value) fail("segment size", SLUICE_ERR_SEGMENT);
    value = 0xC0FFEE000000ull + me;
    CHECK(sluice_put(next, next_base, &value, sizeof value));
    CHECK(sluice_barrier()); /* every Put has landed */
    mine = (uint64_t *)base;
    if (*mine != 0xC0FFEE000000ull + prev) {
        fprintf(stderr, "consumer: rank %u: segment holds %llx, expected %llx from rank %u\n",
                (unsigned)me, (unsigned long long)*mine, 0xC0FFEE000000ull + prev, (unsigned)prev);
        sluice_exit(1);
    }
    CHECK(sluice_get(&got, next, next_base, sizeof got));
    if (got != value) {
        fprintf(stderr, "consumer: rank %u: get from rank %u gave %llx, expected %llx\n",
                (unsigned)me, (unsigned)next, (unsigned long long)got, (unsigned long long)value);
        sluice_exit(1);
    }

    CHECK(sluice_barrier());
    if (me == 0) printf("consumer: OK on %u ranks (AM round trip, put/get, barrier)\n", (unsigned)n);
    fflush(stdout);
    CHECK(sluice_finalize());
    return 0;
}
