#!/bin/bash
# The udp conduit between hosts: three network namespaces
# A, B, C with their own host names (sluice-a, -b, -c), each with its own
# sshd, and `sluicerun -spawner=ssh` in the hub (tests/spawn/ssh/hosts.sh).
# Ranks on different hosts talk over udp, ranks on one host over smp, every
# peer but the rank itself over udp with SLUICE_ROUTE=network.
#
#   1. the mp suites at 1 and 2 ranks per host, and with SLUICE_ROUTE=network
#   2. sluice-udp-check once/rma without loss, with 5 % and 20 % of UDP
#      datagrams dropped by nftables in every host, and under a tbf rate
#      limit; short jobs at 75 % loss, where the exit is what is tested
#   3. kill -9 of one rank in host B in the middle of a long job
#   4. the exit cases across hosts (tests/exit/sluice-exit-test)
#   5. SLUICE_UDP_PEER_TIMEOUT: a rank stopped by SIGSTOP while the others
#      send to it ends the job with an error naming it; a shorter stop does not
#
# Every job runs under a hard `timeout`; after each, no process of the job
# (rank, control process, ssh), no sshd session and no /dev/shm/sluice.<job>.*
# may be left (waiting at most 5 s).  nftables counts the UDP datagrams each
# host sends, and those it sends over lo (to a rank on the same host), so
# every case also checks which traffic really went over udp.  Sanitizer
# builds and SLUICETEST_SUBSET run fewer, smaller cases with longer limits.
# Root only: exits 77 (SKIP) otherwise, or without sshd, `ip netns` or the
# udp conduit.  See src/conduits/udp/tests/README.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ssh_hosts_own_names=1
# shellcheck source=../../../../tests/spawn/ssh/hosts.sh
. "$here/../../../../tests/spawn/ssh/hosts.sh"

check="${SLUICETEST_BUILDDIR:?}/src/conduits/udp/tests/sluice-udp-check"
ssh_hosts_conduit_begin udp "udp conduit across hosts" "$check"

# scale stretches every limit; quick=1 runs the smaller list.
ssh_hosts_scale
# at_most SECONDS (tests/spawn/ssh/hosts.sh): whether $took is below SECONDS x scale.

# The script sets these per case; other SLUICE_* knobs of the caller reach
# the ranks as usual.
unset SLUICE_ROUTE SLUICE_UDP_PEER_TIMEOUT SLUICE_UDP_ADDRESS
# What the ranks of the test programs read (sent with -E): their own give-up
# time, below the job limits, and the smaller RMA size list of sluice-mp-test.
export SLUICETEST_RANK_TIMEOUT=$((50 * scale)) SLUICETEST_SUBSET=${SLUICETEST_SUBSET:-udp}

out="$ssh_work/out"
err="$ssh_work/err"
script_start=$(date +%s.%N)

# ---- UDP datagram counters and loss, per host (nftables) --------------------
have_nft=0
command -v nft > /dev/null && in_host A nft list tables > /dev/null 2>&1 && have_nft=1

# udp_filter LOSS: in every host a fresh output-hook table that counts
# Sluice's UDP datagrams sent (and those over lo: to a rank on the same host)
# and drops LOSS % of them at random.  Only UDP: ssh and the control
# connections (TCP) stay reliable.  Sluice's datagrams have a 48-byte header
# (UDP length 56 and more); the 1-byte datagrams of the source filter's
# start-up test, between sockets of one rank, are neither counted nor dropped.
udp_filter() {
    local host drop=""
    [ "$have_nft" = 1 ] || return 0
    [ "$1" -gt 0 ] && drop="meta l4proto udp udp length >= 56 numgen random mod 100 < $1 counter name \"dropped\" drop"
    for host in A B C; do
        in_host $host nft delete table inet sluice_udp 2> /dev/null
        in_host $host nft -f - << EOF || return 1
table inet sluice_udp {
    counter sent {}
    counter local {}
    counter dropped {}
    chain output {
        type filter hook output priority 0; policy accept;
        meta l4proto udp udp length >= 56 counter name "sent"
        meta l4proto udp udp length >= 56 oifname "lo" counter name "local"
        $drop
    }
}
EOF
    done
}

