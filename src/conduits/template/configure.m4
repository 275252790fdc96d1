# template conduit: the documented skeleton new conduits start from.  It is
# compiled (so it keeps compiling) but never selected at run time.
AC_DEFINE([SLUICE_CONDUIT_TEMPLATE], [1], [template conduit compiled])
