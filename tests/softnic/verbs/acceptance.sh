#!/bin/sh
# The software verbs NIC's acceptance test (README.md): programs nobody here
# wrote, unmodified, between two processes on the NIC (softnic-run):
# rdma-core's ibv_devinfo, ibv_rc_pingpong (polling and with completion
# events), ibv_ud_pingpong, ibv_srq_pingpong (each with -c, its payload
# check, which a fabric that corrupts every send must fail), and
# perftest's ib_write_lat,
# ib_read_lat, ib_send_bw, and ib_atomic_lat and ib_atomic_bw with each
# atomic (FETCH_AND_ADD, CMP_AND_SWAP); then ibv_rc_pingpong between two
# devices, and ibv_rc_pingpong and ibv_ud_pingpong on RoCE (Ethernet) ports.
# Each pair runs under a hard time limit and passes when both sides exit 0
# and print their results; the fabric is a file of this run's own, which
# must be gone afterwards.  Skips (77) without
# ibverbs-utils and perftest, or without a C++ compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# The NIC is not built with the sanitizers: it runs in the plain build only.
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software NIC's acceptance runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
run="$here/softnic-run"
. "$here/pair.sh"
need_programs

SOFTNIC_FABRIC=/dev/shm/softnic-acceptance-$$
export SOFTNIC_FABRIC
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f "$SOFTNIC_FABRIC"' EXIT
failed=0

if "$run" ibv_devinfo -v > "$work/devinfo" 2>&1 && grep -q 'hca_id:.*softnic0' "$work/devinfo" &&
    grep -q 'state:.*PORT_ACTIVE' "$work/devinfo"; then
    echo "ok: ibv_devinfo -v: softnic0, port active"
else
    echo "FAIL: ibv_devinfo -v"
    cat "$work/devinfo"
    failed=1
fi

server_args= client_args=
rdma_core_pairs
# The two verbs atomics (perftest's -A), 8 bytes each: latency (only the
# client measures) and message rate.
for p in ib_atomic_lat ib_atomic_bw; do
    command -v "$p" > /dev/null || { echo "SKIP: $p is not installed (Debian: perftest)"; exit 77; }
done
for atomic in FETCH_AND_ADD CMP_AND_SWAP; do
    pair "ib_atomic_lat -A $atomic" "^ 8 *200 " client ib_atomic_lat -d softnic0 -A "$atomic" -n 200
    pair "ib_atomic_bw -A $atomic" "^ 8 *1000 " both ib_atomic_bw -d softnic0 -A "$atomic" -n 1000
done

# The payload check notices a fabric that corrupts: every send's bytes
# inverted (SOFTNIC_CORRUPT_SENDS=1), the completions still successes.
SOFTNIC_CORRUPT_SENDS=1 corrupt=1
export SOFTNIC_CORRUPT_SENDS
pair "ibv_rc_pingpong -c over a fabric that inverts every send's bytes: the check reports it" "iters in" both \
    ibv_rc_pingpong -c -n 50
unset SOFTNIC_CORRUPT_SENDS corrupt

# Two devices: the server on softnic0, the client on softnic1.
export SOFTNIC_DEVICES=2
server_args="-d softnic0" client_args="-d softnic1"
pair "ibv_rc_pingpong -c between softnic0 and softnic1" "iters in" both ibv_rc_pingpong -c -n 200
server_args= client_args=
# RoCE ports: no LIDs, the programs address each other by GID.
export SOFTNIC_LINK_LAYER=eth
if "$run" ibv_devinfo -v > "$work/devinfo" 2>&1 && grep -q 'link_layer:.*Ethernet' "$work/devinfo"; then
    echo "ok: ibv_devinfo -v with SOFTNIC_LINK_LAYER=eth: link layer Ethernet"
else
    echo "FAIL: ibv_devinfo -v with SOFTNIC_LINK_LAYER=eth"
    cat "$work/devinfo"
    failed=1
fi
unset SOFTNIC_LINK_LAYER
roce_pairs
unset SOFTNIC_DEVICES

# The fabric file goes with the trap; no process may be left.
no_process_left
exit $failed
