#!/bin/bash
# The ibv conduit between hosts, on the software verbs NIC over TCP
# (tests/softnic/verbs, SOFTNIC_HOSTS): three network namespaces A, B, C
# with their own host names and sshd, joined by a bridge in the hub, where
# `sluicerun -spawner=ssh` runs (tests/spawn/ssh/hosts.sh).  Every rank
# loads the NIC (LD_LIBRARY_PATH) with SOFTNIC_HOSTS naming the three
# hosts' addresses, so each host has its own fabric and work between hosts
# crosses the veths over TCP.
#
#   1. sluice-mp-test am and flood at 1 rank per host, and am at 2 ranks per
#      host with every peer over ibv (SLUICE_ROUTE=network: the same-host
#      peer through the host's fabric, the others over TCP)
#   2. dynamic connections only (SLUICE_CONNECT_STATIC=0), and with an SRQ
#      off, at 2 ranks per host
#   3. two rails: two HCAs in every host, mp rma at 1 rank per host
#   4. an exit case across hosts (sluice-exit-test spin: code 5 in 15 s)
#   5. sluice-mp-gtest's transport suites over ibv at 3 ranks (AM
#      categories, flood, delivery, barriers, RMA 1 B-16 MiB:
#      mp_across_hosts in tests/mp/families.sh), its jobs started over the
#      hosts
#
# Every job runs with SLUICE_VERBOSE=1, SLUICE_IBV_STATS=1 and
# SLUICE_BACKTRACE=1 (a rank that crashes shows where); it passes
# when it exits 0, rank 0 printed PASS, every rank used the ibv conduit and
# received over it, and nothing is left (processes, sshd sessions,
# /dev/shm).  Root only: exits 77 (SKIP) otherwise, or without sshd, `ip
# netns`, the ibv conduit or a C++ compiler for the NIC.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ssh_hosts_own_names=1
# shellcheck source=../../../../tests/spawn/ssh/hosts.sh
. "$here/../../../../tests/spawn/ssh/hosts.sh"
# shellcheck source=../../../../tests/mp/families.sh
. "$here/../../../../tests/mp/families.sh"

ssh_hosts_conduit_begin ibv "ibv conduit across hosts"
nic_lib=$("$here/../../../../tests/softnic/verbs/softnic-run" --lib-dir) || { echo "FAIL: the software NIC does not build"; exit 1; }
ssh_hosts_scale
# The hub is a host of the NIC too (its last), so that a program there
# (sluice-mp-gtest, which asks whether ibv can run) finds a device.
export SOFTNIC_HOSTS=$ssh_hosts,$ssh_hub_address SOFTNIC_FABRIC=/dev/shm/softnic-hosts-$$ LD_LIBRARY_PATH=$nic_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SLUICETEST_RANK_TIMEOUT=$((280 * scale))
export SOFTNIC_DEVICES=1
# The three hosts share this machine's cores: a rank that waits yields
# its core (a spinning one would hold off the peers and the NIC's wire).
export SLUICE_POLL_YIELD=1
ssh_hub_options=(-E LD_LIBRARY_PATH,SOFTNIC_HOSTS,SOFTNIC_FABRIC,SOFTNIC_DEVICES,SLUICETEST_RANK_TIMEOUT,SLUICE_POLL_YIELD)
unset SLUICE_ROUTE SLUICE_NETWORK
trap 'rm -f "$SOFTNIC_FABRIC"*; ssh_hosts_stop' EXIT
out="$ssh_work/out"
err="$ssh_work/err"
script_start=$(date +%s.%N)
n=0

# run_job LIMIT [ENV-ARGS...] -- ARGS...: a job over ibv; $rc, $took.
run_job() {
    local limit=$(($1 * scale)) start
    shift
    n=$((n + 1))
    job="ibvh$$n$n"
    start=$(date +%s.%N)
    ssh_hub_sluicerun "$job" "$limit" SLUICE_NETWORK=ibv SLUICE_VERBOSE=1 SLUICE_IBV_STATS=1 SLUICE_BACKTRACE=1 "$@"
    rc=$?
    took=$(elapsed "$start" 1)
}

# ibv_used RANKS: every rank printed its ibv counters with messages received.
ibv_used() {
    awk -v ranks="$1" '
        /\] ibv \(softnic0:1\): / {
            for (i = 1; i < NF; ++i) if ($i == "received") { v = $(i + 1); sub(/,$/, "", v); received += v; if (v > 0) ++busy }
            ++seen
        }
        END {
            printf "ibv: %d messages received, by %d of %d ranks", received, busy, ranks
            exit !(seen == ranks && busy == ranks)
        }' "$err"
}

