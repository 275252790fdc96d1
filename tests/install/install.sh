#!/bin/sh
# The installed package, used the way users use it: `make install` into a
# DESTDIR staging directory (the configured prefix is never touched), then
# consumer programs built from tests/install against the staged files only,
# with pkg-config and with CMake's find_package(Sluice), and run; then, with the
# staged tree mounted at the configured prefix, the same recipes without
# LD_LIBRARY_PATH (prefix.sh):
#   1. consumer.c      cc + pkg-config sluice; sluicerun -n 2 and a 1-rank job
#                      (and contrib/examples/hello.cpp, the README's C++ recipe)
#   2. consumer_mpi.c  mpicc.openmpi + pkg-config sluice-mpi; mpirun -n 2
#   3. consumer_mpi.c  mpicc.mpich + pkg-config sluice-mpi-mpich; mpirun.mpich
#                      -n 2 (if sluice-mpi-mpich.pc was installed)
#   4. tests/install/CMakeLists.txt: the three programs with Sluice::sluice,
#                      Sluice::sluice-mpi, Sluice::sluice-mpi-mpich, run the same way
#   5. consumer.c linked with pkg-config --static against libsluice.a
#   6. prefix.sh, at the real prefix with LD_LIBRARY_PATH unset: hello.cpp and
#      consumer.c with pkg-config, a program without a run path (sluicerun
#      must name the missing library once), tests/install/cxx (project(app
#      CXX), Sluice::sluice, C++20, installed), the C CMake project with
#      Sluice::sluice-mpi, consumer_mpi.c with mpicc and pkg-config sluice-mpi
# Every job runs under a hard time limit with its own SLUICE_JOB_ID; a job
# that leaves /dev/shm/sluice.<job>.* behind fails.  One PASS:/FAIL: line per
# check; exit 0 if all passed, 77 (skip) without cmake or pkg-config.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
here=$srcdir/tests/install

for tool in pkg-config cmake cc; do
    command -v "$tool" > /dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done
# Sanitizer builds (.ci/run's build-asan and build-tsan): a library that needs
# a sanitizer runtime cannot serve programs built without one (ASan aborts:
# "runtime does not come first"), so this test belongs to plain builds.
# libtool links the sanitizer runtime into no NEEDED entry: the
# instrumented library shows by its undefined __asan_/__tsan_/__ubsan_ symbols.
if nm -D --undefined-only "$builddir/.libs/libsluice.so" 2> /dev/null | grep -qE ' __(a|t|ub)san_'; then
    echo "SKIP: a sanitizer build: the installed libsluice would need a sanitizer runtime in every consumer"
    exit 77
fi

# Root in containers and CI: Open MPI refuses it unless told; its UCX
# one-sided component fails without UCX hardware (docs/mpi-hybrid.md).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=^ucx
# Run from `make check`, this script inherits make's MAKEFLAGS (a jobserver
# whose descriptors it does not have, command-line variables): keep them away
# from `make install` and the CMake build.
unset MAKEFLAGS MFLAGS MAKELEVEL

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-install.XXXXXX") || { echo "FAIL: mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
stage=$tmp/stage

failed=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# show, run_job, build, mpi_name, oversubscribe, first_of; checks 1-5 run
# their jobs with the staged libdir on LD_LIBRARY_PATH.
job_tag=inst job_libpath=
. "$here/common.sh"

# ---- make install DESTDIR=... -------------------------------------------
# `make install` relinks each library that links another of the build's
# (libsluice-mpi, libsluice-shmem: libtool moves it aside in .libs, links it
# anew for the installed location, then moves it back); a test of the same
# `make -j check` starting a program on it meanwhile would find it missing
# or half written ("file too short").  So the install runs from a copy of
# the build directory made of hard links, beside it (relative source paths
# still resolve; same file system), whose relinks replace the copy's
# directory entries only.  Its .la files name the copy instead.
# Where no such copy can be made (the parent directory not writable, or
# hard links refused), the install runs in place, and says so.
if ! { copy=$(mktemp -d "$(dirname "$builddir")/.sluice-install.XXXXXX" 2> /dev/null) && rmdir "$copy" &&
        cp -al "$builddir" "$copy" 2> "$tmp/copy.log"; }; then
    rm -rf "$copy"
    copy=
