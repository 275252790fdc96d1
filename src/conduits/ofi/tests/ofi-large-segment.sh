#!/bin/sh
# SLUICE_SEGMENT=large on the ofi conduit: segments left unregistered,
# regions pinned by move requests (firehose's main pool).  Every job runs
# with SLUICE_ROUTE=network, so all peers go through ofi.
#
#   1. sluice-mp-test segment (32 MiB segments, 3 ranks, 512 KiB budget:
#      2 regions per peer against 256) on tcp;ofi_rxm, shm (virtual
#      addresses) and tcp;ofi_rxm as if it demanded FI_MR_LOCAL, PROV_KEY
#      and ENDPOINT (victim pool and main pool together).  Beyond its
#      PASS: every rank sent move requests, evicted, served moves, and
#      never held more than the budget (SLUICE_FIREHOSE_STATS).
#   2. sluice-mp-test rma and bad at 2 ranks, with a budget of one region.
#   (A sanitizer subset runs the third provider line of 1, and bad.)
#   3. ranks that chose differently (rank 0 large, rank 1 fast) work.
#   4. SLUICE_SEGMENT=huge is refused at init, naming the knob.
#
# Skips (77) without the ofi conduit.
set -u
# The tsan subset leaves this to the plain and asan builds (tests/README.md,
# Subsets): it keeps .ci/run within its time.
if [ "${SLUICETEST_SUBSET:-}" = tsan ]; then
    echo "SKIP: ofi's large segments: not in the tsan subset (runs in the plain and asan builds; tests/README.md)"
    exit 77
fi
# shellcheck source=ofi-common.sh
. "$(dirname "$0")/ofi-common.sh"
mp=$builddir/tests/mp/sluice-mp-test
run="$builddir/sluicerun"
scale=1
case $(sed -n 's/^SANITIZER_FLAGS = //p' "$builddir/Makefile" 2> /dev/null) in
*thread*) scale=6 ;;
*-fsanitize*) scale=3 ;;
esac
failed=0
fail() {
    echo "FAIL: $*"
    failed=1
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# job LABEL SECONDS ENV... -- ARGS...: one job, all its output in $out.
job() {
    label=$1 limit=$(($2 * scale))
    shift 2
    vars=
    while [ "$1" != -- ]; do
        vars="$vars $1"
        shift
    done
    shift
    # shellcheck disable=SC2086 # vars is a list of VAR=value words
    env SLUICE_ROUTE=network SLUICE_NETWORK=ofi SLUICE_FIREHOSE_STATS=1 $vars timeout "$limit" "$run" "$@" > "$out" 2>&1
    status=$?
    echo "=== $label: exit $status"
    return $status
}

# stats_check RANKS BUDGET: every rank's main-pool line shows moves sent and
# served, evictions, and a peak within BUDGET bytes.
stats_check() {
    lines=$(grep -c 'firehose main pool ofi:' "$out")
    [ "$lines" -eq "$1" ] || { fail "$label: $lines main-pool statistics lines, expected $1"; return; }
    grep 'firehose main pool ofi:' "$out" | while read -r line; do
        moves=$(echo "$line" | sed -n 's/.*: \([0-9]*\) move requests.*/\1/p')
        evictions=$(echo "$line" | sed -n 's/.* \([0-9]*\) evictions.*/\1/p')
        peak=$(echo "$line" | sed -n 's/.*(peak \([0-9]*\), budget.*/\1/p')
        served=$(echo "$line" | sed -n 's/.*; \([0-9]*\) moves served.*/\1/p')
        if [ "${moves:-0}" -gt 0 ] && [ "${evictions:-0}" -gt 0 ] && [ "${served:-0}" -gt 0 ] &&
            [ -n "$peak" ] && [ "$peak" -le "$2" ]; then
            echo "ok: $line" | cut -c1-200
        else
            echo "BAD: $line"
            exit 1
        fi
    done || fail "$label: statistics"
}

# A sanitizer subset: the registration modes (both pools at once) only,
# and no rma case.
providers="tcp;ofi_rxm shm tcp;ofi_rxm+modes" cases="rma bad"
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    providers="tcp;ofi_rxm+modes" cases=bad
fi
for p in $providers; do
    modes=
    case $p in
    *+modes) p='tcp;ofi_rxm' modes=SLUICE_OFI_MR_MODE_ADD=local,prov_key,endpoint ;;
    esac
    if job "segment over $p $modes" 120 SLUICE_OFI_PROVIDER="$p" $modes SLUICE_SEGMENT=large \
        SLUICE_FIREHOSE_M=512K -- -n 3 "$mp" segment 32 && grep -q '^PASS segment on 3 ranks' "$out"; then
        stats_check 3 524288
    else
        fail "$label"
        tail -20 "$out"
    fi
done

for c in $cases; do
    if job "$c with a one-region budget" 300 SLUICE_SEGMENT=large SLUICE_FIREHOSE_M=128K -- -n 2 "$mp" "$c" &&
        grep -q "^PASS $c on 2 ranks" "$out"; then
        grep 'firehose main pool' "$out" | cut -c1-160
    else
        fail "$label"
        tail -20 "$out"
    fi
done

if job "rank 0 large, rank 1 fast" 120 SLUICE_FIREHOSE_M=512K -- -n 2 sh -c \
    'if [ "$SLUICE_RANK" = 0 ]; then export SLUICE_SEGMENT=large; fi; exec "$0" "$@"' "$mp" segment 16 1 &&
    grep -q '^PASS segment on 2 ranks' "$out"; then
    # Rank 1 pinned regions of rank 0's segment; rank 0 reached rank 1's whole.
    grep -q 'rank 0\] firehose main pool ofi: 0 move requests' "$out" &&
        grep -Eq 'rank 1\] firehose main pool ofi: [1-9][0-9]* move requests' "$out" ||
        fail "$label: expected moves from rank 1 only"
else
    fail "$label"
    tail -20 "$out"
fi

if job "SLUICE_SEGMENT=huge" 60 SLUICE_SEGMENT=huge -- -n 2 "$mp" basic; then
    fail "$label: the job succeeded"
elif grep -q 'SLUICE_SEGMENT=huge' "$out" && grep -q 'SLUICE_SEGMENT=huge is out of range: it must be fast, or large' "$out"; then
    grep 'SLUICE_SEGMENT=huge' "$out" | head -1
else
    fail "$label: no error naming the knob and the fix"
    tail -5 "$out"
fi
exit $failed
