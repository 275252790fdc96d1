#!/bin/sh
# The software GNI NIC's rules (rules.cpp): two processes exchanging SMSG
# messages, FMA and BTE puts and gets, atomics and datagrams, then each
# modelled limit shown enforced (registration on both sides, the MDD
# limit, SMSG credits and message size, CQ overrun, FMA at post and BTE
# after it, datagrams' arguments and cancels, argument checks).  rules.cpp is built against gni_pub.h and the NIC's
# libugni.so.0, then run under softnic-run; run without it (no PMI_GNI_*
# credentials) it must fail, which shows it does not pass by itself.
# Plain build only; skips (77) without a C++ compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software GNI NIC's rules run in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
lib=$("$here/softnic-run" --lib-dir) || { echo "FAIL: building the software GNI NIC"; exit 1; }
work=$(mktemp -d)
SOFTNIC_GNI_FABRIC=/dev/shm/softnic-gni-rules-$$
export SOFTNIC_GNI_FABRIC
trap 'rm -rf "$work"; rm -f "$SOFTNIC_GNI_FABRIC"' EXIT
"${CXX:-g++}" -std=c++20 -O1 -g -Wall -I"$("$here/softnic-run" --include-dir)" -o "$work/rules" "$here/rules.cpp" \
    "$lib/libugni.so.0" || { echo "FAIL: building rules.cpp"; exit 1; }
failed=0
# The default MDD limit, and a small one.
for config in "" "SOFTNIC_GNI_MDD_LIMIT=16"; do
    # shellcheck disable=SC2086 # $config is a list of assignments
    if env -u PMI_GNI_PTAG -u PMI_GNI_COOKIE -u PMI_GNI_LOC_ADDR -u PMI_GNI_DEV_ID $config \
        timeout 60 "$here/softnic-run" "$work/rules" > "$work/out" 2>&1; then
        echo "ok: every rule holds on the software GNI NIC (${config:-default limits}): $(grep -c '^ok' "$work/out") rules"
    else
        echo "FAIL: the software GNI NIC breaks a rule (${config:-default limits})"
        grep -v '^ok' "$work/out"
        failed=1
    fi
done
# Without softnic-run: the library is found, but the job has no credentials.
if env -u PMI_GNI_PTAG -u PMI_GNI_COOKIE -u PMI_GNI_LOC_ADDR -u PMI_GNI_DEV_ID LD_LIBRARY_PATH="$lib" \
    timeout 60 "$work/rules" > "$work/without" 2>&1; then
    echo "FAIL: rules.cpp passed without the software NIC's environment"
    cat "$work/without"
    failed=1
else
    echo "ok: without softnic-run the rules fail ($(head -1 "$work/without"))"
fi
exit $failed
