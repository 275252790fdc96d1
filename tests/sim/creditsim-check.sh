#!/bin/bash
# tests/sim/creditsim-check.sh - `make check` for the credit engine through the
# simulator: 64 and 512 nodes, every pattern under every policy, mixed request
# sizes and handlers that do not reply, full ledger sweeps; then the corners
# (a tiny system queue, the fixed policy's slack, every queue order); then a
# corrupted credit byte, which the checks must catch.  Each run must exit 0
# and report a non-trivial number of invariant checks.  A few seconds in all
# (more under the sanitizers).
set -u
sim=${SLUICETEST_BUILDDIR:-.}/tests/sim/creditsim
# The simulator runs the engine on one thread: nothing for ThreadSanitizer.
if [ "${SLUICETEST_SUBSET:-}" = tsan ]; then
    echo "SKIP: creditsim-check: single-threaded, not in the tsan subset (runs in the plain and asan builds)"
    exit 77
fi
if [ ! -x "$sim" ]; then
    echo "creditsim-check: $sim not built (make tests/sim/creditsim)"
    exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/creditsim-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
pass() { echo "PASS: $*"; }
fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}

# checks_at_least FILE N: the "invariant checks:" line reports >= N pair-law
# checks and >= N/4 node sums, and at least one full sweep.
checks_at_least() {
    local line pairs nodes sweeps
    line=$(grep '^invariant checks:' "$1")
    pairs=$(echo "$line" | sed -n 's/^invariant checks: \([0-9]*\) pair laws.*/\1/p')
    nodes=$(echo "$line" | sed -n 's/.* \([0-9]*\) node sums.*/\1/p')
    sweeps=$(echo "$line" | sed -n 's/.* \([0-9]*\) full sweeps.*/\1/p')
    [ -n "$pairs" ] && [ "$pairs" -ge "$2" ] && [ "$nodes" -ge $(($2 / 4)) ] && [ "$sweeps" -ge 1 ]
}

# run_case LABEL MIN_CHECKS ARGS...: creditsim ARGS exits 0, every run in its
# CSV is ok, and at least MIN_CHECKS pair laws were checked.
run_case() {
    local label=$1 min=$2 rc rows bad
    shift 2
    timeout -k 5 240 "$sim" --quiet --csv "$work/out.csv" "$@" > "$work/out" 2> "$work/err"
    rc=$?
    rows=$(($(wc -l < "$work/out.csv" 2> /dev/null || echo 1) - 1))
    bad=$(awk -F, 'NR > 1 && $(NF-1) != 1' "$work/out.csv" 2> /dev/null | wc -l)
    if [ $rc -eq 0 ] && [ "$rows" -gt 0 ] && [ "$bad" -eq 0 ] && checks_at_least "$work/out" "$min"; then
        pass "$label ($rows runs, $(grep '^invariant checks:' "$work/out" | cut -d, -f1))"
    else
        fail "$label: exit $rc, $rows runs, $bad not ok"
        sed 's/^/    /' "$work/out" "$work/err" | tail -30
    fi
}

# csv_sum COLUMN: the sum of a named column of the last CSV.
csv_sum() {
    awk -F, -v col="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next } { s += $c } END { print s + 0 }' \
        "$work/out.csv"
}

all="--pattern all --policy all"
run_case "64 nodes, every pattern and policy, 1..4 credits, 20% silent handlers" 200000 \
    --nodes 64 $all --messages 400 --credits 1-4 --no-reply 0.2 --full-check-every 5000 --accounted-every 64
run_case "512 nodes, every pattern and policy, 1..4 credits" 500000 \
    --nodes 512 $all --messages 60 --credits 1-4 --no-reply 0.1 --full-check-every 50000 --accounted-every 256
# A job size that is not a multiple of the engine's 16-peer state pages.
run_case "100 nodes, every pattern and policy" 100000 \
    --nodes 100 $all --messages 200 --credits 1-4 --full-check-every 10000 --accounted-every 16
run_case "512 nodes, demand, small epochs and bank (revokes and reclaims)" 100000 \
    --nodes 512 --pattern shifting,hotspot --policy demand,dynamic --messages 100 --shift-every 20 \
    --epoch-length 64 --banked 64 --full-check-every 20000

# A system queue of 2 slots: messages are refused and sent again.
run_case "64 nodes, hot spot, 2 system slots" 20000 \
    --nodes 64 --pattern hotspot,uniform --policy demand,dynamic --messages 100 --sys-slots 2 --full-check-every 5000
refused=$(csv_sum sys_refused)
if [ "$refused" -gt 0 ]; then pass "refused system messages were re-sent ($refused)"; else fail "no system message was refused"; fi

# fixed: handlers that do not reply bank credits up to the slack; beyond it,
# hidden replies.
run_case "64 nodes, fixed, slack 3, half the handlers silent" 20000 \
    --nodes 64 --pattern uniform,stencil --policy fixed --per-peer 8 --slack 3 --no-reply 0.5 --messages 300 \
    --credits 1-4 --full-check-every 5000
hidden=$(csv_sum hidden_replies)
banked=$(csv_sum banked_answers)
if [ "$hidden" -gt 0 ] && [ "$banked" -gt 0 ]; then
    pass "fixed: $banked requests banked, $hidden hidden replies"
else
    fail "fixed: banked $banked, hidden replies $hidden (both expected > 0)"
fi

for order in first alternate; do
    run_case "64 nodes, system queue served $order" 20000 \
        --nodes 64 --pattern stencil,tree --policy all --messages 200 --sys-order $order --full-check-every 5000
done

# The checks themselves: a reply whose credit byte is corrupted on the wire
# (NNNN one higher) must be reported as a violation with a non-zero exit.
timeout -k 5 60 "$sim" --quiet --nodes 64 --pattern uniform --policy dynamic --messages 100 --inject-fault 500 \
    > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -ne 0 ] && grep -q 'INVARIANT VIOLATION' "$work/err" && grep -q 'broken' "$work/err"; then
    pass "a corrupted reply byte is caught (exit $rc)"
else
    fail "a corrupted reply byte went unnoticed (exit $rc)"
    sed 's/^/    /' "$work/err" | tail -10
fi

# Deadlock detection: requests larger than min_credits under the dynamic
# policy can never be granted from a peer's floor; the run must fail, not hang.
timeout -k 5 60 "$sim" --quiet --nodes 16 --pattern stencil --policy dynamic --per-peer 4 --min-credits 4 \
    --banked 0 --credits 8 --messages 10 > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'deadlock\|stalled' "$work/err"; then
    pass "a stranded request is reported as a deadlock (exit $rc)"
else
    fail "a stranded request was not reported (exit $rc)"
    sed 's/^/    /' "$work/err" | tail -10
fi

echo "creditsim-check: $failed failed"
[ $failed -eq 0 ]
