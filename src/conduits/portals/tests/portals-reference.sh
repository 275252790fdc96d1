#!/bin/sh
# The portals conduit on the Sandia Portals 4 reference implementation
# (README.md in this folder), over its UDP transport on this host, every
# peer over portals (SLUICE_ROUTE=network):
#   - the conduit conformance suite and the multi-process suites (AM,
#     barriers, allgather, delivery order, floods, hidden replies, threads,
#     RMA to 4 MiB) at 2 ranks with the reduced counts (3 and 4 ranks
#     and full counts by hand: they pass, in minutes),
#     and the AM suites
#     again with SLUICE_PORTALS_PACKED_LONG=0 (every Long two-part); the
#     atomic suite there takes the NIC path (PtlAtomic, PtlFetchAtomic,
#     PtlSwap), and runs again with SLUICE_PORTALS_ATOMICS=0 (the AM path);
#   - the exit matrix (tests/exit, Net/*_portals);
#   - a hot spot: 5 ranks send 1000 largest Mediums each to rank 0, which
#     computes for half a second first.  With flow control (the default)
#     nothing reaches a catch-basin; with SLUICE_PORTALS_FLOW_CONTROL=0 and
#     two 8 KiB request buffers the catch-basin takes requests, the error
#     line says so once, the senders put them again, and every request
#     still arrives once, in order;
#   - sluice-bench's bare Portals 4 reference (tests/perf) on its own;
#   - knobs refused by name; the pinnable-memory share
#     (SLUICE_PHYSMEM_PINNABLE_RATIO, SLUICE_PHYSMEM_MAX) bounding the
#     segment; receive memory per rank at 2, 8 and 32 ranks
#     with GASNet's Portals conduit's credit defaults (printed, for the note and docs).
# The reference implementation has no retransmission over UDP: a datagram
# dropped by a full socket receive buffer hangs the job.  The script needs
# net.core.rmem_default of at least 64 MiB; as root it raises it for its
# run and puts it back after (tests/portals/udp-buffers.sh), otherwise it
# skips saying so.  Exits 77
# without the portals conduit.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
if ! "$builddir/sluice-info" --conduits 2> /dev/null | grep -qE '^ +portals +'; then
    echo "SKIP: the portals conduit is not in this build (configure --with-portals4=DIR)"
    exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
# ASan builds: the reference implementation's own leftovers at exit are
# not Sluice's leaks (lsan.supp).
export LSAN_OPTIONS="suppressions=$here/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# shellcheck source=../../../../tests/portals/udp-buffers.sh
. "$here/../../../../tests/portals/udp-buffers.sh"
# shellcheck source=../../../../tests/mp/families.sh
. "$here/../../../../tests/mp/families.sh"
portals_udp_buffers || exit 77
trap portals_udp_restore EXIT
run=$builddir/sluicerun
mp=$builddir/tests/mp/sluice-mp-test
failed=0
export SLUICE_NETWORK=portals SLUICE_ROUTE=network

# A run that failed on a lost datagram (portals_rerun_why: UDP dropped
# datagrams while it ran; the reference implementation never sends one
# again, and a job hangs) runs once more, saying so; a second failure
# stands.
gtest() {  # gtest WHAT PROGRAM FILTER [ENV...]
    what=$1 program=$2 filter=$3
    shift 3
    echo "=== portals: $what"
    for try in 1 2; do
        drops=$(portals_udp_drops)
        gtest_ran env "$@" timeout 1200 "$builddir/$program" --gtest_filter="$filter" --gtest_brief=1
        rc=$?
        drops=$(($(portals_udp_drops) - drops))
        [ "$rc" != 0 ] && [ "$try" = 1 ] && why=$(portals_rerun_why "$drops" < /dev/null) || break
        echo "note: $what failed $why: running it once more"
    done
    if [ "$rc" != 0 ]; then
        echo "FAIL: $what${drops:+ (UDP drops during the run: $drops)}"
        failed=1
    fi
}
# The shared suites leave portals to this script (SLUICETEST_NETWORK_SKIP).
gtest "conformance suite" tests/conduit/sluice-conduit-conformance '*/portals:*/portals_alone' SLUICETEST_NETWORK_SKIP=
# The Rma suite with its reduced sizes (to 4 MiB): the reference
# implementation over UDP makes about 262,000 acknowledged transfers in a
# process's life (README, Limits), and the full suite's 16 MiB cases take
# more in 880-byte pieces.
# The multi-process suites with the sanitizer subsets' counts (about a
# millisecond per message on the reference implementation: full counts
# take 270 s and check no more of the conduit).
gtest "multi-process suites, 2 ranks, reduced counts" tests/mp/sluice-mp-gtest 'Net/*N2_native_portals:-Net/Rma*' \
    SLUICETEST_SUBSET=reduced SLUICETEST_NETWORK_SKIP=
