#!/bin/sh
# The bare uGNI reference (gni-reference.hpp) between two processes on the
# software uGNI NIC: sluice-perf-gni-reference under softnic-run
# (softnic-reference.sh).
set -u
program=sluice-perf-gni-reference nic=gni fabric_var=SOFTNIC_GNI_FABRIC configure=--with-gni=DIR
# shellcheck source=softnic-reference.sh
. "${SLUICETEST_SRCDIR:?}/tests/perf/softnic-reference.sh"
