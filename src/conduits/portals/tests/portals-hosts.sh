#!/bin/bash
# The portals conduit between hosts, on the Portals 4 reference
# implementation over UDP: three network namespaces A, B, C with their own
# host names (sluice-a, -b, -c), each with its own sshd and a veth link
# (eth0) to a bridge in the hub, where `sluicerun -spawner=ssh` runs
# (tests/spawn/ssh/hosts.sh).  PTL_IFACE_NAME=eth0 picks the veth.
#
#   1. sluice-mp-test am, rma (sizes to 4 MiB: the reference implementation
#      wears out after about 262,000 acknowledged transfers per process,
#      README, Limits), flood and hidden at 1 rank per host; am at 2 ranks
#      per host (the same-host peer over smp) and with SLUICE_ROUTE=network
#      (every peer over portals)
#   2. an exit case across hosts (sluice-exit-test spin: code 5 within 15 s)
#   3. PTL_IFACE_NAME=nosuch0 ends the job at once with an error naming the
#      interface variable
#   4. under srun on this host (tests/spawn/slurm/cluster.sh), `srun
#      --mpi=pmix -n 2` (or pmi2) with SLUICE_ROUTE=network: the launch
#      whose PMIx a linked libportals (its libev) used to break
#
# Every job runs with SLUICE_VERBOSE=1 and SLUICE_PORTALS_STATS=1 and is
# checked beyond its PASS: every rank opened Portals on an address of the
# bridge (not loopback), routed its remote peers over portals, and its
# counters show requests sent and received (and, for rma, Puts and Gets).
# Every job runs under a hard `timeout`; after each, no process, sshd
# session or /dev/shm/sluice.<job>.* may be left.
#
# Root only (namespaces, and the UDP receive buffers the reference
# implementation needs: tests/portals/udp-buffers.sh): exits 77 (SKIP)
# otherwise, or without sshd, `ip netns` or the portals conduit.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# ASan builds: the reference implementation's own leftovers at exit are
# not Sluice's leaks (lsan.supp).
export LSAN_OPTIONS="suppressions=$here/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
ssh_hosts_own_names=1
# shellcheck source=../../../../tests/spawn/ssh/hosts.sh
. "$here/../../../../tests/spawn/ssh/hosts.sh"
# shellcheck source=../../../../tests/portals/udp-buffers.sh
. "$here/../../../../tests/portals/udp-buffers.sh"

ssh_hosts_conduit_begin portals "portals conduit across hosts"
portals_udp_buffers || exit 77
trap 'portals_udp_restore; ssh_hosts_stop' EXIT

ssh_hosts_scale

unset SLUICE_ROUTE SLUICE_NETWORK PTL_IFACE_NAME
export SLUICETEST_RANK_TIMEOUT=$((280 * scale)) SLUICETEST_SUBSET=${SLUICETEST_SUBSET:-portals}
# sluicerun passes SLUICE_* to the ranks; the library's variable is named.
ssh_hub_options=(-E SLUICETEST_RANK_TIMEOUT,SLUICETEST_SUBSET,PTL_IFACE_NAME)

out="$ssh_work/out"
err="$ssh_work/err"
script_start=$(date +%s.%N)

n=0
next_job() {
    n=$((n + 1))
    job="portals$$n$n"
}

# run_job LIMIT [ENV-ARGS...] -- ARGS...: a new job under `sluicerun
# -spawner=ssh` in the hub, over portals on eth0, verbose and with the
# conduit's counters; its code in $rc, its wall time in $took.  A job that
# failed on a lost datagram (portals_rerun_why, over the namespaces' UDP
# counters) runs once more, saying why; a second failure stands.
run_job() {
    local limit=$(($1 * scale)) start drops try why
    shift
    for try in 1 2; do
        next_job
        drops=$(portals_udp_drops $ssh_namespaces)
        start=$(date +%s.%N)
        ssh_hub_sluicerun "$job" "$limit" SLUICE_NETWORK=portals PTL_IFACE_NAME=eth0 SLUICE_VERBOSE=1 \
            SLUICE_PORTALS_STATS=1 "$@"
        rc=$?
        took=$(elapsed "$start" 1)
        drops=$(($(portals_udp_drops $ssh_namespaces) - drops))
        [ "$rc" != 0 ] && [ "$try" = 1 ] && why=$(portals_rerun_why "$drops" < "$err") || break
        echo "note: job $job ended with $rc after ${took}s $why: running it once more"
    done
}

