# ibv conduit: AMs and RDMA over InfiniBand verbs (README.md).  Built by
# default when libibverbs (pkg-config libibverbs, Debian: libibverbs-dev) is
# there; --enable-ibv without it is an error.
PKG_CHECK_MODULES([IBVERBS], [libibverbs], [sluice_have_ibverbs=yes], [sluice_have_ibverbs=no])
AS_IF([test "x$sluice_have_ibverbs" = xno && test "x${enable_ibv+set}" != xset], [enable_ibv=no])
SLUICE_CONDUIT([ibv], [yes])
AS_IF([test "x$enable_ibv" != xno && test "x$sluice_have_ibverbs" = xno],
  [AC_MSG_ERROR([the ibv conduit needs libibverbs (Debian: libibverbs-dev); use --disable-ibv])])
AS_IF([test "x$enable_ibv" = xyes], [SLUICE_CONDUIT_LIBS="$SLUICE_CONDUIT_LIBS $IBVERBS_LIBS"])
