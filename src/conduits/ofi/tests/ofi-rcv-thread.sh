#!/bin/sh
# The receive thread (SLUICE_RCV_THREAD) of the ofi conduit: rank 1
# computes for 3 s without calling Sluice while rank 0 makes 200 round
# trips to it; with the thread they all end before rank 1 stops
# computing, without it none can (tests/sluice-rcv-thread-check rcv-thread).  On tcp;ofi_rxm (a wait
# descriptor) and shm (none: the thread polls at its rate).  Skips (77)
# without the ofi conduit.
set -u
# shellcheck source=ofi-common.sh
. "$(dirname "$0")/ofi-common.sh"
check=$builddir/tests/sluice-rcv-thread-check
failed=0
run="timeout 60 $builddir/sluicerun -n 2 $check rcv-thread 3000 200"
# job ENV... EXPECT: one two-rank job.
job() {
    out=$(env SLUICE_ROUTE=network SLUICE_NETWORK=ofi SLUICE_VERBOSE=1 "$@" 2>&1)
    status=$?
    printf '%s\n' "$out" | grep -E 'PASS|FAIL|round trips|receive thread'
    return $status
}
for p in 'tcp;ofi_rxm' shm; do
    # SLUICE_WAIT=block: rank 0 sleeps between its round trips instead of
    # spinning, so that rank 1's receive thread finds a CPU even when
    # another test shares the two (make -j2 check).
    if ! job SLUICE_OFI_PROVIDER="$p" SLUICE_RCV_THREAD=1 SLUICE_RCV_THREAD_RATE=20000 SLUICE_WAIT=block $run thread; then
        echo "FAIL: receive thread on $p"
        failed=1
    fi
done
if ! job SLUICE_OFI_PROVIDER='tcp;ofi_rxm' $run none; then
    echo "FAIL: without a receive thread the round trips must wait for rank 1"
    failed=1
fi
exit $failed