gtest "Rma suite, sizes to 4 MiB, 2 ranks" tests/mp/sluice-mp-gtest 'Net/Rma*N2_native_portals' \
    SLUICETEST_SUBSET=reduced SLUICETEST_NETWORK_SKIP=
# The suites that send Longs of every size, prepared ones included.
gtest "AM suites with Longs, every Long two-part (SLUICE_PORTALS_PACKED_LONG=0)" tests/mp/sluice-mp-gtest \
    'Net/AmCategories*N2_native_portals:Net/AmPrepare*N2_native_portals' SLUICE_PORTALS_PACKED_LONG=0 SLUICETEST_NETWORK_SKIP=
# Its counts reduced: with NIC atomics off the domain's work goes by AMs,
# core code the full counts run over every conduit; this run checks that
# the portals conduit steps aside (the path the ranks report).
gtest "atomic suite, NIC atomics off (SLUICE_PORTALS_ATOMICS=0: the am path)" tests/mp/sluice-mp-gtest \
    'Net/Atomic*N2_native_portals' SLUICE_PORTALS_ATOMICS=0 SLUICETEST_SUBSET=reduced SLUICETEST_NETWORK_SKIP=
gtest "exit matrix" tests/exit/sluice-exit-gtest 'Net/*_portals' SLUICETEST_NETWORK_SKIP=
# sluice-bench's bare Portals 4 reference, between two processes of its own.
if [ -x "$builddir/tests/perf/sluice-perf-portals-reference" ]; then
    gtest "sluice-bench's bare reference" tests/perf/sluice-perf-portals-reference '*'
else
    echo "not run: sluice-bench's bare reference (tests/perf/sluice-perf-portals-reference is built only with GoogleTest)"
fi

# job LIMIT RANKS [ENV...] -- ARGS...: a job of sluice-mp-test; its code in
# $code, its output in $log.  A job that failed on a lost datagram (UDP
# dropped datagrams, or its output says a rank took its silent peer for
# dead: portals_rerun_why) runs once more, as gtest's runs do.
job() {
    limit=$1 ranks=$2
    shift 2
    envs=
    while [ "$1" != -- ]; do envs="$envs $1"; shift; done
    shift
    for try in 1 2; do
        drops=$(portals_udp_drops)
        # shellcheck disable=SC2086 # envs is a list of NAME=VALUE words
        log=$(env $envs SLUICE_PORTALS_STATS=1 timeout "$limit" "$run" -n "$ranks" -- "$mp" "$@" 2>&1)
        code=$?
        drops=$(($(portals_udp_drops) - drops))
        [ "$code" != 0 ] && [ "$try" = 1 ] && why=$(printf '%s\n' "$log" | portals_rerun_why "$drops") || break
        echo "note: the job ($envs $*) ended $code $why: running it once more"
    done
}
resent() {  # the sum of every rank's "resent" counter in $log
    printf '%s\n' "$log" | sed -n 's/.* resent \([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}'
}

