#!/bin/sh
# The software verbs NIC's acceptance test (README.md): programs nobody here
# wrote, unmodified, between two processes on the NIC (softnic-run):
# rdma-core's ibv_devinfo, ibv_rc_pingpong (polling and with completion
# events), ibv_ud_pingpong, ibv_srq_pingpong, and perftest's ib_write_lat,
# ib_read_lat and ib_send_bw; then ibv_rc_pingpong between two devices, and
# ibv_rc_pingpong and ibv_ud_pingpong on RoCE (Ethernet) ports.  Each pair runs under a hard time limit and
# passes when both sides exit 0 and print their results; the fabric is a
# file of this run's own, which must be gone afterwards.  Skips (77) without
# ibverbs-utils and perftest, or without a C++ compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# The NIC is not built with the sanitizers: it runs in the plain build only.
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software NIC's acceptance runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
run="$here/softnic-run"
for p in ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong ib_write_lat ib_read_lat ib_send_bw; do
    command -v "$p" > /dev/null || { echo "SKIP: $p is not installed (Debian: ibverbs-utils, perftest)"; exit 77; }
done
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler to build the software NIC"; exit 77; }
"$run" --lib-dir > /dev/null || { echo "FAIL: building the software NIC"; exit 1; }

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

# pair NAME EXPECT WHO CMD ARGS...: CMD as server (with $server_args), then
# as client (with $client_args) to
# localhost, on a port of this run; both must exit 0 within 60 s, and print
# EXPECT (WHO both), or the client must (WHO client: ib_read_lat's server
# measures nothing).
pair() {
    name=$1 expect=$2 who=$3
    shift 3
    # A port below the ephemeral range (32768 up) that no socket uses.
    port=$((10000 + ($$ + $(date +%N | sed 's/^0*//;s/^$/0/')) % 20000))
    while ss -Htan "sport = :$port" 2> /dev/null | grep -q .; do
        port=$((10000 + (port - 9999) % 20000))
    done
    # shellcheck disable=SC2086 # $server_args and $client_args are lists
    timeout 60 "$run" "$@" $server_args -p "$port" > "$work/server" 2>&1 &
    server=$!
    # The client connects once the server listens; pingpong clients do not retry.
    i=0
    while [ $i -lt 100 ] && ! ss -ltn 2> /dev/null | grep -q ":$port "; do
        sleep 0.1
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    timeout 60 "$run" "$@" $client_args -p "$port" localhost > "$work/client" 2>&1
    client=$?
    wait "$server"
    srv=$?
    if [ "$client" = 0 ] && [ "$srv" = 0 ] && grep -q "$expect" "$work/client" &&
        { [ "$who" = client ] || grep -q "$expect" "$work/server"; }; then
        echo "ok: $name: $(grep "$expect" "$work/client" | tail -1 | tr -s ' \t' ' ')"
    else
        echo "FAIL: $name: client exit $client, server exit $srv"
        echo "--- client"; tail -20 "$work/client"
        echo "--- server"; tail -20 "$work/server"
        failed=1
    fi
}

server_args= client_args=
pair "ibv_rc_pingpong" "iters in" both ibv_rc_pingpong -n 500
pair "ibv_rc_pingpong -e (completion events)" "iters in" both ibv_rc_pingpong -e -n 500
pair "ibv_ud_pingpong" "iters in" both ibv_ud_pingpong -n 500
pair "ibv_srq_pingpong" "iters in" both ibv_srq_pingpong -n 500
pair "ib_write_lat" "^ 2 *200 " both ib_write_lat -d softnic0 -n 200
pair "ib_read_lat" "^ 2 *200 " client ib_read_lat -d softnic0 -n 200
pair "ib_send_bw" "^ 65536 *1000 " both ib_send_bw -d softnic0 -n 1000

# Two devices: the server on softnic0, the client on softnic1.
export SOFTNIC_DEVICES=2
server_args="-d softnic0" client_args="-d softnic1"
pair "ibv_rc_pingpong between softnic0 and softnic1" "iters in" both ibv_rc_pingpong -n 200
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
pair "ibv_rc_pingpong -g 0 on RoCE ports" "iters in" both ibv_rc_pingpong -g 0 -n 200
pair "ibv_ud_pingpong -g 0 on RoCE ports" "iters in" both ibv_ud_pingpong -g 0 -n 200
unset SOFTNIC_DEVICES SOFTNIC_LINK_LAYER

# The fabric file goes with the trap; no process may be left.
if pgrep -f "softnic-run .*-p " > /dev/null; then
    echo "FAIL: processes of the test are left"
    failed=1
fi
exit $failed
