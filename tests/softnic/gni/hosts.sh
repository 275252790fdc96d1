#!/bin/sh
# The software GNI NIC between hosts (README.md): two network namespaces
# joined by a veth pair are two hosts of SOFTNIC_HOSTS, each with its own
# fabric file and NIC address, and the transfers between them go over the
# wire (TCP).  rules.cpp's two-process rules run with process A on one
# host and B on the other: SMSG messages in order, FMA and BTE puts and
# gets, every atomic, fetch-adds from both hosts on one word that all
# count, a send to a full mailbox answering NOT_DONE until the receiver
# releases, remote access errors (a stale handle, a range past the end,
# read-only memory) completing in error, remote events, a BTE completion
# after its post, peers that do not exist.  Also: the hosts' NIC
# addresses (1 and 2) and fabric files, and a process on no host of the
# list refused (GNI_RC_NO_MATCH, one line naming SOFTNIC_HOSTS).  Root
# only (network namespaces); skips (77) otherwise, in the sanitizer
# subsets, and without ip or a C++ compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software GNI NIC's host test runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
[ "$(id -u)" = 0 ] || { echo "SKIP: hosts.sh makes network namespaces: root only"; exit 77; }
command -v ip > /dev/null || { echo "SKIP: no ip (Debian: iproute2)"; exit 77; }
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
run="$here/softnic-run"
lib=$("$run" --lib-dir) || { echo "FAIL: building the software GNI NIC"; exit 1; }

# A killed earlier run leaves its namespaces and fabric files: remove those
# of runs whose shell is gone.
for ns in $(ip netns list | sed -n 's/^\(sgni[AB][0-9][0-9]*\).*/\1/p'); do
    kill -0 "${ns#sgni?}" 2> /dev/null || ip netns del "$ns"
done
for f in /dev/shm/softnic-gni-netns-*; do
    [ -e "$f" ] || continue
    pid=${f#/dev/shm/softnic-gni-netns-}
    kill -0 "${pid%%-*}" 2> /dev/null || rm -f "$f"
done

host_a=sgniA$$ host_b=sgniB$$
address_a=10.213.50.1 address_b=10.213.50.2
SOFTNIC_HOSTS=$address_a,$address_b
SOFTNIC_GNI_FABRIC=/dev/shm/softnic-gni-netns-$$
export SOFTNIC_HOSTS SOFTNIC_GNI_FABRIC
work=$(mktemp -d)
side_b=''
# A program still running in a namespace would keep it: stop it first.
# shellcheck disable=SC2317 # the trap calls it
cleanup() {
    [ -n "$side_b" ] && kill "$side_b" 2> /dev/null
    wait
    ip netns del "$host_a" 2> /dev/null
    ip netns del "$host_b" 2> /dev/null
    rm -rf "$work"
    rm -f "$SOFTNIC_GNI_FABRIC"*
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failed=0

"${CXX:-g++}" -std=c++20 -O1 -g -Wall -I"$("$run" --include-dir)" -o "$work/rules" "$here/rules.cpp" \
    "$lib/libugni.so.0" || { echo "FAIL: building rules.cpp"; exit 1; }

# Each namespace's end of the veth pair, then the pair goes with them.
if ! { ip netns add "$host_a" && ip netns add "$host_b" &&
    ip link add "sgva$$" type veth peer name "sgvb$$" &&
    ip link set "sgva$$" netns "$host_a" && ip link set "sgvb$$" netns "$host_b" &&
    ip -n "$host_a" addr add "$address_a/24" dev "sgva$$" && ip -n "$host_b" addr add "$address_b/24" dev "sgvb$$" &&
    ip -n "$host_a" link set "sgva$$" up && ip -n "$host_b" link set "sgvb$$" up &&
    ip -n "$host_a" link set lo up && ip -n "$host_b" link set lo up; }; then
    echo "FAIL: making the hosts (network namespaces $host_a, $host_b)"
    exit 1
fi

attach_a=$(ip netns exec "$host_a" timeout 20 "$run" "$work/rules" attach 2>&1)
attach_b=$(ip netns exec "$host_b" timeout 20 "$run" "$work/rules" attach 2>&1)
if [ "$attach_a" = "GNI_CdmAttach: GNI_RC_SUCCESS, NIC address 1" ] &&
    [ "$attach_b" = "GNI_CdmAttach: GNI_RC_SUCCESS, NIC address 2" ] &&
    [ -e "$SOFTNIC_GNI_FABRIC-h0" ] && [ -e "$SOFTNIC_GNI_FABRIC-h1" ] && [ ! -e "$SOFTNIC_GNI_FABRIC" ]; then
    echo "ok: GNI_CdmAttach on hosts A and B: NIC addresses 1 and 2, a fabric file each"
else
    echo "FAIL: GNI_CdmAttach on hosts A and B (want NIC addresses 1 and 2, fabric files -h0 and -h1):"
    printf '    %s\n' "$attach_a" "$attach_b"
    ls "$SOFTNIC_GNI_FABRIC"*
    failed=1
fi
timeout 20 "$run" "$work/rules" attach > "$work/nohost" 2>&1
code=$?
fabrics=$(find /dev/shm -maxdepth 1 -name "${SOFTNIC_GNI_FABRIC#/dev/shm/}*" | wc -l)
if [ "$code" = 1 ] && grep -q 'GNI_CdmAttach: GNI_RC_NO_MATCH' "$work/nohost" &&
    grep -q 'SOFTNIC_HOSTS' "$work/nohost" && [ "$fabrics" = 2 ]; then
    echo "ok: a process on no host of SOFTNIC_HOSTS: GNI_RC_NO_MATCH, and no fabric file:" \
        "$(grep SOFTNIC_HOSTS "$work/nohost")"
else
    echo "FAIL: a process on no host of SOFTNIC_HOSTS (exit $code):"
    sed 's/^/    /' "$work/nohost"
    ls "$SOFTNIC_GNI_FABRIC"*
    failed=1
fi

# rules.cpp's two-process rules, one process on each host.
mkdir "$work/meet"
start=$(date +%s)
timeout 60 ip netns exec "$host_b" "$run" "$work/rules" B "$work/meet" > "$work/rules-b" 2>&1 &
side_b=$!
timeout 60 ip netns exec "$host_a" "$run" "$work/rules" A "$work/meet" > "$work/rules-a" 2>&1
a=$?
wait "$side_b"
b=$?
side_b=''
if [ "$a" = 0 ] && [ "$b" = 0 ]; then
    echo "ok: every rule between hosts holds: $(cat "$work/rules-a" "$work/rules-b" | grep -c '^ok') rules" \
        "($(($(date +%s) - start)) s)"
else
    echo "FAIL: a rule between hosts is broken (exit $a on host A, $b on B)"
    grep -hv '^ok' "$work/rules-a" "$work/rules-b"
    failed=1
fi

# No process of this run (one with its SOFTNIC_GNI_FABRIC) may be left.
left=$(env -u SOFTNIC_GNI_FABRIC grep -lsxzF "SOFTNIC_GNI_FABRIC=$SOFTNIC_GNI_FABRIC" /proc/[0-9]*/environ)
if [ -n "$left" ]; then
    echo "FAIL: processes of the test are left: $(echo "$left" | tr -dc '0-9\n' | tr '\n' ' ')"
    failed=1
fi
exit $failed
