#!/bin/sh
# tests/install/prefix.sh - run by install.sh inside a private mount
# namespace where the staged install is mounted at its configured prefix
# (SLUICETEST_PREFIX, e.g. /usr/local): the installed files are where they
# say they are, and no LD_LIBRARY_PATH helps.  Every recipe the README and
# the user guide give is built and run from there:
#   a. c++ -std=c++20 hello.cpp $(pkg-config --cflags --libs sluice)
#   b. cc consumer.c $(pkg-config --cflags --libs sluice)
#   c. a program linked without the run path: sluicerun must name the missing
#      library and the fix, once
#   d. tests/install/cxx: project(app CXX), find_package(Sluice),
#      Sluice::sluice and the C++ API, built, installed and run
#   e. tests/install/CMakeLists.txt (C) with Sluice::sluice, Sluice::sluice-shmem
#      and Sluice::sluice-mpi
#   f. mpicc consumer_mpi.c $(pkg-config --cflags --libs sluice-mpi)
#   g. oshcc shmem_hello.c && oshrun -n 4 ./a.out (docs/openshmem.md), and the
#      same program with cc $(pkg-config --cflags --libs sluice-shmem)
# One PASS:/FAIL: line per check; exit 1 if any failed.
set -u
srcdir=${SLUICETEST_SRCDIR:?}
prefix=${SLUICETEST_PREFIX:?}
tmp=${SLUICETEST_TMP:?}/prefix
have_mpi=${SLUICETEST_HAVE_MPI:-no}
here=$srcdir/tests/install
hello=$srcdir/contrib/examples/hello.cpp
unset LD_LIBRARY_PATH
plibdir=$(dirname "$(find "$prefix" -path '*/pkgconfig/sluice.pc' | head -1)")
plibdir=${plibdir%/pkgconfig}
export PKG_CONFIG_PATH="$plibdir/pkgconfig"
sluicerun=$prefix/bin/sluicerun
mkdir -p "$tmp" && cd "$tmp" || exit 1

failed=0
pass() { echo "PASS: prefix: $*"; }
fail() { echo "FAIL: prefix: $*"; failed=$((failed + 1)); }
job_tag=pfx job_libpath=
. "$here/common.sh"
# runpath LABEL PROGRAM: PROGRAM carries the prefix's libdir as its run path.
runpath() {
    if readelf -d "$2" 2> /dev/null | grep -E 'R(UN)?PATH' | grep -qF "$plibdir"; then return 0; fi
    fail "$1: $2 has no run path to $plibdir: $(readelf -d "$2" | grep -E 'R(UN)?PATH')"
    return 1
}

[ -x "$sluicerun" ] || { fail "no sluicerun in $prefix/bin"; exit 1; }

# a. The README's C++ recipe.
if command -v c++ > /dev/null 2>&1 && flags=$(pkg-config --cflags --libs sluice) &&
   build "hello.cpp (pkg-config)" ./hello c++ -std=c++20 -o hello "$hello" $flags &&
   runpath "hello.cpp (pkg-config)" ./hello; then
    run_job "hello.cpp (c++ -std=c++20, pkg-config) under sluicerun -n 2, no LD_LIBRARY_PATH" "all checks passed" "$sluicerun" -n 2 ./hello
    run_job "hello.cpp (c++ -std=c++20, pkg-config) as a 1-rank job, no LD_LIBRARY_PATH" "all checks passed" ./hello
fi
# b. C with pkg-config.
if flags=$(pkg-config --cflags --libs sluice) &&
   build "consumer.c (pkg-config)" ./consumer cc -std=c99 -Wall -Wextra -Werror -o consumer "$here/consumer.c" $flags; then
    run_job "consumer.c (cc, pkg-config) under sluicerun -n 2" "OK on 2 ranks" "$sluicerun" -n 2 ./consumer
fi
# c. Linked without the run path (-L only, as before the .pc files had it).
if build "consumer.c without a run path" ./norpath cc -std=c99 -o norpath "$here/consumer.c" \
       -I"$prefix/include" -L"$plibdir" -lsluice; then
    SLUICE_JOB_ID=pfx$$norpath timeout -k 5 60 "$sluicerun" -n 3 ./norpath > "$tmp/job.log" 2>&1
    rc=$?
    said=$(grep -c 'could not start' "$tmp/job.log")
    line=$(grep 'could not start' "$tmp/job.log" | head -1)
    case "$rc:$said:$line" in
    0:*) fail "a rank that cannot load libsluice.so.0: the job succeeded"; show "$tmp/job.log" ;;
    *:1:*libsluice.so.0*"LD_LIBRARY_PATH=$plibdir"*)
        pass "a rank that cannot load libsluice.so.0 (code $rc): $(echo "$line" | sed 's/.*could not start/could not start/' | cut -c1-150)..." ;;
    *) fail "a rank that cannot load libsluice.so.0: exit code $rc, $said explanation(s), wanted one naming libsluice.so.0 and LD_LIBRARY_PATH=$plibdir:"; show "$tmp/job.log" ;;
    esac
