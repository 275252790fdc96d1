#!/bin/bash
# The ssh spawner against real OpenSSH servers (issue 4): one sshd on
# 127.0.0.1 and one in each of three network namespaces, so ranks really
# start on three addresses (tests/spawn/ssh/hosts.sh builds them; sluicerun
# runs in a fourth namespace, the hub).  Every job runs under a hard time
# limit and is followed by the orphan check (no rank, control process or ssh
# of the job left, no sshd session left, waiting at most 5 s) and the
# shared-memory check (no /dev/shm/sluice.<job>.*).  Root only: exits 77
# (SKIP) otherwise, or without sshd or `ip netns`.
set -u
# The sanitizer subsets leave this to the plain build (tests/README.md,
# Subsets): it keeps .ci/run within its time.
if [ "${SLUICETEST_SUBSET:-}" = tsan ] || [ "${SLUICETEST_SUBSET:-}" = asan ]; then
    echo "SKIP: the ssh spawner (sshd in network namespaces): not in the $SLUICETEST_SUBSET subset (runs in the plain build; tests/README.md)"
    exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ssh/hosts.sh"
ssh_hosts_begin "ssh spawner"
out="$ssh_work/out"
err="$ssh_work/err"

# lines_case LABEL PATTERN COUNT: passes if COUNT lines of $out match PATTERN.
lines_case() {
    if [ "$(grep -c -- "$2" "$out")" = "$3" ]; then
        pass "$1"
    else
        fail "$1: expected $3 line(s) matching '$2' in:"
        show "$out"
    fi
}

# leftovers_check JOB LABEL: nothing of the job may be left (hosts.sh).
leftovers_check() { ssh_leftovers_check "$@"; }

# hub_sluicerun JOB [ENV-ARGS...] -- ARGS...: job JOB under a 60 s limit
# (hosts.sh).
hub_sluicerun() {
    local job=$1
    shift
    ssh_hub_sluicerun "$job" 60 "$@"
}

# timed CMD...: runs CMD; its code in $rc, its wall time in $took.
timed() {
    local start
    start=$(date +%s.%N)
    "$@"
    rc=$?
    took=$(elapsed "$start")
}
hub_job() { timed hub_sluicerun "$@"; }

# expect LABEL JOB CODE: the job ended with CODE (or "nonzero") well before
# the time limit, and left nothing.
expect() {
    local label=$1 job=$2 want=$3 ok=1
    case $want in
    nonzero) [ "$rc" != 0 ] || ok=0 ;;
    *) [ "$rc" = "$want" ] || ok=0 ;;
    esac
    # A job that reached the limit (timeout's 124, or 137 after its SIGKILL) hung.
    awk -v t="$took" 'BEGIN { exit !(t < 55) }' || ok=0
    if [ "$ok" = 0 ]; then
        fail "$label: exit code $rc, expected $want (${took}s); stderr:"
        show "$err"
        leftovers_check "$job" "$label"
        return 1
    fi
    leftovers_check "$job" "$label"
}

# hang_start JOB [ENV-ARGS...] -- ARGS...: a `hang` job of 6 ranks in the
# background; returns once every rank said ready (sets $hang_pid, the pid of
# sluicerun, and $hang_waiter, what to wait for), waiting at most 30 s.  The
# job's own limit is 120 s, so a slow start still leaves it 90 s to be acted
# on before the limit ends it.
hang_start() {
    local job=$1 deadline=$((SECONDS + 30))
    # Emptied here, not by the background job's own redirection: that runs
    # later, and the loop below would count the last job's ready lines.
    : > "$out"
    : > "$err"
    ssh_hub_sluicerun "$job" 120 "${@:2}" -n 6 "$prog" hang &
    hang_waiter=$!
    hang_pid=""
    while [ "$SECONDS" -lt "$deadline" ]; do
        [ -z "$hang_pid" ] && hang_pid=$(job_process_find "$job" "^[^ ]*sluicerun -spawner=ssh ")
        [ "$(grep -c '^ready [0-5] pid ' "$out")" = 6 ] && [ -n "$hang_pid" ] && return 0
        kill -0 "$hang_waiter" 2> /dev/null || return 1
        sleep 0.1
    done
    return 1
}

