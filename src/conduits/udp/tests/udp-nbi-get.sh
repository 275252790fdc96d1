#!/bin/sh
# Many outstanding Gets over udp on this host: two ranks with
# SLUICE_ROUTE=network, rank 0 issues 16 sluice_get_nbi of 4 MiB from rank 1
# without polling between them, and the first must be complete when the
# last call returns (sluice-udp-check nbi-get, src/conduits/udp/tests/README.md).  Skips
# (77) without the udp conduit.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
if ! "$builddir/sluice-info" --conduits 2> /dev/null | grep -qE '^ +udp +'; then
    echo "SKIP: many outstanding Gets over udp: the udp conduit is not in this build"
    exit 77
fi
out=$(SLUICE_ROUTE=network SLUICETEST_RANK_TIMEOUT=100 timeout 120 \
    "$builddir/sluicerun" -n 2 "$builddir/src/conduits/udp/tests/sluice-udp-check" nbi-get 16 4194304 2>&1)
status=$?
printf '%s\n' "$out"
if [ $status -ne 0 ] || ! printf '%s\n' "$out" | grep -q '^PASS nbi-get'; then
    echo "FAIL: sluice-udp-check nbi-get over udp (exit $status)"
    exit 1
fi
