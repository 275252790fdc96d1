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
#      SLUICE_USE_FIREHOSE=0 (bounce buffers only; refused with large),
#      SLUICE_PUTGET_BOUNCE_LIMIT, and SLUICE_PUTINMOVE_LIMIT (a Put's
#      front carried in its move request and written by the owner: Puts
#      done with the move's reply, bytes written as carried, data checked;
#      none at 0; above 3K refused by name).
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
# shellcheck source=../../../../tests/mp/families.sh
. "$(dirname "$0")/../../../../tests/mp/families.sh"
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

# job LABEL SECONDS ENV... -- ARGS...: one job, all its output in $out
# (and in $log, its code in $code, for expect).
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
    code=$status log=$(cat "$out")
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
job "SLUICE_FIREHOSE_R=2, verbose, tables scaled by 4" 120 SLUICE_SEGMENT=large SLUICE_FIREHOSE_M=512K \
    SLUICE_FIREHOSE_R=2 SLUICE_FIREHOSE_VERBOSE=1 SLUICE_FIREHOSE_TABLE_SCALE=4 -- -n 2 "$mp" segment 16
expect "SLUICE_FIREHOSE_R=2: the segment case passes" 0 '^PASS segment on 2 ranks'
expect "SLUICE_FIREHOSE_R=2: 2 regions in all, 2 per peer, said at start" 0 \
    'firehose main pool on ofi: 2 regions of 131072 bytes .*SLUICE_FIREHOSE_R 2), 2 per peer of 1'
expect "SLUICE_FIREHOSE_R=2: 2 regions per peer in the statistics" 0 \
    'firehose main pool ofi: .*budget 524288, 2 regions per peer)'
expect "SLUICE_FIREHOSE_TABLE_SCALE=4 said at start" 0 'SLUICE_FIREHOSE_TABLE_SCALE 4)'

# SLUICE_USE_FIREHOSE=0 with the registration modes (FI_MR_LOCAL: buffers
# outside the segment need registering): every such transfer goes through a
# bounce buffer, nothing is registered on demand, and the rma case passes.
job "SLUICE_USE_FIREHOSE=0 under FI_MR_LOCAL" 300 SLUICE_OFI_PROVIDER='tcp;ofi_rxm' \
    SLUICE_OFI_MR_MODE_ADD=local,prov_key,endpoint SLUICE_USE_FIREHOSE=0 -- -n 2 "$mp" rma
expect "SLUICE_USE_FIREHOSE=0: the rma case passes" 0 '^PASS rma on 2 ranks'
expect "SLUICE_USE_FIREHOSE=0: no registration on demand, every transfer outside the segment bounced" 0 \
    'firehose ofi: 0 hits, 0 misses, .*; [1-9][0-9]* Puts and [1-9][0-9]* Gets bounced'

# SLUICE_PUTGET_BOUNCE_LIMIT sets both bounce limits, each of which set
# itself wins (the configuration line SLUICE_FIREHOSE_VERBOSE prints).
job "SLUICE_PUTGET_BOUNCE_LIMIT=4K, SLUICE_GET_BOUNCE_LIMIT=2K" 60 SLUICE_OFI_PROVIDER='tcp;ofi_rxm' \
    SLUICE_OFI_MR_MODE_ADD=local,prov_key,endpoint SLUICE_FIREHOSE_VERBOSE=1 SLUICE_PUTGET_BOUNCE_LIMIT=4K \
    SLUICE_GET_BOUNCE_LIMIT=2K -- -n 2 "$mp" basic
expect "Puts bounced up to SLUICE_PUTGET_BOUNCE_LIMIT, Gets up to their own limit" 0 \
    '(Puts up to 4096, Gets up to 2048 bytes)'
job "SLUICE_USE_FIREHOSE=0 with SLUICE_SEGMENT=large" 60 SLUICE_SEGMENT=large SLUICE_USE_FIREHOSE=0 -- -n 2 "$mp" basic
expect "SLUICE_USE_FIREHOSE=0 with SLUICE_SEGMENT=large is refused, naming both knobs" fail \
    'SLUICE_SEGMENT=large needs firehose to register peers.* segments, and SLUICE_USE_FIREHOSE=0'

