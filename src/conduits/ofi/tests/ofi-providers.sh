#!/bin/sh
# The ofi conduit on each libfabric provider that probes here (shm,
# sockets, udp;ofi_rxd, net;ofi_rxm), and on tcp;ofi_rxm with the
# registration modes no provider here demands (SLUICE_OFI_MR_MODE_ADD) and
# with a ring of receive buffers: the conduit conformance suite, then the
# multi-process suites over the network path (tests/mp, Net/*ofi*).  The
# default provider (tcp;ofi_rxm) runs in those suites already.  In the
# plain build, then, sluice-bench's ofi section (--quick --reps 1) over
# tcp;ofi_rxm and sockets (every provider with SLUICETEST_OFI_BENCH_ALL=1)
# must finish within a hard time limit.  Skips (77) without the ofi
# conduit; a provider fi_info does not list here is named and skipped.
# README.md in this folder.
set -u
# The tsan subset leaves this to the plain and asan builds (tests/README.md,
# Subsets): it keeps .ci/run within its time.
if [ "${SLUICETEST_SUBSET:-}" = tsan ]; then
    echo "SKIP: ofi's other providers and registration modes: not in the tsan subset (runs in the plain and asan builds; tests/README.md)"
    exit 77
fi
# shellcheck source=ofi-common.sh
. "$(dirname "$0")/ofi-common.sh"
# shellcheck source=../../../../tests/mp/families.sh
. "$(dirname "$0")/../../../../tests/mp/families.sh"
conformance=$builddir/tests/conduit/sluice-conduit-conformance
mp=$builddir/tests/mp/sluice-mp-gtest
failed=0
ran=0
# run NAME ENV...: the conformance suite with ENV, then the multi-process
# suites at 2 ranks.  The default provider runs every count in those
# suites already (sluice-mp-gtest).
# $exclude: conformance tests (a gtest pattern) left out of this run;
# $mp_exclude: the same for the multi-process suites; every run but shm's
# leaves out the client families (tests/mp/families.sh) but AtomicDomains,
# each provider's atomic path, and the tcp;ofi_rxm variants all of them.
# $mp_suites: no leaves the multi-process suites out of this run.
# SLUICETEST_NETWORKS=ofi: the suites' Net instances over ofi, which a
# sanitizer subset would otherwise leave to the first network conduit
# (suite_networks, tests/harness.hpp).
exclude=
mp_exclude=$mp_client_families_but_atomics
mp_suites=yes
skipped=
run() {
    name=$1
    shift
    echo "=== ofi: $name"
    cfilter='*/ofi:*/ofi_alone'
    # The firehose registrar's tests skip (and gtest_ran would fail) over
    # a provider that demands no registration: left out by name, and run
    # where the run demands it (SLUICE_OFI_MR_MODE_ADD=local).
    noreg=
    case " $* " in
    *" SLUICE_OFI_MR_MODE_ADD=local"*) ;;
    *)
        noreg='*FirehoseRegistrar*'
        echo "not run over $name: conformance FirehoseRegistrar (no registration demanded: the registrar has nothing to do)"
        ;;
    esac
    excluded=$exclude${exclude:+${noreg:+:}}$noreg
    [ -n "$excluded" ] && cfilter="$cfilter:-$excluded"
    if ! gtest_ran env "$@" timeout 900 "$conformance" --gtest_filter="$cfilter" --gtest_brief=1; then
        echo "FAIL: conformance suite over ofi ($name)"
        failed=1
    fi
    filter=$(mp_filter 'Net/*N2_native_ofi' "$mp_exclude")
    if [ "$mp_suites" = no ]; then
        echo "not run over $name: the multi-process suites (README, Limits)"
    elif ! gtest_ran env SLUICETEST_NETWORKS=ofi "$@" timeout 900 "$mp" --gtest_filter="$filter" --gtest_brief=1; then
        echo "FAIL: multi-process suites over ofi ($name)"
        failed=1
    fi
    ran=$((ran + 1))
}
# Under a sanitizer subset: shm and the registration modes, at 2 ranks.
subset=
[ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ] && subset=1
# sockets and udp;ofi_rxd move a message in several times the time of the
# others: they run in the plain build only, with the multi-process suites'
# smaller counts and longer time limits (SLUICETEST_SUBSET=slow).
providers=shm
if [ -z "$subset" ]; then
    providers="shm sockets udp;ofi_rxd net;ofi_rxm"
