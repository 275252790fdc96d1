#!/bin/sh
# The software verbs NIC between hosts (README.md): two network namespaces
# joined by a veth pair are two hosts of SOFTNIC_HOSTS, each with its own
# fabric, and the work between them goes over the wire (TCP).  rdma-core's
# and perftest's programs run as server on host A and client on host B, as
# acceptance.sh runs them on one host: ibv_rc_pingpong (polling and with
# completion events), ibv_ud_pingpong, ibv_srq_pingpong, ib_write_lat,
# ib_read_lat and ib_send_bw, then ibv_rc_pingpong and ibv_ud_pingpong on
# RoCE ports.  Each pair runs under a hard time limit and passes when both
# sides exit 0 and print their results.  Also: the hosts' LIDs differ, each
# host has its fabric file, a process on no host of the list gets no
# device, and rules.cpp's rules between hosts hold.  Root only (network namespaces); skips (77) otherwise, without
# ip, or as acceptance.sh skips.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common/netns.sh
. "$here/../common/netns.sh"
netns_need "the software NIC"
run="$here/softnic-run"
. "$here/pair.sh"
need_programs

netns_hosts snic 10.213.49.1 10.213.49.2 /dev/shm/softnic-netns
SOFTNIC_FABRIC=$netns_fabric
export SOFTNIC_FABRIC
work=$(mktemp -d)
trap 'netns_remove; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
failed=0

netns_make

lid_a=$(ip netns exec "$host_a" "$run" ibv_devinfo | sed -n 's/.*port_lid:[^0-9]*\([0-9]*\).*/\1/p')
lid_b=$(ip netns exec "$host_b" "$run" ibv_devinfo | sed -n 's/.*port_lid:[^0-9]*\([0-9]*\).*/\1/p')
if [ "$lid_a" = 1 ] && [ "$lid_b" = 33 ] && [ -e "$SOFTNIC_FABRIC-h0" ] && [ -e "$SOFTNIC_FABRIC-h1" ] &&
    [ ! -e "$SOFTNIC_FABRIC" ]; then
    echo "ok: ibv_devinfo on hosts A and B: port LIDs $lid_a and $lid_b, a fabric file each"
else
    echo "FAIL: ibv_devinfo on hosts A and B: port LIDs '$lid_a' and '$lid_b' (want 1 and 33); fabric files:"
    ls "$SOFTNIC_FABRIC"*
    failed=1
fi
if ! "$run" ibv_devinfo > "$work/devinfo" 2>&1 && grep -q 'SOFTNIC_HOSTS' "$work/devinfo"; then
    echo "ok: ibv_devinfo on no host of SOFTNIC_HOSTS fails: $(grep SOFTNIC_HOSTS "$work/devinfo")"
else
    echo "FAIL: ibv_devinfo on no host of SOFTNIC_HOSTS"
    cat "$work/devinfo"
    failed=1
fi

server_in="ip netns exec $host_a" client_in="ip netns exec $host_b" server_host=$address_a
rdma_core_pairs
roce_pairs

# rules.cpp's rules between hosts: write and read, a bad key, a send that
# waits for its receive, a QP the other host does not have.
if [ -f /usr/include/infiniband/verbs.h ] &&
    "${CXX:-g++}" -std=c++20 -O1 -g -Wall -o "$work/rules" "$here/rules.cpp" -libverbs; then
    netns_rules 60 ''
else
    echo "SKIP: the rules between hosts (no verbs headers, Debian: libibverbs-dev)"
fi

# The fabric files go with the trap; no process may be left.
netns_no_process_left SOFTNIC_FABRIC
exit $failed
