#!/bin/sh
# The ibv conduit on the software verbs NIC (tests/softnic/verbs): the
# conduit conformance suite and the multi-process suites with an SRQ and
# with per-peer receive buffers, and with every queue and buffer made tiny
# (RNR waits, full send queues, the RDMA backlog, two-part Longs); the exit
# matrix; the receive thread and its poll modes; NIC atomics on and off
# (SLUICE_IBV_ATOMICS); port selection on a NIC of two devices of two ports
# and on RoCE; send queues that refuse posts (ENOMEM) and a CQ that
# overruns; GASNet-EX's resource knobs (gathered payloads, spare receive
# buffers, the total network depth, pinned regions on a NIC of few);
# bad SLUICE_IBV_PORTS values and a machine without a verbs device, each
# refused by name.  Every job has its own fabric file, removed at the end.
# Skips (77) without the ibv conduit.  README.md in this folder.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
if ! "$builddir/sluice-info" --conduits 2> /dev/null | grep -qE '^ +ibv +'; then
    echo "SKIP: the ibv conduit is not in this build"
    exit 77
fi
run=$srcdir/tests/softnic/verbs/softnic-run
# shellcheck source=../../../../tests/mp/families.sh
. "$srcdir/tests/mp/families.sh"
"$run" --lib-dir > /dev/null || { echo "FAIL: the software NIC does not build"; exit 1; }
SOFTNIC_FABRIC=/dev/shm/softnic-ibv-test-$$
export SOFTNIC_FABRIC
trap 'rm -f "$SOFTNIC_FABRIC"' EXIT
trap 'exit 130' INT TERM HUP
conformance=$builddir/tests/conduit/sluice-conduit-conformance
mp=$builddir/tests/mp/sluice-mp-gtest
exitg=$builddir/tests/exit/sluice-exit-gtest
job=$builddir/tests/mp/sluice-mp-test
knobs=$builddir/src/conduits/ibv/tests/sluice-ibv-knobs-check
failed=0
subset=
[ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ] && subset=1
# plain_section: the section whose header was just printed runs, unless
# this is a sanitizer subset: the settings and refusal sections (path
# settings, bounce and gather limits, spare buffers, network depth, port
# selection, the library's shapes, no device) run in the plain build only,
# which keeps the subsets' longest test within their time.
plain_section() {
    [ -z "$subset" ] && return 0
    echo "not in the $SLUICETEST_SUBSET subset (the plain build runs it)"
    return 1
}
# not_tsan_section: likewise, but the section runs in the asan subset too:
# the sections whose code runs on one thread per process (connections,
# NIC errors, pinning, rails); tsan takes the suites, the receive thread
# and NIC atomics.
not_tsan_section() {
    [ "${SLUICETEST_SUBSET:-}" != tsan ] && return 0
    echo "not in the tsan subset (the plain and asan builds run it)"
    return 1
}

# suites NAME SCOPE ENV...: the conformance suite, then the multi-process
# suites over ibv at every rank count (SCOPE full) or at 2 ranks (SCOPE 2);
# the variants (SCOPE 2) a variant's suites (mp_variant, tests/mp/families.sh).
suites() {
    name=$1 scope=$2
    shift 2
    echo "=== ibv: $name"
    if ! gtest_ran env "$@" timeout 600 "$run" "$conformance" --gtest_filter='*/ibv:*/ibv_alone' --gtest_brief=1; then
        echo "FAIL: conformance suite over ibv ($name)"
        failed=1
    fi
    filter='Net/*_ibv:Net/*/ibv'
    [ "$scope" = 2 ] && filter=$(mp_variant ibv)
    if ! gtest_ran env "$@" timeout 900 "$run" "$mp" --gtest_filter="$filter" --gtest_brief=1; then
        echo "FAIL: multi-process suites over ibv ($name)"
        failed=1
    fi
}
# Under a sanitizer subset: the default at 2 ranks, and tiny queues.
if [ -z "$subset" ]; then
    suites "an SRQ (default)" full
    suites "per-peer receive buffers" 2 SLUICE_USE_SRQ=0
else
    suites "an SRQ (default)" 2
    echo "not run: per-peer receive buffers, dynamic connections only, the exit matrix (plain build only)"
fi
# Every connection made on first use (GASNet-EX's dynamic connections), with
# per-peer receive buffers posted as each queue pair is made.
[ -z "$subset" ] && suites "dynamic connections only, per-peer receive buffers" 2 SLUICE_CONNECT_STATIC=0 SLUICE_USE_SRQ=0
suites "tiny queues and buffers" 2 SLUICE_RBUF_COUNT=16 SLUICE_IBV_SEND_DEPTH=8 SLUICE_IBV_SEND_BUFFERS=4 \
    SLUICE_INLINESEND_LIMIT=0 SLUICE_PACKEDLONG_LIMIT=1K SLUICE_IBV_RMA_CHUNK=4K

if [ -z "$subset" ]; then
    echo "=== ibv: the exit matrix, every peer over ibv"
    if ! gtest_ran timeout 900 "$run" "$exitg" --gtest_filter='Net/*_ibv' --gtest_brief=1; then
        echo "FAIL: exit matrix over ibv"
        failed=1
    fi
fi

# ibv_job ENV... -- ARGS: a 2-rank job of sluice-mp-test ARGS, every peer
# over ibv, on the NIC; its code in $code, its output in $log.
ibv_job() {
    log=$(env SLUICE_NETWORK=ibv SLUICE_ROUTE=network SLUICE_VERBOSE=1 "$@" 2>&1)
    code=$?
}

echo "=== ibv: the receive thread"
# Rank 1 computes for 3 s without calling Sluice while rank 0 makes 200
# round trips to it: its receive thread (on the completion channel)
# answers them all before rank 1 stops computing; without it they wait
# for rank 1.
check=$builddir/tests/sluice-rcv-thread-check
ibv_job SLUICE_RCV_THREAD=1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$check" rcv-thread 3000 200 thread
expect "SLUICE_RCV_THREAD=1: rank 1's receive thread answers while it computes" 0 "PASS rcv-thread"
expect "SLUICE_RCV_THREAD=1: the thread sleeps on the completion channel" 0 "ibv: receive thread started (sleeps on the completion channel"
ibv_job timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$check" rcv-thread 3000 200 none
expect "without a receive thread the round trips wait for rank 1" 0 "PASS rcv-thread"

