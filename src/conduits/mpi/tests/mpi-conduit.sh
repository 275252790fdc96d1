#!/bin/sh
# The mpi conduit (src/conduits/mpi) under the real mpirun, for the default
# MPI and each other one configure built libsluice-mpi for: sluice-mp-test's
# cases at 4 ranks (and segment and bad at 2) with every peer over the
# conduit (SLUICE_SPAWNER=mpi
# loads libsluice-mpi, and with it the conduit, into a program that links
# libsluice only); Put/Get each way (SLUICE_MPI_RMA), one send buffer,
# one posted receive and the smallest Medium; bad knob values and a thread
# level too low for SLUICE_RCV_THREAD, each refused naming the fix; the
# multi-process gtest suites and the exit matrix started by the MPI's
# launcher (tests/mpi/mpirun-launcher); the conduit conformance suite
# (tests/conduit) in its MPI-launched mode at 2 ranks and alone; a
# program under sluicerun told to use it, refused naming libsluice-mpi;
# then the hybrid exit modes (tests/mpi/hybrid.sh) over the conduit.  Every
# job under a hard time limit.  A sanitizer subset runs sluice-mp-test at 2
# ranks, the conformance suite, and the default MPI only.  src/conduits/mpi/README.md, Tests.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
mpirun=${SLUICETEST_MPIRUN:?}
if ! nm -DC "$builddir/.libs/libsluice-mpi.so" 2> /dev/null | grep -q 'conduit::mpi::make_mpi_transport'; then
    echo "SKIP: libsluice-mpi has no mpi conduit in this build"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_osc=^ucx UCX_MEM_EVENTS=no  # as tests/mpi/hybrid.sh says why
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export TSAN_OPTIONS="suppressions=$srcdir/tests/mpi/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export SLUICE_SPAWNER=mpi SLUICE_NETWORK=mpi SLUICE_ROUTE=network SLUICE_MPI_STATS=1
job=$builddir/tests/mp/sluice-mp-test
# shellcheck source=../../../../tests/mp/families.sh
. "$srcdir/tests/mp/families.sh"
failed=0
# A sanitizer subset: 2 ranks, the default MPI (the plain build runs the rest).
sizes="2 4"
[ -n "${SLUICETEST_SUBSET:-}" ] && sizes=2

# launch LIMIT RUN N PROGRAM ARGS...: PROGRAM on N ranks under RUN, ended
# after LIMIT seconds.  Open MPI gets -x for every SLUICE_ variable and
# the subset (it passes only those it is told), MPICH's hydra passes them all.
launch() {
    limit=$1 run=$2 n=$3
    shift 3
    x=""
    if "$run" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then
        x="--oversubscribe $(env | sed -n "s/^\(SLUICE_[A-Z_]*\|SLUICETEST_SUBSET\|[AT]SAN_OPTIONS\)=.*/-x \1/p" | tr "\n" " ")"
    fi
    # shellcheck disable=SC2086 # a list of options
    timeout -k 5 "$limit" "$run" $x -n "$n" "$@"
}

# mp RUN N ENV... -- CASE ARGS: one job of sluice-mp-test, every peer over
# the conduit; its code in $code, its output in $log.
mp() {
    run=$1 n=$2
    shift 2
    vars=""
    while [ "$1" != -- ]; do vars="$vars $1"; shift; done
    shift
    # shellcheck disable=SC2086,SC2163 # a list of assignments
    log=$( [ -z "$vars" ] || export $vars; launch 120 "$run" "$n" "$job" "$@" 2>&1)
    code=$?
}
# expect (tests/mp/families.sh) takes "fail" for any code but 0: hydra
# returns the code of a rank it killed, 9, when another rank's own 1 ended
# the job first.
# counter NAME: the sum over the ranks' SLUICE_MPI_STATS lines.
counter() {
    printf '%s\n' "$log" | sed -n "s/.* mpi (.*$1 \([0-9]*\).*/\1/p" | awk '{ s += $1 } END { print s + 0 }'
}

