#!/bin/bash
# tests/scale/scale.sh [--sizes "16 64"] [--conduits "udp"] [--hosts N] [--csv FILE] [--plot FILE]
# Jobs of many ranks on this host under sluicerun, every peer over the
# network conduit (SLUICE_ROUTE=network), in the wait mode sluicerun picks
# (block when the ranks outnumber the cores).  At each size and conduit:
# start-up to the first barrier, barrier and 8-byte allgather (medians),
# sluice_exit(3) from rank 0 and a rank killed by SIGKILL, each timed until
# sluicerun returned; then nothing may be left: no rank process, no
# /dev/shm file of the job.  Then a stencil and a hot spot of AM Mediums,
# timed with the credit engine and in a second job without flow control,
# and the receive memory per rank (sluice_receive_memory).  ibv runs on
# the software verbs NIC (tests/softnic/verbs/softnic-run), above 16 ranks
# connecting on demand.  Prints a
# table and a CSV (--csv also writes it), --plot draws time against ranks
# with gnuplot.  make check runs 64 ranks over udp (16 in a sanitizer
# subset); make scale-check 16, 64 and 256 over udp, ofi and ibv.
# --hosts N (1 to 8, root): the ranks spread over N network-namespace
# hosts under the ssh spawner (tests/spawn/ssh/hosts.sh), udp and ofi.
# tests/scale/README.md.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
check=$builddir/tests/scale/sluice-scale-check
run=$builddir/sluicerun
sizes="64"
# A sanitizer subset: 16 ranks (64 instrumented processes would take
# minutes and gigabytes).
[ -n "${SLUICETEST_SUBSET:-${SLUICE_TEST_SUBSET:-}}" ] && sizes="16"
conduits="udp"
csv_file=""
plot_file=""
hosts=0
usage() {
    echo "usage: scale.sh [--sizes \"16 64\"] [--conduits \"udp ofi\"] [--hosts 1..8] [--csv FILE] [--plot FILE]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) sizes=$2; shift ;;
    --conduits) conduits=$2; shift ;;
    --hosts) hosts=$2; shift ;;
    --csv) csv_file=$2; shift ;;
    --plot) plot_file=$2; shift ;;
    *) usage ;;
    esac
    shift
done
case $hosts in [0-8]) ;; *) usage ;; esac
[ -x "$check" ] || { echo "FAIL: $check is not built"; exit 1; }
limit=600
# What starts sluicerun, and its spawner options: here, or in the hub of
# the namespace hosts with the ssh spawner (the start time sent to the ranks).
launch=()
spawn=()
if [ "$hosts" -gt 0 ]; then
    ssh_host_letters=$(echo A B C D E F G H | cut -d' ' -f1-"$hosts")
    ssh_hosts_own_names=1  # each its own host name: ranks see N hosts
    # shellcheck source=../spawn/ssh/hosts.sh
    . "$(cd "$(dirname "$0")" && pwd)/../spawn/ssh/hosts.sh"
    ssh_hosts_begin "the scale harness over $hosts hosts"
    launch=(in_hub)
    spawn=(-spawner=ssh -E SCALETEST_T0_NS)
fi
failed=0
ran=0
csv="conduit,ranks,startup_s,barrier_us,allgather_us,exit_s,kill_exit_s,stencil_s,stencil_unlimited_s,hotspot_s,hotspot_unlimited_s,credit_space_mib,receive_buffers_mib"
now_ns() { date +%s%N; }
value() { printf '%s\n' "$log" | sed -n "s/^scale: $1 //p" | head -1; }
seconds_since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
fail() {
    echo "FAIL: $1"
    printf '%s\n' "$log" | tail -20
    failed=1
}
# leftovers JOB NONCE: rank processes or /dev/shm files of the job still there.
leftovers() {
    left=""
    pids=$(pgrep -f -- "sluice-scale-check .*$2" || true)
    [ -n "$pids" ] && left="processes $(echo $pids)"
    shm=$(ls /dev/shm 2> /dev/null | grep -F "sluice.$1" || true)
    [ -n "$shm" ] && left="$left /dev/shm: $(echo $shm)"
    if [ -n "$left" ]; then
        # shellcheck disable=SC2086 # a list of pids
        [ -n "$pids" ] && kill -9 $pids 2> /dev/null
        for f in $shm; do rm -f "/dev/shm/$f"; done
    fi
    printf '%s' "$left"
}

