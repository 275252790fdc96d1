#!/bin/sh
# tests/spawn/slurm.sh - spawner pmi under a real Slurm (issue 4): munged,
# slurmctld and slurmd started on this host (tests/spawn/slurm/cluster.sh),
# Sluice programs of 1 to 8 ranks under srun --mpi=pmix and --mpi=pmi2 and
# under sluicerun -spawner=pmi; exit codes, a crash, an abort through the
# PMI, SIGINT to srun and scancel; programs (and MPI programs) sharing with
# Sluice the PMI they initialized; processes started without a PMI refusing
# to run alone; PMIx under Open MPI's mpirun.  spawners/pmi/README.md lists
# the checks.
# Every job runs under a hard time limit with its own SLUICE_JOB_ID (but one,
# where rank 0 draws it); after each, no process of that job and no
# /dev/shm/sluice.<job>.* may be left.
# Exits 77 when Slurm is not installed.
set -u
# The sanitizer subsets leave this to the plain build (tests/README.md,
# Subsets): it keeps .ci/run within its time.
if [ "${SLUICETEST_SUBSET:-}" = tsan ] || [ "${SLUICETEST_SUBSET:-}" = asan ]; then
    echo "SKIP: the Slurm spawner (srun with PMIx and PMI-2): not in the $SLUICETEST_SUBSET subset (runs in the plain build; tests/README.md)"
    exit 77
fi
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
# ASan builds: libpmix's own leftovers at exit are not Sluice's leaks.
export LSAN_OPTIONS="suppressions=$srcdir/tests/spawn/slurm/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
prog=$builddir/tests/spawn/sluice-spawn-test
shared=$builddir/tests/spawn/slurm/sluice-pmi-shared-test
sluicerun=$builddir/sluicerun
limit=60
. "$srcdir/tests/spawn/slurm/cluster.sh"

passed=0 failed=0 skipped=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
skip() { echo "SKIP: $*"; skipped=$((skipped + 1)); }

for p in "$prog" "$shared" "$sluicerun"; do
    [ -x "$p" ] || { echo "FAIL: $p is not built"; exit 1; }
done
slurm_cluster_start
case $? in
0) ;;
77) echo "SKIP: no Slurm on this machine: $slurm_cluster_why"; slurm_cluster_stop; exit 77 ;;
*) echo "FAIL: Slurm did not start on this host (logs above)"; slurm_cluster_stop; exit 1 ;;
esac
trap 'slurm_cluster_stop' EXIT
trap 'exit 130' INT TERM HUP
log=$slurm_cluster_dir/log

# The PMIs both srun and libsluice offer.
pmis=
for pmi in pmix pmi2; do
    if ! srun --mpi=list 2>&1 | grep -qw "$pmi"; then
        skip "srun --mpi=$pmi: this Slurm has no $pmi plugin"
    elif ! "$builddir/sluice-info" --spawners | grep -qw "$pmi"; then
        skip "srun --mpi=$pmi: libsluice was configured without $pmi (see spawners/pmi/README.md)"
    else
        pmis="$pmis $pmi"
    fi
done
[ -n "$pmis" ] || { echo "SKIP: neither PMI is usable here"; exit 77; }
has_pmi() { case " $pmis " in *" $1 "*) return 0 ;; esac; return 1; }

# The processes of job $1 still running our programs (the build's, and those
# built in the cluster's folder): found by path, told from other tests' by
# SLUICETEST_JOB=$1 in their environment (set with SLUICE_JOB_ID, which one
# check leaves unset).
job_processes() {
    for p in $(pgrep -f -- "$builddir/tests/spawn/|$slurm_cluster_dir/"); do
        tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "SLUICETEST_JOB=$1" && echo "$p"
    done
}
job_shm() { ls /dev/shm 2>/dev/null | grep "^sluice\\.$1\\."; }