# run_flavor LABEL RUN: everything under one MPI.
run_flavor() {
    label=$1 run=$2
    echo "=== mpi conduit under $label ($run)"
    for n in $sizes; do
        # The gtest suites below run the rest at 2 and 3 ranks.
        cases="segment bad"
        [ "$n" = 4 ] && cases="basic am flood rma atomic coll threads"
        for c in $cases; do
            mp "$run" "$n" -- "$c"
            expect "[$label] $c at $n ranks" 0 "^PASS $c"
        done
    done
    # Put/Get as auto decides (the window on Open MPI, Gets on the window
    # and Puts by messages elsewhere), then each way by name; the counters
    # say which way they went (served: Puts and Gets a target answered).
    mp "$run" 2 -- rma
    expect "[$label] SLUICE_MPI_RMA=auto: the RMA case passes" 0 "^PASS rma"
    if [ "$(counter 'window flushes')" -gt 0 ]; then echo "ok: [$label] auto: Puts went by MPI RMA ($(counter writes) MPI_Rput)"
    elif [ "$(counter served)" -gt 0 ]; then echo "ok: [$label] auto: Puts went by messages ($(counter served) served)"
    else echo "FAIL: [$label] auto: Puts went neither by MPI RMA nor by messages"; failed=1; fi
    mp "$run" 2 SLUICE_MPI_RMA=get-window SLUICE_VERBOSE=1 -- rma
    expect "[$label] SLUICE_MPI_RMA=get-window: the RMA case passes" 0 "^PASS rma"
    expect "[$label] SLUICE_MPI_RMA=get-window: the conduit says how Put and Get go" 0 "Put/Get Get by MPI RMA (passive target), Put by messages"
    served_gw=$(counter served)
    mp "$run" 2 SLUICE_MPI_RMA=messages -- rma
    served_m=$(counter served)
    if [ "$served_gw" -gt 0 ] && [ "$served_gw" -lt "$served_m" ]; then
        echo "ok: [$label] get-window: $served_gw Puts served by messages, the Gets on the window ($served_m served by messages alone)"
    else echo "FAIL: [$label] get-window: served $served_gw, against $served_m by messages alone"; failed=1; fi
    expect "[$label] SLUICE_MPI_RMA=messages: the RMA case passes" 0 "^PASS rma"
    if [ "$(counter served)" -gt 0 ] && [ "$(counter 'window flushes')" -eq 0 ]; then echo "ok: [$label] messages: $(counter served) Puts and Gets served, no window"
    else echo "FAIL: [$label] messages: served $(counter served), window flushes $(counter 'window flushes')"; failed=1; fi
    mp "$run" 2 SLUICE_MPI_RMA=am -- rma
    expect "[$label] SLUICE_MPI_RMA=am: the RMA case passes" 0 "^PASS rma"
    if [ "$(counter writes)" -ne 0 ] || [ "$(counter served)" -ne 0 ]; then echo "FAIL: [$label] SLUICE_MPI_RMA=am still wrote $(counter writes), served $(counter served)"; failed=1; fi
    mp "$run" 2 SLUICE_MPI_SEND_BUFFERS=1 -- flood 2000
    expect "[$label] one send buffer: the flood passes" 0 "^PASS flood"
    if [ "$(counter 'network full')" -gt 0 ]; then echo "ok: [$label] one send buffer: sends waited ($(counter 'network full'))"
    else echo "FAIL: [$label] one send buffer: no send ever waited"; failed=1; fi
    mp "$run" 4 SLUICE_MPI_RECVS=1 -- flood 2000
    expect "[$label] one posted receive: the flood passes at 4 ranks" 0 "^PASS flood"
    # Shorts delivered from their receives: those that wait while a
    # handler polls are copied out when their receives are due again,
    # and still arrive in order, intact.
    # gtest_ran: a filter that matched nothing, or a skip, fails too.
    log=$(gtest_ran launch 120 "$run" 2 "$builddir/tests/conduit/sluice-conduit-conformance" \
        --gtest_filter='*ShortsQueuedWhileAHandlerPolls*' --gtest_brief=1 --gtest_color=no 2>&1)
    code=$?
    expect "[$label] Shorts queued while a handler polls arrive in order" 0 "PASSED .*1 test"
    if [ "$(counter 'Shorts spilled')" -gt 0 ]; then echo "ok: [$label] $(counter 'Shorts spilled') waiting Shorts copied out of their receives"
    else echo "FAIL: [$label] no waiting Short was copied out of its receive"; failed=1; fi
    mp "$run" 2 SLUICE_MPI_MAX_MEDIUM=512 -- am
    expect "[$label] SLUICE_MPI_MAX_MEDIUM=512: the AM case passes" 0 "^PASS am"
    mp "$run" 2 SLUICE_MPI_MAX_MEDIUM=100 -- basic
    expect "[$label] SLUICE_MPI_MAX_MEDIUM=100 is refused by name" fail "SLUICE_MPI_MAX_MEDIUM=100 is out of range"
    mp "$run" 2 SLUICE_MPI_RMA=sometimes -- basic
    expect "[$label] SLUICE_MPI_RMA=sometimes is refused by name" fail "SLUICE_MPI_RMA=sometimes"
    mp "$run" 2 SLUICE_MPI_RMA=1 -- basic
    expect "[$label] SLUICE_MPI_RMA=1 is refused, naming the values" fail "auto, window, get-window, messages, or am"
    mp "$run" 2 SLUICE_MPI_THREAD=single SLUICE_RCV_THREAD=1 -- basic
    expect "[$label] SLUICE_RCV_THREAD on MPI_THREAD_SINGLE is refused with the fix" fail "MPI_Init_thread(MPI_THREAD_MULTIPLE)"
    mp "$run" 2 SLUICE_RCV_THREAD=1 -- chain
    expect "[$label] SLUICE_RCV_THREAD=1: Sluice asks MPI for MPI_THREAD_MULTIPLE and the chain case passes" 0 "^PASS chain"
    # More ranks than cores: SLUICE_WAIT=auto spins (yielding) over the
    # mpi conduit, which has nothing to wake a sleeping rank; block when
    # asked for still naps.
    crowd=$(( $(nproc) + 1 ))
    mp "$run" "$crowd" SLUICE_VERBOSE=1 -- basic
    expect "[$label] $crowd ranks on $(nproc) cores: auto spins, naming the conduit that cannot wake a rank" 0 \
        "wait: spin (SLUICE_WAIT=auto; $crowd ranks on this host, $(nproc) cores; mpi has no wake-up descriptor)"
    mp "$run" "$crowd" SLUICE_VERBOSE=1 SLUICE_WAIT=block -- basic
    expect "[$label] $crowd ranks, SLUICE_WAIT=block: the ranks block as asked" 0 "wait: block (SLUICE_WAIT=block"
    # Under ThreadSanitizer the conformance suite is left to the other
    # builds: its world's barrier calls MPI from a second thread while the
    # conduit polls (MPI_THREAD_MULTIPLE), and ThreadSanitizer, blind to
    # Open MPI's own synchronization (not instrumented), reports races
    # inside libmpi and the ob1 PML.
    if [ "${SLUICETEST_SUBSET:-}" = tsan ]; then
        echo "not run in the tsan subset: the conformance suite over mpi (races reported inside Open MPI, not instrumented; the plain and asan builds run it)"
    else
        conformance "$label" "$run"
    fi
    # The gtest suites run in the plain build (a sanitizer subset has the
    # cases above; tests/mpi/hybrid.sh runs its modes there itself).
    [ -n "${SLUICETEST_SUBSET:-}" ] || suites "$label" "$run"
}

