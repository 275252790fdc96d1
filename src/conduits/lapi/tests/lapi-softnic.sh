#!/bin/sh
# The lapi conduit on the software LAPI (tests/softnic/lapi): the conduit
# conformance suite, the multi-process suites and the exit matrix, in
# interrupt mode (at 2 and 3 ranks) and in polling mode (at 2); then slow completion handlers
# (SOFTNIC_LAPI_COMPLETION_DELAY_US, every payload sent as data: the ready
# queue waits, in order, for them), what the two modes mean for a rank
# that computes, the receive thread, header handlers within a short limit,
# the knobs at their extremes, bad values and a wrong job environment
# refused by name, sluice-info saying why lapi cannot run outside the
# software LAPI, and libsluice not linking liblapi.  The fabric file is
# this script's own, removed at the end.  Skips (77) without the lapi
# conduit.  src/conduits/lapi/README.md, Tests.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
if ! "$builddir/sluice-info" --conduits 2> /dev/null | grep -qE '^ +lapi +'; then
    echo "SKIP: the lapi conduit is not in this build"
    exit 77
fi
run=$srcdir/tests/softnic/lapi/softnic-run
# shellcheck source=../../../../tests/mp/families.sh
. "$srcdir/tests/mp/families.sh"
"$run" --lib-dir > /dev/null || { echo "FAIL: the software LAPI does not build"; exit 1; }
SOFTNIC_LAPI_FABRIC=/dev/shm/softnic-lapi-test-$$
export SOFTNIC_LAPI_FABRIC
unset MP_CHILD MP_PROCS MP_PARTITION SLUICE_LAPI_MODE
trap 'rm -f "$SOFTNIC_LAPI_FABRIC"' EXIT
trap 'exit 130' INT TERM HUP
conformance=$builddir/tests/conduit/sluice-conduit-conformance
mp=$builddir/tests/mp/sluice-mp-gtest
job=$builddir/tests/mp/sluice-mp-test
failed=0
start=$(date +%s)

# suites NAME SCOPE ENV...: the conformance suite, then the multi-process
# suites over lapi at 2 and 3 ranks and the exit matrix (SCOPE full), a
# variant's suites at 2 ranks (mp_variant in tests/mp/families.sh) and
# the exit matrix (SCOPE 2), or those of the multi-process suites at 2
# ranks that send AMs (SCOPE am:
# the AM families, delivery before a barrier, threads; not the client
# families of tests/mp/families.sh, nor Put/Get, which use no handler).
suites() {
    name=$1 scope=$2
    shift 2
    echo "=== lapi: $name"
    # The firehose registrar's tests are left out: LAPI demands no
    # registration, so they skip, having nothing to exercise.
    if ! gtest_ran env "$@" timeout 600 "$run" "$conformance" --gtest_filter='*/lapi:*/lapi_alone:-*FirehoseRegistrar*' --gtest_brief=1; then
        echo "FAIL: conformance suite over lapi ($name)"
        failed=1
    fi
    filter='Net/*_lapi:Net/*/lapi'
    [ "$scope" = 2 ] && filter=$(mp_variant lapi)
    [ "$scope" = am ] &&
        filter=$(mp_filter 'Net/Am*N2_native_lapi:Net/Delivery*N2_native_lapi:Net/Threads*N2_native_lapi' 'Net/AmPrepare*')
    if ! gtest_ran env "$@" timeout 1200 "$run" "$mp" --gtest_filter="$filter" --gtest_brief=1; then
        echo "FAIL: multi-process suites over lapi ($name)"
        failed=1
    fi
    [ "$scope" = am ] && return 0
    if ! gtest_ran env "$@" timeout 900 "$run" "$builddir/tests/exit/sluice-exit-gtest" --gtest_filter='Net/*_lapi' \
        --gtest_brief=1; then
        echo "FAIL: exit matrix over lapi ($name)"
        failed=1
    fi
}

# lapi_job ENV... -- ARGS: a job, every peer over lapi, on the software
# LAPI with the counters printed; its code in $code, its output in $log.
lapi_job() {
    log=$(env SLUICE_NETWORK=lapi SLUICE_ROUTE=network SLUICE_LAPI_STATS=1 "$@" 2>&1)
    code=$?
}
# counter NAME: the sum over the ranks' SLUICE_LAPI_STATS lines of the
# counter NAME ("network full", "completion handlers", ...).
counter() {
    printf '%s\n' "$log" | sed -n "s/.* lapi (LAPI task .*[(,] $1 \([0-9]*\).*/\1/p" | awk '{ s += $1 } END { print s + 0 }'
}
at_least_one() {  # at_least_one WHAT COUNTER
    n=$(counter "$2")
    if [ "$n" -gt 0 ]; then
        echo "ok: $1 ($2: $n)"
    else
        echo "FAIL: $1: $2 is 0"
        failed=1
    fi
}
# no_rule_broken WHAT: the software LAPI reported no rule broken by a
# handler (its "softnic-lapi: task N:" lines) and LAPI called no error
# handler.
no_rule_broken() {
    if printf '%s\n' "$log" | grep -q 'softnic-lapi: task'; then
        echo "FAIL: $1: the software LAPI reported a broken rule:"
        printf '%s\n' "$log" | grep 'softnic-lapi: task' | head -3
        failed=1
    elif [ "$(counter 'asynchronous errors')" != 0 ]; then
        echo "FAIL: $1: LAPI called the error handler $(counter 'asynchronous errors') times"
        failed=1
    else
        echo "ok: $1: no rule broken, no asynchronous error"
    fi
}