# process_wait JOB PATTERN: the pid of job JOB's process matching PATTERN
# (job_process_find), waiting for it at most 10 s; empty if none came.
process_wait() {
    local deadline=$((SECONDS + 10)) pid
    while :; do
        pid=$(job_process_find "$1" "$2")
        if [ -n "$pid" ] || [ "$SECONDS" -ge "$deadline" ]; then
            echo "$pid"
            return
        fi
        sleep 0.1
    done
}

hang_wait() { timed wait "$hang_waiter"; }

# --- one host: the sshd on 127.0.0.1, sluicerun in this namespace ---------
job="ssh$$local"
SLUICE_JOB_ID=$job SLUICE_SSH_NODES=127.0.0.1 timed timeout -k 5 60 "$sluicerun" -spawner=ssh -n 2 "$prog" check \
    > "$out" 2> "$err"
expect "localhost" "$job" 0 &&
    lines_case "1 host (127.0.0.1:$ssh_port) x 2 ranks: check (${took}s)" '^rank [01] of 2 on .* spawner ssh$' 2

# --- three hosts, out-degree 1 (a chain, depth 3) and 2 (depth 2) ---------
for degree in 1 2; do
    job="ssh$$check$degree"
    hub_job "$job" SLUICE_SSH_OUT_DEGREE=$degree -- -v -n 6 "$prog" check
    expect "check, out-degree $degree" "$job" 0 || continue
    depth=$((degree == 1 ? 3 : 2))
    # Who started each host: the chain has host 0 start host 1 and host 1
    # start host 2; with out-degree 2 sluicerun starts hosts 0 and 2.
    if [ "$degree" = 1 ]; then
        shape="sluicerun +.*starting host 0 |sluicerun\\[host 0 .*starting host 1 |sluicerun\\[host 1 .*starting host 2 "
    else
        shape="sluicerun +.*starting host 0 |sluicerun\\[host 0 .*starting host 1 |sluicerun +.*starting host 2 "
    fi
    if [ "$(grep -c '^rank [0-5] of 6 on .* spawner ssh$' "$out")" != 6 ]; then
        fail "3 hosts x 2 ranks, out-degree $degree: check printed:"
        show "$out"
    elif ! grep -q "tree depth $depth " "$err" || [ "$(grep -cE "$shape" "$err")" != 3 ]; then
        fail "3 hosts x 2 ranks, out-degree $degree: not a tree of depth $depth as expected; -v said:"
        grep -E "depth|starting host" "$err" | cut -c1-160 | sed 's/^/    /'
    else
        pass "3 hosts x 2 ranks, out-degree $degree (tree depth $depth): check (${took}s)"
    fi
done

# --- placement: which address each rank runs on ----------------------------
# placement_case LABEL JOB WANT [ENV-ARGS...] -- ARGS...: runs `ARGS env
# SSH_CONNECTION` in the hub and compares "rank address" pairs with WANT.
placement_case() {
    local label=$1 job=$2 want=$3 got
    shift 3
    hub_job "$job" "$@" "$prog" env SSH_CONNECTION
    expect "$label" "$job" 0 || return
    got=$(sed -n 's/^rank \([0-9]\) SSH_CONNECTION=[^ ]* [^ ]* \([^ ]*\) .*/\1 \2/p' "$out" | sort | tr '\n' ' ')
    if [ "$got" = "$want" ]; then
        pass "$label"
    else
        fail "$label: got '$got', expected '$want'"
    fi
}
a=10.213.47.11 b=10.213.47.12 c=10.213.47.13
placement_case "ranks run on three addresses, two each: $a $b $c" "ssh$$addr" "0 $a 1 $a 2 $b 3 $b 4 $c 5 $c " \
    -- -n 6
placement_case "SLURM_JOB_NODELIST=10.213.47.[11-13] with -N 2: ranks on the first two hosts" "ssh$$slurm" \
    "0 $a 1 $a 2 $b 3 $b " -u SLUICE_SSH_NODES SLURM_JOB_NODELIST='10.213.47.[11-13]' -- -N 2 -n 4
