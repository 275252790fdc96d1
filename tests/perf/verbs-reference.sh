#!/bin/sh
# The bare verbs reference (verbs-reference.hpp) between two processes on
# the software verbs NIC: sluice-perf-verbs-reference under softnic-run.
# Plain build only (the NIC is not built with the sanitizers).
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
SOFTNIC_FABRIC=/dev/shm/softnic-verbsref-$$
export SOFTNIC_FABRIC
trap 'rm -f "$SOFTNIC_FABRIC"' EXIT
timeout 120 "$srcdir/tests/softnic/verbs/softnic-run" "$builddir/tests/perf/sluice-perf-verbs-reference"
status=$?
# The fabric file goes with the trap; none of this run may be left.
rm -f "$SOFTNIC_FABRIC"
[ ! -e "$SOFTNIC_FABRIC" ] || { echo "FAIL: $SOFTNIC_FABRIC is left"; exit 1; }
exit $status
