# local spawner: sluicerun forks the ranks on this host (always built).
AC_CHECK_HEADERS([sys/prctl.h])
AC_DEFINE([SLUICE_SPAWNER_LOCAL], [1], [local spawner built])
