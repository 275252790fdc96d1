#!/bin/sh
# tests/docs/examples.sh: each client-API chapter's runnable example
# (docs/atomics.md, collectives.md, vis.md, am-prepare.md), as the page
# prints it (tests/docs/extract.sh, built by make), run under sluicerun at
# 4 ranks on smp and with every peer over udp: it must end with code 0
# and print what the page says it prints.  README.md in this folder.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
scale=1
[ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ] && scale=6
failed=0
ran=0
# example PROGRAM PAGE PATTERN COUNT: PATTERN (an extended regex) must match
# COUNT lines of the job's output, and "is wrong" none.
example() {
    program=$builddir/tests/docs/$1 page=$2 pattern=$3 count=$4
    for route in smp udp; do
        set --
        [ "$route" = udp ] && set -- SLUICE_ROUTE=network SLUICE_NETWORK=udp
        out=$(env "$@" timeout $((60 * scale)) "$builddir/sluicerun" -n 4 -- "$program" 2>&1)
        code=$?
        got=$(printf '%s\n' "$out" | grep -cE "$pattern")
        if [ "$code" != 0 ] || [ "$got" != "$count" ] || printf '%s\n' "$out" | grep -q 'is wrong'; then
            printf '%s\n' "$out" | tail -20
            echo "FAIL: the example of $page ($route, 4 ranks): code $code, $got of $count lines matching '$pattern'"
            failed=1
        else
            echo "ok: the example of $page ($route, 4 ranks)"
        fi
        ran=$((ran + 1))
    done
}
example tickets docs/atomics.md '^4 tickets taken$' 1
example reduce docs/collectives.md '^rank [0-3]: team [01] of 2 \((even ranks\), sum 2|odd ranks\), sum 4), "hello from job rank [23]"$' 4
example vis-block docs/vis.md '^rank [0-3]: element' 0
example records docs/am-prepare.md '^rank [0-3]: [1-9][0-9]* records arrived, sum [0-9]+$' 4
[ "$ran" -gt 0 ] || exit 99
exit $failed