fi
# d. The user guide's CMake recipe, C++ only.
cx=$tmp/cmake-cxx
if cmake -S "$here/cxx" -B "$cx" -DSLUICE_HELLO="$hello" -DCMAKE_INSTALL_PREFIX="$tmp/app" > "$tmp/cmake-cxx.log" 2>&1 &&
   cmake --build "$cx" >> "$tmp/cmake-cxx.log" 2>&1 && cmake --install "$cx" >> "$tmp/cmake-cxx.log" 2>&1 &&
   runpath "CMake C++ project, installed" "$tmp/app/bin/hello"; then
    pass "project(app CXX) + find_package(Sluice) + Sluice::sluice: the C++ API builds (C++20 from the target) and installs"
    run_job "CMake C++ hello, installed, under sluicerun -n 2" "all checks passed" "$sluicerun" -n 2 "$tmp/app/bin/hello"
    if [ "$have_mpi" = yes ]; then
        if grep -q 'sluice-mpi-target found' "$tmp/cmake-cxx.log"; then
            pass "the C++-only project also gets Sluice::sluice-mpi (MPI found with its CXX component)"
        else
            fail "the C++-only project has no Sluice::sluice-mpi:"; show "$tmp/cmake-cxx.log"
        fi
    fi
else
    fail "cmake configure/build/install of tests/install/cxx:"; show "$tmp/cmake-cxx.log"
fi
# e. The C project with its MPI consumer.
cc2=$tmp/cmake-c
if cmake -S "$here" -B "$cc2" > "$tmp/cmake-c.log" 2>&1 && cmake --build "$cc2" >> "$tmp/cmake-c.log" 2>&1; then
    run_job "CMake C consumer (Sluice::sluice) under sluicerun -n 2" "OK on 2 ranks" "$sluicerun" -n 2 "$cc2/consumer"
    run_job "CMake C shmem_hello (Sluice::sluice-shmem) under oshrun -n 2" "shmem hello: 2 PEs OK" \
        "$prefix/bin/oshrun" -n 2 "$cc2/shmem_hello"
    if [ "$have_mpi" = yes ]; then
        mr=${SLUICETEST_MPIRUN:-$(first_of mpirun.openmpi mpirun)}
        run_job "CMake C consumer_mpi (Sluice::sluice-mpi) under ${mr##*/} -n 2" \
            "OK on 2 ranks.*with $(mpi_name "$mr")" "$mr" $(oversubscribe "$mr") -n 2 "$cc2/consumer_mpi"
    fi
else
    fail "cmake configure/build of tests/install/CMakeLists.txt:"; show "$tmp/cmake-c.log"
fi
# f. MPI with pkg-config.
if [ "$have_mpi" = yes ]; then
    mpicc=$(first_of mpicc.openmpi mpicc)
    mr=${SLUICETEST_MPIRUN:-$(first_of mpirun.openmpi mpirun)}
    if flags=$(pkg-config --cflags --libs sluice-mpi) &&
       build "consumer_mpi.c (pkg-config sluice-mpi)" ./consumer_mpi "$mpicc" -std=c99 -o consumer_mpi "$here/consumer_mpi.c" $flags &&
       runpath "consumer_mpi.c (pkg-config sluice-mpi)" ./consumer_mpi; then
        run_job "consumer_mpi.c (mpicc, pkg-config sluice-mpi) under ${mr##*/} -n 2" \
            "OK on 2 ranks.*with $(mpi_name "$mr")" "$mr" $(oversubscribe "$mr") -n 2 ./consumer_mpi
    fi
fi
# g. OpenSHMEM: the installed wrappers, then pkg-config.
if [ -x "$prefix/bin/oshcc" ] && [ -x "$prefix/bin/oshrun" ]; then
    if build "oshcc shmem_hello.c" ./a.out "$prefix/bin/oshcc" "$here/shmem_hello.c" &&
       runpath "oshcc shmem_hello.c" ./a.out; then
        run_job "oshcc shmem_hello.c && oshrun -n 4 ./a.out" "shmem hello: 4 PEs OK" "$prefix/bin/oshrun" -n 4 ./a.out
    fi
    if flags=$(pkg-config --cflags --libs sluice-shmem) &&
       build "shmem_hello.c (pkg-config sluice-shmem)" ./shmem_hello cc -o shmem_hello "$here/shmem_hello.c" $flags &&
       runpath "shmem_hello.c (pkg-config sluice-shmem)" ./shmem_hello; then
        run_job "shmem_hello.c (cc, pkg-config sluice-shmem) under oshrun -n 2" "shmem hello: 2 PEs OK" \
            "$prefix/bin/oshrun" -n 2 ./shmem_hello
    fi
else
    fail "oshcc or oshrun is not in $prefix/bin"
fi
[ $failed -eq 0 ]
