#!/bin/sh
# Conduits register under static linking too: sluice-info linked with
# libsluice.a lists the conduits (and their knobs) the shared build lists.
set -eu
builddir=${SLUICETEST_BUILDDIR:?}
# configure --disable-static (.ci/run's sanitizer phases) builds no
# libsluice.a: sluice-info-static is then linked with the shared library
# and compares nothing.
if [ ! -f "$builddir/.libs/libsluice.a" ]; then
    echo "SKIP: no libsluice.a in this build (configure --disable-static)"
    exit 77
fi
shared=$("$builddir/sluice-info" --conduit-list)
static=$("$builddir/tests/unit/sluice-info-static" --conduit-list)
if test -z "$shared" || test "$shared" != "$static"; then
    printf 'FAIL: conduits differ\nshared libsluice:\n%s\nstatic libsluice.a:\n%s\n' "$shared" "$static"
    exit 1
fi
if test "$("$builddir/sluice-info" --markdown)" != "$("$builddir/tests/unit/sluice-info-static" --markdown)"; then
    echo "FAIL: the knob tables differ between the shared and the static libsluice"
    exit 1
fi
echo "PASS: static and shared libsluice register the same conduits: $(printf '%s\n' "$shared" | cut -f1 | tr '\n' ' ')"