# clean JOB [PIDS]: waits up to 10 s for the job's processes (and PIDS, the
# pids its ranks printed) to be gone and its shared memory unlinked.  Prints
# what is left, removes it, and fails.
clean() {
    job=$1
    shift
    i=0
    while [ $i -lt 50 ]; do
        left=$(job_processes "$job")
        for p in "$@"; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
        shm=$(job_shm "$job")
        [ -z "$left$shm" ] && return 0
        sleep 0.2
        i=$((i + 1))
    done
    [ -z "$left" ] || echo "    processes left: $left"
    [ -z "$shm" ] || echo "    shared memory left: $shm"
    for p in $left; do kill -9 "$p" 2>/dev/null; done
    for f in $shm; do rm -f "/dev/shm/$f"; done
    return 1
}

# run JOB COMMAND...: COMMAND with SLUICE_JOB_ID=JOB under the time limit;
# sets rc; output in $log.out and $log.err.
run() {
    job=$1
    shift
    started=$(date +%s)
    SLUICETEST_JOB=$job SLUICE_JOB_ID=$job timeout -k 5 $limit "$@" > "$log.out" 2> "$log.err"
    rc=$?
}
# failed_in_time: the job ended with a non-zero code of its own, not by the
# time limit (timeout's 124, or 137 from its SIGKILL).
failed_in_time() {
    [ $rc -ne 0 ] && [ $(( $(date +%s) - started )) -lt $limit ]
}
show() { sed 's/^/    /' "$log.out" "$log.err" | tail -n 20; }

# verdict LABEL JOB OK [PIDS]: PASS if OK is 0 and the job left nothing.
verdict() {
    label=$1 job=$2 ok=$3
    shift 3
    if [ "$ok" -ne 0 ]; then
        fail "$label (exit code $rc; output:)"
        show
        clean "$job" "$@"
    elif ! clean "$job" "$@"; then
        fail "$label left processes or shared memory behind"
    else
        pass "$label"
    fi
}

# check_output K PMI: K lines "rank R of K", each R once, and K ranks that
# bootstrapped over PMI (SLUICE_VERBOSE narration), so no rank ran alone.
check_output() {
    k=$1 pmi=$2
    [ "$(wc -l < "$log.out")" -eq "$k" ] || return 1
    r=0
    while [ $r -lt "$k" ]; do
        [ "$(grep -c "^rank $r of $k " "$log.out")" -eq 1 ] || return 1
        r=$((r + 1))
    done
    [ "$(grep -c "bootstrap $pmi: rank [0-9]* of $k\$" "$log.err")" -eq "$k" ]
}

# srun --mpi=PMI -n K check.  At 8 ranks without SLUICE_JOB_ID, as users
# run srun: rank 0 draws the job id and broadcasts it over the PMI.
for pmi in $pmis; do
    for k in 1 2 4 8; do
        job=slurm$$check$pmi$k
        if [ $k -eq 8 ]; then unset_id="-u SLUICE_JOB_ID"; else unset_id=; fi
        run "$job" env $unset_id SLUICE_VERBOSE=1 srun --mpi="$pmi" -n "$k" "$prog" check
        [ $rc -eq 0 ] && check_output "$k" "$pmi"
        verdict "srun --mpi=$pmi -n $k: $k ranks of a job of $k, each once, over $pmi" "$job" $?
    done
done

# sluicerun -spawner=pmi, with each PMI; what it runs (dry run).
for pmi in $pmis; do
    job=slurm$$sluicerun$pmi
    run "$job" env SLUICE_VERBOSE=1 SLUICE_PMI="$pmi" "$sluicerun" -spawner=pmi -n 4 "$prog" check
    [ $rc -eq 0 ] && check_output 4 "$pmi"
    verdict "sluicerun -spawner=pmi -n 4 with SLUICE_PMI=$pmi" "$job" $?
done
job=slurm$$dryrun
run "$job" env SLUICE_PMI_LAUNCHER="srun -p sluicetest" "$sluicerun" -spawner=pmi -t -N 1 -n 3 "$prog" args "a b" c
want="srun --kill-on-bad-exit=1 -p sluicetest --mpi=pmix --export=ALL -n 3 -N 1 $prog args 'a b' c"
[ $rc -eq 0 ] && [ "$(cat "$log.out")" = "$want" ]
ok=$?
verdict "sluicerun -spawner=pmi -t prints the srun command" "$job" $ok
[ $ok -eq 0 ] || echo "    expected: $want"

