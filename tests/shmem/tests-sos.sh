#!/bin/sh
# tests/shmem/tests-sos.sh - Sandia's OpenSHMEM unit tests (tests-sos,
# vendored in ../shared/vendor) against libsluice-shmem, unedited: built
# with the build tree's oshcc / oshc++ and run by its own `make check` with
# TEST_RUNNER set to the build tree's oshrun (every test under a hard time
# limit), once per configuration, conduit:PEs:
#   smp     the default (one host, segments mapped)
#   udp     SLUICE_NETWORK=udp, every peer over the network conduit
#   ofi     SLUICE_NETWORK=ofi, provider tcp;ofi_rxm
#   ofi-shm SLUICE_NETWORK=ofi, provider shm
#   ibv     SLUICE_NETWORK=ibv on the software verbs NIC (tests/softnic/verbs/softnic-run)
#   portals SLUICE_NETWORK=portals on Sandia's reference NIC (net.core.rmem_default
#           raised for the run, tests/portals/udp-buffers.sh)
# SLUICETEST_SOS_CONFIGS picks them: by default smp:2 and udp:2; "smp:2
# smp:4 udp:2 ofi:2 ofi-shm:2 ibv:2 portals:2" is the whole set
# (docs/openshmem.md has its latest counts).  Sanitizer builds skip it: the
# suite's programs are built by its own make without the sanitizer, and an
# instrumented library cannot serve them (tests/install/install.sh says
# the same); tests/shmem/bad-input.sh and hybrid.sh run there.  The tests-sos sources are unpacked and
# bootstrapped once into ${XDG_CACHE_HOME:-~/.cache}/sluice/tests-sos/<hash>;
# the tests are built in the build tree (tests/shmem/sos-build), each
# configuration's logs kept in tests/shmem/sos-logs/<conduit>-<PEs>.
# SLUICETEST_SOS_PREPARE=1 only configures and builds them.
# Prints one line per configuration with its counts and every failure's
# log; exits 1 when a test failed or a configuration ran no test.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
here=$builddir/tests/shmem
unset MAKEFLAGS MFLAGS MAKELEVEL

tarball=${SLUICETEST_TESTS_SOS_TARBALL:-$(ls "$srcdir"/../shared/vendor/tests-sos-*.tar.gz 2> /dev/null | tail -1)}
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
    echo "FAIL: no tests-sos tarball (set SLUICETEST_TESTS_SOS_TARBALL, or put it in $srcdir/../shared/vendor)"
    exit 1
fi
for tool in autoreconf make timeout; do
    command -v "$tool" > /dev/null 2>&1 || { echo "FAIL: $tool not found"; exit 1; }
done
if nm -D --undefined-only "$builddir/.libs/libsluice.so" 2> /dev/null | grep -qE ' __(a|t|ub)san_'; then
    echo "SKIP: a sanitizer build: the tests-sos programs, built without the sanitizer, cannot load its libraries"
    exit 77
fi
configs=${SLUICETEST_SOS_CONFIGS:-smp:2 udp:2}

