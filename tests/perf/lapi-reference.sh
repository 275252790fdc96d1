#!/bin/sh
# The bare LAPI reference (lapi-reference.hpp) between two processes on the
# software LAPI, in interrupt and in polling mode:
# sluice-perf-lapi-reference under softnic-run (softnic-reference.sh),
# which sets the job's MP_PARTITION; the program sets each process's
# MP_CHILD and MP_PROCS.
set -u
program=sluice-perf-lapi-reference nic=lapi fabric_var=SOFTNIC_LAPI_FABRIC configure=--with-lapi=DIR
unset MP_CHILD MP_PROCS MP_PARTITION
# shellcheck source=softnic-reference.sh
. "${SLUICETEST_SRCDIR:?}/tests/perf/softnic-reference.sh"
