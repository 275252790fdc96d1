# tests/spawn/ssh/hosts.sh - several ssh hosts on one machine, for
# tests/spawn/ssh.sh and tests/perf/ssh-startup.sh (sourced, bash).
#
#   ssh_hosts_skip_reason   why this machine cannot (not root, no sshd, no
#                           `ip netns`, no bridge); empty when it can
#   ssh_hosts_own_names=1   (set before ssh_hosts_start, opt-in) each of A,
#                           B, C runs its sshd in its own UTS namespace with
#                           its own host name, sluice-a, sluice-b, sluice-c,
#                           so ranks started there see three hosts; unset,
#                           every host shares this machine's name
#   ssh_host_letters="A B C ..."  (set before ssh_hosts_start, opt-in)
#                           the hosts to make, up to 8 of A to H; unset:
#                           A B C (tests/scale/scale.sh takes 8)
#   ssh_hosts_start         an sshd on 127.0.0.1 (a high port), and three
#                           network namespaces A, B, C on one bridge in a
#                           fourth, the hub, each host running its own sshd
#                           (same port, key login); sets the variables below
#   ssh_hosts_stop          stops every sshd by pid, deletes the namespaces
#                           and the temporary folder (safe to call twice)
#   ssh_autogroup hold|release
#                           scheduler autogroups off while any run has its
#                           hosts up (ssh_hosts_start holds, ssh_hosts_stop
#                           releases; below)
#   in_hub CMD...           runs CMD in the hub (where sluicerun runs to
#                           reach A, B and C); in_host X CMD in namespace X
#
#   ssh_hosts_begin WHAT    what both scripts start with: SKIP (exit 77)
#                           when the machine cannot, $sluicerun and $prog
#                           checked, the hosts started and stopped at exit,
#                           SLUICE_SSH_NODES set to them
#   ssh_hosts_conduit_begin CONDUIT WHAT [PROGRAM...]
#                           what a conduit's test across hosts starts with:
#                           $builddir set, SKIP (exit 77) when the build has
#                           no CONDUIT, then ssh_hosts_begin WHAT; $mp and
#                           $exitprog (sluice-mp-test, sluice-exit-test) and
#                           each PROGRAM checked to be built
#   ssh_hosts_scale         $scale (what its time limits are multiplied by)
#                           and $quick (1: the shorter list) for sanitizer
#                           builds and SLUICETEST_SUBSET
#   elapsed START [DIGITS]  seconds since START (a `date +%s.%N`), 2 decimals
#                           unless given
#   netns_stale_remove RE   deletes the network namespaces whose name matches
#                           the extended regular expression RE, its group 1
#                           the pid of the script that made them, when that
#                           pid is gone (a run killed by SIGKILL runs no
#                           trap), killing what still runs in them first;
#                           ssh_hosts_start does it for its own names
#
# After ssh_hosts_start:
#   ssh_work                the temporary folder (keys, configs, logs)
#   ssh_port                the port every sshd listens on
#   ssh_hosts               "10.213.47.11,10.213.47.12,10.213.47.13" (A, B, C)
#   ssh_hub_address         10.213.47.1, the hub's address on the bridge
#   ssh_host_names          "sluice-a sluice-b sluice-c" with
#                           ssh_hosts_own_names=1, else empty
#   SLUICE_SSH_OPTIONS      exported: port, key, a private known_hosts file
# Addresses are from 10.213.47.0/24, which exists only inside these
# namespaces, so nothing outside them is ever contacted.

ssh_net=10.213.47
ssh_sshd=/usr/sbin/sshd
ssh_pids=""
ssh_namespaces=""
ssh_work=""
ssh_host_names=""

