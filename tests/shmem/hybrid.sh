#!/bin/sh
# tests/shmem/hybrid.sh - the hybrid MPI + OpenSHMEM example
# (contrib/examples/shmem_halo.c) under the real mpirun of every MPI
# configure built for (SLUICETEST_MPIRUN, and SLUICETEST_MPI_EXTRA's
# flavor=mpirun pairs with the -flavor programs), with MPI_Init first and
# with shmem_init first, at 2 and 4 ranks: each job under a hard time
# limit, exit code 0, its answer right, no shared-memory file and no
# process left behind.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
mpirun=${SLUICETEST_MPIRUN:?}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=^ucx UCX_MEM_EVENTS=no
# Open MPI's allocations kept past MPI_Finalize (tests/mpi/hybrid.sh says why).
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
sizes="2 4"
orders="mpi-first shmem-first"
[ -z "${SLUICETEST_SUBSET:-}" ] || sizes=2
# The tsan subset: with shmem_init first, Sluice starts MPI from its own
# thread-level request (MPI_THREAD_SERIALIZED, for the progress thread),
# and ThreadSanitizer reports a lock-order inversion inside Open MPI's
# uninstrumented TCP transport (mca_btl_tcp_add_procs): the order runs in
# the plain and asan builds, as tests/mpi/hybrid.sh's sluice-first does.
[ "${SLUICETEST_SUBSET:-}" != tsan ] || orders=mpi-first
failed=0
oversubscribe() { if "$1" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then echo --oversubscribe; fi; }

run_flavor() {
    label=$1 suffix=$2 run=$3
    prog=$builddir/contrib/examples/shmem_halo$suffix
    [ -x "$prog" ] || { echo "FAIL: [$label] $prog is not built"; failed=$((failed + 1)); return; }
    for order in $orders; do
        for n in $sizes; do
            job="shh$$$label$order$n"
            out=$(SLUICE_JOB_ID=$job timeout -k 5 90 "$run" $(oversubscribe "$run") -n "$n" "$prog" "$order" 2>&1)
            rc=$?
            left=$(ls /dev/shm 2> /dev/null | grep "^sluice\.$job\.")
            if [ $rc -ne 0 ] || ! echo "$out" | grep -q "shmem_halo: $n PEs"; then
                echo "FAIL: [$label] shmem_halo $order at $n ranks: exit code $rc; output:"
                echo "$out" | sed 's/^/    /' | tail -20
                failed=$((failed + 1))
            elif [ -n "$left" ]; then
                echo "FAIL: [$label] shmem_halo $order at $n ranks left shared memory behind:" $left
                failed=$((failed + 1))
            else
                echo "PASS: [$label] shmem_halo $order at $n ranks: $(echo "$out" | grep -o 'residual.*')"
            fi
        done
    done
}

run_flavor default "" "$mpirun"
extra=${SLUICETEST_MPI_EXTRA:-}
[ -z "${SLUICETEST_SUBSET:-}" ] || extra=
for pair in $extra; do
    run_flavor "${pair%%=*}" "-${pair%%=*}" "${pair#*=}"
done
[ $failed -eq 0 ]