echo "=== portals: hot spot, 5 ranks to one"
job 300 6 -- hotspot 1000 500
if [ "$code" = 0 ] && [ "$(resent)" = 0 ] && ! printf '%s\n' "$log" | grep -q "catch-basin"; then
    echo "ok: with flow control, 5000 requests to one rank, none reached a catch-basin"
else
    echo "FAIL: hot spot with flow control: code $code, $(resent) put again"
    printf '%s\n' "$log" | tail -20
    failed=1
fi
job 300 6 SLUICE_PORTALS_FLOW_CONTROL=0 SLUICE_PORTALS_REQRB_SIZE=8K SLUICE_PORTALS_REQRB_MIN=2 -- hotspot 1000 500
said=$(printf '%s\n' "$log" | grep -c "receive buffers were full (its catch-basin took a message)")
if [ "$code" = 0 ] && [ "$(resent)" -gt 0 ] && [ "$said" -ge 1 ]; then
    echo "ok: without flow control the catch-basin took requests ($(resent) put again, said on $said ranks), none lost"
else
    echo "FAIL: hot spot without flow control: code $code, $(resent) put again, said $said times"
    printf '%s\n' "$log" | tail -20
    failed=1
fi

echo "=== portals: the UDP socket buffer"
# The reference implementation's socket takes net.core.rmem_default (raised
# to 64 MiB above): enough for 2 ranks' bursts at the default send tickets
# and credits, so nothing is said; 65536 tickets need more, and rank 0 says
# so at start-up naming the sysctl (the job itself sends too little to
# overflow it, and passes).
job 60 2 -- basic
if [ "$code" = 0 ] && ! printf '%s\n' "$log" | grep -q "net.core.rmem_default"; then
    echo "ok: a socket buffer large enough for the job's bursts: nothing said"
else
    echo "FAIL: the default job: code $code, or it warned of the socket buffer"
    printf '%s\n' "$log" | tail -5
    failed=1
fi
job 60 2 SLUICE_PORTALS_MSG_LIMIT=65536 -- basic
expect "a burst larger than the socket buffer is named at start-up with the sysctl" 0 \
    "warning: portals: .*socket buffer of [0-9]* bytes (net.core.rmem_default).*sysctl -w net.core.rmem_max="

echo "=== portals: knobs"
for bad in SLUICE_PORTALS_MAX_MESSAGE=100 SLUICE_PORTALS_MSG_LIMIT=two SLUICE_PORTALS_REQRB_SIZE=1K \
    SLUICE_PORTALS_ATOMICS=maybe; do
    job 60 2 "$bad" -- basic
    name=${bad%%=*}
    if [ "$code" != 0 ] && printf '%s\n' "$log" | grep -q "$name"; then
        echo "ok: $bad refused by name"
    else
        echo "FAIL: $bad: code $code"
        printf '%s\n' "$log" | tail -5
        failed=1
    fi
done

echo "=== portals: pinnable memory (SLUICE_PHYSMEM_PINNABLE_RATIO)"
# GASNet's Portals conduit's share of physical memory a job may pin: 0.75
# of the host by default, split between its 2 ranks.  A ratio of 16 MiB of
# this host's memory gives each rank 8 MiB: a 16 MiB segment is refused at
# attach naming the knob and the fix, a 4 MiB one is registered and used.
# SLUICE_PHYSMEM_MAX below the share binds instead, and is named.
job 60 2 SLUICE_VERBOSE=1 -- basic
expect "the default share: 0.75 of the host's memory, said at init" 0 \
    "portals: pinnable memory [0-9]* MiB per rank (SLUICE_PHYSMEM_PINNABLE_RATIO=0.75 of [0-9]* MiB, 2 rank(s) on this host)"