printf '# hosts, one per slot as PBS writes them\n%s\n%s\n%s # first\n\n%s\n' $c $c $a $b > "$ssh_work/nodefile"
placement_case "SLUICE_SSH_NODEFILE: comments and repeated hosts skipped, file order kept" "ssh$$nodefile" \
    "0 $c 1 $a 2 $b " -u SLUICE_SSH_NODES SLUICE_SSH_NODEFILE="$ssh_work/nodefile" -- -n 3

# --- arguments survive the remote shells, as with the local spawner ------
job="ssh$$args"
tricky=("two words" "it's" 'say "hi"' '$HOME' '*' '`id`' '; exit 7' '' 'back\slash' $'new\nline')
hub_job "$job" -- -n 6 "$prog" args "${tricky[@]}"
if expect "arguments" "$job" 0; then
    SLUICE_JOB_ID="ssh$$argslocal" timeout -k 5 60 "$sluicerun" -spawner=local -n 6 "$prog" args "${tricky[@]}" \
        > "$ssh_work/local" 2>&1
    if [ "$(grep -c 'argc 10$' "$out")" = 6 ] && [ "$(sort "$out")" = "$(sort "$ssh_work/local")" ]; then
        pass "arguments with spaces, quotes, \$, *, backquotes, ;, newline and an empty one arrive unchanged"
    else
        fail "arguments differ from the local spawner's (ssh, then local):"
        show "$out"
        show "$ssh_work/local"
    fi
fi

# --- -E and the SLUICE_* knobs reach every rank --------------------------
job="ssh$$env"
value='a value with spaces, $dollar, "quotes" and '"'"'apostrophes'"'"
hub_job "$job" SLUICETEST_ONE="$value" SLUICETEST_TWO=2 SLUICETEST_NOT=3 SLUICE_KILL_GRACE=3 -- \
    -E SLUICETEST_ONE,SLUICETEST_TWO -n 6 "$prog" env SLUICETEST_ONE SLUICETEST_TWO SLUICETEST_NOT SLUICE_KILL_GRACE \
    SLUICE_JOB_ID
if expect "-E" "$job" 0; then
    bad=""
    for r in 0 1 2 3 4 5; do
        grep -qxF "rank $r SLUICETEST_ONE=$value" "$out" || bad="$bad rank $r: SLUICETEST_ONE;"
        grep -qx "rank $r SLUICETEST_TWO=2" "$out" || bad="$bad rank $r: SLUICETEST_TWO;"
        grep -qx "rank $r SLUICETEST_NOT unset" "$out" || bad="$bad rank $r: SLUICETEST_NOT (not listed) arrived;"
        grep -qx "rank $r SLUICE_KILL_GRACE=3" "$out" || bad="$bad rank $r: SLUICE_KILL_GRACE;"
        grep -qx "rank $r SLUICE_JOB_ID=$job" "$out" || bad="$bad rank $r: SLUICE_JOB_ID;"
    done
    if [ -z "$bad" ]; then
        pass "-E variables (quotes, \$, spaces) and SLUICE_* knobs reach every rank; others do not"
    else
        fail "environment:$bad"
        show "$out"
    fi
fi

# --- SLUICE_SSH_REMOTE_CMD is what the remote shell runs ------------------
job="ssh$$remote"
hub_job "$job" SLUICE_SSH_REMOTE_CMD="env SLUICETEST_MARK=remote-cmd $sluicerun" -- -n 3 "$prog" env SLUICETEST_MARK
expect "SLUICE_SSH_REMOTE_CMD" "$job" 0 &&
    lines_case "SLUICE_SSH_REMOTE_CMD starts the control processes" 'SLUICETEST_MARK=remote-cmd$' 3

# --- exit codes ----------------------------------------------------------
job="ssh$$exit"
hub_job "$job" -- -n 6 "$prog" exit 3 4
expect "exit(3) on rank 4" "$job" 3 && pass "exit(3) on rank 4 (host 2): sluicerun returns 3 (${took}s)"
job="ssh$$crash"
hub_job "$job" SLUICE_SSH_OUT_DEGREE=1 -- -n 6 "$prog" crash 3
expect "crash of rank 3" "$job" nonzero && pass "SIGSEGV on rank 3 (host 1): sluicerun returns $rc (${took}s)"