ssh_hosts_skip_reason() {
    if [ "$(id -u)" != 0 ]; then echo "not root (network namespaces and sshd need it)"; return; fi
    if [ ! -x "$ssh_sshd" ]; then echo "no $ssh_sshd (apt-get install openssh-server)"; return; fi
    if ! command -v ssh > /dev/null; then echo "no ssh client (apt-get install openssh-client)"; return; fi
    if ! command -v ssh-keygen > /dev/null; then echo "no ssh-keygen"; return; fi
    if ! ip netns list > /dev/null 2>&1; then echo "no \`ip netns\` (apt-get install iproute2)"; return; fi
    if [ "${ssh_hosts_own_names:-0}" = 1 ] && ! command -v unshare > /dev/null; then
        echo "no unshare (apt-get install util-linux)"
        return
    fi
    local probe="slprobe$$"
    if ! ip netns add "$probe" 2> /dev/null; then echo "cannot create a network namespace"; return; fi
    if ! ip -n "$probe" link add slbr type bridge 2> /dev/null; then
        ip netns del "$probe"
        echo "no bridge support in this kernel"
        return
    fi
    ip netns del "$probe"
}

in_hub() { ip netns exec "$ssh_hub" "$@"; }
in_host() {
    local ns=$1
    shift
    ip netns exec "sl$$$ns" "$@"
}

# sshd_start NAME ADDRESS [NAMESPACE [HOSTNAME]]: one sshd, its pid added to
# ssh_pids; with HOSTNAME, in a new UTS namespace of that host name.
# SetEnv SHLVL=1: bash, the user's shell that runs each session's command,
# then counts itself nested and skips ~/.bashrc, which it otherwise reads
# when started by sshd.  The rc file is the machine's, not under test, and
# a slow one (pyenv's init here) would add its start-up to every job's
# ssh sessions, which start at once on few cores.
sshd_start() {
    local name=$1 address=$2 ns=${3:-} hostname=${4:-} config="$ssh_work/sshd-$1.conf"
    cat > "$config" <<EOF
Port $ssh_port
ListenAddress $address
HostKey $ssh_work/host_key
PidFile $ssh_work/sshd-$name.pid
AuthorizedKeysFile $ssh_work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
SetEnv SHLVL=1
EOF
    rm -f "$ssh_work/sshd-$name.pid"
    if [ -n "$hostname" ]; then
        # sshd and every session it starts keep the namespace and its name.
        ip netns exec "$ns" unshare --uts sh -c 'hostname "$1" && exec "$2" -f "$3" -E "$4"' sh \
            "$hostname" "$ssh_sshd" "$config" "$ssh_work/sshd-$name.log" || return 1
    elif [ -n "$ns" ]; then
        ip netns exec "$ns" "$ssh_sshd" -f "$config" -E "$ssh_work/sshd-$name.log" || return 1
    else
        "$ssh_sshd" -f "$config" -E "$ssh_work/sshd-$name.log" || return 1
    fi
    local i
    for i in $(seq 50); do
        if [ -s "$ssh_work/sshd-$name.pid" ]; then
            ssh_pids="$ssh_pids $(cat "$ssh_work/sshd-$name.pid")"
            return 0
        fi
        sleep 0.1
    done
    return 1
}

netns_stale_remove() {
    local ns pid p
    for ns in $(ip netns list 2> /dev/null | cut -d' ' -f1); do
        [[ $ns =~ $1 ]] || continue
        pid=${BASH_REMATCH[1]}
        # The pid alive (this run, another run, or a reused pid): kept.
        kill -0 "$pid" 2> /dev/null && continue
        for p in $(ip netns pids "$ns" 2> /dev/null); do kill -9 "$p" 2> /dev/null; done
        ip netns del "$ns" 2> /dev/null && echo "removed network namespace $ns, left by a killed run (pid $pid)"
    done
}

