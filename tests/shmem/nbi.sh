#!/bin/sh
# tests/shmem/nbi.sh - tests/shmem/nbi.c (_nbi Puts and Gets in flight,
# completed by their context's quiet, by shmem_quiet and by
# shmem_ctx_destroy) at 2 and 3 PEs on smp, and at 2 PEs with every peer on
# udp and, where libsluice has it, on ofi (tcp;ofi_rxm): each job under a
# hard time limit, exit code 0, "nbi: N PEs ok", no shared memory left.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
prog=$builddir/tests/shmem/sluice-shmem-nbi
run=$builddir/tests/shmem/oshrun
[ -x "$prog" ] || { echo "FAIL: $prog is not built"; exit 1; }
configs="smp:2 smp:3 udp:2"
if "$builddir/sluice-info" --conduit-list=network | grep -q "^ofi	"; then configs="$configs ofi:2"
else echo "note: libsluice has no ofi conduit; ofi not run"; fi
[ -z "${SLUICETEST_SUBSET:-}" ] || configs="smp:2 udp:2"
failed=0 ran=0
for c in $configs; do
    conduit=${c%%:*} n=${c#*:}
    case $conduit in
    smp) vars= ;;
    udp) vars="SLUICE_NETWORK=udp SLUICE_ROUTE=network" ;;
    ofi) vars="SLUICE_NETWORK=ofi SLUICE_ROUTE=network SLUICE_OFI_PROVIDER=tcp;ofi_rxm" ;;
    esac
    job="shn$$$conduit$n"
    out=$(env $vars SLUICE_JOB_ID=$job timeout -k 5 120 "$run" -n "$n" "$prog" 2>&1)
    rc=$?
    ran=$((ran + 1))
    left=$(ls /dev/shm 2> /dev/null | grep "^sluice\.$job\.")
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^nbi: $n PEs ok"; then
        echo "FAIL: $conduit, $n PEs: exit code $rc; output:"
        echo "$out" | sed 's/^/    /' | tail -20
        failed=$((failed + 1))
    elif [ -n "$left" ]; then
        echo "FAIL: $conduit, $n PEs left shared memory behind: $left"
        failed=$((failed + 1))
    else
        echo "PASS: $conduit, $n PEs"
    fi
done
[ $ran -gt 0 ] && [ $failed -eq 0 ]
