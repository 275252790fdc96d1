#!/bin/sh
# tests/cross/aarch64.sh - the cross build, tested under emulation (.ci/run's
# aarch64 phase; tests/cross/README.md):
#   1. GoogleTest for aarch64, built once from Debian's /usr/src/googletest
#      into ~/.cache/sluice/gtest-aarch64-VERSION;
#   2. contrib/cross-configure/cross-configure-aarch64-linux from a clean
#      build folder, with the A64FX's 256-byte cache line preset (the smp
#      rings at a line other than 64 bytes), then the library, the unit
#      tests, hello and sluice-mp-test;
#   3. the unit tests under qemu-aarch64 (user mode, no binfmt handler);
#   4. 2-rank smp jobs whose ranks are that aarch64 build under qemu,
#      started by this machine's native sluicerun;
#   5. cross-configure-cray-ex in a fake Cray PE (cc and CC calling the
#      cross compilers, CRAY_CPU_TARGET=a64fx): configure runs and reports
#      the presets.  The fake PE has no aarch64 libfabric or MPI, so the
#      network and MPI picks are checked by tests/cross/cross-configure.sh's
#      dry runs and overridden here.
# Usage: tests/cross/aarch64.sh CROSS-BUILDDIR NATIVE-BUILDDIR
# NATIVE-BUILDDIR is a built native tree (its sluicerun starts the jobs).
# Exits 77 without g++-aarch64-linux-gnu or qemu-user; fails without the
# target's Nettle (nettle-dev:arm64, Debian multiarch: .ci/run installs it),
# which the udp conduit needs.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:?usage: aarch64.sh CROSS-BUILDDIR NATIVE-BUILDDIR}
native=${2:?usage: aarch64.sh CROSS-BUILDDIR NATIVE-BUILDDIR}
host=aarch64-linux-gnu
sysroot=/usr/$host
for tool in $host-g++ qemu-aarch64 cmake; do
    command -v "$tool" > /dev/null || { echo "SKIP: no $tool (apt-get install g++-$host qemu-user cmake)"; exit 77; }
done
[ -x "$native/sluicerun" ] || { echo "FAIL: no native sluicerun in $native"; exit 1; }
failed=0 passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
step() { printf '\n=== %s (%ss)\n' "$*" "$(($(date +%s) - started))"; }
started=$(date +%s)

# 1. GoogleTest for the target.
version=$(dpkg-query -W -f='${Version}' libgtest-dev 2> /dev/null || echo unknown)
gtest=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/gtest-aarch64-$version
step "GoogleTest $version for aarch64 in $gtest"
if [ ! -f "$gtest/lib/libgtest.a" ]; then
    work=$(mktemp -d)
    if cmake -S /usr/src/googletest -B "$work" -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
        -DCMAKE_CXX_COMPILER=$host-g++ -DCMAKE_C_COMPILER=$host-gcc -DBUILD_GMOCK=OFF \
        -DCMAKE_INSTALL_PREFIX="$gtest.tmp" > "$work.log" 2>&1 &&
        make -C "$work" -j2 install >> "$work.log" 2>&1; then
        rm -rf "$gtest" && mv "$gtest.tmp" "$gtest"
    else
        tail -20 "$work.log"; rm -rf "$work" "$work.log" "$gtest.tmp"
        echo "FAIL: GoogleTest does not cross-build"; exit 1
    fi
    rm -rf "$work" "$work.log"
fi

# 2. Configure and build.
step "cross-configure-aarch64-linux in $b"
rm -rf "$b" && mkdir -p "$b"
# Line tables only and no static library: a third less compiling (.ci/run).
if ! (cd "$b" && CACHE_LINE=256 "$top/contrib/cross-configure/cross-configure-aarch64-linux" \
        CPPFLAGS="-isystem $gtest/include" LDFLAGS="-L$gtest/lib" CXXFLAGS="-O2 -g1" --disable-static) \
        > "$b/configure.out" 2>&1; then
    tail -30 "$b/configure.out"; echo "FAIL: configure"; exit 1
fi
sed -n '/^  Sluice /,$p' "$b/configure.out"
if grep -q 'target: *aarch64-[a-z]*-linux-gnu, cross-compiled from' "$b/configure.out" &&
    grep -q 'preset: *cache-line page-size' "$b/configure.out" && grep -q 'guessed: *none' "$b/configure.out" &&
    grep -q 'googletest: *yes' "$b/configure.out" &&
    grep -q '^#define SLUICE_CACHE_LINE_SIZE 256$' "$b/config/sluice_config.h"; then
    ok "configure: a cross build for $host, the presets listed as such, GoogleTest for the target"
else
    fail "configure's summary or sluice_config.h"
