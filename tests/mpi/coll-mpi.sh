#!/bin/sh
# Sluice's collectives against MPI's in hybrid jobs under the real mpirun:
# random data, roots and team splits, every reduction type and operation,
# broadcast, alltoall and allgather compared with MPI_Allreduce, MPI_Reduce,
# MPI_Bcast, MPI_Alltoall and MPI_Allgather of the same data
# (tests/mpi/coll_mpi_test.cpp), at 2, 3 and 4 ranks (2 in the reduced
# subsets), under each algorithm family, each job under a hard time limit.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
mpirun=${SLUICETEST_MPIRUN:?}
# As tests/mpi/hybrid.sh: root in containers, no UCX one-sided component,
# no UCX memory hooks, no leak checks of Open MPI's own allocations.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_osc=^ucx
export UCX_MEM_EVENTS=no
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"

prog="$builddir/tests/mpi/sluice-coll-mpi-test"
[ -x "$prog" ] || { echo "FAIL: $prog is not built"; exit 1; }
over=
if "$mpirun" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then over=--oversubscribe; fi
sizes="2 3 4"
rounds=4
if [ -n "${SLUICETEST_SUBSET:-}" ]; then sizes=2; rounds=2; fi

failed=0
for n in $sizes; do
    for family in auto flat hier; do
        job="collmpi$$$n$family"
        log="coll-mpi-$n-$family.log"
        SLUICE_JOB_ID=$job SLUICE_COLL_ALGORITHM=$family \
            timeout -k 5 120 "$mpirun" $over -n "$n" "$prog" check "$rounds" > "$log" 2>&1
        rc=$?
        left=$(ls /dev/shm 2>/dev/null | grep "^sluice\\.$job\\." || true)
        if [ $rc -ne 0 ] || ! grep -q "^PASS" "$log"; then
            echo "FAIL: $n ranks, SLUICE_COLL_ALGORITHM=$family: exit code $rc; log:"
            sed 's/^/    /' "$log" | head -40
            failed=$((failed + 1))
        elif [ -n "$left" ]; then
            echo "FAIL: $n ranks, SLUICE_COLL_ALGORITHM=$family left shared memory behind: $left"
            for f in $left; do rm -f "/dev/shm/$f"; done
            failed=$((failed + 1))
        else
            echo "PASS: $n ranks, SLUICE_COLL_ALGORITHM=$family: $(grep '^PASS' "$log")"
        fi
        rm -f "$log"
    done
done
[ $failed -eq 0 ]