# job N MODE [VAR=VALUE...]: one job of the harness; its output in $log,
# its code in $code.
job() {
    local n=$1 mode=$2
    shift 2
    # shellcheck disable=SC2086 # mode is "run 20" or one word; wrap empty or one path
    log=$("${launch[@]}" env "$@" timeout -k 5 $limit $wrap "$run" "${spawn[@]}" -n "$n" -- "$check" $mode "$nonce" 2>&1)
    code=$?
}

row() { printf '%-8s %6s %10s %11s %13s %8s %12s %10s %10s %12s %12s\n' "$@"; }
row conduit ranks startup_s barrier_us allgather_us exit_s kill_exit_s stencil hotspot credit_MiB buffers_MiB
for conduit in $conduits; do
    # ibv runs on the software verbs NIC, a fabric file of its own per run.
    wrap=""
    if [ "$conduit" = ibv ] && [ "$hosts" -gt 0 ]; then
        echo "not run: ibv over namespace hosts (the software NIC's hosts are not set up here; ibv-hosts.sh runs them)"
        continue
    fi
    if [ "$conduit" = ibv ]; then
        wrap="${SLUICETEST_SRCDIR:?}/tests/softnic/verbs/softnic-run"
        export SOFTNIC_FABRIC=/dev/shm/softnic-scale-$$
    fi
    for n in $sizes; do
        # ibv above 16 ranks connects on demand (SLUICE_CONNECT_STATIC=0),
        # as a large job on an HCA would: every pair connected at start-up
        # is N x (N - 1) queue pairs, and the software NIC's fabric, like an
        # HCA, holds a fixed number (8192: 90 ranks' worth of every pair).
        unset SLUICE_CONNECT_STATIC
        if [ "$conduit" = ibv ] && [ "$n" -gt 16 ]; then
            echo "note: ibv at $n ranks connects on demand (SLUICE_CONNECT_STATIC=0)"
            export SLUICE_CONNECT_STATIC=0
        fi
        nonce=scale$$x$n$conduit
        job=scale-$$-$conduit-$n
        export SLUICE_ROUTE=network SLUICE_NETWORK=$conduit SLUICE_JOB_ID=$job
        t0=$(now_ns)
        job "$n" "run 20" SCALETEST_T0_NS="$t0"
        end=$(now_ns)
        left=$(leftovers "$job" "$nonce")
        startup=$(value startup_s)
        barrier=$(value barrier_us)
        allgather=$(value allgather_us)
        exit_at=$(value exit_at_ns)
        if [ "$code" != 3 ] || [ -z "$startup" ] || [ -z "$barrier" ] || [ -z "$allgather" ] || [ -z "$exit_at" ]; then
            fail "$conduit, $n ranks: the job ended with $code (3 expected) or a step is missing"
            continue
        fi
        [ -n "$left" ] && fail "$conduit, $n ranks: left behind after sluice_exit: $left"
        exit_s=$(seconds_since "$exit_at" "$end")
        stencil=$(value stencil_s)
        hotspot=$(value hotspot_s)
        credit_mib=$(value credit_space_mib)
        buffers_mib=$(value receive_buffers_mib)
        if [ -z "$stencil" ] || [ -z "$hotspot" ] || [ -z "$credit_mib" ] || [ -z "$buffers_mib" ]; then
            fail "$conduit, $n ranks: the stencil, the hot spot or the receive memory is missing"
            continue
        fi

        # The same traffic without flow control: the unlimited-credit reference.
        export SLUICE_JOB_ID=$job-unlimited
        job "$n" traffic SLUICE_CREDIT_FLOW=0
        left=$(leftovers "$job-unlimited" "$nonce")
        stencil_unl=$(value stencil_s)
        hotspot_unl=$(value hotspot_s)
        # A failed reference fails the run but still leaves the size's row
        # (its ratios '-'), unless it overran a conduit whose receive
        # buffers are fixed (the ranks warn of it at start-up): a flood
        # without flow control is then expected to end the job, and the
        # ratios say 'overrun'.  Ending by the time limit (124) is a hang
        # either way.
        no_ratio=-
        if [ "$code" != 0 ] || [ -z "$stencil_unl" ] || [ -z "$hotspot_unl" ]; then
            if [ "$code" != 0 ] && [ "$code" != 124 ] &&
                printf '%s\n' "$log" | grep -q 'SLUICE_CREDIT_FLOW=0 with a conduit whose receive buffers are fixed'; then
                echo "note: $conduit, $n ranks, unlimited credits: overran the fixed receive buffers (the job ended with $code): no ratio"
                no_ratio=overrun
            else
                fail "$conduit, $n ranks, unlimited credits: the job ended with $code or a step is missing"
            fi
            stencil_unl='' hotspot_unl=''
        fi
        [ -n "$left" ] && fail "$conduit, $n ranks, unlimited credits: left behind: $left"

        job=$job-kill
        export SLUICE_JOB_ID=$job
        job "$n" kill
        end=$(now_ns)
        left=$(leftovers "$job" "$nonce")
        kill_at=$(value kill_at_ns)
        # 124: the time limit ended it (a hang), 0: the job missed the kill.
        if [ "$code" = 0 ] || [ "$code" = 124 ] || [ -z "$kill_at" ]; then
            fail "$conduit, $n ranks, a rank killed: the job ended with $code (rank $((n - 1)) said it killed itself: ${kill_at:+yes}${kill_at:-no})"
            continue
        fi
        [ -n "$left" ] && fail "$conduit, $n ranks: left behind after a rank was killed: $left"
        kill_s=$(seconds_since "$kill_at" "$end")
        ran=$((ran + 1))
        # Throughput with the credit engine against without: unlimited time / time.
        stencil_ratio=$(awk -v a="$stencil_unl" -v b="$stencil" -v no="$no_ratio" 'BEGIN { if (a == "") print no; else printf "%.2f", a / b }')
        hotspot_ratio=$(awk -v a="$hotspot_unl" -v b="$hotspot" -v no="$no_ratio" 'BEGIN { if (a == "") print no; else printf "%.2f", a / b }')
        row "$conduit" "$n" "$startup" "$barrier" "$allgather" "$exit_s" "$kill_s" "$stencil_ratio" "$hotspot_ratio" \
            "$credit_mib" "$buffers_mib"
        csv="$csv