fi
trap 'rm -rf "$tmp" ${copy:+"$copy"}' EXIT
from=$builddir
if [ -n "$copy" ]; then
    from=$copy
    at=$(printf '%s\n' "$builddir" | sed 's/[][\\.*^$|]/\\&/g')
    find "$copy" -name '*.la' -type f ! -path '*/.libs/*' | while IFS= read -r la; do
        sed -i "s|$at\([/;\"]\)|$copy\\1|g" "$la"  # a new file: the build's stays as it is
    done
else
    echo "NOTE: no copy of $builddir made of hard links beside it: installing from it in place (a test running meanwhile may find a relinked library half written)"
fi
libs_of_build() { find "$builddir" -path '*/.libs/*.so*' -exec stat -c '%n %i %s %Y' {} + | sort; }
libs_of_build > "$tmp/libs.before"
if make -C "$from" install DESTDIR="$stage" > "$tmp/install.log" 2>&1; then
    pass "make install DESTDIR=<tmp> ($(find "$stage" -type f | wc -l) files, $(grep -c "warning: relinking '" "$tmp/install.log") libraries relinked)"
else
    fail "make install DESTDIR=<tmp>:"; show "$tmp/install.log"
    exit 1
fi
libs_of_build > "$tmp/libs.after"
if [ -z "$copy" ]; then
    :
elif cmp -s "$tmp/libs.before" "$tmp/libs.after"; then
    pass "the build's own libraries are as they were (the install relinked the copy's)"
else
    fail "the install changed the build's own libraries:"; diff "$tmp/libs.before" "$tmp/libs.after" | sed 's/^/    /' | head -12
