#!/bin/bash
# Start-up time of the ssh spawner against its issue-4 target: `sluicerun
# -spawner=ssh` of 3 hosts x 2 ranks of an empty Sluice program must take at
# most 1.5 x (one `ssh host true` round trip) x (tree depth) + 1 s.  The
# hosts are the three network namespaces of tests/spawn/ssh/hosts.sh, each
# with its own sshd; sluicerun and ssh run in the hub namespace.  The ssh
# round trip is measured in the same run, interleaved with the launches.
# Prints a table and a CSV of medians over SLUICETEST_RUNS runs (default 7,
# at least 5), for the default out-degree (depth 1) and for out-degrees 2
# and 1 (depths 2 and 3).  Root only; `make perf-ssh-startup`.
set -u
runs=${SLUICETEST_RUNS:-7}
[ "$runs" -ge 5 ] 2> /dev/null || runs=5
here=$(cd "$(dirname "$0")/../spawn" && pwd)
. "$here/ssh/hosts.sh"
ssh_hosts_begin "ssh start-up"
first_host=${ssh_hosts%%,*}

seconds() {
    local start
    start=$(date +%s.%N)
    "$@" > /dev/null 2>&1 || return 1
    elapsed "$start" 4
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# out-degree:depth (32, the default, puts every host right under sluicerun)
configs="32:1 2:2 1:3"
: > "$ssh_work/rtt"
failed=0
for run in $(seq "$runs"); do
    t=$(seconds in_hub ssh $SLUICE_SSH_OPTIONS -o BatchMode=yes "$first_host" true) || { echo "FAIL: ssh round trip"; exit 1; }
    echo "$t" >> "$ssh_work/rtt"
    for config in $configs; do
        degree=${config%%:*}
        if t=$(seconds in_hub env SLUICE_SSH_OUT_DEGREE="$degree" SLUICE_JOB_ID="sshperf$$r$run" \
            timeout -k 5 60 "$sluicerun" -spawner=ssh -n 6 "$prog" empty); then
            echo "$t" >> "$ssh_work/wall-$degree"
        else
            echo "FAIL: sluicerun -spawner=ssh -n 6 (out-degree $degree) failed in run $run"
            failed=1
        fi
    done
done
[ "$failed" = 0 ] || exit 1

rtt=$(median < "$ssh_work/rtt")
echo "ssh spawner start-up: 3 hosts x 2 ranks of sluice-spawn-test empty, medians of $runs runs"
echo "one \`ssh $first_host true\` round trip: ${rtt} s"
printf '%-11s %-6s %-10s %-10s %-7s %s\n' out-degree depth wall_s budget_s ratio target
csv="out_degree,depth,wall_s,ssh_rtt_s,budget_s,ratio"
verdict=0
for config in $configs; do
    degree=${config%%:*} depth=${config#*:}
    wall=$(median < "$ssh_work/wall-$degree")
    budget=$(awk -v r="$rtt" -v d="$depth" 'BEGIN { printf "%.3f", 1.5 * r * d + 1 }')
    ratio=$(awk -v w="$wall" -v b="$budget" 'BEGIN { printf "%.2f", w / b }')
    met=$(awk -v x="$ratio" 'BEGIN { print (x <= 1) ? "met" : "MISSED" }')
    [ "$met" = met ] || verdict=1
    printf '%-11s %-6s %-10s %-10s %-7s %s\n' "$degree" "$depth" "$wall" "$budget" "$ratio" "$met"
    csv="$csv
$degree,$depth,$wall,$rtt,$budget,$ratio"
done
echo
echo "CSV:"
echo "$csv"
echo "(budget = 1.5 x ssh round trip x depth + 1 s; ratio = wall / budget, target <= 1)"
exit $verdict
