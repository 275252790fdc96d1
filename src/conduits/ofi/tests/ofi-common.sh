# src/conduits/ofi/tests/ofi-common.sh - sourced by the ofi test scripts:
# sets builddir, and exits 77 (SKIP) when the build has no ofi conduit.
builddir=${SLUICETEST_BUILDDIR:?}
if ! "$builddir/sluice-info" --conduits 2> /dev/null | grep -qE '^ +ofi +'; then
    echo "SKIP: the ofi conduit is not in this build"
    exit 77
fi
