#!/bin/bash
# tests/perf/medium-vs-gasnet.sh [ROUNDS [ENV ...]] - the smp AM Medium
# round trip (8 B, 1 KiB, 16 KiB) of sluice-bench beside GASNet-EX's
# testam, alternating: each round runs one sluice-bench job per ENV (a
# space-separated list of VAR=VALUE, "" for none) and then one testam job.
# Prints one line per job: the three round trips in ns, and for Sluice the
# job's state (near, far, mixed: sluice-bench's own ping-pong).
# Run from a build directory; TESTAM names GASNet-EX's smp testam
# (default: the build of docs/performance.md, "GASNet-EX 2025.8 on the same
# machine").  A benchmark, not a test: nothing here passes or fails.
set -u
rounds=${1:-5}
shift || true
[ $# -gt 0 ] || set -- ""
testam=${TESTAM:-$HOME/.cache/sluice/gasnet-build/smp-conduit/testam}
bench=tests/perf/sluice-bench
[ -x "$bench" ] || { echo "run from a build directory (no $bench)" >&2; exit 2; }
[ -x "$testam" ] || { echo "no GASNet-EX testam at $testam (set TESTAM)" >&2; exit 2; }
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
for r in $(seq 1 "$rounds"); do
    for v in "$@"; do
        # shellcheck disable=SC2086 # v is a list of VAR=VALUE words
        env $v "$bench" --only am_medium_rtt --reps 1 --no-mpi --skip-launch --skip-shm --no-udp --no-ofi \
            --no-ibv --no-portals --csv "$csv" > /dev/null 2>&1
        echo "round $r sluice [${v:-default}]: $(awk -F, '/^am_medium_rtt/ {printf "%s ", $3; s=$9} END {print s}' "$csv")"
    done
    echo "round $r gasnet-ex testam: $(GASNET_PSHM_NODES=2 timeout 60 "$testam" 10000 16384 B 2>&1 |
        awk '/^B: +(8|1024|16384) / {printf "%.0f ", $(NF-3) * 1000}')"
done
