#!/bin/sh
# The bare uGNI reference (gni-reference.hpp) between two processes on the
# software uGNI NIC: sluice-perf-gni-reference under softnic-run, on a
# fabric file of its own.  Plain build only (the NIC is not built with the
# sanitizers).
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
program=$builddir/tests/perf/sluice-perf-gni-reference
if [ ! -x "$program" ]; then
    echo "SKIP: $program is not built (configure --with-gni=DIR builds it)"
    exit 77
fi
softnic_run=$srcdir/tests/softnic/gni/softnic-run
if ! "$softnic_run" --lib-dir >/dev/null; then
    echo "FAIL: the software uGNI NIC does not build ($softnic_run --lib-dir failed)"
    exit 1
fi
SOFTNIC_GNI_FABRIC=/dev/shm/softnic-gniref-$$
export SOFTNIC_GNI_FABRIC
trap 'rm -f "$SOFTNIC_GNI_FABRIC"' EXIT
out=$(timeout 120 "$softnic_run" "$program" 2>&1)
status=$?
printf '%s\n' "$out"
# A filter or a skip that leaves nothing run exits 0 too: some test must
# have passed and none skipped.
if [ "$status" = 0 ] && { ! printf '%s\n' "$out" | grep -qE '^\[  PASSED  \] [1-9][0-9]* test' ||
    printf '%s\n' "$out" | grep -q '^\[  SKIPPED \]'; }; then
    echo "FAIL: no test of the reference ran, or one skipped"
    status=1
fi
# The fabric file goes with the trap; none of this run may be left.
rm -f "$SOFTNIC_GNI_FABRIC"
[ ! -e "$SOFTNIC_GNI_FABRIC" ] || { echo "FAIL: $SOFTNIC_GNI_FABRIC is left"; exit 1; }
exit $status
