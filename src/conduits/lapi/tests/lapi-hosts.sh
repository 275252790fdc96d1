#!/bin/bash
# The lapi conduit between hosts, on the software LAPI over TCP
# (tests/softnic/lapi, SOFTNIC_HOSTS): three network namespaces A, B, C
# with their own host names and sshd, joined by a bridge in the hub, where
# `sluicerun -spawner=ssh` runs (tests/spawn/ssh/hosts.sh).  Every rank
# loads the software LAPI (LD_LIBRARY_PATH) with one MP_PARTITION for the
# whole run (the conduit derives each job's key from it and the job's id)
# and SOFTNIC_HOSTS naming the three hosts' addresses, so each host has its
# own fabric and every packet between hosts crosses the veths over TCP.
#
#   1. sluice-mp-test am and flood at 1 and 2 ranks per host, every peer
#      over lapi (SLUICE_NETWORK=lapi SLUICE_ROUTE=network: at 2 ranks per
#      host the same-host peer through the host's fabric, the others over
#      TCP), in interrupt and in polling mode, and rma (its smaller sizes)
#      at 2 ranks per host
#   2. an exit case across hosts (sluice-exit-test spin: code 5 in 15 s)
#   3. sluice-mp-gtest's transport suites over lapi at 3 ranks (one per
#      host; mp_across_hosts in tests/mp/families.sh) with AmArguments
#      instead of Rma (the software LAPI's
#      TCP wire makes a round trip per 2 KiB packet: its 16 MiB transfers
#      take minutes; the rma case of 1. runs up to 4 MiB), its jobs
#      started over the hosts
#
# Every job runs with SLUICE_LAPI_STATS=1; it passes when it exits 0, rank 0
# printed PASS, every rank used the lapi conduit (received messages over
# it, or for rma wrote over it), and nothing is left (processes, sshd
# sessions, /dev/shm).  The three hosts share this machine's cores, so
# every rank yields its core when it waits (SLUICE_POLL_YIELD=1).  Root
# only: exits 77 (SKIP) otherwise, in the sanitizer subsets, or without
# sshd, `ip netns`, the lapi conduit or a C++ compiler for the software
# LAPI.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ssh_hosts_own_names=1
# shellcheck source=../../../../tests/spawn/ssh/hosts.sh
. "$here/../../../../tests/spawn/ssh/hosts.sh"
# shellcheck source=../../../../tests/mp/families.sh
. "$here/../../../../tests/mp/families.sh"

ssh_hosts_conduit_begin lapi "lapi conduit across hosts"
lapi_lib=$("$here/../../../../tests/softnic/lapi/softnic-run" --lib-dir) ||
    { echo "FAIL: the software LAPI does not build"; exit 1; }
ssh_hosts_scale
# What POE gives a job's tasks, but MP_CHILD and MP_PROCS, which the
# conduit sets from its ranks.  The hub needs them too: sluice-mp-gtest
# there asks whether lapi probes.
export SOFTNIC_HOSTS=$ssh_hosts SOFTNIC_LAPI_FABRIC=/dev/shm/softnic-lapi-hosts-$$
export LD_LIBRARY_PATH=$lapi_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MP_PARTITION=$((($$ << 16) + 4242))
unset MP_CHILD MP_PROCS SLUICE_ROUTE SLUICE_NETWORK SLUICE_LAPI_MODE
export SLUICETEST_RANK_TIMEOUT=$((120 * scale)) SLUICE_POLL_YIELD=1
rank_env=LD_LIBRARY_PATH,SOFTNIC_HOSTS,SOFTNIC_LAPI_FABRIC,MP_PARTITION
rank_env=$rank_env,SLUICE_POLL_YIELD,SLUICETEST_RANK_TIMEOUT,SLUICETEST_SUBSET
ssh_hub_options=(-E "$rank_env")
trap 'rm -f "$SOFTNIC_LAPI_FABRIC"*; ssh_hosts_stop' EXIT
out="$ssh_work/out"
err="$ssh_work/err"
script_start=$(date +%s.%N)
n=0

# run_job LIMIT [ENV-ARGS...] -- ARGS...: a job with every peer over lapi;
# $rc, $took.
run_job() {
    local limit=$(($1 * scale)) start
    shift
    n=$((n + 1))
    job="lapih$$n$n"
    start=$(date +%s.%N)
    ssh_hub_sluicerun "$job" "$limit" SLUICE_NETWORK=lapi SLUICE_ROUTE=network SLUICE_LAPI_STATS=1 "$@"
    rc=$?
    took=$(elapsed "$start" 1)
}

