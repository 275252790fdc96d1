#!/bin/sh
# The software LAPI between hosts (README.md): two network namespaces
# joined by a veth pair are two hosts of SOFTNIC_HOSTS, each with its own
# fabric file, and the packets between them go over the wire (TCP).
# rules.cpp's two-task job runs with task 0 on one host and task 1 on the
# other, in interrupt mode and in polling mode: active messages with and
# without data and completion handler, uhdr at MAX_UHDR_SZ, puts and gets
# of 8 B and 4 MiB with their counters, fences, the address table, the two
# modes, header handlers that communicate or block, and task 1 dying
# (error codes on host A, no hang).  Also: a fabric file per host, and a
# process on no host of the list refused (LAPI_ERR_NO_FABRIC, one line
# naming SOFTNIC_HOSTS).  Root only (network namespaces); skips (77)
# otherwise, in the sanitizer subsets, and without ip or a C++ compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software LAPI's host test runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
[ "$(id -u)" = 0 ] || { echo "SKIP: hosts.sh makes network namespaces: root only"; exit 77; }
command -v ip > /dev/null || { echo "SKIP: no ip (Debian: iproute2)"; exit 77; }
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
run="$here/softnic-run"
lib=$("$run" --lib-dir) || { echo "FAIL: building the software LAPI"; exit 1; }

# A killed earlier run leaves its namespaces and fabric files: remove those
# of runs whose shell is gone.
for ns in $(ip netns list | sed -n 's/^\(slapi[AB][0-9][0-9]*\).*/\1/p'); do
    kill -0 "${ns#slapi?}" 2> /dev/null || ip netns del "$ns"
done
for f in /dev/shm/softnic-lapi-netns-*; do
    [ -e "$f" ] || continue
    pid=${f#/dev/shm/softnic-lapi-netns-}
    kill -0 "${pid%%-*}" 2> /dev/null || rm -f "$f"
done

host_a=slapiA$$ host_b=slapiB$$
address_a=10.213.51.1 address_b=10.213.51.2
SOFTNIC_HOSTS=$address_a,$address_b
SOFTNIC_LAPI_FABRIC=/dev/shm/softnic-lapi-netns-$$
export SOFTNIC_HOSTS SOFTNIC_LAPI_FABRIC
unset MP_CHILD MP_PROCS MP_PARTITION
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
    rm -f "$SOFTNIC_LAPI_FABRIC"*
}
trap cleanup EXIT
trap 'exit 1' INT TERM
failed=0

"${CXX:-g++}" -std=c++20 -O1 -g -Wall -I"$("$run" --include-dir)" -o "$work/rules" "$here/rules.cpp" \
    "$lib/liblapi.so.1" || { echo "FAIL: building rules.cpp"; exit 1; }

# Each namespace's end of the veth pair, then the pair goes with them.
if ! { ip netns add "$host_a" && ip netns add "$host_b" &&
    ip link add "slva$$" type veth peer name "slvb$$" &&
    ip link set "slva$$" netns "$host_a" && ip link set "slvb$$" netns "$host_b" &&
    ip -n "$host_a" addr add "$address_a/24" dev "slva$$" && ip -n "$host_b" addr add "$address_b/24" dev "slvb$$" &&
    ip -n "$host_a" link set "slva$$" up && ip -n "$host_b" link set "slvb$$" up &&
    ip -n "$host_a" link set lo up && ip -n "$host_b" link set lo up; }; then
    echo "FAIL: making the hosts (network namespaces $host_a, $host_b)"
    exit 1
fi

init_a=$(ip netns exec "$host_a" timeout 20 "$run" "$work/rules" init 2>&1)
init_b=$(ip netns exec "$host_b" timeout 20 "$run" "$work/rules" init 2>&1)
if [ "$init_a" = "LAPI_Init: LAPI_SUCCESS" ] && [ "$init_b" = "LAPI_Init: LAPI_SUCCESS" ] &&
    [ -e "$SOFTNIC_LAPI_FABRIC-h0" ] && [ -e "$SOFTNIC_LAPI_FABRIC-h1" ] && [ ! -e "$SOFTNIC_LAPI_FABRIC" ]; then
    echo "ok: a one-task job on hosts A and B: LAPI_Init succeeds, a fabric file each"
else
    echo "FAIL: a one-task job on hosts A and B (want LAPI_SUCCESS, fabric files -h0 and -h1):"
    printf '    %s\n' "$init_a" "$init_b"
    ls "$SOFTNIC_LAPI_FABRIC"*
    failed=1
fi
timeout 20 "$run" "$work/rules" init > "$work/nohost" 2>&1
code=$?
fabrics=$(find /dev/shm -maxdepth 1 -name "${SOFTNIC_LAPI_FABRIC#/dev/shm/}*" | wc -l)
if [ "$code" = 1 ] && grep -q 'LAPI_Init: LAPI_ERR_NO_FABRIC' "$work/nohost" &&
    grep -q 'SOFTNIC_HOSTS' "$work/nohost" && [ "$fabrics" = 2 ]; then
    echo "ok: a process on no host of SOFTNIC_HOSTS: LAPI_ERR_NO_FABRIC, and no fabric file:" \
        "$(grep SOFTNIC_HOSTS "$work/nohost")"
else
    echo "FAIL: a process on no host of SOFTNIC_HOSTS (exit $code):"
    sed 's/^/    /' "$work/nohost"
    ls "$SOFTNIC_LAPI_FABRIC"*
    failed=1
fi

# rules.cpp's two-task job, one task on each host, in both modes.
for mode in interrupt polling; do
    arg=''
    [ "$mode" = polling ] && arg=polling
    rm -rf "$work/meet"
    mkdir "$work/meet"
    MP_PARTITION=$(($(od -An -N6 -tu8 /dev/urandom | tr -d ' ') + 1))
    export MP_PARTITION
    start=$(date +%s)
    # shellcheck disable=SC2086 # $arg is empty or one word
    timeout 120 ip netns exec "$host_b" "$run" "$work/rules" B "$work/meet" $arg > "$work/rules-b" 2>&1 &
    side_b=$!
    # shellcheck disable=SC2086
    timeout 120 ip netns exec "$host_a" "$run" "$work/rules" A "$work/meet" $arg > "$work/rules-a" 2>&1
    a=$?
    wait "$side_b"
    b=$?
    side_b=''
    if [ "$a" = 0 ] && [ "$b" = 0 ]; then
        echo "ok: every rule between hosts holds ($mode mode): $(cat "$work/rules-a" "$work/rules-b" | grep -c '^ok')" \
            "rules ($(($(date +%s) - start)) s)"
    else
        echo "FAIL: a rule between hosts is broken ($mode mode; exit $a on host A, $b on B)"
        grep -hv '^ok' "$work/rules-a" "$work/rules-b"
        failed=1
    fi
done

# No process of this run (one with its SOFTNIC_LAPI_FABRIC) may be left.
left=$(env -u SOFTNIC_LAPI_FABRIC grep -lsxzF "SOFTNIC_LAPI_FABRIC=$SOFTNIC_LAPI_FABRIC" /proc/[0-9]*/environ)
if [ -n "$left" ]; then
    echo "FAIL: processes of the test are left: $(echo "$left" | tr -dc '0-9\n' | tr '\n' ' ')"
    failed=1
fi
exit $failed