# SLUICE_PUTINMOVE_LIMIT: a Put to a region not pinned here carries its
# first bytes (3K by default) in the move request, and the owner writes
# them as it pins the region.  The segment case's Puts miss often (a
# budget of 4 regions against 256 per peer): its 1000-byte Puts ride whole
# in their moves and are done with the reply (no RDMA: the transport
# counts them), its 64 KiB ones carry 3K and write the rest by RDMA; every
# byte is checked, so a carried front the owner did not write, or wrote at
# the wrong place, fails the case.  The bytes the ranks carried are the
# bytes the owners wrote.
# carried FIELD: the sum over the ranks' main-pool lines of "N carrying"
# (moves), "N bytes of Puts," (bytes), "N Puts done by them" (finished) or "N bytes
# of Puts written".
carried() {
    printf '%s\n' "$log" | grep 'firehose main pool ofi:' | case $1 in
    moves) sed -n 's/.* move requests (\([0-9]*\) carrying.*/\1/p' ;;
    bytes) sed -n 's/.* carrying \([0-9]*\) bytes of Puts,.*/\1/p' ;;
    finished) sed -n 's/.* bytes of Puts, \([0-9]*\) Puts done by them.*/\1/p' ;;
    written) sed -n 's/.* moves served (\([0-9]*\) bytes of Puts written.*/\1/p' ;;
    esac | awk '{ s += $1 } END { print s + 0 }'
}
job "SLUICE_PUTINMOVE_LIMIT default (3K)" 120 SLUICE_SEGMENT=large SLUICE_FIREHOSE_M=512K SLUICE_FIREHOSE_VERBOSE=1 \
    -- -n 3 "$mp" segment 32
expect "Puts carried in moves: the segment case passes, every byte checked" 0 '^PASS segment on 3 ranks'
expect "SLUICE_PUTINMOVE_LIMIT default: a move request carries up to 3072 bytes of a Put" 0 \
    'a move request carries up to 3072 bytes of a Put (SLUICE_PUTINMOVE_LIMIT 3072)'
moves=$(carried moves) bytes=$(carried bytes) finished=$(carried finished) written=$(carried written)
if [ "$code" = 0 ] && [ "$moves" -gt 0 ] && [ "$finished" -gt 0 ] && [ "$bytes" -gt 0 ] && [ "$written" = "$bytes" ]; then
    echo "ok: $moves moves carried $bytes bytes of Puts ($finished Puts done with the reply, no RDMA); owners wrote $written"
else
    echo "FAIL: SLUICE_PUTINMOVE_LIMIT default: $moves moves carried $bytes bytes ($finished Puts done by them), owners wrote $written"
    printf '%s\n' "$log" | grep 'firehose main pool ofi:' | cut -c1-200
    failed=1
fi
job "SLUICE_PUTINMOVE_LIMIT=0" 120 SLUICE_SEGMENT=large SLUICE_FIREHOSE_M=512K SLUICE_PUTINMOVE_LIMIT=0 \
    -- -n 3 "$mp" segment 32
expect "SLUICE_PUTINMOVE_LIMIT=0: the segment case passes" 0 '^PASS segment on 3 ranks'
moves=$(carried moves) bytes=$(carried bytes) finished=$(carried finished) written=$(carried written)
if [ "$code" = 0 ] && [ "$(printf '%s\n' "$log" | grep -c 'firehose main pool ofi: [1-9][0-9]* move requests')" = 3 ] &&
    [ "$moves" = 0 ] && [ "$bytes" = 0 ] && [ "$finished" = 0 ] && [ "$written" = 0 ]; then
    echo "ok: SLUICE_PUTINMOVE_LIMIT=0: every rank sent moves, none carried a Put's bytes"
else
    echo "FAIL: SLUICE_PUTINMOVE_LIMIT=0: $moves moves carried $bytes bytes, owners wrote $written"
    printf '%s\n' "$log" | grep 'firehose main pool ofi:' | cut -c1-200
    failed=1
fi
job "SLUICE_PUTINMOVE_LIMIT=4K" 60 SLUICE_SEGMENT=large SLUICE_PUTINMOVE_LIMIT=4K -- -n 2 "$mp" basic
expect "SLUICE_PUTINMOVE_LIMIT above 3K is refused, naming the knob" fail 'SLUICE_PUTINMOVE_LIMIT=4K is out of range'

job "SLUICE_SEGMENT=huge" 60 SLUICE_SEGMENT=huge -- -n 2 "$mp" basic
expect "SLUICE_SEGMENT=huge is refused at init, naming the knob and the fix" fail \
    'SLUICE_SEGMENT=huge is out of range: it must be fast, or large'
exit $failed