# conformance LABEL RUN: the conduit conformance suite (tests/conduit) in its
# MPI-launched mode (SLUICE_SPAWNER=mpi: RUN starts each process as a rank,
# which loads libsluice-mpi and tests the mpi conduit alone): at 2 ranks
# with Put/Get by MPI RMA (Open MPI only: auto never puts on MPICH's
# window), by messages and with Gets on the window (native RDMA exercised
# both ways: the RDMA tests must not say it is missing) and over AMs, and mpi_alone at 1 rank (Put/Get as
# SLUICE_MPI_RMA=auto decides).  Each under a hard limit: a rank that fails
# leaves the other to its World deadlines (20 s a wait), then ends the job;
# one whose world does not open ends it at once (code 3).  Left out:
# FirehoseTemplate.*, the template conduit's own test (the launched mode
# lists the mpi conduit only; the fork mode runs it), and FirehoseRegistrar.*
# (the conduit demands no registration: the tests skip, having nothing to
# exercise).
conformance() {
    label=$1 run=$2
    suite="$builddir/tests/conduit/sluice-conduit-conformance --gtest_filter=-FirehoseTemplate.*:*FirehoseRegistrar* --gtest_brief=1 --gtest_color=no"
    ways="2:messages 2:get-window 2:am 1:auto"
    "$run" --version 2>&1 | grep -qE "Open MPI|OpenRTE" && ways="2:window $ways"
    for way in $ways; do
        n=${way%%:*} rma=${way#*:}
        what="conformance suite over mpi at $n ranks, SLUICE_MPI_RMA=$rma"
        [ "$n" = 1 ] && what="conformance suite over mpi_alone at 1 rank"
        # shellcheck disable=SC2086 # $suite is a command and its options
        out=$(unset SLUICE_MPI_STATS; export SLUICE_MPI_RMA="$rma"; gtest_ran launch 300 "$run" "$n" $suite)
        code=$?
        printf '%s\n' "$out"
        if [ "$code" != 0 ]; then
            echo "FAIL: [$label] $what"; failed=1
        elif [ "$rma" != am ] && [ "$n" = 2 ] && printf '%s\n' "$out" | grep -q 'no native RDMA'; then
            echo "FAIL: [$label] $what: native RDMA not exercised"; failed=1
        else
            echo "ok: [$label] $what"
        fi
    done
}

# suites LABEL RUN: the multi-process gtest suites and the exit matrix over
# the conduit, each job started by RUN through tests/mpi/mpirun-launcher in
# place of sluicerun.  Left out, as they test sluicerun rather than the
# conduit: the two NetworkChoice tests that need sluicerun -v and its
# per-rank SLUICE_RANK, the signals sent to the
# launcher (mpirun answers
# them with its own codes), a stopped rank (mpirun continues it); under
# MPICH's hydra also the signals in a rank and the spinning ranks (hydra
# reports the signal number, not 128 + it, and returns before the ranks
# it kills are gone; tests/mpi/hybrid.sh, also_accepted).  Ranks get 5 s
# after the launcher returns to be gone (SLUICETEST_LAUNCHER_GRACE): Open
# MPI's mpirun, ending a job for a rank's signal while a machine under load
# has not yet started another, returns without waiting for that one.
suites() {
    label=$1 run=$2
    common="SLUICETEST_LAUNCHER=$srcdir/tests/mpi/mpirun-launcher MPIRUN_LAUNCHER_RUN=$run SLUICETEST_NETWORKS=mpi SLUICETEST_LAUNCHER_GRACE=5"
    mp_out='Net/NetworkChoice.TheListedConduitCarriesTheJob/*:Net/NetworkChoice.RanksThatDisagree*'
    exit_out='*ToLauncher*:*CtrlCToProcessGroup*:*PeerStoppedTimesOut*'
    if "$run" --version 2>&1 | grep -q HYDRA; then exit_out="$exit_out:*InOneRank*:*InRankZero*:*OthersSpinning*"; fi
    # shellcheck disable=SC2086 # $common is a list of assignments
    if ! gtest_ran env -u SLUICE_SPAWNER -u SLUICE_NETWORK -u SLUICE_ROUTE -u SLUICE_MPI_STATS $common \
        timeout 900 "$builddir/tests/mp/sluice-mp-gtest" --gtest_filter="Net/*_mpi:Net/*/mpi:-$mp_out" --gtest_brief=1; then
        echo "FAIL: [$label] multi-process suites over mpi"
        failed=1
    fi
    # shellcheck disable=SC2086
    if ! gtest_ran env -u SLUICE_SPAWNER -u SLUICE_NETWORK -u SLUICE_ROUTE -u SLUICE_MPI_STATS $common \
        timeout 900 "$builddir/tests/exit/sluice-exit-gtest" --gtest_filter="Net/*_mpi:-$exit_out" --gtest_brief=1; then
        echo "FAIL: [$label] exit matrix over mpi"
        failed=1
    fi
}

run_flavor default "$mpirun"
extra=${SLUICETEST_MPI_EXTRA:-}
if [ -n "$extra" ] && [ -n "${SLUICETEST_SUBSET:-}" ]; then
    echo "not run in the $SLUICETEST_SUBSET subset: $extra (the plain build runs them)"
    extra=
fi
for pair in $extra; do run_flavor "${pair%%=*}" "${pair#*=}"; done

echo "=== mpi conduit: a program that has not loaded libsluice-mpi"
log=$(env -u SLUICE_SPAWNER timeout 60 "$builddir/sluicerun" -n 2 -- "$job" basic 2>&1)
code=$?
expect "under sluicerun, SLUICE_NETWORK=mpi names libsluice-mpi and the fix" 1 "is in libsluice-mpi, which this program has not loaded"

echo "=== mpi conduit: sluice-info"
# sluice-info loads libsluice-mpi to list the conduit, its probe and limits.
log=$(env -u SLUICE_SPAWNER -u SLUICE_NETWORK "$builddir/sluice-info" --conduits --limits 2>&1)
code=$?
expect "sluice-info --conduits lists mpi" 0 "^  mpi  *network  *priority  *1  AMs as MPI"
expect "sluice-info says why mpi does not probe outside an MPI job" 0 "probe here: fails: MPI is not initialized (start the job with mpirun"
expect "sluice-info --limits gives the mpi conduit's" 0 "^  mpi max Medium payload   65536 bytes"
log=$(env -u SLUICE_SPAWNER SLUICE_MPI_LIBRARY=/nonexistent/libsluice-mpi.so.0 "$builddir/sluice-info" --conduits --spawners 2>&1)
code=$?
expect "sluice-info without libsluice-mpi says it did not load, and why" 0 "^  mpi  *network  *in libsluice-mpi, not loaded here (/nonexistent/libsluice-mpi.so.0: cannot open"
expect "... and its spawners list says the same" 0 "^  mpi        in libsluice-mpi, not loaded here (/nonexistent"

if [ -n "${SLUICETEST_SUBSET:-}" ]; then exit $failed; fi
echo "=== mpi conduit: the hybrid exit modes"
# hybrid.sh's modes that end the job from a rank or a thread, every peer
# over the conduit (its other modes, and the data-path count, run in
# tests/mpi/hybrid.sh without it).
if ! env -u SLUICE_MPI_STATS -u SLUICE_SPAWNER \
    SLUICETEST_HYBRID_MODES="mpi-first:0 sluice-first:0 return-from-main:0 exit-one:3 mpi-abort-one:4 exit-spin:5 thread-exit-send:7:2 thread-exit-poll:7 signal-barrier:130" \
    sh "$srcdir/tests/mpi/hybrid.sh"; then
    echo "FAIL: hybrid exit modes over the mpi conduit"
    failed=1
fi
exit $failed
