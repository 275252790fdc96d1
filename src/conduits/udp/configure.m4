# udp conduit: reliable AMs over UDP datagrams between hosts.  Built by
# default on Linux (sendmmsg and recvmmsg).
SLUICE_CONDUIT([udp], [yes])
AS_IF([test "x$enable_udp" != xno],
  [AC_CHECK_FUNCS([sendmmsg recvmmsg], [],
     [AC_MSG_ERROR([the udp conduit needs sendmmsg and recvmmsg; use --disable-udp])])])
