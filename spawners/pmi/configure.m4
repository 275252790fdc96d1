# pmi spawner (spawners/pmi/README.md): PMIx and PMI2 client bootstraps in
# libsluice.  sluicerun -spawner=pmi (launch_pmi.cpp) needs neither library.
#
#   --with-pmix[=DIR]  PMIx (srun --mpi=pmix, Open MPI's mpirun): pkg-config
#                      pmix, else DIR (or Debian's pmix2 folder) with
#                      include/pmix.h and lib/libpmix
#   --with-pmi2[=DIR]  Slurm's PMI2 client (srun --mpi=pmi2): slurm/pmi2.h
#                      and libpmi2, in the system folders or under DIR
# Default: each is built when found; naming one that is not found is an
# error.  The headers come in as system headers, so -Werror judges only our
# code.
AC_ARG_WITH([pmix],
  [AS_HELP_STRING([--with-pmix[=DIR]],
    [PMIx client bootstrap for srun --mpi=pmix and Open MPI's mpirun; DIR holds include/pmix.h and lib/libpmix
     (default: pkg-config pmix, else the multiarch pmix2 folder, when found)])],
  [], [with_pmix=check])
AC_ARG_WITH([pmi2],
  [AS_HELP_STRING([--with-pmi2[=DIR]],
    [Slurm PMI2 client bootstrap for srun --mpi=pmi2; DIR holds include/slurm/pmi2.h and lib/libpmi2
     (default: the system folders, when found)])],
  [], [with_pmi2=check])

AC_LANG_PUSH([C++])

# sluice_pmi_try PREFIX CPPFLAGS LIBS HEADER CALL: whether HEADER compiles
# and CALL links with those flags; on success sets PREFIX_CPPFLAGS and
# PREFIX_LIBS.
sluice_pmi_try() {
  sluice_save_CPPFLAGS=$CPPFLAGS
  sluice_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $2"
  LIBS="$3 $LIBS"
  sluice_pmi_ok=no
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <$4>]], [[return $5;]])], [sluice_pmi_ok=yes])
  CPPFLAGS=$sluice_save_CPPFLAGS
  LIBS=$sluice_save_LIBS
  AS_IF([test "x$sluice_pmi_ok" = xyes],
    [eval "$1_CPPFLAGS=\"\$2\""
     eval "$1_LIBS=\"\$3\""])
  test "x$sluice_pmi_ok" = xyes
}

# Flags of an installation folder: headers as system headers, the library
# folder also as run path (Debian keeps libpmix outside the default path).
sluice_pmi_dir_flags() {
  sluice_dir_cppflags="-isystem $1/include"
  sluice_dir_libs="-L$1/lib -Wl,-rpath,$1/lib $2"
}

# PMIx
have_pmix=no
AS_IF([test "x$with_pmix" != xno],
  [AC_MSG_CHECKING([for PMIx (pmix.h, libpmix)])
   AS_CASE([$with_pmix],
     [yes|check],
       [sluice_pmix_dirs="/usr/lib/`$CXX -print-multiarch 2>/dev/null`/pmix2 /usr/lib64/pmix2 /usr/lib/pmix2 /usr/local /opt/pmix"
        AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists pmix 2>/dev/null],
          [sluice_pmix_cppflags=`$PKG_CONFIG --cflags pmix | sed 's/-I/-isystem /g'`
           AS_IF([sluice_pmi_try PMIX "$sluice_pmix_cppflags" "`$PKG_CONFIG --libs pmix`" pmix.h "PMIx_Initialized()"],
             [have_pmix="yes (pkg-config)"])])],
     [sluice_pmix_dirs=$with_pmix])
   AS_IF([test "x$have_pmix" = xno],
     [for d in $sluice_pmix_dirs; do
        sluice_pmi_dir_flags "$d" -lpmix
        AS_IF([test -r "$d/include/pmix.h" &&
               sluice_pmi_try PMIX "$sluice_dir_cppflags" "$sluice_dir_libs" pmix.h "PMIx_Initialized()"],
          [have_pmix="yes ($d)"; break])
      done])
   AC_MSG_RESULT([$have_pmix])
   AS_IF([test "x$have_pmix" = xno && test "x$with_pmix" != xcheck],
     [AC_MSG_ERROR([--with-pmix=$with_pmix: no usable pmix.h and libpmix there (Debian: apt-get install libpmix-dev)])])])
AS_IF([test "x$have_pmix" != xno],
  [AC_DEFINE([SLUICE_SPAWNER_PMIX], [1], [PMIx client bootstrap built])])
AM_CONDITIONAL([SPAWNER_PMIX], [test "x$have_pmix" != xno])
AC_SUBST([PMIX_CPPFLAGS])
AC_SUBST([PMIX_LIBS])

# PMI2: Slurm's client library.  Its header is slurm/pmi2.h in Debian, pmi2.h
# in Slurm's own install folder.
have_pmi2=no
AS_IF([test "x$with_pmi2" != xno],
  [AC_MSG_CHECKING([for Slurm's PMI2 client (pmi2.h, libpmi2)])
   AS_CASE([$with_pmi2],
     [yes|check], [sluice_pmi2_places="system"],
     [sluice_pmi2_places=$with_pmi2])
   for d in $sluice_pmi2_places; do
     for h in slurm/pmi2.h pmi2.h; do
       AS_IF([test "x$d" = xsystem],
         [sluice_dir_cppflags=""; sluice_dir_libs="-lpmi2"],
         [sluice_pmi_dir_flags "$d" -lpmi2])
       AS_IF([sluice_pmi_try PMI2 "$sluice_dir_cppflags" "$sluice_dir_libs" $h "PMI2_Initialized()"],
         [have_pmi2="yes ($h)"; sluice_pmi2_header=$h; break 2])
     done
   done
   AC_MSG_RESULT([$have_pmi2])
   AS_IF([test "x$have_pmi2" = xno && test "x$with_pmi2" != xcheck],
     [AC_MSG_ERROR([--with-pmi2=$with_pmi2: no usable pmi2.h and libpmi2 (Debian: apt-get install libpmi2-0-dev)])])])
AS_IF([test "x$have_pmi2" != xno],
  [AC_DEFINE([SLUICE_SPAWNER_PMI2], [1], [Slurm PMI2 client bootstrap built])
   AC_DEFINE_UNQUOTED([SLUICE_PMI2_HEADER], [<$sluice_pmi2_header>], [the PMI2 client header])])
AM_CONDITIONAL([SPAWNER_PMI2], [test "x$have_pmi2" != xno])
AC_SUBST([PMI2_CPPFLAGS])
AC_SUBST([PMI2_LIBS])

AC_LANG_POP([C++])

AC_MSG_NOTICE([pmi spawner: PMIx bootstrap: $have_pmix; PMI2 bootstrap: $have_pmi2; sluicerun -spawner=pmi: always])
AS_IF([test "x$have_pmix$have_pmi2" = xnono && test "x$with_pmix$with_pmi2" = xcheckcheck],
  [AC_MSG_WARN([neither PMIx nor PMI2 found: ranks started by srun cannot bootstrap (apt-get install libpmix-dev libpmi2-0-dev)])])
