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
#   4. GASNet's firehose knobs: SLUICE_FIREHOSE_R, _VERBOSE, _TABLE_SCALE,
#      and SLUICE_USE_FIREHOSE=0 (bounce buffers only; refused with large).
#   5. SLUICE_SEGMENT=huge is refused at init, naming the knob.
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

# GASNet's firehose knobs: SLUICE_FIREHOSE_R caps the main pool's regions
# (2 of a 512 KiB budget's 4, so 2 per peer at 2 ranks), and
# SLUICE_FIREHOSE_VERBOSE says each pool's configuration, with its tables
# scaled by SLUICE_FIREHOSE_TABLE_SCALE.
if job "SLUICE_FIREHOSE_R=2, verbose, tables scaled by 4" 120 SLUICE_SEGMENT=large SLUICE_FIREHOSE_M=512K \
    SLUICE_FIREHOSE_R=2 SLUICE_FIREHOSE_VERBOSE=1 SLUICE_FIREHOSE_TABLE_SCALE=4 -- -n 2 "$mp" segment 16 &&
    grep -q '^PASS segment on 2 ranks' "$out"; then
    if grep -q 'firehose main pool on ofi: 2 regions of 131072 bytes .*SLUICE_FIREHOSE_R 2), 2 per peer of 1' "$out" &&
        grep -q 'firehose main pool ofi: .*budget 524288, 2 regions per peer)' "$out" &&
        grep -q 'SLUICE_FIREHOSE_TABLE_SCALE 4)' "$out"; then
        echo "ok: 2 regions in all, 2 per peer, said at start and in the statistics"
    else
        fail "$label: the configuration or statistics lines are not as set"
        grep 'firehose' "$out" | head -5
    fi
else
    fail "$label"
    tail -20 "$out"
fi
# SLUICE_USE_FIREHOSE=0 with the registration modes (FI_MR_LOCAL: buffers
# outside the segment need registering): every such transfer goes through a
# bounce buffer, nothing is registered on demand, and the rma case passes.
if job "SLUICE_USE_FIREHOSE=0 under FI_MR_LOCAL" 300 SLUICE_OFI_PROVIDER='tcp;ofi_rxm' \
    SLUICE_OFI_MR_MODE_ADD=local,prov_key,endpoint SLUICE_USE_FIREHOSE=0 -- -n 2 "$mp" rma &&
    grep -q '^PASS rma on 2 ranks' "$out"; then
    if grep -q 'firehose ofi: 0 hits, 0 misses, .*; [1-9][0-9]* Puts and [1-9][0-9]* Gets bounced' "$out"; then
        echo "ok: no registration on demand, every transfer outside the segment bounced"
    else
        fail "$label: registrations were made, or nothing bounced"
        grep 'firehose ofi:' "$out" | head -2
    fi
else
    fail "$label"
    tail -20 "$out"
fi
# SLUICE_PUTGET_BOUNCE_LIMIT sets both bounce limits, each of which set
# itself wins (the configuration line SLUICE_FIREHOSE_VERBOSE prints).
if job "SLUICE_PUTGET_BOUNCE_LIMIT=4K, SLUICE_GET_BOUNCE_LIMIT=2K" 60 SLUICE_OFI_PROVIDER='tcp;ofi_rxm' \
    SLUICE_OFI_MR_MODE_ADD=local,prov_key,endpoint SLUICE_FIREHOSE_VERBOSE=1 SLUICE_PUTGET_BOUNCE_LIMIT=4K \
    SLUICE_GET_BOUNCE_LIMIT=2K -- -n 2 "$mp" basic && grep -q "(Puts up to 4096, Gets up to 2048 bytes)" "$out"; then
    echo "ok: Puts bounced up to SLUICE_PUTGET_BOUNCE_LIMIT, Gets up to their own limit"
else
    fail "$label"
    grep 'firehose on' "$out" | head -2
fi
if job "SLUICE_USE_FIREHOSE=0 with SLUICE_SEGMENT=large" 60 SLUICE_SEGMENT=large SLUICE_USE_FIREHOSE=0 -- -n 2 "$mp" basic; then
    fail "$label: the job succeeded"
elif grep -q 'SLUICE_SEGMENT=large needs firehose to register peers.* segments, and SLUICE_USE_FIREHOSE=0' "$out"; then
    echo "ok: refused, naming both knobs"
else
    fail "$label: no error naming both knobs"
    tail -5 "$out"
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
