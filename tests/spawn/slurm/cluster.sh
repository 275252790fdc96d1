# tests/spawn/slurm/cluster.sh - a one-node Slurm on localhost for the tests
# (sourced by tests/spawn/slurm.sh and tests/perf/srun-startup.sh).
#
#   slurm_cluster_start   starts munged, slurmctld and slurmd in a fresh
#                         folder with ports nobody listens on, exports
#                         SLURM_CONF and SLURM_OVERCOMMIT=1, waits until the
#                         node is idle.  Returns 0,
#                         77 (the machine lacks Slurm: slurm_cluster_why says
#                         what) or 1 (it did not come up: logs on stderr).
#   slurm_cluster_stop    cancels what is left, waits for the job steps to
#                         end, stops the daemons by PID and removes the folder.
#   slurm_cluster_dir     the folder (logs, configuration, TmpFS).
#   slurm_cluster_cases CASES TRAP
#                         starts the cluster, runs the function CASES under
#                         it (the EXIT trap stops it, then runs TRAP), stops
#                         it and sets the EXIT trap back to TRAP; a machine
#                         without Slurm is a SKIP line, a cluster that did not
#                         come up a failure (`fail`, from the script).
# See /work/shared/RECIPES.md "Slurm on localhost" and spawners/pmi/README.md.

slurm_cluster_dir=
slurm_cluster_why=
slurm_cluster_pids=

# A port no socket uses, in any state: an outgoing connection's ephemeral
# port counts too, since slurmctld's bind fails on it all the same.
slurm_cluster_port_free() {
    ! ss -Htan "sport = :$1" 2>/dev/null | grep -q .
}

# Three consecutive free ports from a pseudo-random start below the kernel's
# ephemeral range (ip_local_port_range), where no outgoing connection of
# another test can take them between this check and the daemons' bind; two
# clusters on one machine (make -j check, another CI run) must not meet.
slurm_cluster_ports() {
    low=32768
    read -r low _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
    [ "$low" -gt 12000 ] 2>/dev/null || low=32768
    tries=0
    while [ $tries -lt 50 ]; do
        base=$(( ( $(od -An -N2 -tu2 /dev/urandom) % (low - 10003) ) + 10000 ))
        if slurm_cluster_port_free $base && slurm_cluster_port_free $((base + 1)) &&
           slurm_cluster_port_free $((base + 2)); then
            echo $base
            return 0
        fi
        tries=$((tries + 1))
    done
    return 1
}

