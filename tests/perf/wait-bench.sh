#!/bin/sh
# tests/perf/wait-bench.sh [REPS] - what block mode costs a round trip
# (SLUICE_WAIT, docs/user-guide.md "Waiting: spin or block"): the AM Short
# round trip of 2 ranks (tests/wait/sluice-wait-check pingpong), each pong
# waited for by sluice_poll_wait, under
#   spin        SLUICE_WAIT=spin
#   block       SLUICE_WAIT=block (spins SLUICE_WAIT_SPIN = 20 us first)
#   block-now   SLUICE_WAIT=block SLUICE_WAIT_SPIN=0: every wait sleeps,
#               every arrival is a wake-up
# on smp, udp and ofi (tcp;ofi_rxm), REPS jobs each (default 5), in turn so
# that machine drift spreads over all three.  Prints a table of the median
# round trip and its ratio to spin's, then the same as CSV.  Run from the
# build directory (it uses ./sluicerun and ./tests/wait/sluice-wait-check).
set -u
reps=${1:-5}
rounds=${WAIT_BENCH_ROUNDS:-20000}
check=./tests/wait/sluice-wait-check
[ -x "$check" ] || { echo "wait-bench.sh: run from a build directory after make check (no $check)" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for net in smp udp ofi; do
    case $net in
    smp) envs="SLUICE_ROUTE=auto" ;;
    udp) envs="SLUICE_ROUTE=network SLUICE_NETWORK=udp" ;;
    ofi) ./sluice-info --conduits 2>/dev/null | grep -q '^  ofi ' || continue
         envs="SLUICE_ROUTE=network SLUICE_NETWORK=ofi SLUICE_OFI_PROVIDER=tcp;ofi_rxm" ;;
    esac
    r=0
    while [ "$r" -lt "$reps" ]; do
        for mode in spin block block-now; do
            case $mode in
            spin) m="SLUICE_WAIT=spin" ;;
            block) m="SLUICE_WAIT=block" ;;
            block-now) m="SLUICE_WAIT=block SLUICE_WAIT_SPIN=0" ;;
            esac
            # shellcheck disable=SC2086 # lists of words
            ns=$(env $envs $m timeout 120 ./sluicerun -n 2 "$check" pingpong "$rounds" 2>/dev/null |
                 awk '/^pingpong:/ { print $5 }')
            echo "$net $mode ${ns:-NaN}" >> "$out"
        done
        r=$((r + 1))
    done
done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "NaN"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-6s %12s %12s %12s %10s %10s\n' conduit spin_ns block_ns block_now_ns block/spin now/spin
csv="conduit,mode,median_ns,ratio_to_spin,reps"
for net in smp udp ofi; do
    grep -q "^$net " "$out" || continue
    s=$(awk -v n="$net" '$1 == n && $2 == "spin" { print $3 }' "$out" | median)
    b=$(awk -v n="$net" '$1 == n && $2 == "block" { print $3 }' "$out" | median)
    z=$(awk -v n="$net" '$1 == n && $2 == "block-now" { print $3 }' "$out" | median)
    rb=$(awk -v a="$b" -v s="$s" 'BEGIN { printf "%.2f", a / s }')
    rz=$(awk -v a="$z" -v s="$s" 'BEGIN { printf "%.2f", a / s }')
    printf '%-6s %12s %12s %12s %10s %10s\n' "$net" "$s" "$b" "$z" "$rb" "$rz"
    csv="$csv
$net,spin,$s,1.00,$reps
$net,block,$b,$rb,$reps
$net,block-now,$z,$rz,$reps"
done
echo
echo "$csv"
