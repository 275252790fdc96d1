#!/bin/sh
# Every knob is documented: docs/knobs.md and the README's table must be what
# `sluice-info --markdown` prints from the knob table (src/base/knobs.def).
# Regenerate with: sluice-info --markdown > docs/knobs.md, then copy the table.
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
# The README's knob table: from its header row to the first line that is
# not a table row.
readme=$(awk '/^\| Variable/ {in_table = 1} in_table && !/^\|/ {exit} in_table' "$top_srcdir/README.md")
if [ "$table" != "$readme" ]; then
    echo "FAIL: the knob table in README.md differs from sluice-info --markdown"
    exit 1
fi
echo "PASS: knob docs match the knob table ($(printf '%s\n' "$table" | grep -c SLUICE_) variables)"
