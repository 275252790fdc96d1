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
# Every SLUICE_ variable the project's own scripts read or set is in the
# table (the runtime warns of an unknown one in every job): a variable of
# the tests alone takes the prefix SLUICETEST_.
# Known: this build's table and every knobs.def of the tree (a build
# without a conduit lacks its knobs, which its scripts still name).
known=$({ "$info" --knobs | sed -n 's/^  \(SLUICE_[A-Za-z0-9_]*\) .*/\1/p'
    cat "$top_srcdir"/src/base/knobs.def "$top_srcdir"/src/conduits/*/knobs.def |
        sed -n 's/^SLUICE_\(KNOB\|INTERNAL\)(\([A-Za-z0-9_]*\),.*/SLUICE_\2/p'; } | sort -u)
used=$(cd "$top_srcdir" && find . -path ./build\* -prune -o -path ./.git -prune -o -type f \
    \( -name '*.sh' -o -name run -o -name 'with-*' -o -name 'softnic-run' -o -name '*-launcher' \) -print |
    xargs grep -hoE '\$\{?SLUICE_[A-Z0-9_]+|(^|[ ;(])(export )?SLUICE_[A-Z0-9_]+=' 2> /dev/null |
    grep -oE 'SLUICE_[A-Z0-9_]+' | sort -u)
# A family (SLUICE_IBV_PORTS_n) stands for its numbered members.
patterns=$(mktemp)
trap 'rm -f "$generated" "$patterns"' EXIT
printf '%s\n' "$known" > "$patterns"
printf '%s\n' "$known" | sed -n 's/_n$/_[0-9][0-9]*/p' >> "$patterns"
unknown=$(for v in $used; do printf '%s\n' "$v" | grep -qxf "$patterns" || echo "$v"; done)
if [ -n "$unknown" ]; then
    echo "FAIL: the project's scripts use SLUICE_ variables the knob table lacks (a job warns of each):" $unknown
    echo "      rename those of the tests to SLUICETEST_, or declare the others in a knobs.def"
    exit 1
fi
echo "PASS: knob docs match the knob table ($(printf '%s\n' "$table" | grep -c SLUICE_) variables, $how)"
