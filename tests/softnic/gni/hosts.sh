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
# after its post, peers that do not exist, and datagrams (directed to
# wildcard both ways, forwarded to the higher host or noticed to the
# lower one; a directed datagram waiting for a later wildcard; two
# directed ones crossing as one exchange; cancel withdrawing a datagram
# from the other host; one wildcard serving three clients of the other
# host).  Also: the hosts' NIC
# addresses (1 and 2) and fabric files, and a process on no host of the
# list refused (GNI_RC_NO_MATCH, one line naming SOFTNIC_HOSTS).  Root
# only (network namespaces); skips (77) otherwise, in the sanitizer
# subsets, and without ip or a C++ compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common/netns.sh
. "$here/../common/netns.sh"
netns_need "the software GNI NIC"
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
run="$here/softnic-run"
lib=$("$run" --lib-dir) || { echo "FAIL: building the software GNI NIC"; exit 1; }

netns_hosts sgni 10.213.50.1 10.213.50.2 /dev/shm/softnic-gni-netns
SOFTNIC_GNI_FABRIC=$netns_fabric
export SOFTNIC_GNI_FABRIC
work=$(mktemp -d)
trap 'netns_remove; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
failed=0

"${CXX:-g++}" -std=c++20 -O1 -g -Wall -I"$("$run" --include-dir)" -o "$work/rules" "$here/rules.cpp" \
    "$lib/libugni.so.0" || { echo "FAIL: building rules.cpp"; exit 1; }
netns_make

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
netns_rules 60 ''

netns_no_process_left SOFTNIC_GNI_FABRIC
exit $failed
