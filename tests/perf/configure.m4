# tests/perf/configure.m4 - included by configure.ac: what sluice-bench's
# references need beyond the library.
#
# libfabric for the bare reference of the ofi section
# (tests/perf/ofi-reference.cpp), found here on its own so the benchmark
# does not depend on the ofi conduit's check (src/conduits/ofi/configure.m4):
# SLUICE_BENCH_FABRIC_CFLAGS / _LIBS and the conditional SLUICE_BENCH_FABRIC
# (tests/perf/Makefile.inc).
PKG_CHECK_MODULES([SLUICE_BENCH_FABRIC], [libfabric], [have_bench_fabric=yes],
                  [have_bench_fabric=no])
AM_CONDITIONAL([SLUICE_BENCH_FABRIC], [test "x$have_bench_fabric" = xyes])

# libibverbs for the bare verbs reference (tests/perf/verbs-reference.cpp),
# run on the software verbs NIC (tests/softnic/verbs): SLUICE_BENCH_VERBS_*
# and the conditional SLUICE_BENCH_VERBS.
PKG_CHECK_MODULES([SLUICE_BENCH_VERBS], [libibverbs], [have_bench_verbs=yes],
                  [have_bench_verbs=no])
AM_CONDITIONAL([SLUICE_BENCH_VERBS], [test "x$have_bench_verbs" = xyes])
