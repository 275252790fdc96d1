# smp conduit: shared memory on one host.  Always built (POSIX shm + mmap).
AC_ARG_ENABLE([smp],
  [AS_HELP_STRING([--disable-smp], [leave out the shared-memory conduit])],
  [], [enable_smp=yes])
AS_IF([test "x$enable_smp" = xyes],
  [AC_CHECK_FUNC([shm_open], [], [AC_MSG_ERROR([smp conduit needs shm_open; use --disable-smp])])
   AC_DEFINE([SLUICE_CONDUIT_SMP], [1], [smp conduit built])])
AM_CONDITIONAL([CONDUIT_SMP], [test "x$enable_smp" = xyes])