# Exit codes: rank 1 calls sluice_exit(3), the job ends with 3.
for pmi in $pmis; do
    job=slurm$$exit$pmi
    run "$job" srun --mpi="$pmi" -n 4 "$prog" exit 3 1
    [ $rc -eq 3 ]
    verdict "srun --mpi=$pmi: sluice_exit(3) on rank 1 ends the job with 3" "$job" $?
done
job=slurm$$exitsluicerun
run "$job" "$sluicerun" -spawner=pmi -n 4 "$prog" exit 3 1
[ $rc -eq 3 ]
verdict "sluicerun -spawner=pmi: sluice_exit(3) on rank 1 ends the job with 3" "$job" $?

# A crash (SIGSEGV on rank 1) ends the job with a non-zero code before the
# time limit.  Under pmi2 srun ends the step only with --kill-on-bad-exit
# (sluicerun passes it; spawners/pmi/README.md, known problems).
for pmi in $pmis; do
    job=slurm$$crash$pmi
    if [ "$pmi" = pmi2 ]; then kill_flag=--kill-on-bad-exit=1; else kill_flag=; fi
    run "$job" srun $kill_flag --mpi="$pmi" -n 4 "$prog" crash 1
    failed_in_time
    verdict "srun $kill_flag${kill_flag:+ }--mpi=$pmi: a crash of rank 1 ends the job (code $rc)" "$job" $?
done
for pmi in $pmis; do
    job=slurm$$crashsluicerun$pmi
    run "$job" env SLUICE_PMI="$pmi" "$sluicerun" -spawner=pmi -n 4 "$prog" crash 1
    failed_in_time
    verdict "sluicerun -spawner=pmi with $pmi: a crash of rank 1 ends the job (code $rc)" "$job" $?
done

# hang_start JOB COMMAND...: starts COMMAND in the background under the time
# limit and waits (up to 30 s) until its 4 ranks print "ready R pid P".
# Sets tpid (timeout's pid), lpid (the launcher's) and pids (the ranks').
# If they do not start, reports the failure, ends the job and returns 1.
hang_start() {
    job=$1
    shift
    started=$(date +%s)
    : > "$log.out"  # now: the background job's own redirection comes later
    SLUICETEST_JOB=$job SLUICE_JOB_ID=$job timeout -k 5 $limit "$@" > "$log.out" 2> "$log.err" &
    tpid=$!
    i=0
    while [ $i -lt 150 ] && [ "$(grep -c '^ready' "$log.out")" -lt 4 ]; do
        sleep 0.2
        i=$((i + 1))
    done
    lpid=$(pgrep -P $tpid | head -n 1)  # timeout's child: the launcher
    pids=$(awk '/^ready/ { print $4 }' "$log.out")
    [ "$(echo $pids | wc -w)" -eq 4 ] && [ -n "$lpid" ] && return 0
    kill $tpid 2>/dev/null
    hang_wait
    verdict "$*: 4 ranks of hang start" "$job" 1 $pids
    return 1
}
# hang_wait: waits for the launcher (the time limit bounds it); sets rc.
hang_wait() {
    wait $tpid
    rc=$?
}

# SIGINT to srun: srun wants a second one within a second to end the step
# (the first prints the tasks' state); every rank must go.
for pmi in $pmis; do
    job=slurm$$sigint$pmi
    hang_start "$job" srun --mpi="$pmi" -n 4 "$prog" hang || continue
    kill -INT "$lpid"
    sleep 0.5
    kill -INT "$lpid" 2>/dev/null
    hang_wait
    failed_in_time
    verdict "srun --mpi=$pmi: SIGINT twice to srun ends every rank (code $rc)" "$job" $? $pids
done

