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
# shellcheck source=../common/netns.sh
. "$here/../common/netns.sh"
netns_need "the software LAPI"
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
run="$here/softnic-run"
lib=$("$run" --lib-dir) || { echo "FAIL: building the software LAPI"; exit 1; }

netns_hosts slapi 10.213.51.1 10.213.51.2 /dev/shm/softnic-lapi-netns
SOFTNIC_LAPI_FABRIC=$netns_fabric
export SOFTNIC_LAPI_FABRIC
unset MP_CHILD MP_PROCS MP_PARTITION
work=$(mktemp -d)
trap 'netns_remove; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM
failed=0

"${CXX:-g++}" -std=c++20 -O1 -g -Wall -I"$("$run" --include-dir)" -o "$work/rules" "$here/rules.cpp" \
    "$lib/liblapi.so.1" || { echo "FAIL: building rules.cpp"; exit 1; }
netns_make

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
    # One job per run: both tasks share a fresh key.
    MP_PARTITION=$(($(od -An -N6 -tu8 /dev/urandom | tr -d ' ') + 1))
    export MP_PARTITION
    # shellcheck disable=SC2086 # $arg is empty or one word
    netns_rules 120 "$mode mode" $arg
done

netns_no_process_left SOFTNIC_LAPI_FABRIC
exit $failed