# --- a host without sshd: the job fails at once, saying what to check ----
job="ssh$$nohost"
hub_job "$job" SLUICE_SSH_NODES="10.213.47.11,$ssh_hub_address" -- -n 2 "$prog" check
if expect "a host without sshd" "$job" nonzero; then
    if grep -q "host 1 ($ssh_hub_address): ssh exited with status 255 .*fix:" "$err"; then
        pass "a host without sshd: sluicerun returns $rc and names the fix (${took}s)"
    else
        fail "a host without sshd: no clear message; stderr:"
        show "$err"
    fi
fi

# --- SIGINT to sluicerun ends every rank everywhere -----------------------
job="ssh$$sigint"
if hang_start "$job" -- ; then
    kill -INT "$hang_pid"
    hang_wait
    expect "SIGINT" "$job" nonzero && pass "SIGINT to sluicerun: every rank on every host ended, code $rc (${took}s)"
else
    fail "SIGINT: the hang job did not start; stderr:"
    show "$err"
    kill -9 "$hang_waiter" 2> /dev/null
    leftovers_check "$job" "SIGINT"
fi

# --- SIGKILL to sluicerun: its ssh connections end, every host stops ------
job="ssh$$sigkill"
if hang_start "$job" SLUICE_SSH_OUT_DEGREE=1 -- ; then
    kill -9 "$hang_pid"
    hang_wait
    leftovers_check "$job" "SIGKILL to sluicerun" &&
        pass "SIGKILL to sluicerun: every control process and rank on every host ended"
else
    fail "SIGKILL to sluicerun: the hang job did not start; stderr:"
    show "$err"
    kill -9 "$hang_waiter" 2> /dev/null
    leftovers_check "$job" "SIGKILL to sluicerun"
fi

# --- a middle host's ssh connection or control process dies ---------------
# Out-degree 1: sluicerun -> host 0 -> host 1 -> host 2; host 1's ssh client
# runs on host 0.
for victim in ssh control; do
    job="ssh$$kill$victim"
    if ! hang_start "$job" SLUICE_SSH_OUT_DEGREE=1 -- ; then
        fail "kill $victim: the hang job did not start; stderr:"
        show "$err"
        kill -9 "$hang_waiter" 2> /dev/null
        leftovers_check "$job" "kill $victim"
        continue
    fi
    if [ "$victim" = ssh ]; then
        pid=$(process_wait "$job" "^ssh .*--host=1\$")
        what="the ssh connection to host 1 (its ssh client on host 0)"
    else
        pid=$(process_wait "$job" "^[^ ]*sluicerun --ssh-node .*--host=1\$")
        what="host 1's control process"
    fi
    if [ -z "$pid" ]; then
        alive=no
        kill -0 "$hang_pid" 2> /dev/null && alive=yes
        fail "kill $victim: no process to kill after 10 s (sluicerun still running: $alive); the job's processes:"
        job_processes "$job" | sed 's/^/    /'
        kill -INT "$hang_pid"
        hang_wait
        leftovers_check "$job" "kill $victim"
        continue
    fi
    kill -9 "$pid"
    hang_wait
    expect "kill $victim" "$job" nonzero && pass "SIGKILL to $what: every rank gone, the job ended with $rc (${took}s)"
done