fi
pcfile=$(find "$stage" -path '*/pkgconfig/sluice.pc' | head -1)
[ -n "$pcfile" ] || { fail "no sluice.pc under the staged install"; exit 1; }
pcdir=${pcfile%/*}

# pkg-config and DESTDIR.  The .pc files name the configured directories
# (/usr/local/...), where nothing is installed.  PKG_CONFIG_SYSROOT_DIR would
# prepend the staging directory to every -I, -isystem and -L path, including
# the MPI paths of sluice-mpi.pc (/usr/lib/x86_64-linux-gnu/openmpi/include
# would become <tmp>/usr/lib/...), so it is wrong here.  --define-prefix
# works only while libdir is <prefix>/lib.  What works for any layout:
# override the two variables the Cflags and Libs lines use, libdir and
# includedir, with their staged paths (the same for every .pc file Sluice
# installs, and for `Requires: sluice`).  --define-variable is understood by
# both pkgconf and freedesktop pkg-config.
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
libdir=$(pkg-config --variable=libdir sluice)
includedir=$(pkg-config --variable=includedir sluice)
slibdir=$stage$libdir
sincludedir=$stage$includedir
pc() { pkg-config --define-variable=libdir="$slibdir" --define-variable=includedir="$sincludedir" "$@"; }
# The staged prefix, for CMake's CMAKE_PREFIX_PATH.
sprefix=$stage$(pkg-config --variable=prefix sluice)
sluicerun=$(find "$stage" -type f -name sluicerun | head -1)
[ -e "$slibdir/libsluice.so" ] ||
    { fail "libsluice.so is not in the staged libdir $slibdir"; exit 1; }
[ -n "$sluicerun" ] || { fail "sluicerun was not installed"; exit 1; }
job_libpath=$slibdir

# The cross-configure scripts (docs/cray.md): installed, and an installed
# copy runs from anywhere once SLUICE_SRCDIR names the source tree.
scross=$stage$(pkg-config --variable=prefix sluice)/share/sluice/cross-configure
if [ -x "$scross/cross-configure-cray-ex" ] && [ -x "$scross/cross-configure-cray-xc" ] &&
    [ -x "$scross/cross-configure-aarch64-linux" ] && [ -f "$scross/cross-configure-common.sh" ] &&
    [ -f "$scross/cross-configure-cray.sh" ] &&
    (cd "$tmp" && SLUICE_SRCDIR=$srcdir "$scross/cross-configure-aarch64-linux" --dry-run) > "$tmp/cross.out" 2>&1 &&
    grep -qx '  --host=aarch64-linux-gnu' "$tmp/cross.out"; then
    pass "the cross-configure scripts are in share/sluice/cross-configure and run from there"
else
    fail "the cross-configure scripts in share/sluice/cross-configure:"; ls -l "$scross" 2>&1; show "$tmp/cross.out"
fi

# pcflags LABEL [--static] PKG: sets $flags to the flags of PKG, checked to
# point into the staged install and never at the unstaged directories.
pcflags() {
    pl=$1; shift
    if ! flags=$(pc --cflags --libs "$@" 2> "$tmp/pc.err"); then
        fail "$pl: pkg-config $*:"; show "$tmp/pc.err"; return 1
    fi
    for w in $flags; do
        case $w in
        "-I$includedir" | "-L$libdir")
            fail "$pl: pkg-config $* names the unstaged $w: $flags"; return 1 ;;
        esac
    done
    case " $flags " in
    *" -I$sincludedir "*" -L$slibdir "*) return 0 ;;
    esac
    fail "$pl: pkg-config $* lacks -I$sincludedir or -L$slibdir: $flags"
    return 1
}

# from_stage LABEL PROGRAM LIB: PROGRAM loads LIB from the staged libdir.
from_stage() {
    where=$(LD_LIBRARY_PATH="$slibdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$2" | awk -v l="$3" '$1 == l { print $3 }')
    case $where in
    "$slibdir"/*) return 0 ;;
    esac
    fail "$1: $2 loads $3 from '${where:-nowhere}', not from $slibdir"
    return 1
}


mkdir -p "$tmp/pc"
cd "$tmp" || exit 1

# ---- 1. consumer.c with cc and pkg-config sluice ------------------------------
# -std=c99 -Wall -Wextra -Werror: sluice.h must be plain, warning-free C.
if pcflags "pkg-config sluice" sluice &&
   build "consumer (pkg-config)" pc/consumer cc -std=c99 -Wall -Wextra -Werror -o pc/consumer "$here/consumer.c" $flags &&
   from_stage "consumer (pkg-config)" pc/consumer libsluice.so.0; then
    pass "consumer (pkg-config): cc $(echo "$flags" | sed "s|$tmp|<tmp>|g")"
    run_job "consumer (pkg-config) under sluicerun -n 2" "OK on 2 ranks" "$sluicerun" -n 2 pc/consumer
    run_job "consumer (pkg-config) as a 1-rank job" "OK on 1 ranks" pc/consumer
fi
# The README's C++ recipe: c++ -std=c++20 hello.cpp $(pkg-config --cflags --libs sluice)
hello=$srcdir/contrib/examples/hello.cpp
if [ -f "$hello" ] && command -v c++ > /dev/null 2>&1 && pcflags "pkg-config sluice (C++)" sluice &&
   build "hello.cpp (pkg-config)" pc/hello c++ -std=c++20 -o pc/hello "$hello" $flags; then
    run_job "contrib/examples/hello.cpp (c++ -std=c++20, pkg-config) under sluicerun -n 2" "all checks passed" "$sluicerun" -n 2 pc/hello
fi

# ---- 2, 3. consumer_mpi.c with each MPI's mpicc and its pkg-config file -------
# mpi_pc LABEL PCNAME MPICC MPIRUN
mpi_pc() {
    label=$1 pcname=$2 mpicc=$3 run=$4
    if [ -z "$mpicc" ] || [ -z "$run" ]; then
        fail "$label: $pcname.pc is installed but no matching mpicc/mpirun was found"; return
    fi
    name=$(mpi_name "$run")
    if pcflags "pkg-config $pcname" "$pcname" &&
       build "$label" "pc/$pcname" "$mpicc" -std=c99 -Wall -Wextra -Werror -o "pc/$pcname" "$here/consumer_mpi.c" $flags &&
       from_stage "$label" "pc/$pcname" "lib$pcname.so.0"; then
        pass "$label: ${mpicc##*/} $(echo "$flags" | sed "s|$tmp|<tmp>|g")"
        run_job "$label under ${run##*/} -n 2" "OK on 2 ranks.*with $name" "$run" $(oversubscribe "$run") -n 2 "pc/$pcname"
    fi
}
have_mpi=no have_mpich=no
if [ -f "$pcdir/sluice-mpi.pc" ]; then
    have_mpi=yes
    mpi_pc "consumer_mpi (pkg-config sluice-mpi)" sluice-mpi "$(first_of mpicc.openmpi mpicc)" \
        "${SLUICETEST_MPIRUN:-$(first_of mpirun.openmpi mpirun)}"