fi
step "make"
programs="libsluice.la sluice-info contrib/examples/hello tests/mp/sluice-mp-test
    tests/unit/sluice-unit-base tests/unit/sluice-unit-api tests/unit/sluice-unit-registry
    src/conduits/udp/tests/sluice-unit-udp"
# shellcheck disable=SC2086 # a list of targets
if ! make -C "$b" -j2 $programs > "$b/make.out" 2>&1; then
    grep -E 'error|Error' "$b/make.out" | head -20; echo "FAIL: the aarch64 build"; exit 1
fi
# The real program behind a libtool wrapper.
real() { if [ -x "$(dirname "$1")/.libs/$(basename "$1")" ]; then echo "$(dirname "$1")/.libs/$(basename "$1")"; else echo "$1"; fi; }
if file -L "$(real "$b/contrib/examples/hello")" "$b/.libs/libsluice.so" | grep -c 'ARM aarch64' | grep -qx 2; then
    ok "the library and the programs are aarch64 code"
else
    fail "not aarch64 code: $(file -L "$(real "$b/contrib/examples/hello")")"
fi

# 3. Unit tests under emulation.  Death tests fork without re-executing
# (an exec of the test would run it natively).  The libraries: the build's,
# then the cross sysroot's (its libc), then Debian's arm64 ones (Nettle):
# the arm64 libc multiarch put beside Nettle must not be mixed with the
# sysroot's loader (a thread's creation then hangs).  Each run is bounded.
libpath="$b/.libs:$sysroot/lib:/usr/lib/$host"
emulate() { timeout 600 qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$libpath" -E GTEST_DEATH_TEST_STYLE=fast "$@"; }
for t in tests/unit/sluice-unit-base tests/unit/sluice-unit-api tests/unit/sluice-unit-registry \
    src/conduits/udp/tests/sluice-unit-udp; do
    name=$(basename "$t")
    step "$name under qemu-aarch64"
    if emulate "$(real "$b/$t")" --gtest_brief=1 > "$b/$name.out" 2>&1; then
        ok "$name: $(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$b/$name.out")"
    else
        tail -30 "$b/$name.out"; fail "$name under qemu-aarch64"
    fi
done

# 4. Jobs: aarch64 ranks under qemu, started by the native launcher.
job() {
    name=$1
    shift
    step "sluicerun -n 2 -- qemu-aarch64 $name"
    timeout 300 "$native/sluicerun" -n 2 -- qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$libpath" "$@" \
        > "$b/job.out" 2>&1
    rc=$?
    cat "$b/job.out"
}
job hello "$(real "$b/contrib/examples/hello")"
if [ "$rc" = 0 ] && grep -q 'hello: 2 ranks on 1 host, all checks passed' "$b/job.out"; then
    ok "hello: 2 aarch64 ranks under a native sluicerun"
else
    fail "hello under qemu (exit $rc)"
fi
for c in am rma barrier; do
    job "sluice-mp-test $c" "$(real "$b/tests/mp/sluice-mp-test")" $c
    if [ "$rc" = 0 ]; then ok "sluice-mp-test $c: 2 aarch64 ranks, smp"; else fail "sluice-mp-test $c under qemu (exit $rc)"; fi
done

# 5. The EX script in a fake Cray PE on an A64FX.
step "cross-configure-cray-ex in a fake Cray PE"
pe=$(mktemp -d)
mkdir -p "$pe/bin" "$pe/build"
printf '#!/bin/sh\nexec %s-gcc "$@"\n' $host > "$pe/bin/cc"
printf '#!/bin/sh\nexec %s-g++ "$@"\n' $host > "$pe/bin/CC"
chmod +x "$pe/bin/cc" "$pe/bin/CC"
if (cd "$pe/build" && env -u CC -u CXX PATH="$pe/bin:$PATH" PE_ENV=GNU CRAYPE_NETWORK_TARGET=ofi CRAY_CPU_TARGET=a64fx \
        PKG_CONFIG_LIBDIR=/usr/lib/$host/pkgconfig "$top/contrib/cross-configure/cross-configure-cray-ex" \
        --disable-ofi --with-ofi-provider= --with-default-network=) > "$pe/configure.out" 2>&1 &&
    grep -q 'target: *aarch64-cray-linux-gnu, cross-compiled from' "$pe/configure.out" &&
    grep -q 'cache line: *256 B, page 65536 B' "$pe/configure.out" &&
    grep -q 'preset: *cache-line page-size' "$pe/configure.out" &&
    grep -q 'spawner: *pmi' "$pe/configure.out" && grep -q '^CXX = CC ' "$pe/build/Makefile"; then
    ok "cross-configure-cray-ex: configure with the PE's CC for aarch64-cray-linux-gnu, A64FX presets, spawner pmi"
else
    tail -25 "$pe/configure.out"; fail "cross-configure-cray-ex in the fake PE"
fi
rm -rf "$pe"

step "done"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
