#!/bin/bash
# tests/perf/udp-loss.sh - the udp conduit under 5 % datagram loss (issue 6).
#
# In a private network namespace (its own loopback), runs the udp section of
# sluice-bench (`sluice-bench --udp`: AM Short round trip over udp, 8 B
# Put/Get, 4 MiB bandwidth, exactly-once delivery of 10^6 AMs each way)
# twice: without a rule, then with an nftables rule that drops 5 % of UDP
# datagrams at random.  Targets: the median AM Short round trip under loss
# at most 2 x the loss-free one; no AM lost or repeated under loss.
# Prints a table and a CSV (udp-loss.csv); exit 0 all met, 1 a target
# missed, 2 a run failed, 77 not root or no ip/nft (skip).
#
# usage: udp-loss.sh [--hook input|output] [SLUICE_BENCH [sluice-bench options]]
#   SLUICE_BENCH  default tests/perf/sluice-bench (run from the build tree);
#                 `make perf-udp-loss` passes it
#   options       passed to both runs (e.g. --reps 3, --udp-count 100000)
#   --hook        where the rule drops (input, default): on the input hook a
#                 datagram vanishes as on a wire; on the output hook the
#                 sender's sendmsg fails with EPERM instead, so a sender could
#                 see the loss and resend at once (that variant tests that a
#                 send error is treated as a loss, not as a failure).
set -u
hook=input
if [ "${1:-}" = --hook ]; then
    hook=${2:-}
    shift 2 || true
fi
case $hook in input | output) ;; *) echo "udp-loss.sh: --hook input or output" >&2; exit 2 ;; esac
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: udp-loss.sh needs root (network namespace, nftables)"
    exit 77
fi
for tool in ip nft; do
    command -v "$tool" > /dev/null || { echo "SKIP: no $tool (iproute2, nftables)"; exit 77; }
