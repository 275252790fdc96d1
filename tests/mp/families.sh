# tests/mp/families.sh - sourced by the scripts that run sluice-mp-gtest's
# network instances again in a variant of their conduit (another provider,
# other queue sizes, other hosts): which suites such a run takes, how
# a run of a GoogleTest program from a script is judged, and how a job's
# code and output are (expect), and that libsluice links no NIC library
# its conduit opens at run time (not_linked).
#
# The client families (atomic domains, teams and collectives, VIS,
# completion, negotiated-payload AMs) reach a conduit only through its AM
# and RMA paths, which the transport suites exercise in every variant.
# They run over each conduit once, in its default form (sluice-mp-gtest's
# Net instances, and the conduit's own script where the shared suites
# leave it out).  A provider variant leaves them out and adds only the
# families whose conduit code the variant changes, named by the script
# (ofi's providers: AtomicDomains, each provider's atomic path); a
# variant of queue sizes, modes or connections runs mp_variant's suites,
# and a run across hosts mp_across_hosts's.
mp_client_families_but_atomics='Net/Coll*:Net/Vis*:Net/Completion*:Net/AmPrepare*'
mp_client_families="Net/Atomic*:$mp_client_families_but_atomics"

# The transport's own suites of sluice-mp-gtest: every AM category and
# size, a flood, delivery before barriers, barriers among AMs.
mp_transport_suites='AmCategories AmFlood Delivery BarrierStorm'

# mp_suites RANKS CONDUIT SUITE...: a --gtest_filter value of
# sluice-mp-gtest's SUITEs over CONDUIT at RANKS ranks.
mp_suites() {
    _ranks=$1 _conduit=$2
    shift 2
    _filter=
    for _suite in "$@"; do
        _filter="$_filter${_filter:+:}Net/$_suite.*/N${_ranks}_native_$_conduit"
    done
    printf '%s\n' "$_filter"
}

# mp_across_hosts CONDUIT [SUITE...]: what a run across hosts repeats over
# CONDUIT at 3 ranks, one per host: the transport's suites and the SUITEs
# named (default Rma: every RMA size).  The others ride the same AM and
# RMA paths; they run over the conduit on one host, in its own script.
mp_across_hosts() {
    _c=$1
    shift
    [ $# = 0 ] && set -- Rma
    # shellcheck disable=SC2086 # a list of words
    mp_suites 3 "$_c" $mp_transport_suites "$@"
}

# mp_variant CONDUIT: what a variant of a conduit (other queue sizes,
# modes, cutovers, connections) runs at 2 ranks: the transport's suites,
# hidden replies (credits home without a reply), IMMEDIATE sends (refused
# when the queues are full) and every RMA size.  The default form runs
# every suite, at 2 and 3 ranks.
mp_variant() {
    # shellcheck disable=SC2086 # a list of words
    mp_suites 2 "$1" $mp_transport_suites AmHiddenReplies AmImmediate Rma
}

# mp_filter POSITIVE [EXCLUDED]: a --gtest_filter value of the POSITIVE
# patterns without EXCLUDED (patterns joined by ':', either may be empty).
mp_filter() {
    if [ -n "${2:-}" ]; then
        printf '%s:-%s\n' "$1" "$2"
    else
        printf '%s\n' "$1"
    fi
}

# gtest_ran COMMAND...: run COMMAND (a GoogleTest program, with whatever
# env/timeout/launcher words precede it), show its output, and succeed only
# when it exits 0, reports at least one test passed and skipped none: a
# filter that matches nothing, or a suite that skips itself, fails the
# script instead of passing it quietly.
gtest_ran() {
    _gtest_log=$(mktemp) || return 1
    "$@" > "$_gtest_log" 2>&1
    _gtest_code=$?
    cat "$_gtest_log"
    _gtest_bad=
    if [ "$_gtest_code" != 0 ]; then
        _gtest_bad="exit $_gtest_code"
    # Either summary line, anywhere in a line: an MPI launcher forwarding
    # several ranks' output may join two ranks' lines, or split one with a
    # rank's stderr.
    elif ! grep -qE '\[==========\] [1-9][0-9]* tests? from [0-9]* test suites? ran|\[  PASSED  \] [1-9][0-9]* test' "$_gtest_log"; then
        _gtest_bad="no test ran (the filter matched none?)"
    elif grep -q '\[  SKIPPED \]' "$_gtest_log"; then
        _gtest_bad="tests were skipped"
    fi
    rm -f "$_gtest_log"
    [ -z "$_gtest_bad" ] && return 0
    echo "gtest_ran: $_gtest_bad"
    return 1
}

# expect WHAT CODE PATTERN: the last job (its code in $code, its output in
# $log) ended with CODE ("fail": any but 0) and said PATTERN; else FAIL,
# the end of its output, and $failed set.
expect() {
    if { [ "$code" = "$2" ] || { [ "$2" = fail ] && [ "$code" != 0 ]; }; } && printf '%s\n' "$log" | grep -q -- "$3"; then
        echo "ok: $1"
    else
        echo "FAIL: $1: exit $code (expected $2) and output lacking: $3"
        printf '%s\n' "$log" | grep -v EXPECTED | tail -15
        failed=1
    fi
}

# not_linked LIBRARY: the build's shared libsluice has no NEEDED entry for
# LIBRARY (a NIC library its conduit opens with dlopen); else FAIL and
# $failed set.  Says so when the build has no shared libsluice.
not_linked() {
    _lib=$(ls "${SLUICETEST_BUILDDIR:?}"/.libs/libsluice.so.*.*.* 2> /dev/null | head -1)
    if [ -z "$_lib" ]; then
        echo "not run: the $1 NEEDED check (no shared libsluice in this build)"
    elif objdump -p "$_lib" | grep -q "NEEDED *$1"; then
        echo "FAIL: $(basename "$_lib") links $1 (it must open it with dlopen)"
        failed=1
    else
        echo "ok: $(basename "$_lib") does not link $1"
    fi
}
