# mpi conduit: AMs and RMA over MPI (README.md).  Built into libsluice-mpi
# (and each libsluice-mpi-FLAVOR), never into libsluice, when configure
# builds libsluice-mpi: an MPI C++ wrapper was found and
# --disable-mpi-interop not given.  --enable-mpi=tests is not offered (the
# conduit needs the MPI library the program runs with).
AS_IF([test "x${enable_mpi+set}" != xset && { test -z "$MPICXX" || test "x$enable_mpi_interop" = xno; }],
  [enable_mpi=no])
SLUICE_CONDUIT([mpi], [yes])
AS_IF([test "x$enable_mpi" = xtests],
  [AC_MSG_ERROR([--enable-mpi=tests: the mpi conduit lives in libsluice-mpi; use --enable-mpi or --disable-mpi])])
AS_IF([test "x$enable_mpi" = xyes && { test -z "$MPICXX" || test "x$enable_mpi_interop" = xno; }],
  [AC_MSG_ERROR([the mpi conduit needs libsluice-mpi (an MPI C++ wrapper, not --disable-mpi-interop); or use --disable-mpi])])