# mp_case RANKS [ENV-ARGS...] -- CASE ARGS...
mp_case() {
    local ranks=$1 env_args case_args label used
    shift
    ssh_split_args "$@"
    label="$((ranks / 3)) rank(s) per host${env_args[*]:+, ${env_args[*]}}: mp ${case_args[*]}"
    run_job 200 "${env_args[@]}" -- -n "$ranks" "$mp" "${case_args[@]}"
    if [ "$rc" = 0 ] && grep -q '^PASS' "$out" && ! grep -q 'FAIL rank' "$err" && used=$(ibv_used "$ranks"); then
        ssh_leftovers_check "$job" "$label" && pass "$label: $used (${took}s)"
        return
    fi
    fail "$label: exit code $rc after ${took}s; ${used:-}"
    show "$out"
    grep -v '^sluicerun' "$err" | show
    ssh_leftovers_check "$job" "$label"
}

# --- 1. the mp cases ---------------------------------------------------------------
mp_case 3 -- am
# Three hosts, three fabrics: what went between ranks went over the wire.
fabrics=$(ls "$SOFTNIC_FABRIC"-h[012] 2> /dev/null | wc -l)
if [ "$fabrics" = 3 ]; then
    pass "each host has its own fabric file ($SOFTNIC_FABRIC-h0, -h1, -h2): traffic between hosts went over TCP"
else
    fail "$fabrics fabric files for 3 hosts: $(ls "$SOFTNIC_FABRIC"* 2> /dev/null)"
fi
mp_case 6 SLUICE_ROUTE=network -- am
if [ "$quick" = 0 ]; then
    mp_case 3 -- flood 2000
fi
# --- 2. dynamic connections ---------------------------------------------------------
mp_case 6 SLUICE_ROUTE=network SLUICE_CONNECT_STATIC=0 -- am
mp_case 6 SLUICE_ROUTE=network SLUICE_CONNECT_STATIC=0 SLUICE_USE_SRQ=0 -- rma
# --- 3. two rails: two HCAs in every host ----------------------------------------------
mp_case 3 SOFTNIC_DEVICES=2 -- rma
if grep -q 'ibv: 2 rails (SLUICE_NUM_QPS=0) on 2 HCA(s)' "$err"; then
    pass "two HCAs per host: every rank striped over 2 rails"
else
    fail "two HCAs per host: the ranks did not say they use 2 rails"
fi
# --- 4. an exit case across hosts -----------------------------------------------------
label="exit at 3 ranks: spin 2 5"
run_job 60 -- -n 3 "$exitprog" spin 2 5
if [ "$rc" != 5 ] || ! awk -v t="$took" -v k="$scale" 'BEGIN { exit !(t < 15 * k) }' || grep -q 'FAIL rank' "$err"; then
    fail "$label: code $rc after ${took}s, expected 5 within $((15 * scale)) s"
    show "$err"
    ssh_leftovers_check "$job" "$label"
elif ssh_leftovers_check "$job" "$label"; then
    pass "$label: code $rc (${took}s)"
fi

# --- 5. the multi-process suites across hosts -------------------------------------------
# sluice-mp-gtest's transport suites over ibv at 3 ranks (one per host;
# every peer over ibv; mp_across_hosts in tests/mp/families.sh), its jobs
# started by `sluicerun -spawner=ssh` over the three hosts
# (SLUICETEST_LAUNCHER: a wrapper that adds the spawner and the variables
# the ranks need).  The conformance suite runs on one host only: it pairs
# two processes of its own over a socketpair.
launcher="$ssh_work/sluicerun-ssh"
printf '#!/bin/sh\nexec "%s" -spawner=ssh -E %s "$@"\n' "$sluicerun" \
    LD_LIBRARY_PATH,SOFTNIC_HOSTS,SOFTNIC_FABRIC,SOFTNIC_DEVICES,SLUICETEST_RANK_TIMEOUT,SLUICETEST_PIDDIR,SLUICETEST_SUBSET,SLUICE_POLL_YIELD \
    > "$launcher"
chmod +x "$launcher"
start=$(date +%s.%N)
in_hub env SLUICETEST_LAUNCHER="$launcher" SLUICETEST_RANK_TIMEOUT=$((120 * scale)) timeout $((900 * scale)) \
    "$builddir/tests/mp/sluice-mp-gtest" --gtest_filter="$(mp_across_hosts ibv)" --gtest_brief=1 > "$out" 2>&1
rc=$?
took=$(elapsed "$start" 0)
if [ "$rc" = 0 ] && grep -qE '^\[  PASSED  \] [1-9][0-9]* tests' "$out" && ! grep -q '^\[  SKIPPED \]' "$out"; then
    pass "the multi-process suites over ibv across the hosts: $(sed -n 's/^\[  PASSED  \] //p' "$out") (${took}s)"
else
    fail "the multi-process suites over ibv across the hosts: exit $rc after ${took}s"
    gtest_failures "$out"
fi

ssh_hosts_verdict ibv
