#!/bin/sh
# The cross-configure scripts (contrib/cross-configure) in a fake Cray PE:
# wrappers named cc and CC that call the aarch64 cross compilers, and the
# variables the PE's modules set (PE_ENV, CRAYPE_NETWORK_TARGET,
# CRAY_CPU_TARGET, CRAY_MPICH_DIR, CRAY_PMI_PREFIX, PKG_CONFIG_PATH).  Each
# script's --dry-run must turn what the environment says into the configure
# arguments and presets docs/cray.md lists, and refuse a missing or wrong
# module by name.  Then configure itself: presets are used and reported,
# bad presets and knob defaults are refused.  Needs no cross compiler (the
# dry runs compile nothing; configure runs natively); the cross build and
# its emulated run are tests/cross/aarch64.sh.
set -u
if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
    echo "SKIP: runs in the plain build only (subset $SLUICETEST_SUBSET): shell scripts and configure, nothing instrumented"
    exit 77
fi
srcdir=${SLUICETEST_SRCDIR:?}
scripts=$srcdir/contrib/cross-configure
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
failed=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=1; }

# The fake PE: compiler wrappers and module folders.
mkdir -p "$tmp/pe/bin" "$tmp/cray-mpich/include" "$tmp/cray-mpich/lib" "$tmp/cray-pmi/include" \
    "$tmp/libfabric/lib64/pkgconfig"
printf '#!/bin/sh\nexec aarch64-linux-gnu-gcc "$@"\n' > "$tmp/pe/bin/cc"
printf '#!/bin/sh\nexec aarch64-linux-gnu-g++ "$@"\n' > "$tmp/pe/bin/CC"
chmod +x "$tmp/pe/bin/cc" "$tmp/pe/bin/CC"
: > "$tmp/cray-mpich/include/mpi.h"
pe() {
    env -u CC -u CXX -u CACHE_LINE -u PAGE_SIZE PATH="$tmp/pe/bin:$PATH" PE_ENV=GNU \
        CRAYPE_NETWORK_TARGET=ofi CRAY_CPU_TARGET=arm-grace \
        CRAY_MPICH_DIR="$tmp/cray-mpich" CRAY_PMI_PREFIX="$tmp/cray-pmi" \
        PKG_CONFIG_PATH="$tmp/libfabric/lib64/pkgconfig" "$@"
}

# picks NAME EXPECTED-ARGS... -- COMMAND...: the dry run lists each argument.
picks() {
    name=$1
    shift
    want=
    while [ "$1" != -- ]; do want="$want
$1"; shift; done
    shift
    if ! out=$("$@" --dry-run 2>&1); then
        fail "$name: the dry run failed"; printf '%s\n' "$out" | sed 's/^/    /'; return
    fi
    missing=$(printf '%s\n' "$want" | sed '/^$/d' | while IFS= read -r a; do
        printf '%s\n' "$out" | grep -qxF "  $a" || echo "$a"; done)
    if [ -z "$missing" ]; then ok "$name"; else
        fail "$name: not passed to configure: $(echo $missing)"; printf '%s\n' "$out" | sed 's/^/    /'; fi
}
# refused NAME PATTERN COMMAND...: exits 1 with a message matching PATTERN.
refused() {
    name=$1 pattern=$2
    shift 2
    out=$("$@" --dry-run 2>&1); rc=$?
    if [ "$rc" = 1 ] && printf '%s\n' "$out" | grep -qE -- "$pattern"; then ok "$name"; else
        fail "$name: exit $rc, wanted 1 and /$pattern/"; printf '%s\n' "$out" | sed 's/^/    /'; fi
}