# The namespace hosts share this machine's scheduler.  With autogroups on
# (kernel.sched_autogroup_enabled=1, Debian's default) every sshd session
# is a scheduling group of its own, and the kernel shares the cores
# between the groups before it shares them between their processes: each
# host's ranks get 1/H of the cores however many of them are runnable, and
# a rank woken by a message waits for its host's turn.  That is not H hosts
# with cores of their own (docs/scale.md, "Over 8 namespace hosts": a
# 64-rank stencil took 0.3-2.9 s with autogroups, 0.05-0.06 s without), so
# they are off while any run of this file has its hosts up; the value from
# before the first comes back when the last stops.  The holders are pids in
# a list, dead ones dropped at each call, so a run killed by SIGKILL keeps
# them off only until the next run stops.
ssh_autogroup_knob=/proc/sys/kernel/sched_autogroup_enabled
ssh_autogroup_state=/run/sluice-autogroup
ssh_autogroup() {
    [ -w "$ssh_autogroup_knob" ] || return 0
    (
        flock 9 || exit 0
        local pid holders=""
        for pid in $(cat "$ssh_autogroup_state.pids" 2> /dev/null); do
            [ "$pid" != $$ ] && kill -0 "$pid" 2> /dev/null && holders="$holders $pid"
        done
        if [ "$1" = hold ]; then
            # The first holder keeps the value to restore (one a killed
            # run saved is still the value from before it).
            [ -z "$holders" ] && [ ! -s "$ssh_autogroup_state.saved" ] &&
                cat "$ssh_autogroup_knob" > "$ssh_autogroup_state.saved"
            holders="$holders $$"
            echo 0 > "$ssh_autogroup_knob"
        elif [ -z "$holders" ] && [ -s "$ssh_autogroup_state.saved" ]; then
            cat "$ssh_autogroup_state.saved" > "$ssh_autogroup_knob"
            rm -f "$ssh_autogroup_state.saved"
        fi
        echo $holders > "$ssh_autogroup_state.pids"
    ) 9> "$ssh_autogroup_state.lock"
}