# every_rank WHAT RANKS PATTERN: PATTERN in one line of each of RANKS ranks
# (the SLUICE_IBV_STATS lines).
every_rank() {
    if [ "$(printf '%s\n' "$log" | grep -c -- "$3")" = "$2" ]; then
        echo "ok: $1"
    else
        echo "FAIL: $1: not on every one of $2 ranks: $3"
        printf '%s\n' "$log" | grep ' ibv (softnic' | sed 's/^/    /'
        failed=1
    fi
}
# GASNet-EX's poll modes: rank 0 busy-polls for its pongs, so with the
# default (serialized) its own thread takes most of them; exclusive leaves
# every arrival, while the receive thread runs, to that thread.  Which
# thread sees a completion first is the scheduler's choice: on a loaded
# machine (CI's parallel lanes) rank 0's polling thread can be off its core
# for every one of the 200 pongs, so the serialized job gets three tries.
took_own="rank 0\] ibv .*while the receive thread ran: by it [0-9]*, by other threads [1-9]"
for try in 1 2 3; do
    ibv_job SLUICE_RCV_THREAD=1 SLUICE_IBV_STATS=1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$check" rcv-thread 3000 200 thread
    [ "$code" = 0 ] && printf '%s\n' "$log" | grep -q "$took_own" && break
    echo "note: serialized poll mode, try $try: rank 0's own thread took none of its pongs (or the job failed)"
done
expect "SLUICE_RCV_THREAD_POLL_MODE=serialized (default): rank 0's own polls take its pongs" 0 "$took_own"
ibv_job SLUICE_RCV_THREAD=1 SLUICE_RCV_THREAD_POLL_MODE=exclusive SLUICE_IBV_STATS=1 \
    timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$check" rcv-thread 8000 40 thread
expect "SLUICE_RCV_THREAD_POLL_MODE=exclusive: the round trips still end while rank 1 computes" 0 "PASS rcv-thread"
every_rank "... and only the receive threads took arrivals" 2 \
    "ibv .*while the receive thread ran: by it [1-9][0-9]*, by other threads 0,"
ibv_job SLUICE_RCV_THREAD_POLL_MODE=unserialized timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_RCV_THREAD_POLL_MODE=unserialized is refused by name" 2 \
    "SLUICE_RCV_THREAD_POLL_MODE=unserialized is out of range: it must be serialized, or exclusive"