ex=$scripts/cross-configure-cray-ex
xc=$scripts/cross-configure-cray-xc
picks "EX, Slingshot (ofi) on Grace: the ofi conduit with cxi, Cray MPICH, cray-pmi, srun" \
    --host=aarch64-cray-linux-gnu CC=cc CXX=CC --enable-ofi --with-default-network=ofi --with-ofi-provider=cxi \
    "--with-mpi=$tmp/cray-mpich" MPIRUN=srun "--with-pmi2=$tmp/cray-pmi" \
    "PKG_CONFIG_PATH=$tmp/libfabric/lib64/pkgconfig" --with-default-spawner=pmi \
    sluice_cv_cache_line_size=64 sluice_cv_page_size=4096 -- pe "$ex"
picks "EX on Milan: x86_64-cray-linux-gnu, 64-byte lines, 4 KiB pages" \
    --host=x86_64-cray-linux-gnu sluice_cv_cache_line_size=64 sluice_cv_page_size=4096 -- \
    pe env CRAY_CPU_TARGET=x86-milan "$ex"
picks "EX on A64FX: 256-byte lines, 64 KiB pages" \
    --host=aarch64-cray-linux-gnu sluice_cv_cache_line_size=256 sluice_cv_page_size=65536 -- \
    pe env CRAY_CPU_TARGET=a64fx "$ex"
picks "EX with InfiniBand blades (ucx): the ibv conduit" --enable-ibv --with-default-network=ibv -- \
    pe env CRAYPE_NETWORK_TARGET=ucx "$ex"
picks "CACHE_LINE and PAGE_SIZE override the CPU's values" \
    sluice_cv_cache_line_size=128 sluice_cv_page_size=16384 -- pe env CACHE_LINE=128 PAGE_SIZE=16384 "$ex"
picks "PMIX_DIR adds Slurm's PMIx; SPAWNER changes sluicerun's default" \
    --with-pmix=/opt/slurm/pmix --with-default-spawner=ssh -- pe env PMIX_DIR=/opt/slurm/pmix SPAWNER=ssh "$ex"
picks "configure arguments after the script's come last" --enable-debug -- pe "$ex" --enable-debug
picks "without cray-mpich: no libsluice-mpi" --disable-mpi-interop -- pe env -u CRAY_MPICH_DIR "$ex"
picks "XC, Aries, no cray-gni-headers: the ofi conduit with libfabric's gni provider" \
    --host=x86_64-cray-linux-gnu --enable-ofi --with-default-network=ofi --with-ofi-provider=gni \
    "--with-mpi=$tmp/cray-mpich" --with-default-spawner=pmi -- \
    pe env CRAYPE_NETWORK_TARGET=aries CRAY_CPU_TARGET=haswell "$xc"
mkdir -p "$tmp/gni-headers/include"
: > "$tmp/gni-headers/include/gni_pub.h"
picks "XC, Aries, cray-gni-headers: the gni conduit as the network, ofi beside it" \
    --enable-gni "--with-gni=$tmp/gni-headers/include" --with-default-network=gni --enable-ofi --with-ofi-provider=gni -- \
    pe env CRAYPE_NETWORK_TARGET=aries CRAY_CPU_TARGET=haswell \
    CRAY_GNI_HEADERS_INCLUDE_OPTS="-I$tmp/gni-headers/include" "$xc"
picks "XC: GNI_HEADERS_DIR names gni_pub.h's folder" "--with-gni=$tmp/gni-headers/include" -- \
    pe env CRAYPE_NETWORK_TARGET=aries CRAY_CPU_TARGET=haswell GNI_HEADERS_DIR="$tmp/gni-headers/include" "$xc"
refused "XC: a gni headers folder without gni_pub.h" 'has no gni_pub.h: reload cray-gni-headers' \
    pe env CRAYPE_NETWORK_TARGET=aries CRAY_CPU_TARGET=haswell GNI_HEADERS_DIR="$tmp" "$xc"
picks "aarch64 Linux: the cross compilers, the target's pkg-config folders only" \
    --host=aarch64-linux-gnu CXX=aarch64-linux-gnu-g++ \
    PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig --disable-mpi-interop \
    sluice_cv_cache_line_size=64 sluice_cv_page_size=4096 -- "$scripts/cross-configure-aarch64-linux"