# slurm_cluster_wait SECONDS COMMAND...: runs COMMAND every 0.2 s until it
# succeeds or SECONDS of wall time pass (a Slurm client that cannot reach
# the controller takes seconds per call, so calls are not counted).
slurm_cluster_wait() {
    deadline=$(( $(date +%s) + $1 ))
    shift
    while :; do
        "$@" > /dev/null 2>&1 && return 0
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

slurm_cluster_node_idle() {
    timeout 5 sinfo -h -n "$slurm_cluster_host" -o %t 2>/dev/null | grep -qx idle
}

# True while every daemon started so far runs.
slurm_cluster_alive() {
    for pid in $slurm_cluster_pids; do
        kill -0 "$pid" 2>/dev/null || return 1
    done
}

# Up, or a daemon ended (then slurm_cluster_wait stops waiting at once).
slurm_cluster_up_or_dead() {
    slurm_cluster_node_idle || ! slurm_cluster_alive
}

slurm_cluster_start() {
    for tool in munged slurmctld slurmd srun sinfo squeue scancel sbatch ss; do
        if ! command -v "$tool" > /dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ]; then
            slurm_cluster_why="$tool is not installed (Debian: apt-get install slurm-wlm munge)"
            return 77
        fi
    done
    if [ ! -r /etc/munge/munge.key ]; then
        slurm_cluster_why="/etc/munge/munge.key is missing or unreadable (the munge package creates it; run as root)"
        return 77
    fi
    PATH=$PATH:/usr/sbin
    slurm_cluster_host=$(hostname)
    slurm_cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-slurm.XXXXXX") || return 1
    d=$slurm_cluster_dir
    mkdir -p "$d/state" "$d/spool" "$d/tmp" "$d/munge"
    munged --foreground --force --socket="$d/munge/socket" --key-file=/etc/munge/munge.key \
        --pid-file="$d/munge/pid" --log-file="$d/munge/log" --seed-file="$d/munge/seed" \
        > "$d/munged.out" 2>&1 &
    slurm_cluster_pids=$!
    if ! slurm_cluster_wait 10 test -S "$d/munge/socket"; then
        echo "munged did not start:" >&2
        cat "$d/munged.out" "$d/munge/log" >&2 2>/dev/null
        return 1
    fi

    munged_pid=$slurm_cluster_pids
    # A port can still be taken between the check and the bind (a listener
    # of a test outside this cluster): then the daemon ends at once and the
    # cluster comes up again on other ports.
    attempt=1
    while :; do
        port=$(slurm_cluster_ports) || { echo "no free ports for Slurm" >&2; return 1; }
        slurm_cluster_daemons "$port"
        slurm_cluster_wait 60 slurm_cluster_up_or_dead
        slurm_cluster_node_idle && return 0
        if [ $attempt -lt 3 ] && ! slurm_cluster_alive &&
           grep -qs "Address already in use" "$d"/slurmctld.out "$d"/slurmd.out; then
            echo "Slurm: a port of $port-$((port + 2)) was taken; trying others" >&2
            for pid in $slurm_cluster_pids; do
                [ "$pid" = "$munged_pid" ] && continue
                kill -9 "$pid" 2>/dev/null
                wait "$pid" 2>/dev/null
            done
            slurm_cluster_pids=$munged_pid
            rm -rf "$d/state" "$d/spool" && mkdir -p "$d/state" "$d/spool"
            attempt=$((attempt + 1))
            continue
        fi
        echo "Slurm did not come up within 60 s (sinfo: $(timeout 5 sinfo -h -o '%n %t' 2>&1)):" >&2
        tail -n 20 "$d"/slurmctld.log "$d"/slurmd.log "$d"/*.out >&2 2>/dev/null
        return 1
    done
}

# slurm_cluster_daemons PORT: writes the configuration for ports PORT to
# PORT+2 and starts slurmctld and slurmd in the cluster's folder.
slurm_cluster_daemons() {
    port=$1
    d=$slurm_cluster_dir
    # KillWait: seconds between SIGTERM and SIGKILL when a job is cancelled
    # (30 by default).  TmpFS: the PMIx plugin's folders, which are named by
    # job id and would meet those of another test cluster under /tmp.
    cat > "$d/slurm.conf" <<EOF
ClusterName=sluicetest
SlurmctldHost=$slurm_cluster_host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SrunPortRange=$((port + 2))-$((port + 2))
AuthType=auth/munge
AuthInfo=socket=$d/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
TmpFS=$d/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
KillWait=2
MinJobAge=2
InactiveLimit=0
NodeName=$slurm_cluster_host CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=sluicetest Nodes=$slurm_cluster_host Default=YES MaxTime=INFINITE State=UP
EOF
    # The node has as many CPUs as this machine, the tests run up to 8 ranks:
    # srun may place more tasks than CPUs (sbatch needs -O).
    SLURM_CONF=$d/slurm.conf
    SLURM_OVERCOMMIT=1
    export SLURM_CONF SLURM_OVERCOMMIT
    slurmctld -D -f "$d/slurm.conf" > "$d/slurmctld.out" 2>&1 &
    slurm_cluster_pids="$! $slurm_cluster_pids"
    slurmd -D -f "$d/slurm.conf" > "$d/slurmd.out" 2>&1 &
    slurm_cluster_pids="$! $slurm_cluster_pids"
}

slurm_cluster_stop() {
    [ -n "$slurm_cluster_dir" ] || return 0
    if [ -n "$slurm_cluster_pids" ]; then
        # Only a running controller can cancel; without one a client call
        # would retry for minutes.
        if slurm_cluster_alive; then
            timeout 10 scancel --full --quiet --partition=sluicetest > /dev/null 2>&1
            slurm_cluster_wait 20 sh -c '[ -z "$(timeout 5 squeue -h 2>/dev/null)" ]'
        fi
        # A step's slurmstepd removes its socket from the spool folder when
        # it ends: none left means no step is running on this node.
        slurm_cluster_wait 20 sh -c '! ls "$1"/spool/*_* > /dev/null 2>&1' - "$slurm_cluster_dir"
        for pid in $slurm_cluster_pids; do
            kill "$pid" 2>/dev/null
            slurm_cluster_wait 10 sh -c '! kill -0 "$1"' - "$pid" || kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null  # our child: reap it
        done
        slurm_cluster_pids=
    fi
    rm -rf "$slurm_cluster_dir"
    slurm_cluster_dir=
}

slurm_cluster_cases() {
    slurm_cluster_start
    case $? in
    0)
        # shellcheck disable=SC2064 # TRAP is the caller's, expanded now
        trap "slurm_cluster_stop; $2" EXIT
        "$1"
        slurm_cluster_stop
        # shellcheck disable=SC2064
        trap "$2" EXIT
        ;;
    77) echo "SKIP: srun: $slurm_cluster_why"; slurm_cluster_stop ;;
    *) fail "srun: Slurm did not start on this host (logs above)"; slurm_cluster_stop ;;
    esac
}
