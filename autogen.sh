#!/bin/sh
# Regenerates the build system: ./autogen.sh && ./configure && make
set -e
cd "$(dirname "$0")"
mkdir -p config
autoreconf --force --install -I config
