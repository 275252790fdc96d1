#!/usr/bin/env bash
# tests/perf/udp-ab.sh - compares two builds of libsluice on the udp AM round
# trip: interleaved jobs of tests/perf/udp-rtt (A, B, A, B, ...), each job's
# figure the median ratio of its chunks to the bare UDP ping-pong.
#
#   tests/perf/udp-ab.sh BUILD_A BUILD_B [PAIRS (10)] [CHUNKS (40)] [PER (2000)]
#
# BUILD_A and BUILD_B are build directories.  Each job runs that build's real
# launcher (.libs/sluicerun, not libtool's wrapper, which would put its own
# .libs first) with LD_LIBRARY_PATH at that build's .libs, and the udp-rtt
# program of BUILD_B.  The same build twice measures the VM's spread.  Extra
# environment for one side: UDP_AB_ENV_A / UDP_AB_ENV_B (e.g.
# UDP_AB_ENV_B=SLUICE_CREDIT_FLOW=0 with BUILD_A = BUILD_B).
set -euo pipefail

if [ $# -lt 2 ]; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
a=$(cd "$1" && pwd)
b=$(cd "$2" && pwd)
pairs=${3:-10}
chunks=${4:-40}
per=${5:-2000}
program=$b/tests/perf/udp-rtt
for dir in "$a" "$b"; do
    if [ ! -x "$dir/.libs/sluicerun" ] || [ ! -d "$dir/.libs" ]; then
        echo "udp-ab: $dir has no .libs/sluicerun: build it first (make)" >&2
        exit 2
    fi
done
[ -x "$program" ] || { echo "udp-ab: no $program: make tests/perf/udp-rtt in $b" >&2; exit 2; }

run() {  # run DIR EXTRA-ENV: one job, prints its ratio
    local dir=$1 extra=$2 out
    # shellcheck disable=SC2086 # extra is a list of NAME=VALUE words
    out=$(env $extra SLUICE_ROUTE=network LD_LIBRARY_PATH="$dir/.libs" \
        timeout 120 "$dir/.libs/sluicerun" --bind=core -n 2 "$program" "$chunks" "$per") || {
        echo "udp-ab: a job of $dir failed" >&2
        exit 1
    }
    awk '/^ratio/ {print $2}' <<<"$out"
}

ra=() rb=()
for ((i = 1; i <= pairs; i++)); do
    ra+=("$(run "$a" "${UDP_AB_ENV_A:-}")")
    rb+=("$(run "$b" "${UDP_AB_ENV_B:-}")")
    printf 'pair %2d  A %s  B %s\n' "$i" "${ra[-1]}" "${rb[-1]}"
done
paste <(printf '%s\n' "${ra[@]}") <(printf '%s\n' "${rb[@]}") | awk -v n="$pairs" '
    { a[NR] = $1; b[NR] = $2; if ($2 < $1) lower++ }
    function median(x, k,   i, j, t, s) {
        for (i = 1; i <= k; i++) s[i] = x[i]
        for (i = 2; i <= k; i++) for (j = i; j > 1 && s[j-1] > s[j]; j--) { t = s[j]; s[j] = s[j-1]; s[j-1] = t }
        return k % 2 ? s[(k+1)/2] : (s[k/2] + s[k/2+1]) / 2
    }
    END { printf "median ratio to the bare ping-pong: A %.4f  B %.4f  (B lower in %d of %d pairs)\n",
                 median(a, n), median(b, n), lower, n }'