# udp_count NAME: the sum over the hosts of counter NAME (sent, local, dropped).
udp_count() {
    local host total=0 n
    [ "$have_nft" = 1 ] || { echo 0; return; }
    for host in A B C; do
        n=$(in_host $host nft list counter inet sluice_udp "$1" 2> /dev/null | sed -n 's/.*packets \([0-9]*\).*/\1/p')
        total=$((total + ${n:-0}))
    done
    echo "$total"
}

udp_summary() {
    local sent dropped
    [ "$have_nft" = 1 ] || return 0
    sent=$(udp_count sent)
    dropped=$(udp_count dropped)
    if [ "$dropped" -gt 0 ]; then
        echo "$sent UDP datagrams, $dropped dropped ($(awk -v d="$dropped" -v s="$sent" 'BEGIN { printf "%.1f", 100 * d / s }') %)"
    else
        echo "$sent UDP datagrams ($(udp_count local) to the same host)"
    fi
}

# route_check LABEL: the job's datagrams went where its routing says: some
# UDP left the hosts; with the default route none went to a rank on the same
# host (smp carries those), with SLUICE_ROUTE=network some did.  (The hosts
# share /dev/shm, so a job routed wrongly onto smp would still run.)
route_check() {
    [ "$have_nft" = 1 ] || return 0
    local sent local_sent
    sent=$(udp_count sent)
    local_sent=$(udp_count local)
    if [ "$sent" = 0 ]; then
        fail "$1: no UDP datagram left any host: the ranks did not talk over udp"
    elif [ "$route" = auto ] && [ "$local_sent" != 0 ]; then
        fail "$1: $local_sent UDP datagrams went to a rank on the same host, which smp should carry"
    elif [ "$route" = network ] && [ "$local_sent" = 0 ]; then
        fail "$1: no UDP datagram went to a rank on the same host: SLUICE_ROUTE=network did not put them on udp"
    else
        return 0
    fi
    return 1
}

# ---- jobs ---------------------------------------------------------------------
n=0
next_job() {
    n=$((n + 1))
    job="udp$$n$n"
}

# hub_sluicerun LIMIT [ENV-ARGS...] -- ARGS...: job $job under a hard limit
# of LIMIT x scale seconds (hosts.sh), the test programs' variables sent along.
# The namespace hosts share the machine's cores: a rank that waits
# yields its core (a spinning one holds off the ranks it waits for).
export SLUICE_POLL_YIELD=1
ssh_hub_options=(-E SLUICETEST_RANK_TIMEOUT,SLUICETEST_SUBSET,SLUICE_POLL_YIELD)
hub_sluicerun() {
    local limit=$(($1 * scale))
    shift
    ssh_hub_sluicerun "$job" "$limit" "$@"
}

# run_job LIMIT [ENV-ARGS...] -- ARGS...: a new job in the foreground, after
# resetting the counters (and setting the loss) of every host; its code in
# $rc, its wall time in $took; $route is "network" when ENV-ARGS set
# SLUICE_ROUTE=network.
run_job() {
    local start
    next_job
    case " $* " in *" SLUICE_ROUTE=network "*) route=network ;; *) route=auto ;; esac
    udp_filter "$loss" || { rc=255; took=0; echo "nft failed" > "$err"; return; }
    start=$(date +%s.%N)
    hub_sluicerun "$@"
    rc=$?
    took=$(elapsed "$start" 1)
}
loss=0
route=auto

# leftovers_check LABEL: nothing of job $job may be left (hosts.sh).
leftovers_check() { ssh_leftovers_check "$job" "$1"; }

# succeeded LABEL [MORE]: the job exited 0, rank 0 printed PASS, no rank
# printed FAIL, nothing is left, the datagrams went where the route says.
# Prints PASS with MORE and the UDP figures.
succeeded() {
    local label=$1 more=${2:-}
    if [ "$rc" = 0 ] && grep -q '^PASS' "$out" && ! grep -q 'FAIL rank' "$err"; then
        leftovers_check "$label" || return 1
        route_check "$label" || return 1
        pass "$label: ${more}$(udp_summary) (${took}s)"
        return 0
    fi
    fail "$label: exit code $rc after ${took}s; stdout, stderr:"
    show "$out"
    show "$err"
    leftovers_check "$label"
    return 1
}

