#!/bin/sh
# Sluice's Open MPI extension (src/mpi-interop/ompi-ext) built into Debian's
# Open MPI 4.1 and used the way applications use it:
#   1. Open MPI from `apt-get source openmpi` (the Debian version apt would
#      fetch), with the component copied to ompi/mpiext/sluice, autogen.pl,
#      a lean configure --enable-mpi-ext=sluice, make install into a cache
#      directory keyed by that version and a hash of the component files and
#      build options: ${SLUICETEST_CACHE:-$HOME/.cache/sluice}/ompi-ext/
#      openmpi-VERSION-HASH.  A cache hit skips all of this (and the download);
#      a cold build takes minutes (see the timing line).
#   2. tests/mpi/ompi_ext_test.c compiled with that mpicc: <mpi-ext.h> must
#      declare the MPIX_Sluice_* API.  The program never calls sluice_init;
#      its modes run at 2 and 4 ranks: Sluice up after MPI_Init and down after
#      MPI_Finalize, AM round trips (from handlers that call MPI) and Put/Get,
#      the MPIX_ window, the progress hook (a rank sitting in MPI_Barrier
#      answers a Sluice AM; without the hook it does not), the exits.  A plain
#      MPI program must be left alone, or given Sluice when told to.
#   3. tests/mpi/hybrid_test.cpp and pmpi_count.cpp rebuilt with that mpicxx:
#      every mode of hybrid.sh, with the extension told not to start Sluice
#      (the programs do), and sluice-first with the default (Sluice calls
#      MPI_Init: the extension must not start it a second time).
# Every job runs under a hard time limit with its own SLUICE_JOB_ID; a job
# that leaves /dev/shm/sluice.<job>.* behind fails.  One PASS:/FAIL: line per
# check; exit 0 if all passed, 77 (skip) with SLUICETEST_OMPI_EXT=skip, in
# sanitizer builds, or without a libsluice-mpi built for Open MPI.
# SLUICETEST_OMPI_EXT=prepare does step 1 only and needs no Sluice build: .ci/run
# fills the cache that way before its test phases, so the cold build does not
# compete with the timed tests of `make -j check`.
set -u
mode=${SLUICETEST_OMPI_EXT:-}
if [ "$mode" = prepare ]; then
    builddir=
    srcdir=$(cd "$(dirname "$0")/../.." && pwd)
else
    builddir=${SLUICETEST_BUILDDIR:?}
    srcdir=${SLUICETEST_SRCDIR:?}
fi
component=$srcdir/src/mpi-interop/ompi-ext
cache_root=${SLUICETEST_CACHE:-${HOME:-/tmp}/.cache/sluice}/ompi-ext
# Run from `make check`, this script inherits make's MAKEFLAGS (a jobserver
# whose descriptors it does not have): keep them away from Open MPI's build.
unset MAKEFLAGS MFLAGS MAKELEVEL

if [ "$mode" = skip ]; then echo "SKIP: SLUICETEST_OMPI_EXT=skip"; exit 77; fi
if [ "$mode" != prepare ]; then
    # The libsluice-mpi built for Open MPI: libsluice-mpi-openmpi when Open MPI
    # is not configure's default MPI, else libsluice-mpi (linking libmpi.so.40).
    if [ -e "$builddir/.libs/libsluice-mpi-openmpi.so" ]; then
        sluice_mpi=sluice-mpi-openmpi
    elif readelf -d "$builddir/.libs/libsluice-mpi.so" 2> /dev/null | grep NEEDED | grep -q 'libmpi\.so\.40'; then
        sluice_mpi=sluice-mpi
    else
        echo "SKIP: no libsluice-mpi built for Open MPI in $builddir"
        exit 77
    fi
    # Sanitizer builds: programs built here without a sanitizer runtime cannot
    # load an instrumented libsluice (tests/install/install.sh says why).
    if nm -D --undefined-only "$builddir/.libs/libsluice.so" 2> /dev/null | grep -qE ' __(a|t|ub)san_'; then
        echo "SKIP: a sanitizer build: the programs built with the extension's mpicc would need a sanitizer runtime"
        exit 77
    fi
fi

