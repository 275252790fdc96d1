#!/bin/sh
# tests/scale/scale.sh [--sizes "16 64"] [--conduits "udp"] [--csv FILE] [--plot FILE]
# Jobs of many ranks on this host under sluicerun, every peer over the
# network conduit (SLUICE_ROUTE=network), in the wait mode sluicerun picks
# (block when the ranks outnumber the cores).  At each size and conduit:
# start-up to the first barrier, barrier and 8-byte allgather (medians),
# sluice_exit(3) from rank 0 and a rank killed by SIGKILL, each timed until
# sluicerun returned; then nothing may be left: no rank process, no
# /dev/shm file of the job.  Prints a table and a CSV (--csv also writes
# it), --plot draws time against ranks with gnuplot.  make check runs 64
# ranks over udp (16 in a sanitizer subset); make scale-check 16, 64 and
# 256 over udp and ofi.
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
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) sizes=$2; shift ;;
    --conduits) conduits=$2; shift ;;
    --csv) csv_file=$2; shift ;;
    --plot) plot_file=$2; shift ;;
    *) echo "usage: scale.sh [--sizes \"16 64\"] [--conduits \"udp ofi\"] [--csv FILE] [--plot FILE]" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$check" ] || { echo "FAIL: $check is not built"; exit 1; }
limit=600
failed=0
ran=0
csv="conduit,ranks,startup_s,barrier_us,allgather_us,exit_s,kill_exit_s"
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

printf '%-8s %6s %10s %11s %13s %8s %12s\n' conduit ranks startup_s barrier_us allgather_us exit_s kill_exit_s
for conduit in $conduits; do
    for n in $sizes; do
        nonce=scale$$x$n$conduit
        job=scale-$$-$conduit-$n
        export SLUICE_ROUTE=network SLUICE_NETWORK=$conduit SLUICE_JOB_ID=$job
        t0=$(now_ns)
        log=$(SCALETEST_T0_NS=$t0 timeout -k 5 $limit "$run" -n "$n" -- "$check" run 20 "$nonce" 2>&1)
        code=$?
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

        job=$job-kill
        export SLUICE_JOB_ID=$job
        log=$(timeout -k 5 $limit "$run" -n "$n" -- "$check" kill "$nonce" 2>&1)
        code=$?
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
        printf '%-8s %6s %10s %11s %13s %8s %12s\n' "$conduit" "$n" "$startup" "$barrier" "$allgather" "$exit_s" "$kill_s"
        csv="$csv
$conduit,$n,$startup,$barrier,$allgather,$exit_s,$kill_s"
    done
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
