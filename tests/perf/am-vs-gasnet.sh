#!/bin/bash
# tests/perf/am-vs-gasnet.sh [ROUNDS [ENV ...]] - smp AM rows of sluice-bench
# beside GASNet-EX's testam, alternating: each round runs one sluice-bench
# job per ENV (a space-separated list of VAR=VALUE, "" for none) and then one
# testam job.  ROWS (environment) picks the rows:
#   medium (default)  AM Medium round trip at 8 B, 1 KiB, 16 KiB
#                     (testam section B)
#   long              AM Long round trip (section G) and one-way Long flood
#                     (section I) at 16 KiB, 64 KiB, 1 MiB
# Prints one line per job: the figures in ns, and for Sluice the job's state
# (near, far, mixed: sluice-bench's own ping-pong).  Run from a build
# directory; TESTAM names GASNet-EX's smp testam (default: the build of
# docs/performance.md, "GASNet-EX 2025.8 on the same machine").  A
# benchmark, not a test: nothing here passes or fails.
set -u
rounds=${1:-5}
shift || true
[ $# -gt 0 ] || set -- ""
rows=${ROWS:-medium}
testam=${TESTAM:-$HOME/.cache/sluice/gasnet-build/smp-conduit/testam}
bench=tests/perf/sluice-bench
[ -x "$bench" ] || { echo "run from a build directory (no $bench)" >&2; exit 2; }
[ -x "$testam" ] || { echo "no GASNet-EX testam at $testam (set TESTAM)" >&2; exit 2; }
case $rows in
medium)
    only=am_medium_rtt
    pick='$1 == "am_medium_rtt_ns" && ($2 == 8 || $2 == 1024 || $2 == 16384)'
    sections='/^B: +(8|1024|16384) /'
    testam_args=(10000 16384 B) ;;
long)
    only=am_long
    pick='($1 == "am_long_rtt_ns" || $1 == "am_long_flood_ns") && ($2 == 16384 || $2 == 65536 || $2 == 1048576)'
    sections='/^(G|I): +(16384|65536|1048576) /'
    testam_args=(1000 1048576 GI) ;;
*) echo "ROWS is medium or long, not $rows" >&2; exit 2 ;;
esac
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
for r in $(seq 1 "$rounds"); do
    for v in "$@"; do
        # shellcheck disable=SC2086 # v is a list of VAR=VALUE words
        env $v "$bench" --only "$only" --reps 1 --no-mpi --skip-launch --skip-shm --no-udp --no-ofi \
            --no-ibv --no-portals --csv "$csv" > /dev/null 2>&1
        echo "round $r sluice [${v:-default}]: $(awk -F, "$pick"' {printf "%s ", $3; s=$9} END {print s}' "$csv")"
    done
    echo "round $r gasnet-ex testam: $(GASNET_PSHM_NODES=2 timeout 120 "$testam" "${testam_args[@]}" 2>&1 |
        awk "$sections"' {printf "%.0f ", $(NF-3) * 1000}')"
done