$conduit,$n,$startup,$barrier,$allgather,$exit_s,$kill_s,$stencil,$stencil_unl,$hotspot,$hotspot_unl,$credit_mib,$buffers_mib"
    done
    [ -n "$wrap" ] && rm -f "$SOFTNIC_FABRIC"*
done
echo
echo "CSV"
printf '%s\n' "$csv"
[ -n "$csv_file" ] && printf '%s\n' "$csv" > "$csv_file"
if [ -n "$plot_file" ] && [ "$ran" -gt 0 ]; then
    if command -v gnuplot > /dev/null; then
        data=$(mktemp)
        printf '%s\n' "$csv" | tail -n +2 | tr , ' ' > "$data"
        plot=""
        for conduit in $conduits; do
            for col in "3:startup" "6:exit" "7:kill_exit"; do
                plot="$plot${plot:+, }'$data' using 2:(strcol(1) eq '$conduit' ? \$${col%%:*} : 1/0) with linespoints title '$conduit ${col#*:} (s)'"
            done
        done
        gnuplot -e "set terminal svg size 720,480; set output '$plot_file'; set logscale x 2; set xlabel 'ranks'; set ylabel 'seconds'; set key left top; plot $plot" ||
            fail "gnuplot could not draw $plot_file"
        rm -f "$data"
    else
        echo "not drawn: $plot_file (no gnuplot)"
    fi
fi
[ "$ran" -gt 0 ] || { echo "FAIL: no job ran"; exit 1; }
exit $failed