refused "no PrgEnv loaded" 'PE_ENV is not set: module load PrgEnv' pe env -u PE_ENV "$ex"
refused "no network module" 'CRAYPE_NETWORK_TARGET is not set: module load craype-network-ofi' \
    pe env -u CRAYPE_NETWORK_TARGET "$ex"
refused "the EX script on Aries names the XC script" 'is a Cray XC: use cross-configure-cray-xc' \
    pe env CRAYPE_NETWORK_TARGET=aries "$ex"
refused "the XC script on Slingshot names the EX script" 'is a Cray EX: use cross-configure-cray-ex' pe "$xc"
refused "an unknown network" 'CRAYPE_NETWORK_TARGET=gemini2: this script knows ofi and ucx' \
    pe env CRAYPE_NETWORK_TARGET=gemini2 "$ex"
refused "no CPU module" 'CRAY_CPU_TARGET is not set: module load craype-x86-milan' pe env -u CRAY_CPU_TARGET "$ex"
refused "an unknown CPU" 'CRAY_CPU_TARGET=power9 is not one this script knows: set CACHE_LINE, PAGE_SIZE' \
    pe env CRAY_CPU_TARGET=power9 "$ex"
refused "a cray-mpich folder without mpi.h" 'has no include/mpi.h: reload cray-mpich' \
    pe env CRAY_MPICH_DIR="$tmp" "$ex"
refused "no CC wrapper on the PATH" 'no compiler wrapper CC: module load craype' \
    env PATH=/usr/bin:/bin PE_ENV=GNU CRAYPE_NETWORK_TARGET=ofi CRAY_CPU_TARGET=x86-milan "$ex"
refused "no cross compiler" 'no cross compiler nosuch-g\+\+ \(Debian: apt-get install' \
    env CXX=nosuch-g++ "$scripts/cross-configure-aarch64-linux"

# An installed copy (share/sluice/cross-configure) finds the source tree
# through SLUICE_SRCDIR only.
mkdir -p "$tmp/share/sluice" "$tmp/elsewhere"
cp -R "$scripts" "$tmp/share/sluice/cross-configure"
installed=$tmp/share/sluice/cross-configure/cross-configure-cray-ex
elsewhere() { (cd "$tmp/elsewhere" && pe "$@"); }
refused "an installed copy without SLUICE_SRCDIR" 'set SLUICE_SRCDIR to the source tree' elsewhere "$installed"
refused "SLUICE_SRCDIR without a configure" 'SLUICE_SRCDIR=.* has no configure \(run ./autogen.sh' \
    pe env SLUICE_SRCDIR="$tmp" "$installed"
picks "an installed copy with SLUICE_SRCDIR" --with-ofi-provider=cxi -- \
    pe env SLUICE_SRCDIR="$srcdir" "$installed"
if "$ex" --help | grep -q 'CRAYPE_NETWORK_TARGET  ofi: the ofi conduit, provider cxi'; then
    ok "--help prints the script's header"
else
    fail "--help does not print the script's header"
fi

