# template conduit: the documented skeleton new conduits start from.  It is
# built for the test programs only (=tests), so `make check` keeps it
# compiling while libsluice never holds it.  A conduit copied from here
# says `yes` instead, and tests what it needs after the call, e.g.
#   AS_IF([test "x$enable_NAME" != xno],
#     [AC_CHECK_HEADER([rdma/fabric.h], [], [AC_MSG_ERROR([...; use --disable-NAME])])])
SLUICE_CONDUIT([template], [tests])