done
bench=${1:-tests/perf/sluice-bench}
[ $# -gt 0 ] && shift
if [ ! -x "$bench" ]; then
    echo "udp-loss.sh: $bench not found; run from the build tree or pass its path" >&2
    exit 2
fi
bench=$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")
loss_percent=5

# shellcheck source=../spawn/ssh/hosts.sh
. "$(dirname "$0")/../spawn/ssh/hosts.sh"
netns_stale_remove '^sluice-udp-loss-([0-9]+)$'
ns=sluice-udp-loss-$$
work=$(mktemp -d /tmp/sluice-udp-loss.XXXXXX) || exit 2
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    ip netns delete "$ns" 2> /dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! ip netns add "$ns" 2> "$work/netns.err"; then
    echo "SKIP: cannot create a network namespace: $(cat "$work/netns.err")"
    exit 77
fi
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link set lo up || exit 2

# run LABEL: one `sluice-bench --udp` in the namespace, output shown and kept.
run() {
    local label=$1
    shift
    in_ns "$bench" --udp --csv "$work/$label.csv" "$@" 2>&1 | tee "$work/$label.txt"
    return "${PIPESTATUS[0]}"
}

echo "=== udp section without loss (namespace $ns)"
run clean "$@"
clean_status=$?

echo
echo "=== udp section with ${loss_percent} % UDP loss (nftables, $hook hook)"
if ! in_ns nft -f - << EOF; then
table inet sluice_loss {
    chain drop_some {
        type filter hook $hook priority 0; policy accept;
        meta l4proto udp counter
        meta l4proto udp numgen random mod 100 < $loss_percent counter drop
    }
}
EOF
    echo "udp-loss.sh: nft could not add the drop rule" >&2
    exit 2
fi
run loss "$@"
loss_status=$?
# Datagrams seen and dropped by the rule, from its two counters.
read -r seen dropped < <(in_ns nft list table inet sluice_loss |
    awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") v[++n] = $(i + 1) }
         END { print v[1] + 0, v[2] + 0 }')

# value CSV METRIC: the sluice column of METRIC's first row (empty if none).
value() {
    awk -F, -v m="$2" '$1 == m && !done { print $3; done = 1 }' "$work/$1.csv" 2> /dev/null
}
clean_p50=$(value clean udp_am_short_rtt_p50_ns)
loss_p50=$(value loss udp_am_short_rtt_p50_ns)
clean_mean=$(value clean udp_am_short_rtt_ns)
loss_mean=$(value loss udp_am_short_rtt_ns)
clean_p99=$(value clean udp_am_short_rtt_p99_ns)
loss_p99=$(value loss udp_am_short_rtt_p99_ns)
count=$(awk -F, '$1 == "udp_once_lost" { print $2; exit }' "$work/loss.csv" 2> /dev/null)
lost=$(value loss udp_once_lost)
repeated=$(value loss udp_once_repeated)
clean_lost=$(value clean udp_once_lost)
clean_repeated=$(value clean udp_once_repeated)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print ""; else printf "%.2f", a / b }'; }
verdict() { # VALUE LIMIT: PASS if VALUE <= LIMIT, MISS if VALUE is missing
    awk -v v="$1" -v l="$2" 'BEGIN { if (v == "") print "MISS"; else print (v + 0 <= l + 0) ? "PASS" : "FAIL" }'
}
p50_ratio=$(ratio "$loss_p50" "$clean_p50")
mean_ratio=$(ratio "$loss_mean" "$clean_mean")
p99_ratio=$(ratio "$loss_p99" "$clean_p99")
observed=$(awk -v s="$seen" -v d="$dropped" 'BEGIN { if (s > 0) printf "%.2f", 100 * d / s; else print "-" }')

echo
echo "udp conduit under ${loss_percent} % UDP loss ($hook hook; the rule dropped $dropped of $seen datagrams, ${observed} %)"
printf '%-28s %12s %12s %7s  %-7s %s\n' metric loss-free "${loss_percent}%-loss" ratio target result
printf '%-28s %12s %12s %7s  %-7s %s\n' udp_am_short_rtt_p50_ns "${clean_p50:--}" "${loss_p50:--}" "${p50_ratio:--}" '<=2x' "$(verdict "$p50_ratio" 2)"
printf '%-28s %12s %12s %7s\n' udp_am_short_rtt_ns "${clean_mean:--}" "${loss_mean:--}" "${mean_ratio:--}"
printf '%-28s %12s %12s %7s\n' udp_am_short_rtt_p99_ns "${clean_p99:--}" "${loss_p99:--}" "${p99_ratio:--}"
printf '%-28s %12s %12s %7s  %-7s %s\n' "udp_once_lost (${count:-?} AMs)" "${clean_lost:--}" "${lost:--}" "" '<=0' "$(verdict "$lost" 0)"
printf '%-28s %12s %12s %7s  %-7s %s\n' "udp_once_repeated" "${clean_repeated:--}" "${repeated:--}" "" '<=0' "$(verdict "$repeated" 0)"
echo "(p50/p99: over the single round trips of each run, median of the repetitions; the"
echo " plain row is the mean round trip, which carries every retransmission wait)"

csv="metric,size,loss_free,loss,ratio,target,pass
udp_am_short_rtt_p50_ns,0,$clean_p50,$loss_p50,$p50_ratio,<=2x,$(verdict "$p50_ratio" 2)
udp_am_short_rtt_ns,0,$clean_mean,$loss_mean,$mean_ratio,,
udp_am_short_rtt_p99_ns,0,$clean_p99,$loss_p99,$p99_ratio,,
udp_once_lost,${count:-0},$clean_lost,$lost,,<=0,$(verdict "$lost" 0)
udp_once_repeated,${count:-0},$clean_repeated,$repeated,,<=0,$(verdict "$repeated" 0)
udp_loss_observed_percent,$seen,,$observed,,,"
echo "$csv" > udp-loss.csv
echo
echo "Targets (issue 6, udp under ${loss_percent} % loss):"
printf '  %-4s  udp AM Short round trip median under loss <= 2 x loss-free: %s vs %s ns = %sx\n' \
    "$(verdict "$p50_ratio" 2)" "${loss_p50:--}" "${clean_p50:--}" "${p50_ratio:--}"
printf '  %-4s  no AM lost under loss (%s AMs): %s lost\n' "$(verdict "$lost" 0)" "${count:-?}" "${lost:--}"
printf '  %-4s  no AM repeated under loss: %s repeated\n' "$(verdict "$repeated" 0)" "${repeated:--}"
echo
echo "CSV: udp-loss.csv"
echo "$csv"

if [ "$clean_status" -ne 0 ] || [ "$loss_status" -ne 0 ] ||
    [ -z "$p50_ratio" ] || [ -z "$lost" ] || [ -z "$repeated" ]; then
    echo "udp-loss.sh: a run failed (sluice-bench exit $clean_status without loss, $loss_status with)"
    exit 2
fi
for v in "$(verdict "$p50_ratio" 2)" "$(verdict "$lost" 0)" "$(verdict "$repeated" 0)"; do
    [ "$v" = PASS ] || exit 1
done
exit 0