# abort(code) through the PMI: rank 2 is stopped, rank 1 gets SIGTERM; its
# exit coordination times out (SLUICE_EXIT_TIMEOUT=1) and it aborts the job
# with 143 (PMIx_Abort, PMI2_Abort).  srun must kill the stopped rank, and
# the code must reach srun: a task exits with 143, none with 1 (PMI2_Abort
# itself would exit with 1).  Which tasks srun names is timing: the host may
# kill rank 1 inside PMIx_Abort (the standard allows it), and then the 143
# is that of the ranks srun's SIGTERM ended.
for pmi in $pmis; do
    job=slurm$$abort$pmi
    hang_start "$job" env SLUICE_EXIT_TIMEOUT=1 srun --mpi="$pmi" -n 4 "$prog" hang || continue
    kill -STOP "$(awk '$2 == 2 { print $4 }' "$log.out")"
    kill -TERM "$(awk '$2 == 1 { print $4 }' "$log.out")"
    hang_wait
    failed_in_time && grep -q "Exited with exit code 143$" "$log.err" \
        && ! grep -q "Exited with exit code 1$" "$log.err"
    verdict "srun --mpi=$pmi: a rank aborts the job through $pmi with its code (srun: $rc)" "$job" $? $pids
done

# scancel of a running job: a step srun runs in the background, and a batch
# job whose script runs srun.
for pmi in $pmis; do
    job=slurm$$scancel$pmi
    hang_start "$job" srun -J "$job" --mpi="$pmi" -n 4 "$prog" hang || continue
    id=$(squeue -h -n "$job" -o %i)
    scancel "$id"
    hang_wait
    [ -n "$id" ] && failed_in_time
    verdict "scancel of job $id (srun --mpi=$pmi -n 4) leaves nothing behind" "$job" $? $pids
