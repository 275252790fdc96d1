# Sourced by gni-reference.sh and lapi-reference.sh: runs the bare
# reference check program $program (tests/perf/sluice-perf-NIC-reference)
# between two processes on the software NIC $nic (tests/softnic/$nic), on a
# fabric file of its own named by $fabric_var, and exits with its verdict.
# $configure names the configure option that builds the program.  Plain
# build only (the software NICs are not built with the sanitizers).
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: runs in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
program=$builddir/tests/perf/$program
if [ ! -x "$program" ]; then
    echo "SKIP: $program is not built (configure $configure builds it)"
    exit 77
fi
softnic_run=$srcdir/tests/softnic/$nic/softnic-run
if ! "$softnic_run" --lib-dir >/dev/null; then
    echo "FAIL: the software $nic NIC does not build ($softnic_run --lib-dir failed)"
    exit 1
fi
fabric=/dev/shm/softnic-${nic}ref-$$
export "$fabric_var=$fabric"
trap 'rm -f "$fabric"' EXIT
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
rm -f "$fabric"
[ ! -e "$fabric" ] || { echo "FAIL: $fabric is left"; exit 1; }
exit $status
