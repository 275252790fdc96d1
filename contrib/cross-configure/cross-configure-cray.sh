# cross-configure-cray.sh - what the Cray scripts (cross-configure-cray-ex,
# -xc) take alike from the environment the PE's modules set; each sources
# it after cross-configure-common.sh, adds its network, then calls
# cray_common.  CACHE_LINE and PAGE_SIZE, when set, override what
# CRAY_CPU_TARGET implies.

cray_common() {
    [ -n "${PE_ENV:-}" ] ||
        cross_fail "PE_ENV is not set: module load PrgEnv-gnu (or another PrgEnv) first"
    command -v "$CXX" > /dev/null ||
        cross_fail "no compiler wrapper $CXX: module load craype (PE_ENV=$PE_ENV), or set CXX"
    # The compute nodes' CPU: the triplet, and what configure would measure
    # there (check with `srun getconf LEVEL1_DCACHE_LINESIZE PAGESIZE`).
    case ${CRAY_CPU_TARGET:-} in
    x86-*|haswell|broadwell|sandybridge|ivybridge|mic-knl)
        cray_host=x86_64-cray-linux-gnu line=64 page=4096 ;;
    arm-grace|neoverse-*)
        cray_host=aarch64-cray-linux-gnu line=64 page=4096 ;;
    a64fx)
        cray_host=aarch64-cray-linux-gnu line=256 page=65536 ;;
    '') cross_fail "CRAY_CPU_TARGET is not set: module load craype-x86-milan (or the compute nodes' CPU module)" ;;
    *) cross_fail "CRAY_CPU_TARGET=$CRAY_CPU_TARGET is not one this script knows: set CACHE_LINE, PAGE_SIZE and CRAY_CPU_TARGET=x86-generic (or arm-grace) by hand" ;;
    esac
    cross_host "$cray_host"
    cross_arg CC="$CC" CXX="$CXX"
    # The modules' pkg-config folders (cray-libfabric's among them).
    [ -n "${PKG_CONFIG_PATH:-}" ] && cross_arg PKG_CONFIG_PATH="$PKG_CONFIG_PATH"
    if [ -n "${CRAY_MPICH_DIR:-}" ]; then
        [ -f "$CRAY_MPICH_DIR/include/mpi.h" ] ||
            cross_fail "CRAY_MPICH_DIR=$CRAY_MPICH_DIR has no include/mpi.h: reload cray-mpich"
        cross_arg --with-mpi="$CRAY_MPICH_DIR" MPIRUN=srun
    else
        cross_note "no cray-mpich loaded (CRAY_MPICH_DIR): libsluice-mpi is not built"
        cross_arg --disable-mpi-interop
    fi
    if [ -n "${CRAY_PMI_PREFIX:-}" ]; then
        cross_arg --with-pmi2="$CRAY_PMI_PREFIX"
    else
        cross_note "no cray-pmi loaded (CRAY_PMI_PREFIX): ranks started by srun bootstrap only through PMIx (PMIX_DIR)"
    fi
    [ -n "${PMIX_DIR:-}" ] && cross_arg --with-pmix="$PMIX_DIR"
    cross_arg --with-default-spawner="$SPAWNER"
    cross_preset sluice_cv_cache_line_size "${CACHE_LINE:-$line}" "CRAY_CPU_TARGET=$CRAY_CPU_TARGET${CACHE_LINE:+, CACHE_LINE}"
    cross_preset sluice_cv_page_size "${PAGE_SIZE:-$page}" "CRAY_CPU_TARGET=$CRAY_CPU_TARGET${PAGE_SIZE:+, PAGE_SIZE}"
    cross_note "PE_ENV=$PE_ENV, network CRAYPE_NETWORK_TARGET=$CRAYPE_NETWORK_TARGET, compute CPU CRAY_CPU_TARGET=$CRAY_CPU_TARGET"
}