# --- a control connection without the job's secret is refused ------------
job="ssh$$secret"
if hang_start "$job" -- -v; then
    port=$(sed -n 's/^sluicerun +[0-9.]*s: listening for the control connections of .* on port \([0-9]*\)$/\1/p' "$err")
    # Not our protocol at all, then a well-formed hello (type 101, 44 bytes:
    # byte-order mark, 32-byte secret, host 0) with a wrong secret.
    # Closed means cat ends before its 5 s: at end of file, or with
    # "connection reset" when sluicerun closed with bytes of ours unread
    # (which of the two depends on how much its read took).
    probe_ok=0
    for payload in 'GET / HTTP/1.0\r\n\r\n' \
        '\145\000\000\000\054\000\000\000\004\003\002\001\040\000\000\000xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\000\000\000\000'; do
        if in_host A bash -c "exec 3<>/dev/tcp/$ssh_hub_address/$port && printf '$payload' >&3 || exit 2
                              timeout 5 cat <&3 > /dev/null 2>&1; [ \$? -ne 124 ]"; then
            probe_ok=$((probe_ok + 1))
        fi
    done
    # Wait (bounded) for sluicerun to report both refusals.
    tries=0
    while [ "$(grep -c "refused a control connection from 10.213.47.11:[0-9]*: " "$err")" -lt 2 ] &&
          [ $tries -lt 50 ]; do
        sleep 0.1
        tries=$((tries + 1))
    done
    alive=$(job_processes "$job" | grep -c "^[0-9]* [^ ]*sluice-spawn-test hang")
    refused=$(grep -c "refused a control connection from 10.213.47.11:[0-9]*: " "$err")
    kill -INT "$hang_pid"
    hang_wait
    if [ -z "$port" ]; then
        fail "secret: no port in sluicerun -v's output"
        show "$err"
    elif [ "$probe_ok" != 2 ] || [ "$refused" != 2 ] || [ "$alive" != 6 ]; then
        fail "secret: $probe_ok connection(s) closed by sluicerun (2 expected), $refused refusal(s) said (2), $alive rank(s) alive after (6)"
        grep refused "$err" | sed 's/^/    /'
    elif grep -q "refused.*does not know the job's secret" "$err"; then
        pass "control connections without the job's secret are refused, the job runs on"
    else
        fail "secret: the wrong secret was not named as the reason"
        grep refused "$err" | sed 's/^/    /'
    fi
    leftovers_check "$job" "secret"
else
    fail "secret: the hang job did not start"
    show "$err"
    kill -9 "$hang_waiter" 2> /dev/null
    leftovers_check "$job" "secret"
fi

# --- -t prints the ssh commands and runs nothing -------------------------
job="ssh$$dry"
logins_before=$(cat "$ssh_work"/sshd-*.log | grep -c "Accepted publickey")
# sluicerun has returned: an ssh it had run would have logged in by now.
hub_job "$job" SLUICE_SSH_OUT_DEGREE=1 -- -t -n 6 "$prog" check
logins_after=$(cat "$ssh_work"/sshd-*.log | grep -c "Accepted publickey")
commands=$(grep -c "^ssh .* 10\\.213\\.47\\.1[123] 'exec .*sluicerun --ssh-node --job=$job --host=[012]'\$" "$out")
if [ "$rc" != 0 ] || [ "$commands" != 3 ] || [ "$logins_after" != "$logins_before" ] ||
    [ "$(grep -c 'started by host' "$out")" != 2 ]; then
    fail "-t: code $rc, $commands ssh command(s) printed (3 expected), $((logins_after - logins_before)) ssh login(s) happened (0); output:"
    show "$out" "$err"
else
    pass "-t prints the 3 ssh commands of the tree and logs in nowhere"
fi
leftovers_check "$job" "-t"

# Scheduler autogroups (hosts.sh, ssh_autogroup): off while the hosts run;
# the release of a second holder leaves them off while this run holds;
# the last release gives back the value from before (0 while another
# run's hosts are still up).
knob=$ssh_autogroup_knob
if [ -w "$knob" ]; then
    before=$(cat "$ssh_autogroup_state.saved" 2> /dev/null)
    during=$(cat "$knob")
    nested=$(bash -c '. "$1"; ssh_autogroup hold; cat "$2"; ssh_autogroup release; cat "$2"' _ "$here/ssh/hosts.sh" "$knob" | tr '\n' ' ')
    ssh_autogroup release
    after=$(cat "$knob")
    want=$before
    [ -n "$(cat "$ssh_autogroup_state.pids" 2> /dev/null)" ] && want=0
    if [ -n "$before" ] && [ "$during" = 0 ] && [ "$nested" = "0 0 " ] && [ "$after" = "$want" ]; then
        pass "scheduler autogroups: off while the hosts run, $after once this run released them (the value from before, or 0 while another run holds them)"
    else
        fail "scheduler autogroups: $during while the hosts run (0 expected), a second holder saw '$nested' (0 0), $after after the release ($want; saved value '$before')"
    fi
    ssh_autogroup hold  # released again at exit, with the hosts
fi

if [ "$failed" -gt 0 ]; then
    echo "$failed check(s) failed"
    exit 1
fi
echo "all ssh spawner checks passed"