echo "=== ibv: connect files and dynamic connections"
if not_tsan_section; then
    # The round trip: a 6-rank run of `delivery` (each rank talks to its right
    # neighbour and to its barrier partners, 4 of its 5 peers) writes the
    # connections it used, per rank in base 10 and into one file in base 36; a
    # run reading either connects those at start-up and no other, with
    # dynamic connections off, and passes.
    cdir=$(mktemp -d)
    trap 'rm -f "$SOFTNIC_FABRIC"; rm -rf "$cdir"' EXIT
    ibv_job SLUICE_CONNECTFILE_OUT="$cdir/conn.%" SLUICE_CONNECTFILE_BASE=10 timeout 120 "$run" "$builddir/sluicerun" -n 6 -- "$job" delivery 20
    expect "SLUICE_CONNECTFILE_OUT=conn.%: a run writes one file per rank" 0 "PASS delivery"
    if [ "$(cat "$cdir"/conn.[0-5] 2> /dev/null | grep -c '^[0-5]: [0-5] [0-5] [0-5] [0-5]$')" = 6 ] &&
        grep -qx 'base: 10' "$cdir/conn.3" && grep -qx 'size: 6' "$cdir/conn.3"; then
        echo "ok: each rank's file lists the 4 peers it used, in base 10, with base: and size: lines"
    else
        echo "FAIL: the per-rank connect files are not as expected:"
        cat "$cdir"/conn.* 2> /dev/null | sed 's/^/    /'
        failed=1
    fi
    ibv_job SLUICE_CONNECTFILE_OUT="$cdir/all" timeout 120 "$run" "$builddir/sluicerun" -n 6 -- "$job" delivery 20
    expect "SLUICE_CONNECTFILE_OUT without %: every rank appends to one file" 0 "PASS delivery"
    if [ "$(grep -c '^[0-5]:' "$cdir/all")" = 6 ] && [ "$(grep -cx 'base: 36' "$cdir/all")" = 6 ]; then
        echo "ok: the one file has each rank's line, base 36"
    else
        echo "FAIL: the shared connect file:"
        sed 's/^/    /' "$cdir/all"
        failed=1
    fi
    for in in "$cdir/conn.%" "$cdir/all"; do
        ibv_job SLUICE_CONNECTFILE_IN="$in" SLUICE_CONNECT_DYNAMIC=0 SLUICE_IBV_STATS=1 \
            timeout 120 "$run" "$builddir/sluicerun" -n 6 -- "$job" delivery 20
        expect "SLUICE_CONNECTFILE_IN=${in##*/}, SLUICE_CONNECT_DYNAMIC=0: the next run passes" 0 "PASS delivery"
        if [ "$(printf '%s\n' "$log" | grep -c 'ibv: connected at start-up to 4 of 5 peers (SLUICE_CONNECTFILE_IN=.*); dynamic connections off')" = 6 ]; then
            echo "ok: every rank connected the 4 peers of the file at start-up, and only those"
        else
            echo "FAIL: start-up connections with SLUICE_CONNECTFILE_IN=${in##*/}:"
            printf '%s\n' "$log" | grep 'connected at start-up' | sed 's/^/    /'
            failed=1
        fi
    done
    # A connection that only one side's file lists is made on both; one that
    # none lists is made on first use, or refused without dynamic connections.
    printf 'size: 3\n0: 1\n' > "$cdir/one"
    ibv_job SLUICE_CONNECTFILE_IN="$cdir/one" SLUICE_IBV_STATS=1 timeout 60 "$run" "$builddir/sluicerun" -n 3 -- "$job" am
    expect "a file listing 0: 1 only: the rest connect on first use" 0 "PASS am"
    expect "a file listing 0: 1 only: rank 2 starts with no connection" 0 "rank 2\] ibv: connected at start-up to 0 of 2 peers"
    expect "a file listing 0: 1 only: rank 1 starts with one" 0 "rank 1\] ibv: connected at start-up to 1 of 2 peers"
    ibv_job SLUICE_CONNECTFILE_IN="$cdir/one" SLUICE_CONNECT_DYNAMIC=0 timeout 60 "$run" "$builddir/sluicerun" -n 3 -- "$job" am
    expect "an unlisted peer without dynamic connections is an error naming both ranks and the fix" 1 \
        "is not connected to rank [0-9]: no start-up connection, and this rank takes no dynamic connections; fix: list the pair in SLUICE_CONNECTFILE_IN"
    printf '0: 1\n1 2\n' > "$cdir/bad"
    ibv_job SLUICE_CONNECTFILE_IN="$cdir/bad" timeout 60 "$run" "$builddir/sluicerun" -n 3 -- "$job" basic
    expect "a malformed connect file is refused, naming the line" 1 "connect file $cdir/bad: line 2 ('1 2'): no ':'"
    printf 'size: 4\n' > "$cdir/size"
    ibv_job SLUICE_CONNECTFILE_IN="$cdir/size" timeout 60 "$run" "$builddir/sluicerun" -n 3 -- "$job" basic
    expect "a connect file for another job size is refused" 1 "the file is for 4 ranks, the job has 3"
    ibv_job SLUICE_CONNECTFILE_IN="$cdir/none.%" timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "a missing connect file is refused, naming it (the first rank to say so ends the job)" 1 \
        "cannot read the connect file $cdir/none\.[01]: No such file"
    ibv_job SLUICE_CONNECT_STATIC=0 SLUICE_CONNECT_RETRANS_MIN=2000 SLUICE_CONNECT_RETRANS_MAX=1000 \
        timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "SLUICE_CONNECT_RETRANS_MAX below _MIN is refused" 1 \
        "SLUICE_CONNECT_RETRANS_MAX (1000 us) is below SLUICE_CONNECT_RETRANS_MIN (2000 us)"

    # Dynamic connections over a lossy setup channel: the NIC loses a quarter
    # of the UD datagrams (requests and answers), so a try succeeds with
    # probability 0.56; retransmissions connect all 28 pairs of 8 ranks (13
    # tries within the default SLUICE_CONNECT_RETRANS_MAX: a pair fails with
    # probability 2e-5, the job 6e-4; no retransmission at all, 1e-7).
    ibv_job SOFTNIC_UD_LOSS=25 SLUICE_CONNECT_STATIC=0 SLUICE_CONNECT_RETRANS_MIN=2000 SLUICE_IBV_STATS=1 \
        timeout 180 "$run" "$builddir/sluicerun" -n 8 -- "$job" am
    expect "25 % of the connection datagrams lost: every pair connects, the job passes" 0 "PASS am"
    retransmitted=$(printf '%s\n' "$log" | sed -n 's/.* \([0-9]*\) retransmitted requests.*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
    if [ "$retransmitted" -gt 0 ]; then
        echo "ok: ... after $retransmitted retransmitted requests"
    else
        echo "FAIL: 25 % loss but no request was retransmitted"
        failed=1
    fi
    # One send buffer and two receive buffers for connection requests and
    # answers (SLUICE_CONNECT_SNDS, SLUICE_CONNECT_RCVS), 8 ranks connecting at
    # once: a request that finds no receive buffer is lost like a dropped
    # datagram, a send waits for the one buffer; retransmissions connect all.
    ibv_job SLUICE_CONNECT_STATIC=0 SLUICE_CONNECT_SNDS=1 SLUICE_CONNECT_RCVS=2 SLUICE_CONNECT_RETRANS_MIN=2000 \
        SLUICE_IBV_STATS=1 timeout 180 "$run" "$builddir/sluicerun" -n 8 -- "$job" am
    expect "one connection send buffer, two receive buffers, 8 ranks: every pair connects" 0 "PASS am"
    ibv_job SLUICE_CONNECT_RCVS=1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "SLUICE_CONNECT_RCVS=1 is refused by name" 2 "SLUICE_CONNECT_RCVS=1 is out of range"
    ibv_job SOFTNIC_UD_LOSS=100 SLUICE_CONNECT_STATIC=0 SLUICE_CONNECT_RETRANS_MIN=1000 SLUICE_CONNECT_RETRANS_MAX=8000 \
        timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "every connection datagram lost: the job ends with an error naming the peer and the tries" 1 \
        "ibv: rank [01] did not answer rank [01]'s connection request: 4 tries in 0.015 s (SLUICE_CONNECT_RETRANS_MIN 1000 us, _MAX 8000 us)"
fi

echo "=== ibv: outstanding reads and atomics (SLUICE_QP_RD_ATOM)"
if not_tsan_section; then
    # A NIC that takes 4 outstanding RDMA reads and atomics per queue pair
    # (SOFTNIC_MAX_QP_RD_ATOM; it refuses a queue pair asking more with
    # EINVAL): the conduit asks what the device reports, and Gets and NIC
    # atomics work.
    ibv_job SOFTNIC_MAX_QP_RD_ATOM=4 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" rma
    expect "an HCA with max_qp_rd_atom 4: the rma case passes" 0 "^PASS rma"
    ibv_job SOFTNIC_MAX_QP_RD_ATOM=4 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" atomic 200 --path=ibv --path32=am
    expect "an HCA with max_qp_rd_atom 4: NIC atomics pass" 0 "^PASS atomic"
    ibv_job SLUICE_QP_RD_ATOM=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" rma
    expect "SLUICE_QP_RD_ATOM=1: the rma case passes" 0 "^PASS rma"
    ibv_job SOFTNIC_MAX_QP_RD_ATOM=2 SLUICE_QP_RD_ATOM=64 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" basic
    expect "SLUICE_QP_RD_ATOM=64 on an HCA of 2: cut to the HCA's limit" 0 "^PASS basic"
    ibv_job SLUICE_QP_RD_ATOM=256 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" basic
    expect "SLUICE_QP_RD_ATOM=256 is refused by name" 2 "SLUICE_QP_RD_ATOM=256 is out of range"
fi

echo "=== ibv: a NIC that says no (send queues, completion queues)"
if not_tsan_section; then
    # The NIC refuses a post past a queue pair's send queue with ENOMEM and
    # overruns a CQ given more completions than it holds; SOFTNIC_SQ_SLOTS and
    # SOFTNIC_CQ_SLOTS make them hold fewer than they report
    # (tests/softnic/verbs/README.md).  Send queues of 2 under the conduit's 128:
    # its AMs wait, it lowers its depth to the HCA's (a warning says so) and
    # the flood, am and rma cases pass.
    ibv_job SOFTNIC_SQ_SLOTS=2 SLUICE_IBV_STATS=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" flood 2000
    expect "send queues of 2: the flood passes" 0 "^PASS flood"
    expect "... the HCA refused posts and the conduit sent them again" 0 "posts the HCA refused (send queue full) [1-9]"
    expect "... and said it lowered its depth" 0 "the HCA's send queue took only [12] work requests (SLUICE_IBV_SEND_DEPTH [0-9]*): using [12]"
    ibv_job SOFTNIC_SQ_SLOTS=2 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" am
    expect "send queues of 2: the am case passes" 0 "^PASS am"
    ibv_job SOFTNIC_SQ_SLOTS=2 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" rma
    expect "send queues of 2: the rma case passes" 0 "^PASS rma"
    # A CQ that holds 8 completions whatever it was made with: the flood
    # overruns it, and the job ends naming the asynchronous event instead of
    # waiting for completions that were lost.
    ibv_job SOFTNIC_CQ_SLOTS=8 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" flood 2000
    expect "a CQ overrun ends the job naming IBV_EVENT_CQ_ERR" 1 \
        "ibv (softnic0): CQ error: the completion queue overran; completions were lost and its queue pairs are in error"
fi

echo "=== ibv: path settings (SLUICE_MAX_MTU, SLUICE_IBV_PKEY, SLUICE_QP_TIMEOUT, SLUICE_QP_RETRY_COUNT)"
if plain_section; then
# The software NIC's ports are of MTU 4096 with one partition key, 0xffff,
# at index 0 (tests/softnic/verbs/README.md); it honours the QPs' timeout
# and retry count (rules.sh: an absent peer fails after them).
ibv_job SLUICE_MAX_MTU=1024 SLUICE_QP_TIMEOUT=10 SLUICE_QP_RETRY_COUNT=3 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" rma
expect "SLUICE_MAX_MTU=1024, QP timeout 10, 3 retries: the rma case passes" 0 "^PASS rma"
expect "... over queue pairs of MTU 1024 with that timeout and count" 0 "MTU 1024).*QP timeout 10, retry count 3"
ibv_job SLUICE_MAX_MTU=1000 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_MAX_MTU=1000 is refused, naming the MTUs" 1 "SLUICE_MAX_MTU=1000 is not an InfiniBand MTU; fix: set SLUICE_MAX_MTU to -1, 0, 256, 512, 1024, 2048 or 4096"
ibv_job SLUICE_IBV_PKEY=0xffff timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_IBV_PKEY=0xffff (membership bit ignored): index 0, the job passes" 0 "P_Key index 0"
ibv_job SLUICE_IBV_PKEY=0x1234 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "a partition key not in the port's table is refused, naming the table" 1 \
    "SLUICE_IBV_PKEY=0x1234 (0x1234) is not in softnic0 port 1's partition table (0x7fff)"
ibv_job SLUICE_IBV_PKEY=1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "a partition key below 2 is refused" 1 "SLUICE_IBV_PKEY=1 is not a partition key"
ibv_job SLUICE_QP_RETRY_COUNT=8 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_QP_RETRY_COUNT=8 is refused by name" 2 "SLUICE_QP_RETRY_COUNT=8 is out of range"

fi
echo "=== ibv: the non-bulk bounce limit"
if plain_section; then
# Longs above a 1 KiB packed limit are two-part; those of at most
# SLUICE_NONBULKPUT_BOUNCE_LIMIT (64 KiB) go from a bounce buffer, and the
# am case overwrites each payload as soon as the call returns.
ibv_job SLUICE_PACKEDLONG_LIMIT=1K SLUICE_IBV_STATS=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" am
expect "two-part Longs up to 64 KiB bounced, their sources overwritten on return" 0 \
    "two-part Longs [1-9][0-9]* (bounced [1-9][0-9]*)"
ibv_job SLUICE_PACKEDLONG_LIMIT=1K SLUICE_NONBULKPUT_BOUNCE_LIMIT=0 SLUICE_IBV_STATS=1 \
    timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" am
expect "SLUICE_NONBULKPUT_BOUNCE_LIMIT=0: every two-part Long waits for its write instead" 0 \
    "two-part Longs [1-9][0-9]* (bounced 0)"

fi
echo "=== ibv: gathered AM payloads (SLUICE_AM_GATHER_MIN)"
if plain_section; then
# Each rank sends 4 rounds of Mediums and packed Longs of 100, 1499, 1500,
# 4000 bytes and the largest Medium from its segment, and a largest Medium
# from the heap, overwriting every payload once the call returns (the
# target checks each byte): by default (1500) the 6 a round of 1500 bytes
# or more from the segment go in place, with 4000 the 4, with -1 none.
for gather in "" 4000 -1; do
    case $gather in "") want=24 ;; 4000) want=16 ;; *) want=0 ;; esac
    ibv_job ${gather:+SLUICE_AM_GATHER_MIN=$gather} SLUICE_IBV_STATS=1 \
        timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$knobs" gather 4
    expect "SLUICE_AM_GATHER_MIN=${gather:-1500 (default)}: every payload arrives intact" 0 "^PASS gather"
    every_rank "... $want of them gathered from the segment on each rank" 2 "gathered sends $want,"
