#!/bin/sh
# sluice-bench ended by SIGTERM in the middle of its lapi section (as a CI
# time limit ends it): the job it was running stops, and neither its
# temporary folder nor the fabric file of the software LAPI it made is
# left (tests/perf/README.md, "How it runs").  Plain build only.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
bench=$builddir/tests/perf/sluice-bench
if [ ! -x "$bench" ]; then
    echo "SKIP: $bench is not built"
    exit 77
fi
work=$(mktemp -d)
out=$work/out
mkdir "$work/tmp"
unset SOFTNIC_LAPI_FABRIC
TMPDIR=$work/tmp timeout 300 "$bench" --lapi --reps 50 --wait-idle 0 >"$out" 2>&1 &
driver=$!
# `timeout` runs the driver as its child: the driver's pid names the fabric.
fabric=
for _ in $(seq 1200); do
    pid=$(pgrep -P "$driver" -x sluice-bench | head -n 1)
    [ -n "$pid" ] && [ -e "/dev/shm/sluice-bench-lapi-$pid" ] && jobs=$(pgrep -P "$pid") && [ -n "$jobs" ] &&
        { fabric=/dev/shm/sluice-bench-lapi-$pid; break; }
    kill -0 "$driver" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$fabric" ]; then
    wait "$driver"
    if grep -q "lapi section skipped" "$out"; then
        echo "SKIP: $(grep 'lapi section skipped' "$out" | head -n 1)"
        rm -rf "$work"
        exit 77
    fi
    echo "FAIL: the lapi section never ran a job"
    cat "$out"
    rm -rf "$work"
    exit 1
fi
kill -TERM "$pid"
wait "$driver"
status=$?
fail=0
# timeout passes on the signal's status: 128 + SIGTERM.
[ "$status" = 143 ] || { echo "FAIL: the driver ended with $status, not of SIGTERM (143)"; fail=1; }
[ ! -e "$fabric" ] || { echo "FAIL: $fabric is left"; rm -f "$fabric"; fail=1; }
left=$(ls -A "$work/tmp")
[ -z "$left" ] || { echo "FAIL: the driver's temporary folder is left: $left"; fail=1; }
for job in $jobs; do
    if pgrep -g "$job" >/dev/null; then
        echo "FAIL: processes of job $job are left:"
        pgrep -a -g "$job"
        pkill -KILL -g "$job"
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "PASS: SIGTERM stopped job(s) $jobs and left neither $fabric nor a temporary folder"
[ "$fail" = 0 ] || cat "$out"
rm -rf "$work"
exit $fail