else
    echo "not run: sockets, udp;ofi_rxd and net;ofi_rxm (plain build only; README, Tests)"
fi
# udp;ofi_rxd connects two ranks on their first message, by a handshake
# that the sender's polls move; the conduit greets every peer at init
# (SLUICE_OFI_CONNECT, auto: on for rxd).  Checked: a rank that sends one
# AM to a peer and then spins without calling Sluice (sluice-exit-test
# spin, every peer over rxd) still lets the job end with the exiting
# rank's code; a rank left without greetings (SLUICE_OFI_CONNECT=0 on the
# other) ends the job within the peer timeout with an error naming the
# peer; a bad value is refused by name.
# rxd_job LIMIT [ENV...] -- ARGS...: a job of sluicerun over udp;ofi_rxd,
# every peer over the network; its code in $code, its output in $log.
rxd_job() {
    limit=$1
    shift
    set -- env SLUICE_NETWORK=ofi SLUICE_OFI_PROVIDER='udp;ofi_rxd' SLUICE_ROUTE=network "$@"
    log=$(timeout "$limit" "$@" 2>&1)
    code=$?
}
rxd_connect_checks() {
    started=$(date +%s)
    rxd_job 60 "$builddir/sluicerun" -n 4 -- "$builddir/tests/exit/sluice-exit-test" spin 2 5
    took=$(($(date +%s) - started))
    if [ "$code" != 5 ] || [ "$took" -gt 20 ]; then
        echo "FAIL: udp;ofi_rxd, exit case spin 2 5 at 4 ranks: code $code after ${took}s (5 within 20 s expected)"
        printf '%s\n' "$log" | tail -20
        failed=1
    else
        echo "ok: udp;ofi_rxd, exit case spin 2 5 at 4 ranks: code 5 (${took}s)"
    fi
    started=$(date +%s)
    # shellcheck disable=SC2016 # SLUICE_RANK is the rank's, not ours
    rxd_job 60 SLUICE_OFI_PEER_TIMEOUT=2 "$builddir/sluicerun" -n 2 -- \
        sh -c '[ "$SLUICE_RANK" = 1 ] && export SLUICE_OFI_CONNECT=0; exec "$0" am' "$builddir/tests/mp/sluice-mp-test"
    took=$(($(date +%s) - started))
    if [ "$code" = 0 ] || [ "$took" -gt 20 ] ||
        ! printf '%s\n' "$log" | grep -q 'rank 1 (over udp;ofi_rxd.*greeting.*SLUICE_OFI_CONNECT'; then
        echo "FAIL: udp;ofi_rxd, SLUICE_OFI_CONNECT=0 on rank 1 only: code $code after ${took}s (an error naming rank 1 expected)"
        printf '%s\n' "$log" | tail -20
        failed=1
    else
        echo "ok: udp;ofi_rxd, SLUICE_OFI_CONNECT=0 on rank 1 only: the job ends with $code, naming rank 1 (${took}s)"
    fi
    rxd_job 60 SLUICE_OFI_CONNECT=bogus "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" am
    if [ "$code" = 0 ] || ! printf '%s\n' "$log" | grep -q 'SLUICE_OFI_CONNECT=bogus is not a valid switch (auto, 1 or 0)'; then
        echo "FAIL: udp;ofi_rxd, SLUICE_OFI_CONNECT=bogus: code $code, no error naming the knob"
        printf '%s\n' "$log" | tail -20
        failed=1
    else
        echo "ok: udp;ofi_rxd, SLUICE_OFI_CONNECT=bogus: refused by name"
    fi
}
for p in $providers; do
    if ! fi_info -p "$p" -t FI_EP_RDM > /dev/null 2>&1 && ! SLUICE_OFI_PROVIDER="$p" "$builddir/sluice-info" --conduits 2> /dev/null |
        grep -A3 -E '^ +ofi +' | grep -q 'probe here: ok'; then
        echo "SKIP provider $p: not offered here"
        skipped="$skipped $p"
        continue
    fi
    case $p in
    shm)
        mp_exclude=
        run "provider $p" SLUICE_OFI_PROVIDER="$p" ;;
    sockets)
        # BacklogAndRetry (20 000 Shorts) and PerPeerOrderOneHandlerAtATime
        # (1500 messages) flood below the AM layer, without its credits:
        # over sockets the kernel drops segments of the loopback connection
        # and retransmits them with growing back-off (README, Limits).
        echo "not run over $p: conformance BacklogAndRetry, PerPeerOrderOneHandlerAtATime (floods without credits; README, Limits)"
        exclude='*BacklogAndRetry*:*PerPeerOrderOneHandlerAtATime*'
        run "provider $p" SLUICE_OFI_PROVIDER="$p" SLUICETEST_SUBSET=slow SLUICE_OFI_PEER_TIMEOUT=120 ;;
    'net;ofi_rxm')
        # It takes NIC atomics like tcp;ofi_rxm, but the AtomicDomains suite
        # expects them from tcp;ofi_rxm and shm only
        # (tests/mp/mp_driver_atomic.cpp): its case runs here by itself,
        # expecting the ofi path.
        mp_exclude=$mp_client_families
        run "provider $p" SLUICE_OFI_PROVIDER="$p"
        log=$(SLUICE_OFI_PROVIDER="$p" SLUICE_NETWORK=ofi SLUICE_ROUTE=network timeout 240 "$builddir/sluicerun" -n 2 -- \
            "$builddir/tests/mp/sluice-mp-test" atomic 300 --path=ofi --path32=ofi 2>&1)
        code=$?
        if [ "$code" != 0 ] || ! printf '%s\n' "$log" | grep -q '^PASS atomic on 2 ranks'; then
            echo "FAIL: $p, atomic domains on NIC atomics (sluice-mp-test atomic --path=ofi): code $code"
            printf '%s\n' "$log" | grep -v '^sluice\[rank [01]\] ad_' | tail -20
            failed=1
        else
            echo "ok: $p, atomic domains on NIC atomics (sluice-mp-test atomic --path=ofi)"
        fi ;;
    'udp;ofi_rxd')
        # A job over rxd stalls now and then under load (README, Limits):
        # the multi-process suites run over it by hand only
        # (SLUICETEST_OFI_RXD_SUITES=1).
        [ "${SLUICETEST_OFI_RXD_SUITES:-0}" = 1 ] || mp_suites=no
        # The conformance floods without credits stall rxd as well (one CI
        # run: BacklogAndRetry, rank 1 silent for 30 s): by hand only, too.
        if [ "${SLUICETEST_OFI_RXD_SUITES:-0}" != 1 ]; then
            echo "not run over $p: conformance BacklogAndRetry, PerPeerOrderOneHandlerAtATime (floods without credits; README, Limits)"
            exclude='*BacklogAndRetry*:*PerPeerOrderOneHandlerAtATime*'
        fi
        run "provider $p" SLUICE_OFI_PROVIDER="$p" SLUICETEST_SUBSET=slow
        rxd_connect_checks ;;
    esac
    exclude=
    mp_exclude=$mp_client_families_but_atomics
    mp_suites=yes
