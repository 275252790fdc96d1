# ssh spawner (spawners/ssh/README.md): sluicerun starts a tree of control
# processes over ssh, one per host.  Always built: it needs only POSIX
# sockets; ssh itself is found at run time (SLUICE_SSH_CMD).
AC_DEFINE([SLUICE_SPAWNER_SSH], [1], [ssh spawner built])
