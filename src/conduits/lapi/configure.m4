# lapi conduit: AMs by LAPI_Amsend and RDMA by LAPI_Put and LAPI_Get on
# IBM's LAPI (README.md).  Built when --with-lapi=DIR names the folder of
# lapi.h (DIR or DIR/include): an SP or Power system's, or the software
# LAPI's (tests/softnic/lapi/softnic-run --include-dir).  liblapi itself
# is opened at run time (lapi_api.hpp), so only dlopen is linked.  Without
# --with-lapi the conduit is left out; --enable-lapi without it is an error.
AC_ARG_WITH([lapi],
  [AS_HELP_STRING([--with-lapi=DIR], [the folder of LAPI's lapi.h, DIR or DIR/include (the lapi conduit)])],
  [], [with_lapi=no])
sluice_have_lapi=no
LAPI_CPPFLAGS=
LAPI_LIBS=
AS_IF([test "x$with_lapi" != xno && test "x$with_lapi" != xyes], [
  AC_MSG_CHECKING([for lapi.h in $with_lapi])
  for sluice_lapi_dir in "$with_lapi/include" "$with_lapi"; do
    AS_IF([test -z "$LAPI_CPPFLAGS" && test -f "$sluice_lapi_dir/lapi.h"], [LAPI_CPPFLAGS="-I$sluice_lapi_dir"])
  done
  AS_IF([test -n "$LAPI_CPPFLAGS"], [
    sluice_lapi_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $LAPI_CPPFLAGS"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <lapi.h>]],
                                       [[lapi_info_t i; lapi_cntr_t c; lapi_handle_t h = 0; (void)i; (void)c;
                                         hdr_hndlr_t *hh = 0; compl_hndlr_t *ch = 0; (void)hh; (void)ch;
                                         return LAPI_Amsend(h, 0, 0, 0, 0, 0, 0, 0, 0, 0) == LAPI_SUCCESS &&
                                                LAPI_Senv(h, INTERRUPT_SET, 0) == LAPI_SUCCESS;]])],
      [sluice_have_lapi=yes])
    CPPFLAGS=$sluice_lapi_save_CPPFLAGS
  ])
  AC_MSG_RESULT([$sluice_have_lapi])
  AS_IF([test "x$sluice_have_lapi" = xyes], [
    sluice_lapi_save_LIBS=$LIBS
    AC_SEARCH_LIBS([dlopen], [dl], [], [AC_MSG_ERROR([the lapi conduit needs dlopen])])
    AS_IF([test "$ac_cv_search_dlopen" != "none required"], [LAPI_LIBS=$ac_cv_search_dlopen])
    LIBS=$sluice_lapi_save_LIBS
  ], [LAPI_CPPFLAGS=])
], [test "x$with_lapi" = xyes], [
  AC_MSG_ERROR([--with-lapi needs the folder of lapi.h (--with-lapi=DIR)])
])
AC_SUBST([LAPI_CPPFLAGS])
AC_SUBST([LAPI_LIBS])
AS_IF([test "x$sluice_have_lapi" = xno && test "x${enable_lapi+set}" != xset], [enable_lapi=no])
SLUICE_CONDUIT([lapi], [yes])
AS_IF([test "x$enable_lapi" != xno && test "x$sluice_have_lapi" = xno],
  [AC_MSG_ERROR([the lapi conduit needs LAPI's lapi.h: --with-lapi=DIR (the software LAPI's: --with-lapi=\$(tests/softnic/lapi/softnic-run --include-dir)); or use --disable-lapi])])
AS_IF([test "x$enable_lapi" = xyes], [SLUICE_CONDUIT_LIBS="$SLUICE_CONDUIT_LIBS $LAPI_LIBS"])
