# tests/install/common.sh - helpers shared by install.sh and prefix.sh
# (sourced).  The sourcing script defines pass and fail, and sets tmp (a
# scratch directory), job_tag (a prefix for job ids) and job_libpath (put
# before LD_LIBRARY_PATH for every job; empty: none).

# show FILE: the end of a log, indented.
show() { tail -12 "$1" | sed 's/^/    /'; }

# Each job gets its own id, so its shared-memory names can be told from those
# of other tests running at the same time (make -j check).
jobs=0
shm_of() { ls /dev/shm 2>/dev/null | grep "^sluice\\.$1\\." | sort; }

# run_job LABEL EXPECT command...: run one job under the hard time limit; it
# must exit 0, print a line matching EXPECT and leave no shared memory behind.
run_job() {
    rl=$1 expect=$2; shift 2
    jobs=$((jobs + 1))
    job="$job_tag$$j$jobs"
    if [ -n "$job_libpath" ]; then
        SLUICE_JOB_ID=$job LD_LIBRARY_PATH="$job_libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            timeout -k 5 60 "$@" > "$tmp/job.log" 2>&1
    else
        SLUICE_JOB_ID=$job timeout -k 5 60 "$@" > "$tmp/job.log" 2>&1
    fi
    rc=$?
    left=$(shm_of "$job")
    if [ $rc -ne 0 ]; then
        fail "$rl: exit code $rc; log:"; show "$tmp/job.log"
    elif ! grep -q "$expect" "$tmp/job.log"; then
        fail "$rl: no line matching '$expect'; log:"; show "$tmp/job.log"
    elif [ -n "$left" ]; then
        fail "$rl: left shared memory behind:" $left
    else
        pass "$rl: $(grep "$expect" "$tmp/job.log" | head -1)"
    fi
    for f in $left; do rm -f "/dev/shm/$f"; done
}

# build LABEL OUTPUT command...: one compile and link, its log shown on failure.
build() {
    bl=$1 out=$2; shift 2
    if "$@" > "$tmp/build.log" 2>&1 && [ -x "$out" ]; then
        return 0
    fi
    fail "$bl: build failed: $*"; show "$tmp/build.log"
    return 1
}

# mpi_name MPIRUN: the MPI library an mpirun belongs to, as consumer_mpi prints it.
mpi_name() { if "$1" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then echo "Open MPI"; else echo "MPICH"; fi; }
# Open MPI refuses more ranks than cores unless told; MPICH's hydra
# oversubscribes by itself and knows no such option.
oversubscribe() { if [ "$(mpi_name "$1")" = "Open MPI" ]; then echo --oversubscribe; fi; }
first_of() { for p in "$@"; do if command -v "$p" > /dev/null 2>&1; then command -v "$p"; return; fi; done; }
