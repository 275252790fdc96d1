#!/bin/bash
# The gni conduit between hosts, on the software uGNI NIC over TCP
# (tests/softnic/gni, SOFTNIC_HOSTS): three network namespaces A, B, C
# with their own host names and sshd, joined by a bridge in the hub, where
# `sluicerun -spawner=ssh` runs (tests/spawn/ssh/hosts.sh).  Every rank
# loads the NIC (LD_LIBRARY_PATH) with the job's PMI_GNI_* credentials and
# SOFTNIC_HOSTS naming the three hosts' addresses, so each host has its
# own fabric and NIC address (1, 2, 3) and every transfer between hosts
# crosses the veths over TCP.
#
#   1. sluice-mp-test am and flood at 1 and 2 ranks per host, every peer
#      over gni (SLUICE_NETWORK=gni SLUICE_ROUTE=network: at 2 ranks per
#      host the same-host peer through the host's fabric, the others over
#      TCP), and rma at 2 ranks per host (FMA and BTE)
#   2. an exit case across hosts (sluice-exit-test spin: code 5 in 15 s)
#   3. sluice-mp-gtest's transport suites over gni at 3 ranks (one per
#      host; mp_across_hosts in tests/mp/families.sh), its jobs started
#      over the hosts
#
# Every job runs with SLUICE_VERBOSE=1 and SLUICE_GNI_STATS=1; it passes
# when it exits 0, rank 0 printed PASS, every rank used the gni conduit
# (received messages over it, or for rma wrote over it), the ranks' NIC
# addresses are their hosts' (each of 1, 2, 3 for as many ranks), and
# nothing is left (processes, sshd sessions, /dev/shm).  The three hosts
# share this machine's cores, so every rank yields its core when it waits
# (SLUICE_POLL_YIELD=1): a rank spinning on a core would make the NIC's
# serving thread on that host wait a time slice for each transfer.  Root only: exits 77 (SKIP) otherwise, in the
# sanitizer subsets, or without sshd, `ip netns`, the gni conduit or a C++
# compiler for the NIC.
set -u
here=$(cd "$(dirname "$0")" && pwd)
ssh_hosts_own_names=1
# shellcheck source=../../../../tests/spawn/ssh/hosts.sh
. "$here/../../../../tests/spawn/ssh/hosts.sh"
# shellcheck source=../../../../tests/mp/families.sh
. "$here/../../../../tests/mp/families.sh"

ssh_hosts_conduit_begin gni "gni conduit across hosts"
nic_lib=$("$here/../../../../tests/softnic/gni/softnic-run" --lib-dir) ||
    { echo "FAIL: the software uGNI NIC does not build"; exit 1; }
ssh_hosts_scale
# What ALPS gives a job's processes, but PMI_GNI_LOC_ADDR: with
# SOFTNIC_HOSTS the NIC gives each host's address.  The hub needs them too:
# sluice-mp-gtest there asks whether gni probes.
export SOFTNIC_HOSTS=$ssh_hosts SOFTNIC_GNI_FABRIC=/dev/shm/softnic-gni-hosts-$$
export LD_LIBRARY_PATH=$nic_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PMI_GNI_PTAG=90 PMI_GNI_COOKIE=0x5a510000 PMI_GNI_DEV_ID=0
unset PMI_GNI_LOC_ADDR SLUICE_ROUTE SLUICE_NETWORK
export SLUICETEST_RANK_TIMEOUT=$((120 * scale)) SLUICE_POLL_YIELD=1
rank_env=LD_LIBRARY_PATH,SOFTNIC_HOSTS,SOFTNIC_GNI_FABRIC,PMI_GNI_PTAG,PMI_GNI_COOKIE,PMI_GNI_DEV_ID
rank_env=$rank_env,SLUICE_POLL_YIELD,SLUICETEST_RANK_TIMEOUT
ssh_hub_options=(-E "$rank_env")
trap 'rm -f "$SOFTNIC_GNI_FABRIC"*; ssh_hosts_stop' EXIT
out="$ssh_work/out"
err="$ssh_work/err"
script_start=$(date +%s.%N)
n=0

# run_job LIMIT [ENV-ARGS...] -- ARGS...: a job with every peer over gni;
# $rc, $took.
run_job() {
    local limit=$(($1 * scale)) start
    shift
    n=$((n + 1))
    job="gnih$$n$n"
    start=$(date +%s.%N)
    ssh_hub_sluicerun "$job" "$limit" SLUICE_NETWORK=gni SLUICE_ROUTE=network SLUICE_VERBOSE=1 SLUICE_GNI_STATS=1 "$@"
    rc=$?
    took=$(elapsed "$start" 1)
}

