#!/bin/sh
# tests/shmem/bad-input.sh - every mode of tests/shmem/bad_input.c at 2 PEs
# (smp): the job must end with a non-zero code and the line
# "sluice-shmem: PE N: CALL: WHAT; fix: FIX" naming the call the mode gets
# wrong; mode "ok" (which also checks a global 8 bytes past a 16-byte
# boundary, both ways) must end with 0.  Each job under a hard time limit, and
# none may leave shared memory behind.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
prog=$builddir/tests/shmem/sluice-shmem-bad-input
run=$builddir/tests/shmem/oshrun
failed=0
# mode|text the line must hold
cases='ok|
before-init|shmem_my_pe: OpenSHMEM is not initialized; fix: call shmem_init
not-symmetric|shmem_long_p: 0x[0-9a-f]* (8 bytes) is not symmetric; fix: pass symmetric memory
bad-pe|shmem_long_p: PE 2 of 2; fix: pass a PE in 0 .. shmem_n_pes()-1
negative-pe|shmem_long_g: PE -1 of 2; fix:
ctx-destroyed|shmem_long_p: a destroyed context; fix:
team-destroyed|shmem_team_sync: invalid team; fix:
heap-too-big|shmem_malloc: no room for [0-9]* bytes in the symmetric heap of [0-9]* bytes; fix: raise SHMEM_SYMMETRIC_SIZE
after-finalize|shmem_n_pes: called after shmem_finalize; fix: call OpenSHMEM only between
bad-compare|shmem_long_wait_until: comparison 99; fix: pass SHMEM_CMP_EQ
misaligned-atomic|shmem_long_atomic_fetch_add: target 0x[0-9a-f]* is not aligned to 8 bytes; fix: align the target
bad-free|shmem_free: 0x[0-9a-f]* is not the start of a symmetric heap block; fix:'
IFS='
'
for c in $cases; do
    mode=${c%%|*}
    want=${c#*|}
    job="shb$$$mode"
    out=$(SLUICE_JOB_ID=$job timeout -k 5 60 "$run" -n 2 "$prog" "$mode" 2>&1)
    rc=$?
    left=$(ls /dev/shm 2> /dev/null | grep "^sluice\.$job\.")
    if [ -n "$left" ]; then
        echo "FAIL: $mode left shared memory behind: $left"
        failed=$((failed + 1))
    elif [ -z "$want" ]; then
        if [ $rc -eq 0 ]; then echo "PASS: $mode"; else
            echo "FAIL: $mode: exit code $rc; output:"; echo "$out" | sed 's/^/    /'; failed=$((failed + 1)); fi
    elif [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
        echo "FAIL: $mode: exit code $rc, expected a failing job that ends by itself; output:"
        echo "$out" | sed 's/^/    /'
        failed=$((failed + 1))
    elif ! echo "$out" | grep -q "^sluice-shmem: PE [0-9]*: $want"; then
        echo "FAIL: $mode: no line 'sluice-shmem: PE N: $want'; output:"
        echo "$out" | sed 's/^/    /'
        failed=$((failed + 1))
    else
        echo "PASS: $mode (exit $rc): $(echo "$out" | grep -m1 '^sluice-shmem: ')"
    fi
done
[ $failed -eq 0 ]
