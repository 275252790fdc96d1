# libsluice-mpi (src/mpi-interop): the mpi bootstrap backend and the MPIX_ API,
# built for the MPI whose C++ wrapper was found above (MPICXX; --with-mpi=DIR).
# Its headers come in as system headers, so -Werror judges only our code.
AC_ARG_ENABLE([mpi-interop],
  [AS_HELP_STRING([--disable-mpi-interop], [do not build libsluice-mpi even when an MPI is found])],
  [], [enable_mpi_interop=auto])
MPI_CPPFLAGS=""
MPI_LIBS=""
have_mpi_interop=no
AS_IF([test "x$enable_mpi_interop" != xno && test -n "$MPICXX"], [
  AS_IF([$MPICXX --showme:compile >/dev/null 2>&1],
    [# Open MPI
     MPI_CPPFLAGS=`$MPICXX --showme:compile`
     MPI_LIBS=`$MPICXX --showme:link`],
    [# MPICH and its derivatives: the wrapper's whole command line
     for f in `$MPICXX -compile_info | cut -d' ' -f2-`; do
       case $f in -I*|-D*) MPI_CPPFLAGS="$MPI_CPPFLAGS $f" ;; esac
     done
     for f in `$MPICXX -link_info | cut -d' ' -f2-`; do
       case $f in -L*|-l*|-Wl,*) MPI_LIBS="$MPI_LIBS $f" ;; esac
     done])
  # The C API only: no C++ bindings (their inline code would import the
  # whole MPI into libsluice-mpi).
  MPI_CPPFLAGS="`echo "$MPI_CPPFLAGS" | sed 's/-I/-isystem /g'` -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"
  MPI_LIBS=`echo "$MPI_LIBS" | sed -e 's/-lmpi_cxx//g' -e 's/-lmpichcxx//g'`
  AC_LANG_PUSH([C++])
  save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $MPI_CPPFLAGS"
  AC_CHECK_HEADER([mpi.h], [have_mpi_interop=yes])
  CPPFLAGS=$save_CPPFLAGS
  AC_LANG_POP([C++])
])
AS_IF([test "x$enable_mpi_interop" = xyes && test "x$have_mpi_interop" != xyes],
  [AC_MSG_ERROR([--enable-mpi-interop: no usable MPI (install libopenmpi-dev or libmpich-dev, or pass --with-mpi=DIR)])])
AC_SUBST([MPI_CPPFLAGS])
AC_SUBST([MPI_LIBS])
AS_IF([test "x$have_mpi_interop" = xyes],
  [AC_DEFINE([SLUICE_MPI_INTEROP], [1], [libsluice-mpi (the mpi bootstrap) is built])])
AM_CONDITIONAL([SLUICE_MPI_INTEROP], [test "x$have_mpi_interop" = xyes])
