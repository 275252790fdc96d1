#!/bin/sh
# The software LAPI's rules (rules.cpp): a job of two tasks exchanging
# active messages (with and without data and completion handler, uhdr at
# MAX_UHDR_SZ and over), puts and gets with their three counters, fences,
# the address table, interrupt against polling mode, header handlers that
# communicate or block (caught), completion handlers after all their data
# and off the dispatcher's thread, a task that dies (error codes, no
# hang); a job of three with delayed completion handlers and fences in
# rounds; bad arguments and a job environment without MP_CHILD, MP_PROCS
# or MP_PARTITION.  rules.cpp is built against lapi.h and the library's
# liblapi.so.1, then run under softnic-run in a fabric file of its own,
# with every task in interrupt mode, then in polling mode; run without
# softnic-run's environment (no MP_PARTITION) it must fail, which shows it
# does not pass by itself.  Plain build only; skips (77) without a C++
# compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software LAPI's rules run in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
lib=$("$here/softnic-run" --lib-dir) || { echo "FAIL: building the software LAPI"; exit 1; }
work=$(mktemp -d)
SOFTNIC_LAPI_FABRIC=/dev/shm/softnic-lapi-rules-$$
export SOFTNIC_LAPI_FABRIC
trap 'rm -rf "$work"; rm -f "$SOFTNIC_LAPI_FABRIC"' EXIT
"${CXX:-g++}" -std=c++20 -O1 -g -Wall -I"$("$here/softnic-run" --include-dir)" -o "$work/rules" "$here/rules.cpp" \
    "$lib/liblapi.so.1" || { echo "FAIL: building rules.cpp"; exit 1; }
failed=0
for mode in interrupt polling; do
    arg=''
    [ "$mode" = polling ] && arg=polling
    # shellcheck disable=SC2086 # $arg is empty or one word
    if env -u MP_PARTITION -u MP_CHILD -u MP_PROCS timeout 120 "$here/softnic-run" "$work/rules" $arg \
        > "$work/out" 2>&1; then
        echo "ok: every rule holds on the software LAPI ($mode mode): $(grep -c '^ok' "$work/out") rules"
    else
        echo "FAIL: the software LAPI breaks a rule ($mode mode)"
        grep -v '^ok' "$work/out"
        failed=1
    fi
done
# Without softnic-run: the library is found, but there is no job.
if env -u MP_PARTITION -u MP_CHILD -u MP_PROCS LD_LIBRARY_PATH="$lib" timeout 60 "$work/rules" \
    > "$work/without" 2>&1; then
    echo "FAIL: rules.cpp passed without the software LAPI's environment"
    cat "$work/without"
    failed=1
else
    echo "ok: without softnic-run the rules fail ($(head -1 "$work/without"))"
fi
exit $failed
