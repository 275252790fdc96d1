#!/bin/sh
# Every knob is documented: docs/knobs.md must be what `sluice-info --markdown`
# prints from the knob table (src/base/knobs.def and each conduit's
# knobs.def) in a build with every conduit configure builds by default, and
# the README links to it.  A build that leaves a default conduit out
# (--disable-udp) prints fewer knobs: each line it prints must still be in
# docs/knobs.md.  Regenerate with: sluice-info --markdown > docs/knobs.md.
set -eu
top_srcdir=${SLUICETEST_SRCDIR:?}
info="$SLUICETEST_BUILDDIR/sluice-info"
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$info" --markdown > "$generated"

# The conduits configure builds by default, against those this build has.
defaults=$(sed -n 's/^SLUICE_CONDUIT(\[\([a-z0-9_]*\)\], *\[yes\]).*/\1/p' "$top_srcdir"/src/conduits/*/configure.m4 | sort)
built=$("$info" --conduit-list | cut -f1 | sort)
missing=$(for c in $defaults; do printf '%s\n' "$built" | grep -qx "$c" || echo "$c"; done)

if [ -z "$missing" ]; then
    if ! diff -u "$top_srcdir/docs/knobs.md" "$generated"; then
        echo "FAIL: docs/knobs.md is out of date with the knob table (diff above)"
        exit 1
    fi
    how="the same table"
else
    undocumented=$(grep '^| `SLUICE_' "$generated" | grep -vxFf "$top_srcdir/docs/knobs.md" || true)
    if [ -n "$undocumented" ]; then
        printf '%s\n' "$undocumented"
        echo "FAIL: these knob lines are not in docs/knobs.md (this build leaves out:" $missing")"
        exit 1
    fi
    how="each in docs/knobs.md; this build leaves out the conduits $(echo $missing)"
fi
table=$(grep '^|' "$generated")
# The README does not copy the table: it links to docs/knobs.md.
if ! grep -q '(docs/knobs.md)' "$top_srcdir/README.md"; then
    echo "FAIL: README.md does not link to docs/knobs.md"
    exit 1
fi
echo "PASS: knob docs match the knob table ($(printf '%s\n' "$table" | grep -c SLUICE_) variables, $how)"
