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
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software NIC's host test runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
[ "$(id -u)" = 0 ] || { echo "SKIP: hosts.sh makes network namespaces: root only"; exit 77; }
command -v ip > /dev/null || { echo "SKIP: no ip (Debian: iproute2)"; exit 77; }
run="$here/softnic-run"
. "$here/pair.sh"
need_programs

# A killed earlier run leaves its namespaces and fabric files: remove those
# of runs whose shell is gone.
for ns in $(ip netns list | sed -n 's/^\(snic[AB][0-9][0-9]*\).*/\1/p'); do
    kill -0 "${ns#snic?}" 2> /dev/null || ip netns del "$ns"
done
for f in /dev/shm/softnic-netns-*; do
    [ -e "$f" ] || continue
    pid=${f#/dev/shm/softnic-netns-}
    kill -0 "${pid%%-*}" 2> /dev/null || rm -f "$f"
done

host_a=snicA$$ host_b=snicB$$
address_a=10.213.49.1 address_b=10.213.49.2
SOFTNIC_HOSTS=$address_a,$address_b
SOFTNIC_FABRIC=/dev/shm/softnic-netns-$$
export SOFTNIC_HOSTS SOFTNIC_FABRIC
work=$(mktemp -d)
server='' side_b=''
# A program still running in a namespace would keep it: stop it first.
# shellcheck disable=SC2317 # the trap calls it
cleanup() {
    for p in $server $side_b; do kill "$p" 2> /dev/null; done
    wait
    ip netns del "$host_a" 2> /dev/null
    ip netns del "$host_b" 2> /dev/null
    rm -rf "$work"
    rm -f "$SOFTNIC_FABRIC"-h*
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failed=0

# Each namespace's end of the veth pair, then the pair goes with them.
if ! { ip netns add "$host_a" && ip netns add "$host_b" &&
    ip link add "snva$$" type veth peer name "snvb$$" &&
    ip link set "snva$$" netns "$host_a" && ip link set "snvb$$" netns "$host_b" &&
    ip -n "$host_a" addr add "$address_a/24" dev "snva$$" && ip -n "$host_b" addr add "$address_b/24" dev "snvb$$" &&
    ip -n "$host_a" link set "snva$$" up && ip -n "$host_b" link set "snvb$$" up &&
    ip -n "$host_a" link set lo up && ip -n "$host_b" link set lo up; }; then
    echo "FAIL: making the hosts (network namespaces $host_a, $host_b)"
    exit 1
fi

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
    mkdir "$work/meet"
    timeout 60 ip netns exec "$host_b" "$run" "$work/rules" B "$work/meet" > "$work/rules-b" 2>&1 &
    side_b=$!
    timeout 60 ip netns exec "$host_a" "$run" "$work/rules" A "$work/meet" > "$work/rules-a" 2>&1
    a=$?
    wait "$side_b"
    b=$?
    side_b=''
    if [ "$a" = 0 ] && [ "$b" = 0 ]; then
        echo "ok: every rule between hosts holds: $(cat "$work/rules-a" "$work/rules-b" | grep -c '^ok') rules"
    else
        echo "FAIL: a rule between hosts is broken (exit $a on host A, $b on B)"
        grep -hv '^ok' "$work/rules-a" "$work/rules-b"
        failed=1
    fi
else
    echo "SKIP: the rules between hosts (no verbs headers, Debian: libibverbs-dev)"
fi

# The fabric files go with the trap; no process may be left.
no_process_left
exit $failed