failed=0
passed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
show() { tail -"${2:-15}" "$1" | sed 's/^/    /'; }
now() { date +%s; }
finish() {
    echo "ompi-ext.sh: $passed passed, $failed failed ($(($(now) - t_total))s)"
    [ "$failed" -eq 0 ]
    exit $?
}
t_total=$(now)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ompi-ext.XXXXXX") || { echo "FAIL: mktemp"; exit 1; }
keep_tmp=0
trap '[ "$keep_tmp" = 1 ] || rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- 1. Open MPI with the extension, cached ---------------------------------
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || gcc -print-multiarch 2> /dev/null)
# Lean: C bindings only, Debian's own hwloc, libevent and PMIx, no MPI-IO,
# no network or vendor components, components built into the libraries.
# Measured on 2 cores, cold: 285-327 s in 4 runs (autogen 75-91, configure
# 40-45, make 137-156, install 11-12) against 667 s with configure's
# defaults (Fortran, OSHMEM, UCX, verbs, bundled PMIx: autogen 128,
# configure 119, make 363, install 57).  Warm (cached): about 19 s.
autogen_args="--force --no-oshmem --exclude pmix-pmix3x,event-libevent2022,hwloc-hwloc201,io-romio321"
no_build=io,fs,fbtl,fcoll,sharedfp,vprotocol,topo-treematch,coll-han,coll-adapt,coll-sync,coll-monitoring
no_build=$no_build,pml-monitoring,osc-monitoring,pml-cm,mtl
configure_args="--enable-mpi-ext=sluice --disable-mpi-fortran --disable-oshmem --disable-mpi-java
 --disable-mpi-cxx --disable-io-romio --without-ucx --without-verbs --without-ofi --without-psm
 --without-psm2 --without-cuda --without-hcoll --without-fca --without-knem --without-xpmem
 --without-portals4 --without-slurm --without-tm --without-lsf --without-sge --without-alps
 --with-hwloc=external --with-libevent=external --with-pmix=/usr/lib/$multiarch/pmix2
 --enable-mca-no-build=$no_build
 --enable-contrib-no-build=libompitrace
 --disable-dependency-tracking --disable-mca-dso --enable-silent-rules CFLAGS=-O1"
packages="dpkg-dev autoconf automake libtool perl make gcc g++ libhwloc-dev libevent-dev libpmix-dev"
recipe="autogen.pl $autogen_args; configure $configure_args"

# The key: the component's files (its README aside) and the recipe.  The
# Sluice build tree is not part of it: nothing of it is baked into Open MPI
# (programs get Sluice's paths from their own -I/-L flags and RUNPATH).
hash=$( (cd "$component" && find . -type f ! -name '*.md' | LC_ALL=C sort | while IFS= read -r f; do
    printf '%s\n' "$f"
    cat "$f"
done; printf '%s\n' "$recipe") | sha256sum | cut -c1-16)

# The Debian source version `apt-get source` gets: the newest known to apt.
source_version() {
    apt-cache showsrc openmpi 2> /dev/null | awk '/^Version:/ { print $2 }' | sort -V | tail -1
}
version=$(source_version)
if [ -z "$version" ]; then
    # No deb-src lines: a build of this component from any version will do.
    cached=$(ls -d "$cache_root"/openmpi-*-"$hash" 2> /dev/null | tail -1)
    if [ -n "$cached" ] && [ -f "$cached/.complete" ]; then
        version=${cached##*/openmpi-}
        version=${version%-"$hash"}
    elif [ "$(id -u)" -eq 0 ] && [ -f /etc/apt/sources.list.d/debian.sources ] &&
         ! grep -q '^Types:.*deb-src' /etc/apt/sources.list.d/debian.sources; then
        echo "note: enabling deb-src in /etc/apt/sources.list.d/debian.sources for apt-get source"
        sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources &&
            DEBIAN_FRONTEND=noninteractive apt-get update > "$tmp/apt-update.log" 2>&1
        version=$(source_version)
    fi
fi
if [ -z "$version" ]; then
    fail "apt knows no openmpi source package; fix: enable the deb-src lines of the apt sources and run apt-get update"
    finish
fi
key=openmpi-$version-$hash
prefix=$cache_root/$key
mkdir -p "$cache_root" || { fail "cannot create $cache_root"; finish; }

# One build at a time per cache (make -j check, parallel CI jobs).
if command -v flock > /dev/null 2>&1; then
    exec 9> "$cache_root/.lock"
    flock 9
fi

# step NAME LOG COMMAND...: runs one build step, timed; on failure the log's
# end is shown and the build directory kept.
step() {
    name=$1 log=$2
    shift 2
    t_step=$(now)
    if "$@" > "$log" 2>&1; then
        times="$times $name $(($(now) - t_step))s"
        return 0
    fi
    fail "Open MPI build: $name failed (log $log):"
    show "$log" 25
    keep_tmp=1
    return 1
}

ensure_packages() {
    missing=""
    for p in $packages; do
        dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "note: installing$missing"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
}

build_open_mpi() {
    times=""
    step packages "$tmp/packages.log" ensure_packages || return 1
    step source "$tmp/source.log" sh -c 'cd "$1" && apt-get source "openmpi=$2"' sh "$tmp" "$version" || return 1
    src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'openmpi-*' | head -1)
    [ -n "$src" ] || { fail "apt-get source openmpi=$version unpacked nothing"; return 1; }
    rm -rf "$src/ompi/mpiext/sluice"
    cp -R "$component" "$src/ompi/mpiext/sluice"
    step autogen "$tmp/autogen.log" sh -c 'cd "$1" && ./autogen.pl $2' sh "$src" "$autogen_args" || return 1
    rm -rf "$prefix"
    step configure "$tmp/configure.log" sh -c 'cd "$1" && ./configure --prefix="$2" $3' sh "$src" "$prefix" \
        "$configure_args" || return 1
    step make "$tmp/make.log" make -C "$src" -j"$(nproc 2> /dev/null || echo 2)" || return 1
    step install "$tmp/install.log" make -C "$src" install || return 1
    printf '%s\n' "$recipe" > "$prefix/.recipe"
    touch "$prefix/.complete"
    # Only the current build stays: older keys are other component versions.
    for old in "$cache_root"/openmpi-*; do
        [ "$old" = "$prefix" ] || rm -rf "$old"
    done
}