# ---- the sources, bootstrapped once ------------------------------------------
hash=$(sha256sum "$tarball" | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/tests-sos/$hash
mkdir -p "$cache"
exec 9> "$cache/lock"
flock 9
if [ ! -f "$cache/done" ]; then
    rm -rf "$cache/src"
    mkdir -p "$cache/src"
    tar xzf "$tarball" -C "$cache/src" --strip-components=1 || { echo "FAIL: unpacking $tarball"; exit 1; }
    (cd "$cache/src" && ./autogen.sh) > "$cache/autogen.log" 2>&1 || {
        echo "FAIL: tests-sos autogen.sh"; cat "$cache/autogen.log"; exit 1; }
    touch "$cache/done"
fi
flock -u 9

# ---- the tests, built with this build's wrappers --------------------------------
sos=$here/sos-build
mkdir -p "$sos"
if [ ! -f "$sos/config.status" ] || [ "$here/oshcc" -nt "$sos/config.status" ]; then
    (cd "$sos" && "$cache/src/configure" CC="$here/oshcc" CXX="$here/oshc++" --disable-fortran) \
        > "$here/sos-configure.log" 2>&1 || { echo "FAIL: tests-sos configure"; tail -30 "$here/sos-configure.log"; exit 1; }
fi
if ! make -C "$sos/test/unit" -j2 check TESTS= > "$here/sos-make.log" 2>&1; then
    echo "FAIL: building the tests-sos unit tests"
    grep -E 'error|Error' "$here/sos-make.log" | head -40
    exit 1
fi

# mt_membar's LOCK round is a data race in the test itself: thread 1 ends
# each round with the plain stores `shared_dest_1 = 0; shared_dest_2 = 0;`,
# which gcc -O2 emits in the other order, so thread 0 can see shared_dest_2
# cleared, start the next round and have its `shared_dest_1 = 1` overwritten
# by the late store (result ITER-1; 6 runs in 60 on smp -n 2 here, none of
# 60 when built at -O0).  Built at -O0, where the stores keep program order
# and x86 keeps them in it, the test checks what it means to check.
if ! { rm -f "$sos/test/unit/mt_membar" "$sos"/test/unit/mt_membar-mt_membar.o &&
       make -C "$sos/test/unit" mt_membar CFLAGS="-O0 -g"; } >> "$here/sos-make.log" 2>&1; then
    echo "FAIL: building mt_membar at -O0"
    tail -20 "$here/sos-make.log"
    exit 1
fi

# SLUICETEST_SOS_PREPARE=1: stop here, the programs configured and built
# (.ci/run does that before its test lanes; the run in the lane then finds
# nothing to build).
if [ -n "${SLUICETEST_SOS_PREPARE:-}" ]; then
    echo "tests-sos: configured and built in $sos"
    exit 0
fi

# ---- one run per configuration ------------------------------------------------------
failed=0
limit=${SLUICETEST_SOS_TIMEOUT:-120}
for c in $configs; do
    conduit=${c%%:*}
    npes=${c#*:}
    wrap=
    case $conduit in
    smp) env_vars="" ;;
    udp) env_vars="SLUICE_NETWORK=udp SLUICE_ROUTE=network" ;;
    ofi) env_vars="SLUICE_NETWORK=ofi SLUICE_ROUTE=network SLUICE_OFI_PROVIDER=tcp;ofi_rxm" ;;
    ofi-shm) env_vars="SLUICE_NETWORK=ofi SLUICE_ROUTE=network SLUICE_OFI_PROVIDER=shm" ;;
    ibv)
        env_vars="SLUICE_NETWORK=ibv SLUICE_ROUTE=network"
        wrap=$srcdir/tests/softnic/verbs/softnic-run ;;
    portals)
        if ! "$builddir/sluice-info" --conduits 2> /dev/null | grep -qE '^ +portals +'; then
            echo "FAIL: portals: the conduit is not in this build (configure --with-portals4=DIR)"
            failed=1
            continue
        fi
        # shellcheck source=../portals/udp-buffers.sh
        . "$srcdir/tests/portals/udp-buffers.sh"
        if ! portals_udp_buffers; then failed=1; continue; fi
        trap portals_udp_restore EXIT
        env_vars="SLUICE_NETWORK=portals SLUICE_ROUTE=network" ;;
    *) echo "FAIL: unknown configuration $c (smp, udp, ofi, ofi-shm, ibv, portals)"; failed=1; continue ;;
    esac
    logs=$here/sos-logs/$conduit-$npes
    rm -rf "$logs"
    mkdir -p "$logs"
    rm -f "$sos"/test/unit/*.log "$sos"/test/unit/*.trs
    start=$(date +%s)
    # shellcheck disable=SC2086 # env_vars is a list of assignments
    env $env_vars SLUICE_JOB_ID="sos-$$-$conduit-$npes" \
        make -C "$sos/test/unit" check \
        TEST_RUNNER="timeout -k 5 $limit $wrap $here/oshrun -n $npes" > "$logs/make.log" 2>&1
    cp "$sos"/test/unit/*.log "$logs"/ 2> /dev/null
    total=$(sed -n 's/^# TOTAL: *//p' "$logs/test-suite.log" 2> /dev/null)
    pass=$(sed -n 's/^# PASS: *//p' "$logs/test-suite.log" 2> /dev/null)
    total=${total:-0}
    pass=${pass:-0}
    bad=$(grep -lE '^:test-result: (FAIL|ERROR)' "$sos"/test/unit/*.trs 2> /dev/null | sed 's|.*/||; s|\.trs$||')
    nbad=$(printf '%s\n' "$bad" | grep -c .)
    echo "tests-sos $conduit -n $npes: $pass passed, $nbad failed of $total ($(($(date +%s) - start)) s)"
    if [ "$total" -eq 0 ]; then
        echo "FAIL: tests-sos $conduit -n $npes ran no test"
        tail -20 "$logs/make.log"
        failed=1
    fi
    for t in $bad; do
        echo "--- FAILED $conduit -n $npes: $t"
        tail -15 "$logs/$t.log"
        failed=1
    done
    leftover=$(ls /dev/shm 2> /dev/null | grep -c "sluice.sos-$$-$conduit-$npes" || true)
    if [ "$leftover" -ne 0 ]; then
        echo "FAIL: $conduit -n $npes left $leftover shared-memory files in /dev/shm"
        failed=1
    fi
done
exit $failed
