#!/bin/sh
# tests/perf/srun-startup.sh - issue 4's start-up target: wall time of
# `srun --mpi=pmix -n 8` of an empty Sluice program (sluice-spawn-test empty)
# against the same srun of an empty Open MPI program (srun-startup-mpi.c,
# built here with mpicc.openmpi), target ratio <= 1.2.  Also, for
# information, the Sluice program under --mpi=pmi2 and srun of /bin/true
# without a PMI.  Starts its own Slurm on
# this host (tests/spawn/slurm/cluster.sh) and stops it at the end.
#
#   tests/perf/srun-startup.sh [RUNS]     (default 7)
# from the source tree, with SLUICETEST_BUILDDIR naming the build (default:
# the current folder).  Runs alternate the programs, after one unmeasured
# run of each; every figure is the median over RUNS.  Prints a table, the
# target with PASS/FAIL, and the CSV (also written to srun-startup.csv in the
# current folder).  Exit code 0, 1 if the target failed, 2 if a job failed
# or cannot run, 77 if Slurm or Open MPI is missing.
set -u
runs=${1:-7}
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${SLUICETEST_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${SLUICETEST_BUILDDIR:-$(pwd)}
ranks=8
limit=120
sluice=$builddir/tests/spawn/sluice-spawn-test
mpicc=${MPICC:-mpicc.openmpi}
. "$srcdir/tests/spawn/slurm/cluster.sh"

[ -x "$sluice" ] || { echo "error: $sluice is not built (make check builds it; or make tests/spawn/sluice-spawn-test)"; exit 2; }
command -v "$mpicc" > /dev/null 2>&1 || { echo "SKIP: $mpicc not found (apt-get install libopenmpi-dev, or set MPICC)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-srun-startup.XXXXXX") || exit 2
mpi_empty=$work/srun-startup-mpi
"$mpicc" -O2 -o "$mpi_empty" "$srcdir/tests/perf/srun-startup-mpi.c" || { echo "error: $mpicc failed"; exit 2; }

slurm_cluster_start
case $? in
0) ;;
77) echo "SKIP: $slurm_cluster_why"; rm -rf "$work"; slurm_cluster_stop; exit 77 ;;
*) echo "error: Slurm did not start on this host"; rm -rf "$work"; slurm_cluster_stop; exit 2 ;;
esac
trap 'slurm_cluster_stop; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

# The cases: label, PMI, program and its argument.  srun of /bin/true
# without a PMI shows what srun itself costs.
cases="sluice:pmix:$sluice:empty ompi:pmix:$mpi_empty: sluice-pmi2:pmi2:$sluice:empty srun-true:none:/bin/true:"

# once LABEL PMI PROGRAM ARG: one timed run; appends the seconds to
# $work/LABEL.times.
once() {
    start=$(date +%s.%N)
    SLUICE_JOB_ID=srunstartup$$ timeout -k 5 $limit srun --mpi="$2" -n $ranks "$3" $4 > "$work/$1.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    if [ $rc -ne 0 ]; then
        echo "error: srun --mpi=$2 -n $ranks $3 $4 failed with code $rc:"
        sed 's/^/    /' "$work/$1.log" | tail -n 20
        exit 2
    fi
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f\n", b - a }' >> "$work/$1.times"
}

for_each_case() {
    for c in $cases; do
        IFS=: read -r label pmi program arg <<EOF
$c
EOF
        "$@" "$label" "$pmi" "$program" "$arg"
    done
}
warm() { once "$@"; rm -f "$work/$1.times"; }
for_each_case warm
i=0
while [ $i -lt "$runs" ]; do
    for_each_case once
    i=$((i + 1))
done

# stats LABEL: "median min max" of its times.
stats() {
    sort -n "$work/$1.times" | awk '{ v[NR] = $1 } END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}
csv=srun-startup.csv
echo "case,pmi,ranks,runs,median_s,min_s,max_s" > "$csv"
printf '%-34s %6s %9s %9s %9s\n' "srun --mpi=PMI -n $ranks, empty program" runs median min max
row() {
    set -- "$1" "$2" $(stats "$1")
    printf '%-34s %6s %8ss %8ss %8ss\n' "$1 (--mpi=$2)" "$runs" "$3" "$4" "$5"
    echo "$1,$2,$ranks,$runs,$3,$4,$5" >> "$csv"
}
for_each_case row
s=$(stats sluice | cut -d' ' -f1)
o=$(stats ompi | cut -d' ' -f1)
ratio=$(awk -v s="$s" -v o="$o" 'BEGIN { printf "%.2f", s / o }')
echo "ratio,pmix,$ranks,$runs,$ratio,," >> "$csv"
if awk -v r="$ratio" 'BEGIN { exit !(r <= 1.2) }'; then verdict=PASS; else verdict=FAIL; fi
echo "$verdict: Sluice / Open MPI start-up under srun --mpi=pmix -n $ranks: median ratio $ratio (target <= 1.2)"
echo
cat "$csv"
[ $verdict = PASS ]
