# ofi conduit: AMs and RDMA over libfabric (README.md).  Built by default
# when libfabric (>= 1.10, pkg-config libfabric) is there; --enable-ofi
# without it is an error.
PKG_CHECK_MODULES([FABRIC], [libfabric >= 1.10], [sluice_have_fabric=yes], [sluice_have_fabric=no])
AS_IF([test "x$sluice_have_fabric" = xno && test "x${enable_ofi+set}" != xset], [enable_ofi=no])
SLUICE_CONDUIT([ofi], [yes])
AS_IF([test "x$enable_ofi" != xno && test "x$sluice_have_fabric" = xno],
  [AC_MSG_ERROR([the ofi conduit needs libfabric >= 1.10 (Debian: libfabric-dev); use --disable-ofi])])
# libsluice opens libfabric at run time (fabric_api.hpp says why): the
# library pkg-config names is the one it opens unless SLUICE_OFI_LIBRARY
# says otherwise, and only what dlopen needs is linked.
FABRIC_DL_LIBS=
AS_IF([test "x$enable_ofi" = xyes], [
  sluice_fabric_libdir=`$PKG_CONFIG --variable=libdir libfabric 2>/dev/null`
  AS_IF([test -n "$sluice_fabric_libdir" && test -e "$sluice_fabric_libdir/libfabric.so.1"],
    [AC_DEFINE_UNQUOTED([SLUICE_FABRIC_LIBRARY], ["$sluice_fabric_libdir/libfabric.so.1"],
                        [The libfabric the ofi conduit opens when SLUICE_OFI_LIBRARY is not set])])
  sluice_fabric_save_LIBS=$LIBS
  AC_SEARCH_LIBS([dlopen], [dl], [], [AC_MSG_ERROR([the ofi conduit needs dlopen])])
  AS_IF([test "$ac_cv_search_dlopen" != "none required"], [FABRIC_DL_LIBS=$ac_cv_search_dlopen])
  LIBS=$sluice_fabric_save_LIBS
  SLUICE_CONDUIT_LIBS="$SLUICE_CONDUIT_LIBS $FABRIC_DL_LIBS"])
AC_SUBST([FABRIC_DL_LIBS])
# SLUICE_OFI_PROVIDER's built-in default (a Cray EX: cxi).
AC_ARG_WITH([ofi-provider],
  [AS_HELP_STRING([--with-ofi-provider=NAME], [the default of SLUICE_OFI_PROVIDER, as fi_info -p names it (default: empty, the first that works)])],
  [], [with_ofi_provider=])
AS_CASE([$with_ofi_provider], [yes|no], [with_ofi_provider=])
AS_IF([test -n "$with_ofi_provider" && test "x$enable_ofi" = xno],
  [AC_MSG_ERROR([--with-ofi-provider=$with_ofi_provider: the ofi conduit is not built (libfabric-dev, --enable-ofi)])])
AC_DEFINE_UNQUOTED([SLUICE_CONFIGURED_OFI_PROVIDER], ["$with_ofi_provider"], [the default of SLUICE_OFI_PROVIDER])