# Interrupt mode (the default) at 2 and 3 ranks, polling mode at 2.
suites "INTERRUPT mode" full SLUICE_LAPI_MODE=INTERRUPT
suites "POLLING mode" 2 SLUICE_LAPI_MODE=POLLING

# Every payload as the message's data (SLUICE_LAPI_PACKED_MAX=96: only
# Shorts and the smallest Mediums in the user header), each completion
# handler 300 us late: the tokens behind an unpacked AM wait in the ready
# queue until its completion handler ran, in each sender's order.
slow="SLUICE_LAPI_PACKED_MAX=96 SOFTNIC_LAPI_COMPLETION_DELAY_US=300"
# shellcheck disable=SC2086 # a list of assignments
suites "slow completion handlers, payloads as data" am $slow
for mode in INTERRUPT POLLING; do
    # shellcheck disable=SC2086
    lapi_job $slow SLUICE_LAPI_MODE=$mode timeout 120 "$run" "$builddir/sluicerun" -n 3 -- "$job" am
    expect "slow completion handlers, $mode mode: the AM case passes on 3 ranks" 0 "PASS am"
    at_least_one "slow completion handlers, $mode mode: Mediums went as data" "unpacked Mediums"
    at_least_one "slow completion handlers, $mode mode: Longs went as data into the segment" "unpacked Longs"
    at_least_one "slow completion handlers, $mode mode: completion handlers completed them" "completion handlers"
    at_least_one "slow completion handlers, $mode mode: deliveries waited for them" "deferred"
    no_rule_broken "slow completion handlers, $mode mode"
done

echo "=== lapi: interrupt and polling mode, with a rank that computes"
# Rank 1 computes for 2 s without calling Sluice while rank 0 makes 100
# Gets and Puts in its segment: LAPI's notification thread serves them in
# interrupt mode; in polling mode they wait for rank 1's next call.
progress=$builddir/src/conduits/lapi/tests/sluice-lapi-progress-check
lapi_job SLUICE_LAPI_MODE=INTERRUPT timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$progress" 2000 100 interrupt
expect "interrupt mode: a computing rank's segment is served by LAPI's notification thread" 0 "PASS progress interrupt"
lapi_job SLUICE_LAPI_MODE=POLLING timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$progress" 2000 100 polling
expect "polling mode: a computing rank's segment waits for its next call" 0 "PASS progress polling"

echo "=== lapi: the receive thread, and header handlers within a short limit"
check=$builddir/tests/sluice-rcv-thread-check
lapi_job SLUICE_RCV_THREAD=1 SLUICE_VERBOSE=1 timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$check" rcv-thread 3000 200 thread
expect "SLUICE_RCV_THREAD=1: rank 1's receive thread answers while it computes" 0 "PASS rcv-thread"
# A header handler never waits for the conduit's main lock nor calls LAPI:
# a limit of 100 ms (the software LAPI's default is 2 s) is never passed,
# under a flood in both directions with payloads as data.
for mode in INTERRUPT POLLING; do
    lapi_job SOFTNIC_LAPI_HH_LIMIT_MS=100 SLUICE_LAPI_PACKED_MAX=96 SLUICE_LAPI_MODE=$mode timeout 120 "$run" \
        "$builddir/sluicerun" -n 3 -- "$job" flood 2000
    expect "$mode mode: the flood passes on 3 ranks with header handlers limited to 100 ms" 0 "PASS flood"
    no_rule_broken "$mode mode, flood, SOFTNIC_LAPI_HH_LIMIT_MS=100"
done