else
    echo "SKIP: consumer_mpi: no sluice-mpi.pc installed (Sluice built without MPI)"
fi
if [ -f "$pcdir/sluice-mpi-mpich.pc" ]; then
    have_mpich=yes
    run=
    for pair in ${SLUICETEST_MPI_EXTRA:-}; do
        [ "${pair%%=*}" = mpich ] && run=${pair#*=}
    done
    mpi_pc "consumer_mpi (pkg-config sluice-mpi-mpich)" sluice-mpi-mpich "$(first_of mpicc.mpich)" \
        "${run:-$(first_of mpirun.mpich)}"
fi

# ---- 4. the CMake package ----------------------------------------------------
# SluiceConfig.cmake names the configured libdir; when nothing is installed
# there (DESTDIR staging, a moved tree) it falls back to the directories next
# to itself.  CMakeLists.txt prints each target's library and include
# directory: all must be in the staged install.
cm=$tmp/cmake
if cmake -S "$here" -B "$cm" -DCMAKE_PREFIX_PATH="$sprefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$tmp/cmake.log" 2>&1 &&
   cmake --build "$cm" >> "$tmp/cmake.log" 2>&1; then
    targets=$(sed -n 's/^-- sluice-target //p' "$tmp/cmake.log")
    bad=$(printf '%s\n' "$targets" | awk -v l="$slibdir/" -v i="$sincludedir" \
          'index($2, l) != 1 || $3 != i { print }')
    want=2  # Sluice::sluice, Sluice::sluice-shmem
    [ $have_mpi = yes ] && want=$((want + 1))
    [ $have_mpich = yes ] && want=$((want + 1))
    got=$(printf '%s\n' "$targets" | grep -c .)
    if [ -n "$bad" ]; then
        fail "find_package(Sluice): targets outside the staged install:"; echo "$bad" | sed 's/^/    /'
    elif [ "$got" -ne $want ]; then
        fail "find_package(Sluice): $got of the $want expected targets:"; echo "$targets" | sed 's/^/    /'
    else
        pass "find_package(Sluice) with CMAKE_PREFIX_PATH=<tmp>: $(printf '%s\n' "$targets" | awk '{ printf "%s%s", sep, $1; sep = ", " }') in the staged install"
        run_job "consumer (CMake, Sluice::sluice) under sluicerun -n 2" "OK on 2 ranks" "$sluicerun" -n 2 "$cm/consumer"
        run_job "consumer (CMake, Sluice::sluice) as a 1-rank job" "OK on 1 ranks" "$cm/consumer"
        run_job "shmem_hello (CMake, Sluice::sluice-shmem) under sluicerun -n 2" "shmem hello: 2 PEs OK" \
            "$sluicerun" -n 2 "$cm/shmem_hello"
        if [ $have_mpi = yes ]; then
            run=${SLUICETEST_MPIRUN:-$(first_of mpirun.openmpi mpirun)}
            run_job "consumer_mpi (CMake, Sluice::sluice-mpi) under ${run##*/} -n 2" \
                "OK on 2 ranks.*with $(mpi_name "$run")" "$run" $(oversubscribe "$run") -n 2 "$cm/consumer_mpi"
        fi
        if [ $have_mpich = yes ]; then
            run=$(first_of mpirun.mpich)
            for pair in ${SLUICETEST_MPI_EXTRA:-}; do
                [ "${pair%%=*}" = mpich ] && run=${pair#*=}
            done
            run_job "consumer_mpich (CMake, Sluice::sluice-mpi-mpich) under ${run##*/} -n 2" \
                "OK on 2 ranks.*with MPICH" "$run" -n 2 "$cm/consumer_mpich"
        fi
    fi
else
    fail "cmake configure/build of tests/install/CMakeLists.txt:"; show "$tmp/cmake.log"
fi

# ---- 5. the static library ---------------------------------------------------
# `pkg-config --static` gives Libs.private too; -lsluice would still pick
# libsluice.so, so it becomes -l:libsluice.a (GNU ld) to link the archive.
if [ -f "$slibdir/libsluice.a" ]; then
    if pcflags "pkg-config --static sluice" --static sluice; then
        static=
        for w in $flags; do
            [ "$w" = -lsluice ] && w=-l:libsluice.a
            static="${static:+$static }$w"
        done
        if build "consumer (libsluice.a)" pc/consumer-static cc -std=c99 -Wall -Wextra -Werror -o pc/consumer-static "$here/consumer.c" $static; then
            if readelf -d pc/consumer-static | grep -q 'NEEDED.*libsluice'; then
                fail "consumer (libsluice.a) still needs a shared libsluice"
            else
                pass "consumer (libsluice.a): cc $(echo "$static" | sed "s|$tmp|<tmp>|g")"
                run_job "consumer (libsluice.a) under sluicerun -n 2" "OK on 2 ranks" "$sluicerun" -n 2 pc/consumer-static
                run_job "consumer (libsluice.a) as a 1-rank job" "OK on 1 ranks" pc/consumer-static
            fi
        fi
    fi
else
    fail "libsluice.a was not installed in $slibdir"
fi

# ---- 6. the staged tree at its real prefix ----------------------------------
# The checks above need LD_LIBRARY_PATH, which hides a program that cannot
# find libsluice on its own.  prefix.sh runs the README's and the user guide's
# recipes again with the staged tree mounted at the configured prefix (a
# private mount namespace: nothing outside this test sees it) and
# LD_LIBRARY_PATH unset.  (`make install prefix=DIR` is no way around this:
# libtool refuses to install libraries linked for another libdir.)
cfgprefix=$(pkg-config --variable=prefix sluice)
if [ "$(id -u)" != 0 ] || ! unshare --mount --propagation private true 2> /dev/null; then
    echo "SKIP: the real prefix: needs root and unshare (a private mount of $cfgprefix)"
elif [ ! -d "$cfgprefix" ]; then
    echo "SKIP: the real prefix: $cfgprefix does not exist to mount the staged tree on"
else
    SLUICETEST_HAVE_MPI=$have_mpi SLUICETEST_PREFIX=$cfgprefix SLUICETEST_TMP=$tmp \
        unshare --mount --propagation private sh -c 'mount --bind "$1" "$2" && exec sh "$3"' \
        sh "$sprefix" "$cfgprefix" "$here/prefix.sh" > "$tmp/prefix.out" 2>&1
    prc=$?
    cat "$tmp/prefix.out"
    if [ $prc -ne 0 ] && ! grep -q '^FAIL:' "$tmp/prefix.out"; then
        fail "the real prefix: prefix.sh exited with $prc"
    fi
    failed=$((failed + $(grep -c '^FAIL:' "$tmp/prefix.out")))
fi

[ $failed -eq 0 ]
