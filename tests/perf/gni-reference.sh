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
    echo "SKIP: the software uGNI NIC does not build here ($softnic_run --lib-dir failed)"
    exit 77
fi
SOFTNIC_GNI_FABRIC=/dev/shm/softnic-gniref-$$
export SOFTNIC_GNI_FABRIC
trap 'rm -f "$SOFTNIC_GNI_FABRIC"' EXIT
timeout 120 "$softnic_run" "$program"
status=$?
# The fabric file goes with the trap; none of this run may be left.
rm -f "$SOFTNIC_GNI_FABRIC"
[ ! -e "$SOFTNIC_GNI_FABRIC" ] || { echo "FAIL: $SOFTNIC_GNI_FABRIC is left"; exit 1; }
exit $status
