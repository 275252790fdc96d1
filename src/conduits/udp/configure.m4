# udp conduit: reliable AMs over UDP datagrams between hosts.  Built by
# default on Linux (sendmmsg and recvmmsg).  Every datagram carries a MAC
# (UMAC-64) from Nettle: the conduit needs it (pkg-config nettle).
SLUICE_CONDUIT([udp], [yes])
AS_IF([test "x$enable_udp" != xno],
  [AC_CHECK_FUNCS([sendmmsg recvmmsg], [],
     [AC_MSG_ERROR([the udp conduit needs sendmmsg and recvmmsg; use --disable-udp])])
   PKG_CHECK_MODULES([NETTLE], [nettle >= 3.4], [],
     [AC_MSG_ERROR([the udp conduit (built by default) authenticates its datagrams with Nettle's UMAC, and pkg-config finds no nettle >= 3.4: install it (Debian, Ubuntu: apt-get install nettle-dev; Fedora: nettle-devel), or configure with --disable-udp])])
   CPPFLAGS="$CPPFLAGS $NETTLE_CFLAGS"])
# A static libsluice needs Nettle at the consumer's link (sluice.pc).
AS_IF([test "x$enable_udp" = xyes], [SLUICE_CONDUIT_LIBS="$SLUICE_CONDUIT_LIBS $NETTLE_LIBS"])
