# libsluice-mpi (src/mpi-interop): the mpi bootstrap backend and the MPIX_ API.
# Built for the default MPI (MPICXX, the first of --with-mpi) as
# libsluice-mpi, and for each other MPI configure found (sluice_mpi_more) as
# libsluice-mpi-FLAVOR, FLAVOR being openmpi or mpich (MPICH and its
# derivatives share its wrapper options).  MPI headers come in as system
# headers, so -Werror judges only our code.
AC_ARG_ENABLE([mpi-interop],
  [AS_HELP_STRING([--disable-mpi-interop], [do not build libsluice-mpi even when an MPI is found])],
  [], [enable_mpi_interop=auto])

# The flavor of an MPI C++ wrapper or wrapperless folder: openmpi or mpich.
sluice_mpi_flavor() {
  if test -f "$1" && "$1" --showme:version >/dev/null 2>&1; then echo openmpi; else echo mpich; fi
}
# Preprocessor flags and libraries of a wrapper's MPI, C API only: no C++
# bindings, whose inline code would import the whole MPI into libsluice-mpi.
# Sets sluice_mpi_cppflags and sluice_mpi_libs.
sluice_mpi_flags() {
  sluice_mpi_cppflags=""
  sluice_mpi_libs=""
  if test -d "$1"; then
    # An installation without wrappers (Cray MPICH): its folders.
    sluice_mpi_cppflags="-I$1/include"
    sluice_mpi_libs="-L$1/lib -Wl,-rpath,$1/lib -lmpi"
  elif test "`sluice_mpi_flavor "$1"`" = openmpi; then
    sluice_mpi_cppflags=`"$1" --showme:compile`
    sluice_mpi_libs=`"$1" --showme:link`
  else
    for f in `"$1" -compile_info | cut -d' ' -f2-`; do
      case $f in -I*|-D*) sluice_mpi_cppflags="$sluice_mpi_cppflags $f" ;; esac
    done
    for f in `"$1" -link_info | cut -d' ' -f2-`; do
      case $f in -L*|-l*|-Wl,-rpath*) sluice_mpi_libs="$sluice_mpi_libs $f" ;; esac
    done
  fi
  sluice_mpi_cppflags="`echo "$sluice_mpi_cppflags" | sed 's/-I/-isystem /g'` -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1"
  sluice_mpi_libs=`echo "$sluice_mpi_libs" | sed -e 's/-lmpi_cxx//g' -e 's/-lmpichcxx//g'`
}
# Whether mpi.h compiles with those flags.
sluice_mpi_usable() {
  AC_LANG_PUSH([C++])
  save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $sluice_mpi_cppflags"
  sluice_usable=no
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Comm c = MPI_COMM_WORLD; (void)c;]])],
                    [sluice_usable=yes])
  CPPFLAGS=$save_CPPFLAGS
  AC_LANG_POP([C++])
  test $sluice_usable = yes
}

MPI_CPPFLAGS=""
MPI_LIBS=""
MPI_FLAVOR=""
have_mpi_interop=no
AS_IF([test "x$enable_mpi_interop" != xno && test -n "$MPICXX"], [
  AC_MSG_CHECKING([whether $MPICXX gives a usable MPI])
  sluice_mpi_flags "$MPICXX"
  AS_IF([sluice_mpi_usable], [
    have_mpi_interop=yes
    MPI_CPPFLAGS=$sluice_mpi_cppflags
    MPI_LIBS=$sluice_mpi_libs
    MPI_FLAVOR=`sluice_mpi_flavor "$MPICXX"`])
  AC_MSG_RESULT([$have_mpi_interop ($MPI_FLAVOR)])
])
AS_IF([test "x$enable_mpi_interop" = xyes && test "x$have_mpi_interop" != xyes],
  [AC_MSG_ERROR([--enable-mpi-interop: no usable MPI (install libopenmpi-dev or libmpich-dev, or pass --with-mpi=DIR)])])
AC_SUBST([MPI_CPPFLAGS])
AC_SUBST([MPI_LIBS])
AC_SUBST([MPI_FLAVOR])
AS_IF([test "x$have_mpi_interop" = xyes],
  [AC_DEFINE([SLUICE_MPI_INTEROP], [1], [libsluice-mpi (the mpi bootstrap) is built])])
AM_CONDITIONAL([SLUICE_MPI_INTEROP], [test "x$have_mpi_interop" = xyes])

# The other MPIs: one of each flavor besides the default one.  The tests run
# the hybrid jobs under each (SLUICE_MPI_EXTRA: flavor=mpirun pairs).
SLUICE_MPI_EXTRA=""
have_mpi_openmpi=no
have_mpi_mpich=no
AS_IF([test "x$have_mpi_interop" = xyes], [
  for w in $sluice_mpi_more; do
    flavor=`sluice_mpi_flavor "$w"`
    AS_IF([test "$flavor" = "$MPI_FLAVOR"], [AC_MSG_WARN([$w: a second $flavor MPI; only one of each flavor is built]); continue])
    eval "seen=\$have_mpi_$flavor"
    AS_IF([test "$seen" = yes], [continue])
    AC_MSG_CHECKING([whether $w gives a usable MPI for libsluice-mpi-$flavor])
    sluice_mpi_flags "$w"
    AS_IF([sluice_mpi_usable], [
      eval "have_mpi_$flavor=yes; MPI_${flavor}_CPPFLAGS=\$sluice_mpi_cppflags; MPI_${flavor}_LIBS=\$sluice_mpi_libs"
      SLUICE_MPI_EXTRA="$SLUICE_MPI_EXTRA $flavor=`sluice_mpi_runner "$w"`"
      AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no])])
  done
])
AC_SUBST([MPI_openmpi_CPPFLAGS])
AC_SUBST([MPI_openmpi_LIBS])
AC_SUBST([MPI_mpich_CPPFLAGS])
AC_SUBST([MPI_mpich_LIBS])
AC_SUBST([SLUICE_MPI_EXTRA])
AM_CONDITIONAL([SLUICE_MPI_EXTRA_openmpi], [test "x$have_mpi_openmpi" = xyes])
AM_CONDITIONAL([SLUICE_MPI_EXTRA_mpich], [test "x$have_mpi_mpich" = xyes])