done
ibv_job SLUICE_AM_GATHER_MIN=-2 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_AM_GATHER_MIN=-2 is refused by name" 2 "SLUICE_AM_GATHER_MIN=-2 is out of range"

fi
echo "=== ibv: spare receive buffers (SLUICE_RBUF_SPARES)"
if plain_section; then
# A flood leaves many arrivals waiting for their handlers: with the default
# 64 spares many run in their receive buffers, a spare posted in each one's
# place; with none every one is copied out and its buffer posted again.
ibv_job SLUICE_IBV_STATS=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" flood 2000
expect "64 spares (default): the flood passes" 0 "^PASS flood"
every_rank "... arrivals ran in place, at most 64 spares in use" 2 \
    "arrivals in place [1-9][0-9]* (spares 64, at most [1-9][0-9]* in use), copied [0-9]*"
ibv_job SLUICE_RBUF_SPARES=0 SLUICE_RBUF_COUNT=16 SLUICE_IBV_STATS=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" flood 2000
expect "no spares, 16 receive buffers: the flood passes" 0 "^PASS flood"
every_rank "... every arrival copied out, none in place" 2 "arrivals in place 0 (spares 0, at most 0 in use), copied [1-9]"

fi
echo "=== ibv: the network depth over every peer (SLUICE_NETWORKDEPTH_TOTAL)"
if plain_section; then
# At most 4 work requests in flight from a rank: the rma case still passes,
# the cap was reached and never passed (the default, 255, never binds
# within one queue pair's 128).
ibv_job SLUICE_NETWORKDEPTH_TOTAL=4 SLUICE_IBV_STATS=1 timeout 120 "$run" "$builddir/sluicerun" -n 3 -- "$job" rma
expect "SLUICE_NETWORKDEPTH_TOTAL=4: the rma case passes" 0 "^PASS rma"
every_rank "... with at most 4 work requests in flight, the cap reached" 3 \
    "work requests in flight at most [1-4] (SLUICE_NETWORKDEPTH_TOTAL 4, reached [1-9][0-9]* times)"