t=$(now)
if [ -f "$prefix/.complete" ]; then
    pass "Open MPI $version with the sluice extension: cached in $prefix ($(($(now) - t))s)"
else
    echo "note: building Open MPI $version with the sluice extension into $prefix (cold: minutes)"
    if build_open_mpi; then
        pass "Open MPI $version with the sluice extension: cold build $(($(now) - t))s ($times ) into $prefix"
    else
        rm -rf "$prefix"
        echo "    (build directory kept: $tmp)"
        finish
    fi
fi
if command -v flock > /dev/null 2>&1; then flock -u 9; fi
[ "$mode" = prepare ] && finish

mpicc=$prefix/bin/mpicc
mpicxx=$prefix/bin/mpicxx
mpirun=$prefix/bin/mpirun

# libmpi finds Sluice at run time; it must not link it.
if readelf -d "$prefix/lib/libmpi.so" | grep NEEDED | grep -q sluice; then
    fail "libmpi.so links a Sluice library"
elif nm -D "$prefix/lib/libmpi.so" | grep -q ' T MPIX_Query_sluice_support$'; then
    pass "libmpi.so has the extension (MPIX_Query_sluice_support) and no link dependency on Sluice"
else
    fail "libmpi.so lacks MPIX_Query_sluice_support: the extension was not built in"
fi

# ---- 2. programs built with that Open MPI --------------------------------------
sluice_link="-L$builddir/.libs -Wl,-rpath,$builddir/.libs -l$sluice_mpi -lsluice"
test_c=$srcdir/tests/mpi/ompi_ext_test.c
ext_test=$tmp/ompi-ext-test
plain_test=$tmp/ompi-ext-plain
hybrid_test=$tmp/hybrid-test
# shellcheck disable=SC2086 # sluice_link is a list of options
if "$mpicc" -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -I"$srcdir/include" "$test_c" -o "$ext_test" \
    $sluice_link > "$tmp/cc.log" 2>&1; then
    pass "<mpi-ext.h> declares the MPIX_Sluice_* API: ompi_ext_test.c compiles with -Werror against it"
else
    fail "ompi_ext_test.c does not compile against <mpi-ext.h>:"; show "$tmp/cc.log"
fi
# Without Sluice's headers on the path <mpi-ext.h> must still compile.
if "$mpicc" -std=c11 -Wall -Wextra -Werror -DOMPI_EXT_TEST_NO_SLUICE "$test_c" -o "$plain_test" \
    > "$tmp/cc-plain.log" 2>&1; then
    pass "<mpi-ext.h> compiles without Sluice's headers (a plain MPI program)"
else
    fail "<mpi-ext.h> without Sluice's headers:"; show "$tmp/cc-plain.log"
fi
# shellcheck disable=SC2086
if "$mpicxx" -std=c++20 -O1 -I"$srcdir/include" "$srcdir/tests/mpi/hybrid_test.cpp" "$srcdir/tests/mpi/pmpi_count.cpp" \
    -o "$hybrid_test" $sluice_link > "$tmp/cxx.log" 2>&1; then
    pass "hybrid_test.cpp and pmpi_count.cpp rebuilt with this Open MPI's mpicxx"
else
    fail "hybrid_test.cpp with this Open MPI's mpicxx:"; show "$tmp/cxx.log"
fi

# Root in containers and CI: Open MPI refuses it unless told.  Its UCX
# one-sided component is not built here; ^ucx stays for symmetry with
# hybrid.sh.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=^ucx
# Defaults of the extension unless a job says otherwise.
unset OMPI_MCA_mpiext_sluice_start OMPI_MCA_mpiext_sluice_progress OMPI_MCA_mpiext_sluice_library \
    OMPI_MCA_mpiext_sluice_verbose

shm_of() { ls /dev/shm 2> /dev/null | grep "^sluice\\.$1\\." | sort; }