ssh_hosts_start() {
    netns_stale_remove '^sl([0-9]+)(hub|[A-H])$'
    ssh_autogroup hold
    ssh_work=$(mktemp -d /tmp/sluice-ssh.XXXXXX) || return 1
    ssh-keygen -q -t ed25519 -N '' -f "$ssh_work/host_key" || return 1
    ssh-keygen -q -t ed25519 -N '' -f "$ssh_work/user_key" || return 1
    cp "$ssh_work/user_key.pub" "$ssh_work/authorized_keys"
    mkdir -p /run/sshd
    # A high port that is free on 127.0.0.1 (the namespaces have their own).
    local tries
    for tries in 1 2 3 4 5 6 7 8; do
        ssh_port=$((20000 + (RANDOM % 20000)))
        sshd_start localhost 127.0.0.1 && break
        ssh_port=""
    done
    [ -n "$ssh_port" ] || { echo "cannot start sshd on 127.0.0.1 (see $ssh_work/sshd-localhost.log)"; return 1; }

    ssh_hub="sl$$hub"
    ip netns add "$ssh_hub" || return 1
    ssh_namespaces="$ssh_hub"
    ip -n "$ssh_hub" link add br0 type bridge
    ip -n "$ssh_hub" addr add "$ssh_net.1/24" dev br0
    ip -n "$ssh_hub" link set br0 up
    ip -n "$ssh_hub" link set lo up
    ssh_hub_address="$ssh_net.1"
    ssh_hosts=""
    ssh_host_names=""
    local name number=11 hostname=""
    for name in ${ssh_host_letters:-A B C}; do
        local ns="sl$$$name"
        ip netns add "$ns" || return 1
        ssh_namespaces="$ssh_namespaces $ns"
        # Both ends are made inside the namespaces: the machine's own network
        # is never touched.
        ip -n "$ns" link add eth0 type veth peer name "to$name" netns "$ssh_hub" || return 1
        ip -n "$ns" addr add "$ssh_net.$number/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        ip -n "$ssh_hub" link set "to$name" master br0
        ip -n "$ssh_hub" link set "to$name" up
        if [ "${ssh_hosts_own_names:-0}" = 1 ]; then
            hostname="sluice-${name,,}"
            ssh_host_names="$ssh_host_names${ssh_host_names:+ }$hostname"
        fi
        sshd_start "$name" "$ssh_net.$number" "$ns" "$hostname" ||
            { echo "cannot start sshd in $ns (see $ssh_work/sshd-$name.log)"; return 1; }
        ssh_hosts="$ssh_hosts${ssh_hosts:+,}$ssh_net.$number"
        number=$((number + 1))
    done
    export SLUICE_SSH_OPTIONS="-p $ssh_port -i $ssh_work/user_key -l root -o UserKnownHostsFile=$ssh_work/known_hosts \
-o StrictHostKeyChecking=accept-new -o LogLevel=ERROR"
    # Every sshd answers before the tests begin.
    local host
    for host in ${ssh_hosts//,/ }; do
        in_hub ssh $SLUICE_SSH_OPTIONS -o BatchMode=yes "$host" true ||
            { echo "cannot ssh to $host from the hub"; return 1; }
    done
    ssh $SLUICE_SSH_OPTIONS -o BatchMode=yes 127.0.0.1 true || { echo "cannot ssh to 127.0.0.1"; return 1; }
}

ssh_hosts_stop() {
    local pid ns
    for pid in $ssh_pids; do kill "$pid" 2> /dev/null; done
    for pid in $ssh_pids; do
        for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2> /dev/null
    done
    ssh_pids=""
    for ns in $ssh_namespaces; do ip netns del "$ns" 2> /dev/null; done
    ssh_namespaces=""
    [ -n "$ssh_work" ] && rm -rf "$ssh_work"
    ssh_work=""
    ssh_autogroup release
}

# The processes of job $1 ("pid command line", the line cut at $2
# characters, 120 unless given): ranks and ssh clients (their environment names
# the job) and control processes (their command line does: an argument
# holding --job=$1 at its end or before a space).  One grep over every
# process's environment and one over every command line: a process per
# process would cost seconds a call on a loaded machine.
job_processes() {
    local f pid
    {
        env -u SLUICE_JOB_ID grep -lsaF "SLUICE_JOB_ID=$1" /proc/[0-9]*/environ
        grep -lszE -- "--job=$1( |\$)" /proc/[0-9]*/cmdline
    } | sort -u -t/ -k3,3n | while IFS= read -r f; do
        pid=${f#/proc/}
        pid=${pid%/*}
        [ "$pid" = "$$" ] && continue
        echo "$pid $(tr "\\0" " " 2> /dev/null < "/proc/$pid/cmdline" | cut -c1-"${2:-120}")"
    done
}

# The pid of the first process of job $1 whose command line matches the
# extended regular expression $2.
job_process_find() {
    local line
    job_processes "$1" 10000 | while read -r line; do
        if printf '%s\n' "${line#* }" | grep -qE -- "$2"; then
            echo "${line%% *}"
            break
        fi
    done
}

# sshd session processes still open (children of the test's sshds), read
# from every /proc/PID/stat at once ("pid (comm) state ppid ...": the comm
# may hold spaces and parentheses, so the match takes the last ") ").
ssh_sessions() {
    [ -n "$ssh_pids" ] || return 0
    sed -n 's/^\([0-9]*\) (.*) [A-Za-z] \([0-9]*\) .*/\1 \2/p' /proc/[0-9]*/stat 2> /dev/null |
        awk -v parents=" $ssh_pids " 'index(parents, " " $2 " ") { print $1 }'
}

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" -v d="${2:-2}" 'BEGIN { printf "%.*f\n", d, b - a }'; }

ssh_hosts_begin() {
    local reason
    reason=$(ssh_hosts_skip_reason)
    if [ -n "$reason" ]; then
        echo "SKIP: $1: $reason"
        exit 77
    fi
    sluicerun="${SLUICETEST_BUILDDIR:?}/sluicerun"
    prog="$SLUICETEST_BUILDDIR/tests/spawn/sluice-spawn-test"
    if [ ! -x "$prog" ]; then
        echo "FAIL: $prog is not built"
        exit 1
    fi
    # The control process is a hidden mode of sluicerun (spawners/ssh/node.hpp).
    if ! "$sluicerun" --ssh-node < /dev/null 2>&1 | grep -q "no job came on stdin"; then
        echo "FAIL: $sluicerun has no --ssh-node mode (the hook in spawners/sluicerun.cpp's main is missing)"
        exit 1
    fi
    trap 'ssh_hosts_stop' EXIT
    trap 'exit 1' INT TERM HUP
    if ! ssh_hosts_start; then
        echo "FAIL: could not set up the sshds and namespaces"
        exit 1
    fi
    export SLUICE_SSH_NODES=$ssh_hosts
    unset SLUICE_SSH_NODEFILE SLUICE_SSH_OUT_DEGREE SLUICE_SSH_REMOTE_CMD SLUICE_SSH_CMD SLURM_JOB_NODELIST PBS_NODEFILE
}

ssh_hosts_conduit_begin() {
    builddir=${SLUICETEST_BUILDDIR:?}
    if ! "$builddir/sluice-info" --conduits 2> /dev/null | grep -qE "^ +$1 +"; then
        echo "SKIP: $2: the $1 conduit is not in this build (sluice-info --conduits)"
        exit 77
    fi
    # The sanitizer subsets run the conduit's code between ranks on one host
    # (the mp, exit and conformance suites over SLUICE_ROUTE=network); what
    # the namespaces add (a veth, sshd, the ssh spawner) runs in the plain
    # build, within CI's time.
    case ${SLUICETEST_SUBSET:-} in
    asan | tsan)
        echo "SKIP: $2: not in the $SLUICETEST_SUBSET subset (runs in the plain build; tests/README.md)"
        exit 77 ;;
    esac
    ssh_hosts_begin "$2"
    mp="$builddir/tests/mp/sluice-mp-test"
    exitprog="$builddir/tests/exit/sluice-exit-test"
    local p
    for p in "$mp" "$exitprog" "${@:3}"; do
        [ -x "$p" ] || { echo "FAIL: $p is not built"; exit 1; }
    done
}

ssh_hosts_scale() {
    scale=1 quick=0
    case $(sed -n 's/^SANITIZER_FLAGS = //p' "${SLUICETEST_BUILDDIR:?}/Makefile" 2> /dev/null) in
    *thread*) scale=6 quick=1 ;;
    *-fsanitize*) scale=3 quick=1 ;;
    esac
    [ -n "${SLUICETEST_SUBSET:-}" ] && quick=1
}

