# smp conduit: shared memory on one host.  Built by default (POSIX shm + mmap).
SLUICE_CONDUIT([smp], [yes])
AS_IF([test "x$enable_smp" != xno],
  [AC_CHECK_FUNC([shm_open], [], [AC_MSG_ERROR([the smp conduit needs shm_open; use --disable-smp])])])