echo "=== lapi: knobs at their extremes"
lapi_job SLUICE_LAPI_SEND_BUFFERS=1 SLUICE_LAPI_PACKED_MAX=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" flood 2000
expect "one send buffer, every Medium as data: the flood passes" 0 "PASS flood"
at_least_one "one send buffer: sends waited for it" "network full"
lapi_job SLUICE_LAPI_RMA_DEPTH=1 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" rma
expect "one Put or Get in flight: the RMA case passes" 0 "PASS rma"
at_least_one "one Put or Get in flight: transfers waited" "network full"
lapi_job SLUICE_LAPI_MAX_MEDIUM=512 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" am
expect "SLUICE_LAPI_MAX_MEDIUM=512: the AM case passes" 0 "PASS am"
lapi_job SLUICE_LAPI_MAX_MEDIUM=1M SLUICE_LAPI_MODE=POLLING timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" am
expect "SLUICE_LAPI_MAX_MEDIUM=1M: the AM case passes" 0 "PASS am"
lapi_job SLUICE_LAPI_PACKED_MAX=800 timeout 120 "$run" "$builddir/sluicerun" -n 2 -- "$job" args
expect "SLUICE_LAPI_PACKED_MAX=800 (MAX_UHDR_SZ): the arguments case passes" 0 "PASS args"

echo "=== lapi: bad values and a wrong job environment"
b() {  # b WHAT CODE PATTERN ENV...: a 2-rank basic job that must be refused
    what=$1 want=$2 pattern=$3
    shift 3
    lapi_job "$@" timeout 60 "$run" "$builddir/sluicerun" -n 2 -- "$job" basic
    expect "$what" "$want" "$pattern"
}
b "SLUICE_LAPI_MODE=SOMETIMES is refused by name" 2 "SLUICE_LAPI_MODE=SOMETIMES" SLUICE_LAPI_MODE=SOMETIMES
b "SLUICE_LAPI_MAX_MEDIUM=100 is refused by name" 2 "SLUICE_LAPI_MAX_MEDIUM=100 is out of range" SLUICE_LAPI_MAX_MEDIUM=100
b "SLUICE_LAPI_MAX_MEDIUM=2M is refused by name" 2 "SLUICE_LAPI_MAX_MEDIUM=2M is out of range" SLUICE_LAPI_MAX_MEDIUM=2M
b "SLUICE_LAPI_SEND_BUFFERS=0 is refused by name" 2 "SLUICE_LAPI_SEND_BUFFERS=0 is out of range" SLUICE_LAPI_SEND_BUFFERS=0
b "SLUICE_LAPI_RMA_DEPTH=0 is refused by name" 2 "SLUICE_LAPI_RMA_DEPTH=0 is out of range" SLUICE_LAPI_RMA_DEPTH=0
b "SLUICE_LAPI_PEER_TIMEOUT=0 is refused by name" 2 "SLUICE_LAPI_PEER_TIMEOUT=0 is out of range" SLUICE_LAPI_PEER_TIMEOUT=0
b "SLUICE_LAPI_PACKED_MAX above MAX_UHDR_SZ is refused by name" 1 \
    "SLUICE_LAPI_PACKED_MAX=1000 is above LAPI's largest user header" SLUICE_LAPI_PACKED_MAX=1000
b "a LAPI library that does not open is refused with the reason" 1 "cannot open the LAPI library" \
    SLUICE_LAPI_LIBRARY=/nonexistent/liblapi.so.1
b "MP_CHILD other than the rank is refused naming it" 1 "MP_CHILD=1, but this is rank 0" MP_CHILD=1
b "MP_PROCS other than the job's size is refused naming it" 1 "MP_PROCS=4, but the Sluice job has 2 ranks" MP_PROCS=4
b "a malformed MP_PARTITION is refused naming it" 1 "MP_PARTITION='x1' is not a job key" MP_PARTITION=x1
lapi_job timeout 60 "$run" env -u MP_PARTITION "$builddir/sluicerun" -n 2 -- "$job" basic
expect "without MP_PARTITION the job is refused, naming the variable" 1 "MP_PARTITION is not set"
if env -u MP_PARTITION "$builddir/sluice-info" --conduits 2>&1 | grep -A3 -E '^ +lapi ' |
    grep -q "probe here: fails: MP_PARTITION is not set"; then
    echo "ok: sluice-info says why lapi cannot run outside a LAPI job"
else
    echo "FAIL: sluice-info --conduits does not say why lapi cannot run"
    failed=1
fi
if SLUICE_LAPI_LIBRARY=/nonexistent/liblapi.so.1 "$run" "$builddir/sluice-info" --conduits 2>&1 |
    grep -A3 -E '^ +lapi ' | grep -q "probe here: fails: cannot open the LAPI library"; then
    echo "ok: sluice-info says when liblapi does not open"
else
    echo "FAIL: sluice-info --conduits does not say that liblapi does not open"
    failed=1
fi
if "$run" "$builddir/sluice-info" --conduits 2>&1 | grep -A3 -E '^ +lapi ' | grep -q "probe here: ok"; then
    echo "ok: sluice-info says lapi can run on the software LAPI"
else
    echo "FAIL: sluice-info --conduits does not say that lapi probes under softnic-run"
    failed=1
fi

echo "=== lapi: libsluice opens liblapi at run time"
not_linked liblapi
echo "lapi-softnic.sh: $(($(date +%s) - start)) s"
exit $failed
