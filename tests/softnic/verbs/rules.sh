#!/bin/sh
# The software NIC's rules (rules.cpp): the QP state machine, argument
# checks, every work-request error status (atomics' included), completion
# channels, the send queue's depth, a CQ overrun.  rules.cpp
# is built against rdma-core's headers and library, then run under
# softnic-run; run without it (rdma-core's library, no device here) it must
# fail, which shows it does not pass by itself.  Plain build only; skips
# (77) without libibverbs-dev or a C++ compiler.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: the software NIC's rules run in the plain build only (subset $SLUICETEST_SUBSET)"
    exit 77
fi
[ -f /usr/include/infiniband/verbs.h ] || { echo "SKIP: no verbs headers (Debian: libibverbs-dev)"; exit 77; }
command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler"; exit 77; }
work=$(mktemp -d)
SOFTNIC_FABRIC=/dev/shm/softnic-rules-$$
export SOFTNIC_FABRIC
trap 'rm -rf "$work"; rm -f "$SOFTNIC_FABRIC"' EXIT
"${CXX:-g++}" -std=c++20 -O1 -g -Wall -o "$work/rules" "$here/rules.cpp" -libverbs || { echo "FAIL: building rules.cpp"; exit 1; }
failed=0
# One device with InfiniBand ports; two devices of two ports; RoCE ports;
# a device taking 4 outstanding reads and atomics per queue pair; send
# queues that hold 2 work requests whatever max_send_wr says; a device of
# 8 memory regions.
for config in "" "SOFTNIC_DEVICES=2 SOFTNIC_PORTS=2" "SOFTNIC_DEVICES=2 SOFTNIC_LINK_LAYER=eth" "SOFTNIC_MAX_QP_RD_ATOM=4" "SOFTNIC_SQ_SLOTS=2" "SOFTNIC_MAX_MR=8"; do
    # shellcheck disable=SC2086 # $config is a list of assignments
    if env $config timeout 60 "$here/softnic-run" "$work/rules" > "$work/out" 2>&1; then
        echo "ok: every rule holds on the software NIC (${config:-one device, InfiniBand}): $(grep -c '^ok' "$work/out") rules"
    else
        echo "FAIL: the software NIC breaks a rule (${config:-one device, InfiniBand})"
        grep -v '^ok' "$work/out"
        failed=1
    fi
done
if SOFTNIC_FABRIC=/dev/null timeout 60 "$work/rules" > "$work/without" 2>&1; then
    echo "FAIL: rules.cpp passed without the software NIC"
    cat "$work/without"
    failed=1
else
    echo "ok: without the software NIC the rules fail ($(head -1 "$work/without"))"
fi
exit $failed
