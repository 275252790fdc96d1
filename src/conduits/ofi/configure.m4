# ofi conduit: AMs and RDMA over libfabric (README.md).  Built by default
# when libfabric (>= 1.10, pkg-config libfabric) is there; --enable-ofi
# without it is an error.
PKG_CHECK_MODULES([FABRIC], [libfabric >= 1.10], [sluice_have_fabric=yes], [sluice_have_fabric=no])
AS_IF([test "x$sluice_have_fabric" = xno && test "x${enable_ofi+set}" != xset], [enable_ofi=no])
SLUICE_CONDUIT([ofi], [yes])
AS_IF([test "x$enable_ofi" != xno && test "x$sluice_have_fabric" = xno],
  [AC_MSG_ERROR([the ofi conduit needs libfabric >= 1.10 (Debian: libfabric-dev); use --disable-ofi])])
# A static libsluice needs libfabric at the consumer's link (sluice.pc).
AS_IF([test "x$enable_ofi" = xyes], [SLUICE_CONDUIT_LIBS="$SLUICE_CONDUIT_LIBS $FABRIC_LIBS"])
# SLUICE_OFI_PROVIDER's built-in default (a Cray EX: cxi).
AC_ARG_WITH([ofi-provider],
  [AS_HELP_STRING([--with-ofi-provider=NAME], [the default of SLUICE_OFI_PROVIDER, as fi_info -p names it (default: empty, the first that works)])],
  [], [with_ofi_provider=])
AS_CASE([$with_ofi_provider], [yes|no], [with_ofi_provider=])
AS_IF([test -n "$with_ofi_provider" && test "x$enable_ofi" = xno],
  [AC_MSG_ERROR([--with-ofi-provider=$with_ofi_provider: the ofi conduit is not built (libfabric-dev, --enable-ofi)])])
AC_DEFINE_UNQUOTED([SLUICE_CONFIGURED_OFI_PROVIDER], ["$with_ofi_provider"], [the default of SLUICE_OFI_PROVIDER])