# split_env "$@": ENV-ARGS up to -- into $env_args, the rest into $rest.
split_env() {
    env_args=()
    while [ "$1" != -- ]; do
        env_args+=("$1")
        shift
    done
    shift
    rest=("$@")
}

# mp_case LABEL RANKS [ENV-ARGS...] -- CASE ARGS...: sluice-mp-test CASE.
mp_case() {
    local label=$1 ranks=$2
    shift 2
    split_env "$@"
    run_job 90 "${env_args[@]}" -- -n "$ranks" "$mp" "${rest[@]}"
    succeeded "$label: mp ${rest[*]} at $ranks ranks"
}

# udp_stats: what the ranks' SLUICE_UDP_STATS=1 lines in $err add up to.
udp_stats() {
    awk '/ udp: sent [0-9]+ \(retransmitted / {
            for (i = 1; i < NF; ++i) {
                if ($i == "sent") sent += $(i + 1)
                if ($i == "(retransmitted") retransmitted += $(i + 1)
                if ($i == "duplicate") duplicate += $(i + 1)
            }
            ++ranks
            if ($0 ~ /checked by the kernel.s filter/) ++kernel
        }
        END { if (ranks) printf "udp stats: %d sent, %d retransmitted, %d duplicates dropped, %d of %d ranks with the kernel'"'"'s source check; ",
                                sent, retransmitted, duplicate, kernel, ranks }' "$err"
}

# check_case LABEL RANKS [ENV-ARGS...] -- CASE ARGS...: sluice-udp-check; with
# loss, nftables must really have dropped datagrams.
check_case() {
    local label=$1 ranks=$2
    shift 2
    split_env "$@"
    run_job 120 SLUICE_UDP_STATS=1 "${env_args[@]}" -- -n "$ranks" "$check" "${rest[@]}"
    local stats
    stats=$(udp_stats)
    succeeded "$label: ${rest[*]} at $ranks ranks" "$stats" || return
    if [ "$loss" -gt 0 ] && [ "$have_nft" = 1 ] && [ "$(udp_count dropped)" = 0 ]; then
        fail "$label: nftables dropped nothing: the loss was not injected"
    fi
    # Every rank has few peers here: the kernel checks sources for each.
    case "$stats" in
    *" $ranks of $ranks ranks with the kernel's source check"*) ;;
    *) fail "$label: not every rank used the kernel's source check ($stats)" ;;
    esac
}

# --- 1. hosts and the mp suites -------------------------------------------------
run_job 60 -- -n 6 "$check" hosts 3
names=$(grep '^PASS hosts' "$out" | sed 's/.*(\(.*\)).*/\1/')
if succeeded "3 hosts, 2 ranks each" "$names; " && [ "$names" != "$ssh_host_names" ]; then
    fail "3 hosts: Sluice saw the hosts as '$names', hosts.sh named them '$ssh_host_names'"
fi

# SLUICE_UDP_ADDRESS: an interface name works; a wrong one ends the job at
# once with an error that names it.
run_job 60 SLUICE_UDP_ADDRESS=eth0 -- -n 3 "$check" hosts 3
succeeded "SLUICE_UDP_ADDRESS=eth0: hosts 3 at 3 ranks"
run_job 60 SLUICE_UDP_ADDRESS=nosuch0 -- -n 3 "$check" hosts 3
if [ "$rc" = 0 ] || ! at_most 15 || ! grep -q 'SLUICE_UDP_ADDRESS=nosuch0' "$err"; then
    fail "SLUICE_UDP_ADDRESS=nosuch0: code $rc after ${took}s (nonzero within 15 s and an error naming it expected); stderr:"
    show "$err"
    leftovers_check "SLUICE_UDP_ADDRESS=nosuch0"
elif leftovers_check "SLUICE_UDP_ADDRESS=nosuch0"; then
    pass "SLUICE_UDP_ADDRESS=nosuch0: the job ends with $rc and says so (${took}s)"
fi

