#!/bin/sh
# The Portals 4 reference implementation's own tests (README.md): programs
# of its test/basic, unmodified, two processes each under its launcher
# (yod.hydra -np 2) over its reliable UDP transport, built by with-portals4.
# `required` are the features the portals conduit builds on (matching and
# list entries, Put and Get with events and counters, truncation,
# unexpected and oversize messages, flow control, persistent search);
# each must exit 0 within 60 s.  `known` are reported only: test_ME_unlink
# fails here (the conduit unlinks a match entry only by PtlMEUnlink of its
# own, never relying on that case).  `timed` tests depend on the pace of
# the two processes: test_ME_flowctl_nohdr's target waits for half the
# sender's Puts (10 ms apart) and then wants the count to be exactly half,
# which a target slowed by a loaded machine overshoots (a quarter of the
# runs with two busy loops beside it); such a test gets up to three runs and
# fails only if all three do.  Any other test that fails gets one more run,
# saying so and showing how the first ended; a second failure stands.  The
# runs that needed it, each once in a CI run with both test lanes busy:
# hydra ending test_ME_oversize_put at finalize with "assert (!closed)
# failed" (a PMI socket closed while hydra answered PMI_Finalize),
# test_ME_get ended by the 60 s limit (15 of 15 runs here took under a
# second), test_ME_unexpected_put ending in a segmentation fault (40 of 40
# runs here passed with two busy loops beside them).  No Sluice code runs
# in these programs: they are the reference implementation's own.  Exits 77 when with-portals4 cannot build (no tarball, no
# libev-dev).
set -u
here=$(cd "$(dirname "$0")" && pwd)
run=$here/with-portals4
# shellcheck source=udp-buffers.sh
. "$here/udp-buffers.sh"
portals_udp_buffers || exit 77
tests=$("$run" --tests)
case $? in
0) ;;
77) echo "SKIP: the Portals 4 reference implementation cannot be built here (above)"; exit 77 ;;
*) echo "FAIL: building the Portals 4 reference implementation"; exit 1 ;;
esac
yod=$("$run" --prefix)/bin/yod.hydra
required="test_init test_bootstrap test_PA_ME_put test_PA_LE_put test_LA_ME_put test_PA_ME_put_event
test_ME_put_multiple test_ME_put_multiple_large test_ME_get test_LE_get test_ME_put_truncate test_ME_get_truncate
test_event test_ct_ack test_ME_unexpected_put test_ME_oversize_put test_ME_oversize_get test_ME_flowctl_norecv
test_ME_flowctl_noeq test_ME_flowctl_nohdr test_LE_unlink test_PA_ME_persistent_search test_manage_local_only"
known="test_ME_unlink"
timed="test_ME_flowctl_nohdr"
work=$(mktemp -d)
trap 'rm -rf "$work"; portals_udp_restore' EXIT
failed=0
# run_one TEST: the test's two processes, its output in $work/TEST.
run_one() {
    (cd "$tests" && timeout -k 5 60 "$yod" -np 2 "./$1") > "$work/$1" 2>&1
    status=$?
    return "$status"
}
for t in $required $known; do
    if run_one "$t"; then
        echo "ok: $t"
    elif echo " $timed " | grep -q " $t " && cp "$work/$t" "$work/$t.first" &&
         { run_one "$t" || run_one "$t"; }; then
        echo "ok: $t (on a later run; the first, slowed by the machine's load, ended:)"
        sed 's/^/    /' "$work/$t.first" | tail -5
    elif ! echo " $timed " | grep -q " $t " && first=$status && cp "$work/$t" "$work/$t.first" && run_one "$t"; then
        echo "ok: $t (on a second run; the first ended, code $first:)"
        sed 's/^/    /' "$work/$t.first" | tail -5
    elif echo " $known " | grep -q " $t "; then
        echo "known failure (not used by the conduit): $t"
    else
        echo "FAIL: $t"
        sed 's/^/    /' "$work/$t" | tail -15
        failed=1
    fi
done
exit $failed