done
pmi=${pmis##* }
job=slurm$$sbatch
batch_out=$slurm_cluster_dir/$job.out
id=$(SLUICETEST_JOB=$job SLUICE_JOB_ID=$job sbatch --parsable -O -J "$job" -n 4 -o "$batch_out" \
     --wrap "exec srun --mpi=$pmi $prog hang" 2> "$log.err")
i=0
while [ $i -lt 150 ] && [ "$(grep -c '^ready' "$batch_out" 2>/dev/null)" != 4 ]; do
    sleep 0.2
    i=$((i + 1))
done
pids=$(awk '/^ready/ { print $4 }' "$batch_out" 2>/dev/null)
rc=0
[ -n "$id" ] && [ "$(echo $pids | wc -w)" -eq 4 ] || rc=1
[ -n "$id" ] && scancel "$id"
i=0
while [ -n "$id" ] && [ $i -lt 100 ] && [ -n "$(squeue -h -j "$id" 2>/dev/null)" ]; do
    sleep 0.2
    i=$((i + 1))
done
[ -n "$id" ] && [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] || rc=1
cp "$batch_out" "$log.out" 2>/dev/null
[ $rc -eq 0 ]
verdict "scancel of batch job ${id:-?} (srun --mpi=$pmi -n 4 in the script) leaves nothing behind" "$job" $? $pids

# The program initialized the PMI itself (as an MPI does): Sluice shares it,
# and after sluice_finalize it still works.
for mode in pmix-first pmix-after pmi2-first; do
    pmi=${mode%%-*}
    has_pmi "$pmi" || continue
    job=slurm$$shared$mode
    run "$job" env SLUICE_VERBOSE=1 srun --mpi="$pmi" -n 2 "$shared" "$mode"
    [ $rc -eq 0 ] && [ "$(grep -c "of 2 $mode ok" "$log.out")" -eq 2 ] &&
        { [ $mode = pmix-after ] || [ "$(grep -c 'shared' "$log.err")" -eq 2 ]; }
    verdict "srun --mpi=$pmi: $mode: Sluice shares the program's $pmi and leaves it working" "$job" $?
done

# MPI programs that also use Sluice, linked with libsluice only, built here
# with each MPI's mpicc.  Open MPI under --mpi=pmix: both use the one libpmix,
# in either order of initialization.  MPICH under --mpi=pmi2: its built-in
# PMI client holds srun's socket, so Sluice must not open a second one: it
# stops at once naming libsluice-mpi, and with SLUICE_SPAWNER=mpi (which
# loads libsluice-mpi-mpich) bootstraps over MPI.
hybrid_build() {
    out=$slurm_cluster_dir/hybrid-$1
    "$2" -I"$srcdir/include" -o "$out" "$srcdir/tests/spawn/slurm/hybrid.c" -L"$builddir/.libs" -lsluice \
        -Wl,-rpath,"$builddir/.libs" > "$log.err" 2>&1 && echo "$out"
}
# hybrid_output: 4 lines, MPI and Sluice agree on each rank.
hybrid_output() {
    [ "$(wc -l < "$log.out")" -eq 4 ] || return 1
    for r in 0 1 2 3; do
        [ "$(grep -c "^mpi $r of 4 sluice $r of 4\$" "$log.out")" -eq 1 ] || return 1
    done
}
# mpi_flavor_usable LABEL: sets flavor, pmi and mpicc from $pair
# (flavor:pmi); false, with the reason as a SKIP, when this MPI cannot run
# here under srun.
mpi_flavor_usable() {
    flavor=${pair%%:*} pmi=${pair#*:}
    mpicc=$(command -v "mpicc.$flavor" || true)
    if ! has_pmi "$pmi"; then
        skip "$flavor $1: libsluice or srun has no $pmi"
    elif [ -z "$mpicc" ]; then
        skip "$flavor $1: mpicc.$flavor is not installed"
    elif nm -D --undefined-only "$builddir/.libs/libsluice.so" 2> /dev/null | grep -qE ' __(a|t|ub)san_'; then
        # A program built by plain mpicc cannot link an instrumented
        # libsluice (tests/install/install.sh says the same).
        skip "$flavor $1: a sanitizer build (mpicc adds no sanitizer runtime)"
    else
        return 0
    fi
    return 1
}
for pair in openmpi:pmix mpich:pmi2; do
    mpi_flavor_usable hybrid || continue
    hybrid=$(hybrid_build "$flavor" "$mpicc")
    if [ -z "$hybrid" ]; then
        fail "$flavor hybrid: $mpicc cannot build tests/spawn/slurm/hybrid.c:"
        show
        continue
    fi
    # The mpi conduit (src/conduits/mpi) under srun: SLUICE_SPAWNER=mpi
    # loads the libsluice-mpi of the program's MPI, whose conduit carries the
    # program's ring of Puts (each rank's stats line counts them).
    job=slurm$$hybrid${flavor}conduit
    if [ "$flavor" = openmpi ] || [ -e "$builddir/.libs/libsluice-mpi-mpich.so.0" ]; then
        run "$job" env SLUICE_SPAWNER=mpi SLUICE_NETWORK=mpi SLUICE_ROUTE=network SLUICE_MPI_STATS=1 \
            srun --mpi="$pmi" -n 4 "$hybrid"
        [ $rc -eq 0 ] && hybrid_output && [ "$(grep -cE '^sluice\[rank [0-3]\] mpi \(.*(writes|received) [1-9]' "$log.err")" -eq 4 ]
        verdict "srun --mpi=$pmi: $flavor, SLUICE_NETWORK=mpi: the mpi conduit carries the job" "$job" $?
    else
        skip "$flavor, SLUICE_NETWORK=mpi: libsluice-mpi-mpich is not built"
    fi
    if [ "$flavor" = openmpi ]; then
        for order in mpi-first sluice-first; do
            job=slurm$$hybrid$flavor$order
            run "$job" srun --mpi="$pmi" -n 4 "$hybrid" "$order"
            [ $rc -eq 0 ] && hybrid_output
            verdict "srun --mpi=$pmi: Open MPI and Sluice share PMIx ($order)" "$job" $?
        done
        continue
    fi
    job=slurm$$hybrid$flavor
    run "$job" srun --kill-on-bad-exit=1 --mpi="$pmi" -n 4 "$hybrid"
    failed_in_time && grep -q "libsluice-mpi" "$log.err"
    verdict "srun --mpi=$pmi: MPICH holds the PMI socket; Sluice stops at once naming libsluice-mpi" "$job" $?
    if [ -e "$builddir/.libs/libsluice-mpi-mpich.so.0" ]; then
        job=slurm$$hybrid${flavor}mpi
        run "$job" env SLUICE_SPAWNER=mpi srun --mpi="$pmi" -n 4 "$hybrid"
        [ $rc -eq 0 ] && hybrid_output
        verdict "srun --mpi=$pmi: MPICH with SLUICE_SPAWNER=mpi bootstraps Sluice over MPI" "$job" $?
    else
        skip "MPICH with SLUICE_SPAWNER=mpi: libsluice-mpi-mpich is not built"
    fi
done

# The hybrid MPI + OpenSHMEM example (contrib/examples/shmem_halo.c) under
# srun, MPI ranks being PEs: Open MPI over PMIx with either call first, and
# MPICH over PMI-2 with SLUICE_SPAWNER=mpi (its PMI client holds the socket).
shmem_build() {
    out=$slurm_cluster_dir/shmem_halo-$1
    "$2" -I"$srcdir/include" -o "$out" "$srcdir/contrib/examples/shmem_halo.c" -L"$builddir/.libs" \
        -lsluice-shmem -lsluice -lm -Wl,-rpath,"$builddir/.libs" > "$log.err" 2>&1 && echo "$out"
}
shmem_run() {
    job=slurm$$shmem$1$3
    run "$job" env $2 srun --mpi="$pmi" -n 4 "$halo" "$3"
    [ $rc -eq 0 ] && grep -q "^shmem_halo: 4 PEs, residual" "$log.out"
    verdict "srun --mpi=$pmi: OpenSHMEM and $1 in one program ($3${2:+, $2})" "$job" $?
}
for pair in openmpi:pmix mpich:pmi2; do
    mpi_flavor_usable "+ OpenSHMEM" || continue
    if [ "$flavor" = mpich ] && [ ! -e "$builddir/.libs/libsluice-mpi-mpich.so.0" ]; then
        skip "MPICH + OpenSHMEM: libsluice-mpi-mpich is not built (SLUICE_SPAWNER=mpi needs it)"
        continue
    fi
    halo=$(shmem_build "$flavor" "$mpicc")
    if [ -z "$halo" ]; then
        fail "$flavor + OpenSHMEM: $mpicc cannot build contrib/examples/shmem_halo.c:"
        show
        continue
    fi
    spawner=
    [ "$flavor" = openmpi ] || spawner=SLUICE_SPAWNER=mpi
    for order in mpi-first shmem-first; do shmem_run "$flavor" "$spawner" "$order"; done
done

# Singleton by mistake: srun without a PMI starts 2 processes that cannot
# reach each other; each must stop and name the fix, not run alone.
job=slurm$$nopmi
run "$job" srun --mpi=none -n 2 "$prog" check
failed_in_time && grep -q -- "--mpi=pmix" "$log.err" && ! grep -q "^rank 0 of 1 " "$log.out"
verdict "srun --mpi=none -n 2: the ranks refuse to run as singletons and name srun --mpi=pmix" "$job" $?

# PMIx served by Open MPI's mpirun (no Slurm involved).
mpirun=$(command -v mpirun.openmpi || true)
if [ -z "$mpirun" ] && "${SLUICETEST_MPIRUN:-false}" --version 2>&1 | grep -q "Open MPI"; then
    mpirun=$SLUICETEST_MPIRUN
fi
if ! has_pmi pmix; then
    skip "Open MPI's mpirun: libsluice has no PMIx bootstrap"
elif [ -z "$mpirun" ]; then
    skip "Open MPI's mpirun is not installed (apt-get install openmpi-bin)"
else
    job=slurm$$ompi
    run "$job" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SLUICE_VERBOSE=1 \
        "$mpirun" --oversubscribe -n 4 "$prog" check
    [ $rc -eq 0 ] && check_output 4 pmix
    verdict "Open MPI's mpirun -n 4: the ranks bootstrap over its PMIx server" "$job" $?
fi

echo "slurm.sh: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