one="1 rank per host" two="2 ranks per host" net="SLUICE_ROUTE=network, 2 ranks per host"
if [ "$quick" = 0 ]; then
    mp_case "$one" 3 -- am
    mp_case "$one" 3 -- args
    mp_case "$one" 3 -- chain 200 10
    mp_case "$one" 3 -- hidden 2000
    mp_case "$one" 3 -- flood 5000
    mp_case "$one" 3 -- barrier 200 50
    mp_case "$one" 3 -- allgather 5
    mp_case "$one" 3 -- rma
    mp_case "$two" 6 -- am
    mp_case "$two" 6 -- chain 100 5
    mp_case "$two" 6 -- hidden 1000
    mp_case "$two" 6 -- flood 2000
    mp_case "$two" 6 -- rma
    mp_case "$net" 6 SLUICE_ROUTE=network -- am
    mp_case "$net" 6 SLUICE_ROUTE=network -- hidden 1000
    mp_case "$net" 6 SLUICE_ROUTE=network -- flood 2000
else
    mp_case "$one" 3 -- am
    mp_case "$two" 6 -- am
    mp_case "$two" 6 -- hidden 300
    mp_case "$two" 6 -- flood 500
    mp_case "$net" 6 SLUICE_ROUTE=network -- flood 500
fi

# --- 2. every AM exactly once, every Put/Get lands: without and with loss ------
if [ "$quick" = 0 ]; then
    check_case "no loss" 3 -- once 20000
    check_case "no loss" 6 -- once 3000
    check_case "no loss, SLUICE_ROUTE=network" 6 SLUICE_ROUTE=network -- once 1000
    check_case "no loss" 3 -- rma
    check_case "no loss, SLUICE_ROUTE=network" 6 SLUICE_ROUTE=network -- rma 1 1473 65537 1048577
else
    check_case "no loss" 6 -- once 1000
    check_case "no loss" 3 -- rma 1 1473 65537 1048577
fi
if [ "$have_nft" = 1 ]; then
    loss=5
    if [ "$quick" = 0 ]; then
        check_case "5 % UDP loss" 3 -- once 3000
        mp_case "5 % UDP loss" 3 -- delivery 100 left
        check_case "5 % UDP loss, SLUICE_ROUTE=network" 6 SLUICE_ROUTE=network -- once 1000
        check_case "5 % UDP loss" 3 -- rma 1 1000 1473 4097 65537 1048577 4194309
        # Datagrams of 548 bytes: every Medium and Put of more than 500 bytes
        # in many fragments.
        check_case "5 % UDP loss, SLUICE_UDP_MTU=576" 3 SLUICE_UDP_MTU=576 -- once 1000
        check_case "5 % UDP loss, SLUICE_UDP_MTU=576" 3 SLUICE_UDP_MTU=576 -- rma 1 499 501 4097 262147
    else
        check_case "5 % UDP loss" 3 -- once 1000
        check_case "5 % UDP loss" 3 -- rma 1 1473 65537 1048577
    fi
    loss=20
    if [ "$quick" = 0 ]; then
        check_case "20 % UDP loss" 3 -- once 1000
        check_case "20 % UDP loss, SLUICE_ROUTE=network" 6 SLUICE_ROUTE=network -- once 500
        check_case "20 % UDP loss" 3 -- rma 1 1000 1473 4097 65537 262147
    else
        check_case "20 % UDP loss" 3 -- once 300
    fi
    # Finalize under heavy loss: a rank stops polling only once what it sent
    # is acknowledged, and until every rank is that far the others go on
    # answering (with a fixed 1 s linger instead, 3 of 4 of these jobs hung
    # at exit).  A datagram and its ack both get through 1 time in 16 at
    # 75 %: the peer timeout is raised so that a slow ack is not taken for a
    # dead peer.  Two jobs (about 25 s each): the linger bug above would
    # show in one of them 15 times in 16.
    loss=75
    for job_index in $(seq $([ "$quick" = 0 ] && echo 2 || echo 1)); do
        check_case "75 % UDP loss, SLUICE_ROUTE=network, the exit (job $job_index)" 6 SLUICE_ROUTE=network \
            SLUICE_UDP_PEER_TIMEOUT=100 -- once 5 4 0
    done
    loss=0