done
# shm keeps its region in a file in /dev/shm (libfabric names it after
# the process id unless told otherwise; the conduit names it in the job's
# space): however a rank ends (collective exit, one rank exiting while the
# others spin, returning from main without finalize), no file of the job
# or of its processes may be left.
if printf '%s\n' $providers | grep -qx shm; then
    exitprog=$builddir/tests/exit/sluice-exit-test
    pids=$(mktemp -d)
    for c in "collective 3" "spin 1 5" "return 6"; do
        job=ofishm$$x$(echo "$c" | tr -d ' ')
        want=$(echo "$c" | awk '{print $NF}')
        rm -f "$pids"/*
        # shellcheck disable=SC2086 # $c is the case and its arguments
        SLUICETEST_PIDDIR=$pids SLUICE_JOB_ID=$job SLUICE_OFI_PROVIDER=shm SLUICE_NETWORK=ofi \
            SLUICE_ROUTE=network timeout 60 "$builddir/sluicerun" -n 3 -- "$exitprog" $c > /dev/null 2>&1
        code=$?
        left=$(ls /dev/shm 2> /dev/null | grep -c "^sluice\.$job\.")
        for pid in $(ls "$pids"); do
            left=$((left + $(ls /dev/shm 2> /dev/null | grep -c "^$pid:")))
        done
        if [ "$code" != "$want" ] || [ "$left" != 0 ]; then
            echo "FAIL: shm, exit case $c: code $code (expected $want), $left file(s) of the job left in /dev/shm"
            failed=1
        else
            echo "ok: shm, exit case $c: code $code, nothing left in /dev/shm"
        fi
    done
    rm -rf "$pids"
fi
mp_exclude=$mp_client_families
# The registration modes and the small queues change different code (the
# keys a transfer carries; how sends and receives wait for room): one run
# checks both.
run "tcp;ofi_rxm as if it demanded FI_MR_LOCAL, PROV_KEY and ENDPOINT, with 64 KiB RMA pieces, 4 send buffers and small receive buffers" \
    SLUICE_OFI_PROVIDER='tcp;ofi_rxm' SLUICE_OFI_MR_MODE_ADD=local,prov_key,endpoint \
    SLUICE_OFI_RMA_CHUNK=64K SLUICE_OFI_SEND_BUFFERS=4 SLUICE_OFI_RECV_BUFFERS=2 SLUICE_OFI_RECV_BUFFER_SIZE=300K
# libfabric is opened the first time a job probes or opens ofi, never
# linked (src/conduits/ofi/fabric_api.hpp): a job on one host loads none of
# it, a library that does not open or is not libfabric is named.
echo "=== ofi: libsluice opens libfabric at run time"
not_linked libfabric
# loads ENV...: how many times the ranks of a 2-rank job with ENV loaded
# libfabric (LD_DEBUG=files).
loads() {
    env LD_DEBUG=files "$@" timeout 60 "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" basic 2>&1 |
        grep -c 'file=[^ ]*libfabric\.so.*generating link map'
}
n=$(loads)
if [ "$n" = 0 ]; then
    echo "ok: a job on one host (smp) loads no libfabric"
else
    echo "FAIL: a job on one host loaded libfabric ($n times; LD_DEBUG=files)"
    failed=1
fi
n=$(loads SLUICE_NETWORK=ofi SLUICE_ROUTE=network)
if [ "$n" = 2 ]; then
    echo "ok: a job over ofi loads libfabric once in each rank"
else
    echo "FAIL: a job over ofi loaded libfabric $n times in its 2 ranks (LD_DEBUG=files)"
    failed=1
fi
code=0
log=$(SLUICE_OFI_LIBRARY=/nonexistent/libfabric.so.1 SLUICE_NETWORK=ofi SLUICE_ROUTE=network timeout 60 \
    "$builddir/sluicerun" -n 2 -- "$builddir/tests/mp/sluice-mp-test" basic 2>&1) || code=$?
expect "SLUICE_OFI_LIBRARY naming no file: the job is refused with the reason" fail \
    "cannot open the libfabric library (/nonexistent/libfabric.so.1"
if SLUICE_OFI_LIBRARY=libc.so.6 "$builddir/sluice-info" --conduits 2>&1 | grep -A3 -E '^ +ofi ' |
    grep -q "probe here: fails: libc.so.6 is not libfabric: it has no fi_"; then
    echo "ok: sluice-info says when SLUICE_OFI_LIBRARY names a library that is not libfabric"
else
    echo "FAIL: sluice-info --conduits with SLUICE_OFI_LIBRARY=libc.so.6 does not say it is not libfabric"
    failed=1
fi
if [ -n "$subset" ]; then
    echo "not run: tcp;ofi_rxm with a ring of receive buffers, sluice-bench --ofi (plain build only; README, Tests)"
    exit $failed
fi
run "tcp;ofi_rxm with a ring of receive buffers" SLUICE_OFI_PROVIDER='tcp;ofi_rxm' SLUICE_OFI_RECV_MODE=ring
# sluice-bench --ofi --quick --reps 1 over the default provider and over
# sockets: every job of the section (the 2-rank job beside the bare
# libfabric reference, the large-segment jobs) within the bench's limit per
# job, the whole run within this script's, and the AM Short round trip
# measured.  Before the conduit progressed sockets itself, this job hung
# there until its limit.  SLUICETEST_OFI_BENCH_ALL=1 runs it over every
# provider above (about 100 s more).
bench=$builddir/tests/perf/sluice-bench
bench_check() {
    p=$1
    tag=${p%%;*}
    out=$(mktemp -d)
    started=$(date +%s)
    timeout 900 "$bench" --ofi --quick --reps 1 --ofi-providers "$p" --timeout 300 --wait-idle 0 \
        --sluicerun "$builddir/sluicerun" --csv "$out/bench.csv" > "$out/log" 2>&1
    code=$?
    took=$(($(date +%s) - started))
    rtt=$(awk -v row="ofi_${tag}_am_short_rtt_ns" '$1 == row && $3 ~ /^[0-9.]+$/ { print $3; exit }' "$out/log")
    put=$(awk -v row="ofi_${tag}_put_lat_ns" '$1 == row && $2 == 8 && $3 ~ /^[0-9.]+$/ { print $3; exit }' "$out/log")
    get=$(awk -v row="ofi_${tag}_get_lat_ns" '$1 == row && $2 == 8 && $3 ~ /^[0-9.]+$/ { print $3; exit }' "$out/log")
    if [ "$code" != 0 ] || ! grep -q '; 0 job(s) failed$' "$out/log" || [ -z "$rtt" ]; then
        echo "FAIL: sluice-bench --ofi over $p: exit $code after ${took}s (every job done and the AM Short round trip measured expected)"
        tail -40 "$out/log"
        failed=1
    else
        echo "ok: sluice-bench --ofi over $p: every job done in ${took}s; AM Short round trip $rtt ns, 8 B Put $put ns, 8 B Get $get ns"
    fi
    rm -rf "$out"
}
if [ ! -x "$bench" ]; then
    echo "FAIL: sluice-bench --ofi: $bench is not built (make builds it)"
    failed=1
else
    for p in 'tcp;ofi_rxm' $providers; do
        case " $skipped " in
        *" $p "*) echo "not run: sluice-bench --ofi over $p (not offered here, above)" ;;
        *)
            if [ "$p" != 'tcp;ofi_rxm' ] && [ "$p" != sockets ] && [ "${SLUICETEST_OFI_BENCH_ALL:-0}" != 1 ]; then
                echo "not run: sluice-bench --ofi over $p (by hand: SLUICETEST_OFI_BENCH_ALL=1)"
                continue
            fi
            bench_check "$p" ;;
        esac
    done
fi
[ "$ran" -gt 0 ] || { echo "SKIP: no provider ran"; exit 77; }
exit $failed