# configure ARGS...: runs configure natively in a fresh folder.  The first
# run's results (config.cache) seed every later run's, which then checks
# only what the cache lacks: the compiler's and libtool's checks are the
# same every time, and the arguments under test (presets, conduits, an MPI
# folder) are given on the command line, which overrides a cached value.
configure() {
    rm -rf "$tmp/cfg"; mkdir "$tmp/cfg"
    if [ -f "$tmp/seed.cache" ]; then cp "$tmp/seed.cache" "$tmp/cfg/config.cache"; fi
    (cd "$tmp/cfg" && "$srcdir/configure" --cache-file=config.cache --disable-mpi-interop "$@") > "$tmp/cfg.log" 2>&1
    status=$?
    if [ ! -f "$tmp/seed.cache" ] && [ "$status" = 0 ]; then cp "$tmp/cfg/config.cache" "$tmp/seed.cache"; fi
    return $status
}
# has FILE LINE...: FILE has each LINE (a basic regular expression).
has() {
    f=$1
    shift
    for l; do grep -qx -- "$l" "$f" || return 1; done
}
# verdict STATUS NAME: ok, or a failure with configure's last lines.
verdict() {
    if [ "$1" = 0 ]; then ok "$2"; else fail "$2"; tail -20 "$tmp/cfg.log" | sed 's/^/    /'; fi
}
configure sluice_cv_cache_line_size=128 sluice_cv_page_size=16384 --with-default-network=udp &&
    has "$tmp/cfg/config/sluice_config.h" '#define SLUICE_CACHE_LINE_SIZE 128' '#define SLUICE_PAGE_SIZE 16384' \
        '#define SLUICE_CONFIGURED_NETWORK "udp"' &&
    has "$tmp/cfg.log" '  preset: *cache-line page-size (cache variables given to configure)' '  guessed: *none'
verdict $? "configure: presets used and listed as presets; --with-default-network in sluice_config.h"
# Cray MPICH's folder has include/mpi.h and lib/libmpi, and no wrappers:
# --with-mpi takes such a folder.  Debian's MPICH laid out that way.
multiarch=$(gcc -print-multiarch 2> /dev/null)
if [ -f "/usr/include/$multiarch/mpich/mpi.h" ] && [ -f "/usr/lib/$multiarch/libmpich.so" ]; then
    mkdir -p "$tmp/mpich-folder/lib"
    ln -s "/usr/include/$multiarch/mpich" "$tmp/mpich-folder/include"
    ln -s "/usr/lib/$multiarch/libmpich.so" "$tmp/mpich-folder/lib/libmpi.so"
    configure --enable-mpi-interop --with-mpi="$tmp/mpich-folder" MPIRUN=mpirun.mpich &&
        has "$tmp/cfg.log" '  libsluice-mpi: yes' &&
        has "$tmp/cfg/Makefile" "MPI_LIBS = -L$tmp/mpich-folder/lib -Wl,-rpath,$tmp/mpich-folder/lib -lmpi" \
            'MPIRUN = mpirun.mpich'
    verdict $? "configure: --with-mpi=a folder without wrappers (Cray MPICH's layout) builds libsluice-mpi against it"
else
    echo "not run: an MPI folder without wrappers (no Debian MPICH here)"
fi
# cfg_refused NAME PATTERN ARGS...
cfg_refused() {
    name=$1 pattern=$2
    shift 2
    if ! configure "$@" && grep -qE -- "$pattern" "$tmp/cfg.log"; then ok "configure refuses $name"; else
        fail "configure accepted $name, or without /$pattern/"; tail -5 "$tmp/cfg.log" | sed 's/^/    /'; fi
}
cfg_refused "a cache line of 100 bytes" 'sluice_cv_cache_line_size=100: use a power of two from 32 to 512' \
    sluice_cv_cache_line_size=100
cfg_refused "a page of 1000 bytes" 'sluice_cv_page_size=1000: use 4096, 8192, 16384 or 65536' sluice_cv_page_size=1000
cfg_refused "a default network that is no conduit" '--with-default-network=nosuch: no conduit nosuch' \
    --with-default-network=nosuch
cfg_refused "a default network left out" '--with-default-network=udp: the udp conduit is not in libsluice' \
    --disable-udp --with-default-network=udp
cfg_refused "an MPI folder with neither wrapper nor mpi.h" "--with-mpi: no MPI C\\+\\+ wrapper \\(mpicxx\\) nor include/mpi.h at $tmp" \
    --with-mpi="$tmp"
if grep -q 'SLUICE_CONDUIT(\[ofi\]' "$srcdir/src/conduits/ofi/configure.m4"; then
    cfg_refused "an ofi provider without the ofi conduit" '--with-ofi-provider=cxi: the ofi conduit is not built' \
        --disable-ofi --with-ofi-provider=cxi
fi
exit $failed