else
    echo "SKIP: UDP loss cases: no nft (apt-get install nftables) or no nf_tables in this kernel"
fi

# A rate limit on every host's link: the senders must pace themselves to
# what the link drains (tbf drops what overflows its 20 ms queue).
rate=100mbit
if in_host A tc qdisc add dev eth0 root tbf rate $rate burst 32kb latency 20ms 2> /dev/null; then
    in_host B tc qdisc add dev eth0 root tbf rate $rate burst 32kb latency 20ms
    in_host C tc qdisc add dev eth0 root tbf rate $rate burst 32kb latency 20ms
    check_case "tbf $rate per host" 3 -- once 5000
    [ "$quick" = 0 ] && check_case "tbf $rate per host" 3 -- rma 1 1473 65537 1048577 4194309
    for host in A B C; do in_host $host tc qdisc del dev eth0 root 2> /dev/null; done
else
    echo "SKIP: rate limit: tc qdisc tbf is not available"
fi

# --- background jobs: start, wait until every rank sends, act ---------------------
# bg_start RANKS N [ENV-ARGS...]: `sluice-udp-check once N` in the
# background; returns once every rank printed "once: rank R sending" (sets
# $bg_waiter, the subshell to wait for).
bg_start() {
    local ranks=$1 per_peer=$2 i
    shift 2
    next_job
    udp_filter 0
    route=auto
    # Emptied here, not by the background job's own redirection: that runs
    # later, and the loop below would read the last job's lines meanwhile.
    : > "$out"
    : > "$err"
    hub_sluicerun 90 "$@" -- -n "$ranks" "$check" once "$per_peer" &
    bg_waiter=$!
    for i in $(seq $((300 * scale))); do
        [ "$(grep -c '^once: rank [0-9]* sending' "$out")" = "$ranks" ] && return 0
        kill -0 "$bg_waiter" 2> /dev/null || return 1
        sleep 0.1
    done
    return 1
}

# pid_of RANK HOST: the pid rank RANK printed, if it runs on HOST.
pid_of() { sed -n "s/^udp-check rank $1 of [0-9]* pid \\([0-9]*\\) host $2\$/\\1/p" "$out"; }

# bg_wait: waits for the background job: its code in $rc, $took since $bg_mark.
bg_wait() {
    wait "$bg_waiter"
    rc=$?
    took=$(elapsed "$bg_mark")
}

# bg_end: ends the background job through its launcher (SIGINT) and waits.
bg_end() {
    kill -INT "$(job_process_find "$job" "^[^ ]*sluicerun -spawner=ssh ")" 2> /dev/null
    wait "$bg_waiter"
}

bg_abort() {
    fail "$1: the job did not start; stdout, stderr:"
    show "$out"
    show "$err"
    bg_end
    leftovers_check "$1"
}

# --- 3. kill -9 of one rank in host B ------------------------------------------
label="kill -9 of rank 3 (host sluice-b) in a long once job at 6 ranks"
if bg_start 6 5000000; then
    victim=$(pid_of 3 sluice-b)  # every rank has said it is sending: mid-run
    bg_mark=$(date +%s.%N)
    if [ -z "$victim" ] || ! kill -9 "$victim"; then
        fail "$label: no pid for rank 3 on sluice-b in:"
        show "$out"
        bg_end
        leftovers_check "$label"
    else
        bg_wait
        if [ "$rc" = 0 ] || ! at_most 20; then
            fail "$label: the job ended with $rc ${took}s after the kill (nonzero within $((20 * scale)) s expected); stderr:"
            show "$err"
            leftovers_check "$label"
        elif leftovers_check "$label"; then
            pass "$label: the job ended with $rc ${took}s after the kill, nothing left"
        fi
    fi
else
    bg_abort "$label"
fi