# job WHAT EXPECTED-CODE RANKS "VAR=VALUE ..." PROGRAM [ARGS...]
job() {
    what=$1 want=$2 n=$3 vars=$4
    shift 4
    [ -x "$1" ] || { fail "$what at $n ranks: $1 was not built"; return; }
    id="oext$$$(printf '%s' "$what" | tr -cd 'a-z0-9' | cut -c1-24)$n"
    log=$tmp/job.log
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # vars is a list of assignments
    env $vars SLUICE_JOB_ID="$id" timeout -k 5 60 "$mpirun" --oversubscribe -n "$n" "$@" > "$log" 2>&1
    rc=$?
    took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    left=$(shm_of "$id")
    if [ "$rc" -ne "$want" ]; then
        fail "$what at $n ranks: exit code $rc, expected $want (${took}s); log:"
        show "$log" 20
    elif [ -n "$left" ]; then
        fail "$what at $n ranks left shared memory behind:" $left
        for f in $left; do rm -f "/dev/shm/$f"; done
    else
        pass "$what at $n ranks (${took}s)"
    fi
}

# Every failed Sluice call fatal: a poll from inside a handler (the hook
# must skip those) would end the job with code 1.
fatal=SLUICE_ERRORS_FATAL=1
for n in 2 4; do
    job "ext: MPI_Init starts Sluice, AM/Put/Get, handlers calling MPI, MPI_Finalize stops it" 0 "$n" "$fatal" \
        "$ext_test" basic
    job "ext: ranks in MPI_Barrier answer Sluice AMs (progress hook, every 8th opal_progress)" 0 "$n" "$fatal" \
        "$ext_test" progress
    job "ext: MPIX_ communicator and window on the Sluice job MPI_Init started" 0 "$n" "" "$ext_test" window
    job "ext: mpiext_sluice_start=never, the program starts Sluice; hook still on" 0 "$n" \
        "OMPI_MCA_mpiext_sluice_start=never $fatal" "$ext_test" manual
    job "ext: return from main with both running" 0 "$n" "" "$ext_test" return-from-main
    job "ext: sluice_exit(5) reaches ranks in MPI_Barrier" 5 "$n" "" "$ext_test" exit-in-mpi
done
# A rank in MPI_Finalize while the others exit without it crashed Open MPI
# 4.1's mpirun (139) in about 1 job in 40: a few more runs of that exit.
for run in 2 3 4 5 6 7 8 9 10; do
    job "ext: sluice_exit(5) reaches ranks in MPI_Barrier (run $run of 10)" 5 4 "" "$ext_test" exit-in-mpi
done
job "ext: progress hook on every opal_progress (mpiext_sluice_progress=2)" 0 4 \
    "OMPI_MCA_mpiext_sluice_progress=2 $fatal" "$ext_test" progress
job "ext: a handler the hook runs inside MPI_Barrier calls MPI_Iprobe (no recursion into Sluice)" 0 4 "$fatal" \
    "$ext_test" progress-handler-mpi
job "ext: without the hook (mpiext_sluice_progress=0) ranks in MPI_Barrier do not answer (code 3)" 3 2 \
    "OMPI_MCA_mpiext_sluice_progress=0" "$ext_test" no-progress
job "ext: a plain MPI program is left alone" 0 2 "" "$plain_test"
job "ext: mpiext_sluice_start=always gives a plain MPI program Sluice (libsluice-mpi by path)" 0 2 \
    "OMPI_MCA_mpiext_sluice_start=always OMPI_MCA_mpiext_sluice_library=$builddir/.libs/lib$sluice_mpi.so.0" \
    "$plain_test" always

# ---- 3. hybrid_test under this Open MPI ---------------------------------------
# The programs start Sluice themselves: the extension is told not to (its
# progress hook stays on).  mode:expected job code, as in hybrid.sh.
modes="mpi-first:0 mpi-finalize-first:0 thread-level:0 subset:0 data-path:0 mpix:0
       mpix-before-mpi:0 exit-one:3 mpi-abort-one:4 return-from-main:0"
for entry in $modes; do
    for n in 2 4; do
        job "hybrid $entry (mpiext_sluice_start=never)" "${entry#*:}" "$n" "OMPI_MCA_mpiext_sluice_start=never" \
            "$hybrid_test" "${entry%%:*}"
    done
done
# Sluice calls MPI_Init itself: the extension sees it and starts nothing.
for n in 2 4; do
    job "hybrid sluice-first:0 (extension default: auto)" 0 "$n" "" "$hybrid_test" sluice-first
done
# The hook on every opal_progress calls no MPI function on the data path.
job "hybrid data-path:0 (mpiext_sluice_progress=2)" 0 4 \
    "OMPI_MCA_mpiext_sluice_start=never OMPI_MCA_mpiext_sluice_progress=2" "$hybrid_test" data-path

finish