# lapi_used RANKS [COUNTER]: every rank printed its lapi counters with
# COUNTER (default: received, messages) above 0.
lapi_used() {
    awk -v ranks="$1" -v counter="${2:-received}" '
        /\] lapi \(LAPI task [0-9]+, [a-z]+ mode\): / {
            for (i = 1; i < NF; ++i)
                if ($i == counter) { v = $(i + 1); sub(/,$/, "", v); total += v; if (v > 0) ++busy }
            ++seen
        }
        END {
            printf "lapi: %s %d, by %d of %d ranks", counter, total, busy, ranks
            exit !(seen == ranks && busy == ranks)
        }' "$err"
}

# mp_case RANKS [ENV-ARGS...] -- CASE ARGS...: the job passed, and lapi
# carried its messages (rma: its writes).
mp_case() {
    local ranks=$1 label counter=received
    shift
    ssh_split_args "$@"
    [ "${case_args[0]}" = rma ] && counter=writes
    label="$((ranks / 3)) rank(s) per host${env_args[*]:+, ${env_args[*]}}: mp ${case_args[*]}"
    run_job 120 "${env_args[@]}" -- -n "$ranks" "$mp" "${case_args[@]}"
    ssh_job_passed "$label" lapi_used "$ranks" "$counter"
}

# --- 1. the mp cases ---------------------------------------------------------------
mp_case 3 -- am
# Three hosts, three fabrics: what went between ranks went over the wire.
fabrics=$(find /dev/shm -maxdepth 1 -name "${SOFTNIC_LAPI_FABRIC#/dev/shm/}-h[012]" | wc -l)
if [ "$fabrics" = 3 ] && [ ! -e "$SOFTNIC_LAPI_FABRIC" ]; then
    pass "each host has its own fabric file ($SOFTNIC_LAPI_FABRIC-h0, -h1, -h2): traffic between hosts went over TCP"
else
    fail "$fabrics fabric files for 3 hosts: $(ls "$SOFTNIC_LAPI_FABRIC"* 2> /dev/null)"
fi
mp_case 6 -- am
mp_case 3 SLUICE_LAPI_MODE=POLLING -- am
mp_case 3 -- flood 2000
mp_case 3 SLUICE_LAPI_MODE=POLLING SLUICE_LAPI_PACKED_MAX=96 -- flood 1000
if [ "$quick" = 0 ]; then
    mp_case 6 -- flood 1000
fi
# Every packet to another host is a round trip over TCP on the software
# LAPI: the RMA case with its smaller sizes (up to 4 MiB, not 16).
mp_case 6 SLUICETEST_SUBSET=reduced -- rma

# --- 2. an exit case across hosts -----------------------------------------------------
label="exit at 3 ranks: spin 2 5"
run_job 60 -- -n 3 "$exitprog" spin 2 5
if [ "$rc" != 5 ] || ! at_most 15 || grep -q 'FAIL rank' "$err"; then
    fail "$label: code $rc after ${took}s, expected 5 within $((15 * scale)) s"
    ssh_show_job
    ssh_leftovers_check "$job" "$label"
elif ssh_leftovers_check "$job" "$label"; then
    pass "$label: code $rc (${took}s)"
fi

# --- 3. the multi-process suites across hosts -------------------------------------------
# sluice-mp-gtest's transport suites over lapi at 3 ranks, one per host
# (mp_across_hosts), its jobs started by `sluicerun -spawner=ssh` over the three
# hosts (SLUICETEST_LAUNCHER: a wrapper that adds the spawner and the
# variables the ranks need).  The conformance suite runs on one host only
# (lapi-softnic.sh): it pairs two processes of its own over a socketpair.
launcher="$ssh_work/sluicerun-ssh"
printf '#!/bin/sh\nexec "%s" -spawner=ssh -E %s "$@"\n' "$sluicerun" \
    "$rank_env,SLUICETEST_PIDDIR" > "$launcher"
chmod +x "$launcher"
start=$(date +%s.%N)
in_hub env SLUICETEST_LAUNCHER="$launcher" timeout $((600 * scale)) "$builddir/tests/mp/sluice-mp-gtest" \
    --gtest_filter="$(mp_across_hosts lapi AmArguments)" --gtest_brief=1 \
    > "$out" 2>&1
rc=$?
took=$(elapsed "$start" 0)
if [ "$rc" = 0 ] && grep -qE '^\[  PASSED  \] [1-9][0-9]* tests' "$out" && ! grep -q '^\[  SKIPPED \]' "$out"; then
    pass "the multi-process suites over lapi across the hosts: $(sed -n 's/^\[  PASSED  \] //p' "$out") (${took}s)"
else
    fail "the multi-process suites over lapi across the hosts: exit $rc after ${took}s"
    gtest_failures "$out"
fi

ssh_hosts_verdict lapi