# --- 4. the exit cases across hosts ----------------------------------------------
# exit_case RANKS CODE [ENV-ARGS...] -- ARGS...: sluice-exit-test ARGS must end
# the job with CODE within 15 s (as in tests/exit/exit_driver.cpp).
exit_case() {
    local ranks=$1 want=$2
    shift 2
    split_env "$@"
    local label="exit at $ranks ranks${env_args[*]:+ (${env_args[*]})}: ${rest[*]}"
    run_job 60 "${env_args[@]}" -- -n "$ranks" "$exitprog" "${rest[@]}"
    if [ "$rc" != "$want" ] || ! at_most 15 || grep -q 'FAIL rank' "$err"; then
        fail "$label: code $rc after ${took}s, expected $want within $((15 * scale)) s; stderr:"
        show "$err"
        leftovers_check "$label"
        return
    fi
    leftovers_check "$label" && pass "$label: code $rc (${took}s)"
}

exit_case 3 5 -- spin 2 5
exit_case 6 5 -- spin 5 5
exit_case 6 6 -- spin 0 6
exit_case 6 12 -- reply-handler 5 12
exit_case 6 137 -- signal 3 KILL
exit_case 6 5 SLUICE_ROUTE=network -- spin 1 5
if [ "$quick" = 0 ]; then
    exit_case 3 7 -- collective 7
    exit_case 6 7 -- collective 7
    exit_case 6 5 -- return 5
    exit_case 6 0 -- finalize-return 0
    exit_case 6 3 -- barrier 5 3
    exit_case 6 8 -- poll 5 8
    exit_case 6 9 -- libc-exit 5 9
    exit_case 6 11 -- request-handler 5 11
    exit_case 6 13 -- before-attach 5 13
    exit_case 6 139 -- signal 5 SEGV
    exit_case 6 1 SLUICE_ERRORS_FATAL=1 -- errors-fatal 5
    exit_case 6 12 SLUICE_ROUTE=network -- reply-handler 1 12
fi

# --- 5. SLUICE_UDP_PEER_TIMEOUT ----------------------------------------------------
peer_timeout=4
label="SIGSTOP of rank 1 (host sluice-b) while the others send, SLUICE_UDP_PEER_TIMEOUT=$peer_timeout"
if bg_start 3 5000000 SLUICE_UDP_PEER_TIMEOUT=$peer_timeout; then
    victim=$(pid_of 1 sluice-b)
    bg_mark=$(date +%s.%N)
    if [ -n "$victim" ] && kill -STOP "$victim"; then
        bg_wait
        said=$(grep 'SLUICE_UDP_PEER_TIMEOUT' "$err" | sed 's/sluice\[rank [0-9]*\]//' | grep -E '(rank|peer) 1([^0-9]|$)')
        # The stopped rank must be gone too: leftovers_check continues and
        # kills what is left, and fails.
        if [ "$rc" = 0 ] || ! at_most $((peer_timeout + 8)) || [ -z "$said" ]; then
            fail "$label: code $rc ${took}s after the stop (nonzero within $peer_timeout + 8 s, and a message naming rank 1 and SLUICE_UDP_PEER_TIMEOUT expected); stderr:"
            show "$err"
            leftovers_check "$label"
        elif leftovers_check "$label"; then
            pass "$label: the job ended with $rc ${took}s after the stop:$(echo "$said" | head -1 | cut -c1-150)"
        fi
    else
        fail "$label: no pid for rank 1 on sluice-b in:"
        show "$out"
        bg_end
        leftovers_check "$label"
    fi
else
    bg_abort "$label"
fi

# A stop shorter than the timeout is not a failure: the job goes on.
label="SIGSTOP of rank 1 for 1.5 s, below SLUICE_UDP_PEER_TIMEOUT=$peer_timeout"
if bg_start 3 10000 SLUICE_UDP_PEER_TIMEOUT=$((peer_timeout * scale)); then
    victim=$(pid_of 1 sluice-b)
    bg_mark=$(date +%s.%N)
    if [ -n "$victim" ] && kill -STOP "$victim"; then
        sleep 1.5  # the length of the stop is what this case is about
        kill -CONT "$victim"
        bg_wait
        succeeded "$label" "every AM exactly once; "
    else
        fail "$label: rank 1 was not stopped (the job ended first, or printed no pid); stdout:"
        show "$out"
        bg_end
        leftovers_check "$label"
    fi
else
    bg_abort "$label"
fi

ssh_hosts_verdict udp