# ssh_split_args [ENV-ARGS...] -- ARGS...: sets the arrays env_args (what
# comes before --) and case_args (what comes after), for the scripts' job
# helpers.
ssh_split_args() {
    env_args=()
    while [ "$1" != -- ]; do
        env_args+=("$1")
        shift
    done
    shift
    case_args=("$@")
}

# ssh_hub_sluicerun JOB LIMIT [ENV-ARGS...] -- ARGS...: `sluicerun
# -spawner=ssh ${ssh_hub_options[@]} ARGS` in the hub as job JOB, under a hard
# limit of LIMIT seconds, output in $out and $err.  ENV-ARGS go to env(1):
# VAR=value, or -u VAR first.
ssh_hub_options=()
ssh_hub_sluicerun() {
    local job=$1 limit=$2
    shift 2
    local vars=()
    while [ "$1" != -- ]; do
        vars+=("$1")
        shift
    done
    shift
    in_hub env "${vars[@]}" SLUICE_JOB_ID="$job" timeout -k 5 "$limit" "$sluicerun" -spawner=ssh \
        "${ssh_hub_options[@]}" "$@" > "$out" 2> "$err"
}

# Reporting for the scripts that source this: one PASS:/FAIL: line per
# check, `failed` counts the failures, `show FILE` prints its last lines.
failed=0
pass() { echo "PASS: $*"; }
fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}
show() { sed 's/^/    /' "$@" | tail -25; }
# gtest_failures FILE: a GoogleTest run's failed checks, each with the 60
# lines under it (the job's command and its ranks' output: the backtrace
# of a rank that crashed or hung), then its FAILED and SKIPPED lines;
# indented, and not cut to show's 25 lines.
gtest_failures() {
    awk '/: Failure$/ { left = 60 } left > 0 { print; --left; next } /^\[  (FAILED|SKIPPED) / { print }' "$1" |
        head -n 300 | sed 's/^/    /'
}
# ssh_hosts_verdict NAME: the last lines of NAME-hosts.sh (its time since
# $script_start, the failures) and its exit when a check failed.
ssh_hosts_verdict() {
    echo "$1-hosts.sh took $(elapsed "$script_start" 0) s"
    if [ "$failed" -gt 0 ]; then
        echo "$failed check(s) failed"
        exit 1
    fi
    echo "all $1 conduit checks across hosts passed"
}

