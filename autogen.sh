#!/bin/sh
# Regenerates the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
mkdir -p config
# libsluice-mpi for each MPI flavor: one Makefile fragment per flavor, from
# one template (Automake needs the target names written out).
for flavor in openmpi mpich; do
    sed "s/@FLAVOR@/$flavor/g" src/mpi-interop/flavor.am.in > src/mpi-interop/flavor-$flavor.am
done
autoreconf --force --install -I config