# portals_used RANKS REMOTE [rma]: every rank opened Portals on a bridge
# address (10.213.47.x: nid 0x0ad52fxx), routed REMOTE peers over portals,
# and the counters (the RDMA conduits' line, common::stats_line) show AMs
# both ways (with rma, Puts and Gets).
portals_used() {
    local ranks=$1 remote=$2 rma=${3:-} opened routed
    opened=$(grep -oE 'portals: nid [0-9]+ pid' "$err" | awk '{ if (int($3 / 256) == 709935) ++n } END { print n + 0 }')
    routed=$(grep -cE "routing: ([0-9]+ peers over smp, $remote over portals|all $ranks ranks over portals)\$" "$err")
    if [ "$opened" != "$ranks" ]; then
        echo "$opened of $ranks ranks opened Portals on a bridge address (PTL_IFACE_NAME=eth0)"
        return 1
    fi
    if [ "$routed" != "$ranks" ]; then
        echo "$routed of $ranks ranks routed $remote peers over portals"
        return 1
    fi
    awk -v ranks="$ranks" -v rma="$rma" '
        /\] portals \(.*\): small sends / {
            for (i = 1; i < NF; ++i) {
                w = $i; v = $(i + 1); sub(/,$/, "", v)
                if (w == "sends") w = $(i - 1) " sends"
                if (w == "small sends" || w == "buffered sends") requests += v
                if (w == "received") received += v
                if (w == "writes") puts += v
                if (w == "reads") gets += v
            }
            ++seen
        }
        END {
            printf "portals stats: %d AMs sent (replies and system ones too), %d received, %d puts, %d gets", requests, received, puts, gets
            if (seen != ranks) { printf " (counters from %d of %d ranks)\n", seen, ranks; exit 1 }
            if (requests == 0 || received == 0) { print " (nothing went over portals)"; exit 1 }
            if (rma && (puts == 0 || gets == 0)) { print " (rma without PtlPut or PtlGet)"; exit 1 }
            print ""
        }' "$err"
}

# succeeded LABEL RANKS REMOTE [rma]: ssh_job_passed with portals_used.
succeeded() { ssh_job_passed "$1" portals_used "${@:2}"; }

# mp_case RANKS [ENV-ARGS...] -- CASE ARGS...: sluice-mp-test CASE.
mp_case() {
    local ranks=$1 env_args case_args label limit remote=$(($1 - $1 / 3))
    shift
    ssh_split_args "$@"
    set -- "${case_args[@]}"
    label="$((ranks / 3)) rank(s) per host${env_args[*]:+, ${env_args[*]}}: mp $*"
    case " ${env_args[*]} " in *" SLUICE_ROUTE=network "*) remote=$((ranks - 1)) ;; esac
    # The ranks' waits give up, naming what they waited for, 30 s before
    # the job's limit (and a rank stuck elsewhere prints its counters
    # when the limit's SIGTERM comes: SLUICE_<NAME>_STATS).
    limit=$([ "$1" = rma ] && echo 300 || echo 150)
    run_job "$limit" SLUICETEST_RANK_TIMEOUT=$(((limit - 30) * scale)) "${env_args[@]}" -- -n "$ranks" "$mp" "$@"
    succeeded "$label" "$ranks" "$remote" "$([ "$1" = rma ] && echo rma)"
}

# --- 1. the mp cases ---------------------------------------------------------------
mp_case 3 -- am
mp_case 3 -- rma
mp_case 6 -- am
mp_case 6 SLUICE_ROUTE=network -- am
if [ "$quick" = 0 ]; then
    mp_case 3 -- flood 2000
    mp_case 3 -- hidden 1000
fi

# --- 2. an exit case across hosts ----------------------------------------------------
ssh_exit_case portals

# --- 3. an interface that does not exist -----------------------------------------------
ssh_refused_case "PTL_IFACE_NAME=nosuch0" PTL_IFACE_NAME PTL_IFACE_NAME=nosuch0

# --- 4. under srun, on this host ------------------------------------------------------
# shellcheck source=../../../../tests/spawn/slurm/cluster.sh
. "$here/../../../../tests/spawn/slurm/cluster.sh"
srun_cases() {
    local pmi="" p c label start
    for p in pmix pmi2; do
        if srun --mpi=list 2>&1 | grep -qw "$p" && "$builddir/sluice-info" --spawners | grep -qw "$p"; then
            pmi=$p
            break
        fi
    done
    [ -n "$pmi" ] || { echo "SKIP: srun: neither srun nor libsluice offers pmix or pmi2"; return; }
    for c in am rma; do
        next_job
        label="srun --mpi=$pmi -n 2, SLUICE_ROUTE=network: mp $c"
        start=$(date +%s.%N)
        SLUICE_JOB_ID=$job SLUICE_NETWORK=portals SLUICE_ROUTE=network SLUICE_VERBOSE=1 SLUICE_PORTALS_STATS=1 \
            timeout -k 5 $((150 * scale)) srun --mpi="$pmi" -n 2 "$mp" "$c" > "$out" 2> "$err"
        rc=$?
        took=$(elapsed "$start" 1)
        # One host: Portals on whatever interface the library picks.
        if [ "$rc" = 0 ] && grep -q '^PASS' "$out" && ! grep -q 'FAIL rank' "$err" &&
            [ "$(grep -cE 'routing: (all 2 ranks|[0-9]+ peers over smp, 1) over portals$' "$err")" = 2 ]; then
            pass "$label (${took}s)"
        else
            fail "$label: exit code $rc after ${took}s"
            ssh_show_job
        fi
    done
}
slurm_cluster_cases srun_cases 'portals_udp_restore; ssh_hosts_stop'

ssh_hosts_verdict portals