# For a conduit's script across hosts (ofi-hosts.sh, portals-hosts.sh),
# which defines run_job LIMIT [ENV-ARGS...] -- ARGS... (a job under
# ssh_hub_sluicerun: its name in $job, its code in $rc, its seconds in
# $took, its output in $out and $err):
#   at_most SECONDS         whether $took is below SECONDS x $scale
#   ssh_show_job            the job's stdout, the ranks' stderr, the
#                           launcher's last lines
#   ssh_job_passed LABEL CMD...  the job exited 0, rank 0 printed PASS, no
#                           rank printed FAIL, nothing is left, and CMD
#                           (what went over the conduit: prints it, or why
#                           not and fails) succeeds
#   ssh_exit_case LABEL [ENV-ARGS...]  sluice-exit-test spin 2 5 at 6 ranks:
#                           code 5 within 15 s, nothing left
#   ssh_refused_case LABEL WORD ENV-ARGS...  mp am at 3 ranks with ENV-ARGS
#                           ends nonzero within 15 s, its error naming WORD
at_most() { awk -v t="$took" -v s="$1" -v k="$scale" 'BEGIN { exit !(t < s * k) }'; }
ssh_show_job() {
    echo "    stdout:"
    show "$out"
    echo "    the ranks' stderr:"
    grep -v '^sluicerun' "$err" | show
    echo "    sluicerun's last lines:"
    grep '^sluicerun' "$err" | show | tail -8
}
ssh_job_passed() {
    local label=$1 used
    shift
    if [ "$rc" = 0 ] && grep -q '^PASS' "$out" && ! grep -q 'FAIL rank' "$err"; then
        ssh_leftovers_check "$job" "$label" || return 1
        if used=$("$@"); then
            pass "$label: $used (${took}s)"
            return 0
        fi
        fail "$label: $used"
        ssh_show_job
        return 1
    fi
    fail "$label: exit code $rc after ${took}s"
    ssh_show_job
    ssh_leftovers_check "$job" "$label"
    return 1
}
ssh_exit_case() {
    local label="$1: exit at 6 ranks: spin 2 5"
    shift
    run_job 60 "$@" -- -n 6 "$exitprog" spin 2 5
    if [ "$rc" != 5 ] || ! at_most 15 || grep -q 'FAIL rank' "$err"; then
        fail "$label: code $rc after ${took}s, expected 5 within $((15 * scale)) s"
        ssh_show_job
        ssh_leftovers_check "$job" "$label"
    elif ssh_leftovers_check "$job" "$label"; then
        pass "$label: code $rc (${took}s)"
    fi
}
ssh_refused_case() {
    local label="$1: mp am at 3 ranks" word=$2
    shift 2
    run_job 60 "$@" -- -n 3 "$mp" am
    if [ "$rc" = 0 ] || ! at_most 15 || ! grep -q "$word" "$err"; then
        fail "$label: code $rc after ${took}s (nonzero within 15 s and an error naming $word expected)"
        ssh_show_job
        ssh_leftovers_check "$job" "$label"
    elif ssh_leftovers_check "$job" "$label"; then
        pass "$label: the job ends with $rc and says so (${took}s)"
    fi
}

# ssh_leftovers_check JOB LABEL: waits (at most 5 s) until nothing of job
# JOB is left: processes (stopped ones too), sshd sessions, shared memory.
# Prints what is left, kills and removes it, and fails (the sourcing
# script's `fail`).
ssh_leftovers_check() {
    local job=$1 label=$2 i left sessions shm
    for i in $(seq 50); do
        left=$(job_processes "$job")
        sessions=$(ssh_sessions)
        shm=$(ls /dev/shm 2> /dev/null | grep "^sluice\\.$job\\.")
        [ -z "$left$sessions$shm" ] && return 0
        sleep 0.1
    done
    fail "$label: left behind after the launcher returned:"
    [ -n "$left" ] && printf '    process %s\n' "$left"
    [ -n "$sessions" ] && echo "    sshd sessions: $sessions"
    [ -n "$shm" ] && printf '    /dev/shm/%s\n' $shm
    for i in $(job_processes "$job" | cut -d' ' -f1); do
        kill -CONT "$i" 2> /dev/null
        kill -9 "$i" 2> /dev/null
    done
    for i in $shm; do rm -f "/dev/shm/$i"; done
    return 1
}
