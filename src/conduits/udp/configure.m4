# udp conduit: reliable AMs over UDP datagrams between hosts.  Built by
# default on Linux (sendmmsg and recvmmsg).
AC_ARG_ENABLE([udp],
  [AS_HELP_STRING([--disable-udp], [leave out the udp network conduit])],
  [], [enable_udp=yes])
AS_IF([test "x$enable_udp" = xyes],
  [AC_CHECK_FUNCS([sendmmsg recvmmsg], [],
     [AC_MSG_ERROR([the udp conduit needs sendmmsg and recvmmsg; use --disable-udp])])
   AC_DEFINE([SLUICE_CONDUIT_UDP], [1], [udp conduit built])])
AM_CONDITIONAL([CONDUIT_UDP], [test "x$enable_udp" = xyes])