ibv_job SLUICE_NETWORKDEPTH_TOTAL=2 SLUICE_IBV_STATS=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" flood 2000
expect "SLUICE_NETWORKDEPTH_TOTAL=2: the flood passes" 0 "^PASS flood"
ibv_job SLUICE_NETWORKDEPTH_TOTAL=0 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_NETWORKDEPTH_TOTAL=0: as deep as the queue pairs take (128 x (1 peer + the atomics' pair of 2))" 0 \
    "at most 384 work requests in flight over every queue pair"
ibv_job SLUICE_NETWORKDEPTH_TOTAL=-1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_NETWORKDEPTH_TOTAL=-1 is refused by name" 2 "SLUICE_NETWORKDEPTH_TOTAL=-1 is out of range"

fi
echo "=== ibv: AM credits in flight over every peer (SLUICE_CREDIT_SEND_TOTAL)"
if plain_section; then
# GASNet's AM_CREDITS_TOTAL: at most 8 credits of requests in flight from a
# rank over its 3 peers, each of which lends it 32: the flood passes, every
# rank stalled at the bound and never passed it.
stats=$(mktemp -d)
ibv_job SLUICE_CREDIT_SEND_TOTAL=8 SLUICE_CREDIT_STATS="$stats/credit.%r" timeout 120 "$run" "$builddir/sluicerun" -n 4 -- \
    "$job" flood 2000
expect "SLUICE_CREDIT_SEND_TOTAL=8: the flood passes at 4 ranks" 0 "^PASS flood"
bound=$(grep -l 'at the send total [1-9][0-9]* (in use there at most [1-8] of 8)' "$stats"/credit.* 2> /dev/null | wc -l)
if [ "$bound" = 4 ]; then
    echo "ok: ... every rank stalled at the bound, with at most 8 credits in use over its peers"
else
    echo "FAIL: ... $bound of 4 ranks' credit statistics show stalls at the bound of 8 and no more in use:"
    sed -n 2p "$stats"/credit.* | sed 's/^/    /'
    failed=1
fi
rm -rf "$stats"
ibv_job SLUICE_CREDIT_SEND_TOTAL=-1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_CREDIT_SEND_TOTAL=-1 is refused by name" 2 "SLUICE_CREDIT_SEND_TOTAL=-1 is out of range"
fi
echo "=== ibv: NIC atomics"
# Domains of 64-bit integers by the NIC's fetch-and-add and compare-and-swap
# (the software NIC's IBV_ATOMIC_HCA; the other operations as
# compare-and-swap loops), 32-bit and floating-point ones by AM; with
# SLUICE_IBV_ATOMICS=0 the atomic suite takes the AM path; a bad value is
# refused by name.
ibv_job SLUICE_IBV_STATS=1 timeout 120 "$run" "$builddir/sluicerun" -n 3 -- "$job" atomic 200 --path=ibv --path32=am
expect "64-bit domains on the NIC's atomics, the owner's own words included; 32-bit ones by AM" 0 "PASS atomic"
expect "... the NIC carried them, compare-and-swap loops included" 0 \
    "NIC atomics [1-9][0-9]*, .*compare-and-swap retries [0-9]*"
if ! gtest_ran env SLUICE_IBV_ATOMICS=0 timeout 600 "$run" "$mp" --gtest_filter='Net/AtomicDomains*ibv*' --gtest_brief=1; then
    echo "FAIL: the atomic suite over ibv with SLUICE_IBV_ATOMICS=0 (path am)"
    failed=1
else
    echo "ok: SLUICE_IBV_ATOMICS=0: the atomic suite over ibv on the AM path"
fi
ibv_job SLUICE_IBV_ATOMICS=yes timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "a bad SLUICE_IBV_ATOMICS is refused by name" 2 "SLUICE_IBV_ATOMICS=yes is out of range: it must be auto, or 0"

echo "=== ibv: the pinnable-memory limit"
if not_tsan_section; then
    ibv_job timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" segment 4
    expect "by default 2/3 of physical memory shared by the host's ranks, checked by the probe" 0 \
        "ibv: pinnable memory [0-9]* MiB per rank (SLUICE_PHYSMEM_MAX=2/3 of [0-9]* MiB, 2 rank(s) on this host, probe passed)"
    ibv_job SLUICE_PHYSMEM_MAX=4M timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" segment 4
    expect "SLUICE_PHYSMEM_MAX=4M at 2 ranks: a 4 MiB segment is refused, naming the knob" 1 \
        "would pin 4194304 bytes, more than the 2097152 this rank may (SLUICE_PHYSMEM_MAX=4M of"
    ibv_job SLUICE_PHYSMEM_MAX=4M timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" segment 1
    expect "SLUICE_PHYSMEM_MAX=4M at 2 ranks: a 1 MiB segment fits, unprobed (a set maximum is trusted)" 0 \
        "pinnable memory 2 MiB per rank (SLUICE_PHYSMEM_MAX=4M of [0-9]* MiB, 2 rank(s) on this host)\$"
    # A NIC that registers at most 100 MiB per process (SOFTNIC_MR_BUDGET,
    # ENOMEM past it): the probe halves from gigabytes and bisects up to
    # what registers; a budget below the segment refuses it by name.
    ibv_job SOFTNIC_MR_BUDGET=100M timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" rma
    expect "a NIC registering 100 MiB: the probe finds it, the rma case passes" 0 \
        "pinnable memory \(9[0-9]\|100\) MiB per rank (.*probed: the NIC registered no more)"
    ibv_job SOFTNIC_MR_BUDGET=16M timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" segment 24
    expect "a NIC registering 16 MiB: a 24 MiB segment is refused, saying why" 1 \
        "more than the 1[0-9]* this rank may (.*probed: the NIC registered no more)"
    ibv_job SOFTNIC_MR_BUDGET=100M SLUICE_PHYSMEM_WARN=1 SLUICE_VERBOSE=0 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "SLUICE_PHYSMEM_WARN=1: rank 0 warns of what the probe found" 0 \
        "sluice\[rank 0\] warning: ibv: pinnable memory probed at \(9[0-9]\|100\) MiB per rank (.*probed: the NIC registered no more); set SLUICE_PHYSMEM_MAX to skip the probe"
    ibv_job SLUICE_PHYSMEM_MAX=3/2 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "a fraction above 1 is refused" 1 "SLUICE_PHYSMEM_MAX: '3/2' is not a fraction between 0 and 1"
    # Without CAP_IPC_LOCK the locked-memory limit binds: raised to its hard
    # limit, then the cap.
    if command -v setpriv > /dev/null && command -v prlimit > /dev/null; then
        ibv_job setpriv --bounding-set -ipc_lock prlimit --memlock=1048576:8388608 \
            timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" segment 4
        expect "RLIMIT_MEMLOCK 1 MiB (hard 8 MiB) without CAP_IPC_LOCK: raised to 8 MiB" 0 \
            "ibv: RLIMIT_MEMLOCK raised from 1 MiB to its hard limit 8 MiB"
        expect "RLIMIT_MEMLOCK 8 MiB without CAP_IPC_LOCK: the limit is 8 MiB" 0 \
            "pinnable memory 8 MiB per rank (.*capped by RLIMIT_MEMLOCK"
    else
        echo "not run: the locked-memory limit (no setpriv or prlimit: util-linux)"
    fi

    # GASNet-EX's pinned regions (SLUICE_PINNED_REGIONS_MAX) on a NIC of 64
    # regions a device (SOFTNIC_MAX_MR), 2 ranks, each putting from and getting
    # into 40 windows outside its segment (a region each in firehose's victim
    # pool): unbounded, the NIC runs out and the error names the knob; half of
    # the 64 leaves 16 a rank, which firehose's default victim pool (1024)
    # does not fit: refused, naming the most that does; with that pool, the
    # windows pass within the share.
    # Without a memory monitor (a ThreadSanitizer build, docs/firehose.md)
    # firehose drops each registration after its transfer: the NIC never fills.
    ibv_job SOFTNIC_MAX_MR=64 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$knobs" windows 40
    if printf '%s\n' "$log" | grep -q "no memory monitor .*registrations are dropped after each transfer"; then
        expect "a NIC of 64 regions, 40 windows a rank, firehose not caching (no memory monitor): none stays registered, the windows pass" 0 "^PASS windows"
    else
        expect "a NIC of 64 regions, 40 windows a rank, no bound: the NIC refuses, the error names the knob" 1 \
            "cannot register .*: Cannot allocate memory; fix: .*bound them with SLUICE_PINNED_REGIONS_MAX"
    fi
    ibv_job SOFTNIC_MAX_MR=64 SLUICE_PINNED_REGIONS_MAX=1/2 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$knobs" windows 40
    expect "SLUICE_PINNED_REGIONS_MAX=1/2 of 64: firehose's victim pool of 1024 regions refused, naming the most that fits" 1 \
        "SLUICE_PINNED_REGIONS_MAX=1/2 of the HCA's max_mr 64, 2 rank(s) on this host leaves 16 registered regions to this rank, 11 of them for firehose's pools (5 taken by the conduit), and they may hold 1024 (SLUICE_FIREHOSE_MAXVICTIM_R=1024); fix: lower SLUICE_FIREHOSE_MAXVICTIM_R to at most 11"
    ibv_job SOFTNIC_MAX_MR=64 SLUICE_PINNED_REGIONS_MAX=1/2 SLUICE_FIREHOSE_MAXVICTIM_R=11 SLUICE_IBV_STATS=1 \
        timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$knobs" windows 40
    expect "... with SLUICE_FIREHOSE_MAXVICTIM_R=11 the 40 windows pass" 0 "^PASS windows"
    every_rank "... each rank within its 16 regions" 2 "registered regions at most \(1[0-6]\|[1-9]\) (SLUICE_PINNED_REGIONS_MAX: 16)"
    ibv_job SOFTNIC_MAX_MR=64 SLUICE_PINNED_REGIONS_MAX=40 SLUICE_FIREHOSE_MAXVICTIM_R=8 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "SLUICE_PINNED_REGIONS_MAX=40 (a count): 20 a rank" 0 "registered regions: at most 20 per rank (SLUICE_PINNED_REGIONS_MAX=40 (the HCA's max_mr 64), 2 rank(s) on this host)"
    ibv_job SOFTNIC_MAX_MR=64 SLUICE_PINNED_REGIONS_MAX=4 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "SLUICE_PINNED_REGIONS_MAX=4: 2 a rank, fewer than the conduit's own: refused" 1 \
        "leaves 2 registered regions to this rank; it needs [0-9]* of its own"
    ibv_job SLUICE_PINNED_REGIONS_MAX=3/2 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "SLUICE_PINNED_REGIONS_MAX=3/2 is refused by name" 1 "SLUICE_PINNED_REGIONS_MAX=3/2 is neither a fraction below 1 nor a count of regions"
fi

echo "=== ibv: port selection"
if plain_section; then
export SOFTNIC_DEVICES=2 SOFTNIC_PORTS=2
ibv_job SLUICE_IBV_LIST_PORTS=1 SLUICE_IBV_PORTS=softnic1:2 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_IBV_PORTS=softnic1:2 uses port 2 of softnic1" 0 "ibv: softnic1 port 2 (InfiniBand"
expect "SLUICE_IBV_LIST_PORTS lists all four ports" 0 "ibv port softnic0:2: active, InfiniBand, LID [0-9]*, not selected"
ibv_job SLUICE_IBV_LIST_PORTS=1 SLUICE_IBV_LIST_PORTS_NODES=1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_IBV_LIST_PORTS_NODES=1: rank 1 lists its ports" 0 "sluice\[rank 1\] ibv port softnic0:1"
if printf '%s\n' "$log" | grep -q "sluice\[rank 0\] ibv port"; then
    echo "FAIL: SLUICE_IBV_LIST_PORTS_NODES=1: rank 0 listed its ports too"
    failed=1
else
    echo "ok: ... and rank 0 does not"
fi
ibv_job SLUICE_IBV_LIST_PORTS=1 SLUICE_IBV_LIST_PORTS_NODES=0-x timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "a malformed SLUICE_IBV_LIST_PORTS_NODES is refused" 1 "SLUICE_IBV_LIST_PORTS_NODES=0-x is not a list of ranks"
ibv_job SLUICE_IBV_PORTS=softnic0+softnic1:1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_IBV_PORTS=softnic0+softnic1:1: a rail on each (the first active port of softnic0)" 0 \
    "ibv: softnic0 port 1, softnic1:1 (InfiniBand"
ibv_job SLUICE_IBV_PORTS=softnic0:2 SLUICE_NUM_QPS=1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_IBV_PORTS=softnic0:2 SLUICE_NUM_QPS=1: one rail" 0 "ibv: softnic0 port 2 (InfiniBand"
ibv_job SLUICE_IBV_PORTS=mlx5_0+softnic1:3 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "a filter that selects nothing here is refused, naming what it lacks" 1 "no active port among those SLUICE_IBV_PORTS=mlx5_0+softnic1:3 selects (it names mlx5_0, softnic1:3, not here); ports here: softnic0:1, softnic0:2, softnic1:1, softnic1:2"
ibv_job SLUICE_IBV_PORTS=mlx5_0+softnic1:2 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "entries not here are ignored (GASNet-EX's filter) when others select a port" 0 "ibv: SLUICE_IBV_PORTS names mlx5_0, not here: ignored"
ibv_job SLUICE_IBV_PORTS=softnic0:x timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "a malformed port list is refused" 1 "SLUICE_IBV_PORTS: port 'x' of softnic0 is not a port number"
# The topology-aware family: this machine has one socket, so every rank is
# within socket 0 and SLUICE_IBV_PORTS_0 wins over SLUICE_IBV_PORTS;
# SLUICE_IBV_PORTS_1 is a known knob (no warning), unused here.
ibv_job SLUICE_IBV_PORTS=softnic0 SLUICE_IBV_PORTS_0=softnic1:2 SLUICE_IBV_PORTS_1=softnic0:1 \
    timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_IBV_PORTS_0 for ranks within socket 0" 0 "ibv: softnic1 port 2 (InfiniBand, MTU 4096, chosen by SLUICE_IBV_PORTS_0)"
if printf '%s\n' "$log" | grep -q "unknown variable SLUICE_IBV_PORTS_"; then
    echo "FAIL: SLUICE_IBV_PORTS_<n> taken for an unknown variable"
    failed=1
fi
# Two sockets, as hwloc reads them from tests/topology/two-sockets.xml (PU 0
# in package 0 near softnic0, PU 1 in package 1 near softnic1;
# HWLOC_THISSYSTEM=1: bindings are this machine's): bound a core each, rank
# 0 is within socket 0 and rank 1 within socket 1, each taking its family
# member.
if "$builddir/sluicerun" --help 2>&1 | grep -q -- "--bind"; then
    ibv_job HWLOC_XMLFILE="$srcdir/tests/topology/two-sockets.xml" HWLOC_THISSYSTEM=1 \
        SLUICE_IBV_PORTS_0=softnic0:1 SLUICE_IBV_PORTS_1=softnic1:1 \
        timeout 60 "$run" "$builddir/sluicerun" --bind=core -n 2 -- "$job" basic
    expect "two sockets (hwloc): rank 0 takes SLUICE_IBV_PORTS_0" 0 \
        "sluice\[rank 0\] ibv: softnic0 port 1 (InfiniBand, MTU 4096, chosen by SLUICE_IBV_PORTS_0)"
    expect "... and rank 1 SLUICE_IBV_PORTS_1" 0 \
        "sluice\[rank 1\] ibv: softnic1 port 1 (InfiniBand, MTU 4096, chosen by SLUICE_IBV_PORTS_1)"
else
    echo "not run: the two-socket family test (sluicerun without --bind: no hwloc in this build)"
fi
unset SOFTNIC_DEVICES SOFTNIC_PORTS

fi
echo "=== ibv: two rails (SLUICE_NUM_QPS)"
if not_tsan_section; then
    # rails_used NAME RANKS [fenced]: every rank's counters show RDMA bytes on
    # both rails (striping), and fenced reads exactly when asked.
    rails_used() {
        if printf '%s\n' "$log" | awk -v ranks="$2" -v fenced="${3:-}" '
            / RDMA bytes by rail: / {
                ++seen
                for (i = 1; i < NF; ++i) {
                    if ($i == "(softnic0:1)" || $i == "(softnic1:1)" || $i == "(softnic0:2)") { v = $(i + 1); sub(/,$/, "", v); if (v > 0) ++busy }
                    if ($i == "fenced" && $(i + 1) == "reads") { v = $(i + 2); sub(/,$/, "", v); fences += v }
                }
            }
            END { exit !(seen == ranks && busy == 2 * ranks && ((fenced != "") == (fences > 0))) }'; then
            echo "ok: $1: every rank wrote and read over both rails${3:+, with fenced reads}"
        else
            echo "FAIL: $1: RDMA not striped over both rails on every rank${3:+, or no fenced read}:"
            printf '%s\n' "$log" | grep 'RDMA bytes by rail' | sed 's/^/    /'
            failed=1
        fi
    }
    # The suites on two rails in the plain build; the sanitizer subsets stripe
    # over them in the rma jobs below.
    if [ -z "$subset" ]; then
        suites "two rails on two HCAs" 2 SOFTNIC_DEVICES=2
    else
        echo "not run: the suites on two rails on two HCAs (plain build only; the rma jobs below stripe)"
    fi
    ibv_job SOFTNIC_DEVICES=2 SLUICE_IBV_STATS=1 timeout 300 "$run" "$builddir/sluicerun" -n 3 -- "$job" rma
    expect "two HCAs: a rail on each by default, Puts fenced" 0 "ibv: 2 rails (SLUICE_NUM_QPS=0) on 2 HCA(s).*Puts fenced"
    rails_used "two HCAs" 3 fenced
    ibv_job SOFTNIC_DEVICES=2 SLUICE_USE_FENCED_PUTS=0 SLUICE_USE_SRQ=0 SLUICE_CONNECT_STATIC=0 SLUICE_IBV_STATS=1 \
        timeout 300 "$run" "$builddir/sluicerun" -n 3 -- "$job" rma
    expect "two HCAs, SLUICE_USE_FENCED_PUTS=0, per-peer buffers, dynamic connections" 0 "PASS rma"
    rails_used "two HCAs, unfenced" 3
    ibv_job SOFTNIC_PORTS=2 SLUICE_IBV_PORTS=softnic0:1,2 SLUICE_IBV_STATS=1 \
        timeout 300 "$run" "$builddir/sluicerun" -n 3 -- "$job" rma
    expect "two ports of one HCA named in SLUICE_IBV_PORTS: two rails, no fence needed" 0 "ibv: 2 rails (SLUICE_NUM_QPS=0) on 1 HCA(s)"
    rails_used "two ports of one HCA" 3
    ibv_job SLUICE_NUM_QPS=3 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" am
    expect "SLUICE_NUM_QPS=3 on one port: three rails on it" 0 "ibv: 3 rails (SLUICE_NUM_QPS=3) on 1 HCA(s)"
    # Ranks of different rail counts send start-up records of different
    # shapes: refused, naming the knob and both counts.
    ibv_job timeout 60 "$run" "$builddir/sluicerun" -n 2 -- \
        sh -c 'SLUICE_NUM_QPS=$((SLUICE_RANK + 1)) exec "$0" "$@"' "$job" basic
    expect "SLUICE_NUM_QPS 1 on rank 0, 2 on rank 1: refused, naming the knob" fail "has [12] rails, this rank [12]; fix: set SLUICE_NUM_QPS"
    ibv_job SOFTNIC_DEVICES=3 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "three HCAs: rails on the first two, the third named in a warning" 0 \
        "sluice\[rank 0\] warning: ibv: rails on at most 2 HCAs: softnic2 not used"
    ibv_job SOFTNIC_DEVICES=3 SLUICE_IBV_PORTS_VERBOSE=0 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    if [ "$code" = 0 ] && ! printf '%s\n' "$log" | grep -q "not used"; then
        echo "ok: SLUICE_IBV_PORTS_VERBOSE=0: nothing said of the third HCA"
    else
        echo "FAIL: SLUICE_IBV_PORTS_VERBOSE=0: exit $code, or the third HCA was named"
        failed=1
    fi

    ibv_job SOFTNIC_LINK_LAYER=eth timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" rma
    expect "RoCE: paths by GID" 0 "ibv: softnic0 port 1 (RoCE"
fi

echo "=== ibv: one library for the NIC and for hardware"
if plain_section; then
# The conduit is compiled once, against rdma-core's headers, and linked to
# libibverbs.so.1: the software NIC replaces that library at run time, so
# the code that ran here is the code a real HCA would run.
lib=$(ls "$builddir"/.libs/libsluice.so.*.*.* 2> /dev/null | head -1)
if [ -z "$lib" ]; then
    echo "not run: no shared libsluice in this build"
elif objdump -p "$lib" | grep -q 'NEEDED *libibverbs\.so\.1' &&
    ! strings "$lib" | grep -qiE 'softnic/verbs|softnic0|SOFTNIC_(DEVICES|PORTS|LINK_LAYER|FABRIC)'; then
    echo "ok: $(basename "$lib") needs libibverbs.so.1 and names no software verbs NIC"
else
    echo "FAIL: $(basename "$lib") does not link libibverbs.so.1, or names the software verbs NIC"
    failed=1
fi

fi
echo "=== ibv: without a verbs device"
if plain_section; then
ibv_job timeout 60 "$builddir/sluicerun" -n 2 -- "$job" basic
expect "SLUICE_NETWORK=ibv without a device is refused with the reason" 1 "no InfiniBand or RoCE device here"
if "$builddir/sluice-info" --conduits 2>&1 | grep -A3 -E '^ +ibv ' | grep -q "probe here: fails: no InfiniBand or RoCE device here"; then
    echo "ok: sluice-info says why ibv cannot run here"
else
    echo "FAIL: sluice-info --conduits does not say why ibv cannot run"
    failed=1
fi
fi
exit $failed
