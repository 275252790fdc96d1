#!/bin/sh
# Every knob is documented: docs/knobs.md must be what `sluice-info --markdown`
# prints from the knob table (src/base/knobs.def), and the README links to it.
# Regenerate with: sluice-info --markdown > docs/knobs.md.
set -eu
top_srcdir=${SLUICETEST_SRCDIR:?}
info="$SLUICETEST_BUILDDIR/sluice-info"
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
"$info" --markdown > "$generated"
if ! diff -u "$top_srcdir/docs/knobs.md" "$generated"; then
    echo "FAIL: docs/knobs.md is out of date with the knob table (diff above)"
    exit 1
fi
table=$(grep '^|' "$generated")
# The README does not copy the table: it links to docs/knobs.md.
if ! grep -q '(docs/knobs.md)' "$top_srcdir/README.md"; then
    echo "FAIL: README.md does not link to docs/knobs.md"
    exit 1
fi
echo "PASS: knob docs match the knob table ($(printf '%s\n' "$table" | grep -c SLUICE_) variables)"
