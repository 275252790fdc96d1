# gni conduit: AMs over SMSG and RDMA by FMA and the BTE on Cray's uGNI
# (README.md).  Built when --with-gni=DIR names the folder of gni_pub.h
# (DIR or DIR/include): a Cray XC's, or the software NIC's
# (tests/softnic/gni/softnic-run --include-dir).  libugni itself is opened
# at run time (gni_api.hpp), so only dlopen is linked.  Without --with-gni
# the conduit is left out; --enable-gni without it is an error.
AC_ARG_WITH([gni],
  [AS_HELP_STRING([--with-gni=DIR], [the folder of uGNI's gni_pub.h, DIR or DIR/include (the gni conduit)])],
  [], [with_gni=no])
sluice_have_gni=no
GNI_CPPFLAGS=
GNI_LIBS=
AS_IF([test "x$with_gni" != xno && test "x$with_gni" != xyes], [
  AC_MSG_CHECKING([for gni_pub.h in $with_gni])
  for sluice_gni_dir in "$with_gni/include" "$with_gni"; do
    AS_IF([test -z "$GNI_CPPFLAGS" && test -f "$sluice_gni_dir/gni_pub.h"], [GNI_CPPFLAGS="-I$sluice_gni_dir"])
  done
  AS_IF([test -n "$GNI_CPPFLAGS"], [
    sluice_gni_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $GNI_CPPFLAGS"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <gni_pub.h>]],
                                       [[gni_post_descriptor_t d; gni_smsg_attr_t a; (void)d; (void)a;
                                         return GNI_CdmCreate(0, 0, 0, 0, (gni_cdm_handle_t *)0) == GNI_RC_SUCCESS;]])],
      [sluice_have_gni=yes])
    CPPFLAGS=$sluice_gni_save_CPPFLAGS
  ])
  AC_MSG_RESULT([$sluice_have_gni])
  AS_IF([test "x$sluice_have_gni" = xyes], [
    sluice_gni_save_LIBS=$LIBS
    AC_SEARCH_LIBS([dlopen], [dl], [], [AC_MSG_ERROR([the gni conduit needs dlopen])])
    AS_IF([test "$ac_cv_search_dlopen" != "none required"], [GNI_LIBS=$ac_cv_search_dlopen])
    LIBS=$sluice_gni_save_LIBS
  ], [GNI_CPPFLAGS=])
], [test "x$with_gni" = xyes], [
  AC_MSG_ERROR([--with-gni needs the folder of gni_pub.h (--with-gni=DIR)])
])
AC_SUBST([GNI_CPPFLAGS])
AC_SUBST([GNI_LIBS])
AS_IF([test "x$sluice_have_gni" = xno && test "x${enable_gni+set}" != xset], [enable_gni=no])
SLUICE_CONDUIT([gni], [yes])
AS_IF([test "x$enable_gni" != xno && test "x$sluice_have_gni" = xno],
  [AC_MSG_ERROR([the gni conduit needs uGNI's gni_pub.h: --with-gni=DIR (the software NIC's: --with-gni=\$(tests/softnic/gni/softnic-run --include-dir)); or use --disable-gni])])
AS_IF([test "x$enable_gni" = xyes], [SLUICE_CONDUIT_LIBS="$SLUICE_CONDUIT_LIBS $GNI_LIBS"])