physical=$(($(getconf _PHYS_PAGES) * $(getconf PAGESIZE)))
ratio=$(awk -v p="$physical" 'BEGIN { printf "%.12f", (16 * 1048576 + 8192) / p }')
job 60 2 SLUICE_PHYSMEM_PINNABLE_RATIO="$ratio" -- segment 16 1
expect "SLUICE_PHYSMEM_PINNABLE_RATIO=$ratio (8 MiB a rank): a 16 MiB segment is refused, naming the knob" fail \
    "would pin 16777216 bytes, more than the 83[0-9]* this rank may (SLUICE_PHYSMEM_PINNABLE_RATIO=$ratio of [0-9]* MiB, 2 rank(s) on this host)"
expect "... and the fix" fail "raise SLUICE_PHYSMEM_PINNABLE_RATIO"
job 300 2 SLUICE_PHYSMEM_PINNABLE_RATIO="$ratio" SLUICE_VERBOSE=1 -- segment 4 1
expect "SLUICE_PHYSMEM_PINNABLE_RATIO=$ratio: a 4 MiB segment fits, and the segment case passes" 0 "^PASS segment on 2 ranks"
expect "... with 8 MiB a rank" 0 "portals: pinnable memory 8 MiB per rank (SLUICE_PHYSMEM_PINNABLE_RATIO=$ratio of"
job 60 2 SLUICE_PHYSMEM_MAX=16M -- segment 16 1
expect "SLUICE_PHYSMEM_MAX=16M, below the share: a 16 MiB segment is refused, naming it" fail \
    "more than the 8388608 this rank may (SLUICE_PHYSMEM_MAX=16M of [0-9]* MiB, below SLUICE_PHYSMEM_PINNABLE_RATIO=0.75, 2 rank(s) on this host)"
for bad in 0 -1 1.5 half; do
    job 60 2 SLUICE_PHYSMEM_PINNABLE_RATIO="$bad" -- basic
    expect "SLUICE_PHYSMEM_PINNABLE_RATIO=$bad is refused by name" fail \
        "SLUICE_PHYSMEM_PINNABLE_RATIO: '$bad' is not a fraction of physical memory above 0 and at most 1"
done

echo "=== portals: event queue limits and send buffer chunks"
# GASNet's Portals conduit knobs at their smallest: one event a poll from
# each queue (SAFE, AM, SYS), and send buffers of 8 chunks; a flood of
# AMs with replies and the RMA case still pass, the small send buffers
# making senders wait for chunks ("no chunk" in the counters).
job 300 2 SLUICE_PORTALS_SAFE_LIMIT=1 SLUICE_PORTALS_AM_LIMIT=1 SLUICE_PORTALS_SYS_LIMIT=1 -- flood 2000
expect "one event a poll from each queue: the flood passes" 0 "^PASS flood"
job 300 2 SLUICE_PORTALS_SB_CHUNKS=8 SLUICE_PORTALS_RPL_CHUNKS=8 -- flood 2000
expect "send buffers of 8 chunks: the flood passes" 0 "^PASS flood"
expect "... senders waited for a chunk" 0 " no chunk [1-9]"
# The rma case at its reduced sizes (to 4 MiB): the full case's 16 MiB
# transfers pass the reference implementation's lifetime limit of
# acknowledged transfers (README.md, Limits).
job 300 2 SLUICE_PORTALS_SB_CHUNKS=8 SLUICE_PORTALS_RPL_CHUNKS=8 SLUICE_PORTALS_SAFE_LIMIT=1 SLUICETEST_SUBSET=reduced -- rma
expect "send buffers of 8 chunks, one SAFE event a poll: the rma case passes" 0 "^PASS rma"

echo "=== portals: receive memory per rank (GASNet's Portals conduit's credit defaults)"
for n in 2 8 32; do
    job 600 "$n" -- basic
    line=$(printf '%s\n' "$log" | grep '^\[0\] portals: receive memory' | head -1)
    if [ "$code" = 0 ] && [ -n "$line" ]; then
        echo "ok: $n ranks: ${line#*portals: }"
    else
        echo "FAIL: $n ranks: code $code"
        printf '%s\n' "$log" | tail -10
        failed=1
    fi
done
exit $failed