# gni_used RANKS [COUNTER]: every rank printed its gni counters with
# COUNTER (default: received, messages) above 0, and the NIC addresses are
# the three hosts', RANKS / 3 ranks each.
gni_used() {
    awk -v ranks="$1" -v counter="${2:-received}" '
        /\] gni \(uGNI device [0-9]+, NIC address [0-9]+\): / {
            a = $0; sub(/.*NIC address /, "", a); sub(/\).*/, "", a); ++at[a]
            for (i = 1; i < NF; ++i)
                if ($i == counter) { v = $(i + 1); sub(/,$/, "", v); total += v; if (v > 0) ++busy }
            ++seen
        }
        END {
            hosts = at[1] == ranks / 3 && at[2] == ranks / 3 && at[3] == ranks / 3
            printf "gni: %s %d, by %d of %d ranks; NIC addresses 1, 2, 3 with %d, %d, %d ranks",
                counter, total, busy, ranks, at[1], at[2], at[3]
            exit !(seen == ranks && busy == ranks && hosts)
        }' "$err"
}

# mp_case RANKS [ENV-ARGS...] -- CASE ARGS...: the job passed, and gni
# carried its messages (rma: its writes).
mp_case() {
    local ranks=$1 label counter=received
    shift
    ssh_split_args "$@"
    [ "${case_args[0]}" = rma ] && counter=writes
    label="$((ranks / 3)) rank(s) per host${env_args[*]:+, ${env_args[*]}}: mp ${case_args[*]}"
    run_job 120 "${env_args[@]}" -- -n "$ranks" "$mp" "${case_args[@]}"
    ssh_job_passed "$label" gni_used "$ranks" "$counter"
}

# --- 1. the mp cases ---------------------------------------------------------------
mp_case 3 -- am
# Three hosts, three fabrics: what went between ranks went over the wire.
fabrics=$(find /dev/shm -maxdepth 1 -name "${SOFTNIC_GNI_FABRIC#/dev/shm/}-h[012]" | wc -l)
if [ "$fabrics" = 3 ] && [ ! -e "$SOFTNIC_GNI_FABRIC" ]; then
    pass "each host has its own fabric file ($SOFTNIC_GNI_FABRIC-h0, -h1, -h2): traffic between hosts went over TCP"
else
    fail "$fabrics fabric files for 3 hosts: $(ls "$SOFTNIC_GNI_FABRIC"* 2> /dev/null)"
fi
mp_case 6 -- am
mp_case 3 -- flood 2000
if [ "$quick" = 0 ]; then
    mp_case 6 -- flood 1000
fi
mp_case 6 -- rma

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
# sluice-mp-gtest's transport suites over gni at 3 ranks, one per host
# (mp_across_hosts), its jobs started by `sluicerun -spawner=ssh` over the three
# hosts (SLUICETEST_LAUNCHER: a wrapper that adds the spawner and the
# variables the ranks need).  The conformance suite runs on one host only
# (gni-softnic.sh): it pairs two processes of its own over a socketpair.
launcher="$ssh_work/sluicerun-ssh"
printf '#!/bin/sh\nexec "%s" -spawner=ssh -E %s "$@"\n' "$sluicerun" \
    "$rank_env,SLUICETEST_PIDDIR,SLUICETEST_SUBSET" > "$launcher"
chmod +x "$launcher"
start=$(date +%s.%N)
in_hub env SLUICETEST_LAUNCHER="$launcher" timeout $((600 * scale)) "$builddir/tests/mp/sluice-mp-gtest" \
    --gtest_filter="$(mp_across_hosts gni)" --gtest_brief=1 > "$out" 2>&1
rc=$?
took=$(elapsed "$start" 0)
if [ "$rc" = 0 ] && grep -qE '^\[  PASSED  \] [1-9][0-9]* tests' "$out" && ! grep -q '^\[  SKIPPED \]' "$out"; then
    pass "the multi-process suites over gni across the hosts: $(sed -n 's/^\[  PASSED  \] //p' "$out") (${took}s)"
else
    fail "the multi-process suites over gni across the hosts: exit $rc after ${took}s"
    gtest_failures "$out"
fi

ssh_hosts_verdict gni
