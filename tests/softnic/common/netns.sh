# tests/softnic/common/netns.sh - sourced by each NIC's hosts.sh: two hosts
# of SOFTNIC_HOSTS on this machine, network namespaces joined by a veth
# pair, and the checks every hosts.sh makes on them.
#
#   netns_need WHAT           SKIP (77) in the sanitizer subsets ("WHAT's
#                             host test runs in the plain build only"), not
#                             as root, or without ip
#   netns_hosts PREFIX ADDRESS_A ADDRESS_B FABRIC
#                             removes what a killed earlier run left (its
#                             namespaces PREFIXA<pid>, PREFIXB<pid> and its
#                             fabric files FABRIC-<pid>...), then names this
#                             run's: host_a, host_b, address_a, address_b,
#                             SOFTNIC_HOSTS (exported) and netns_fabric
#                             (FABRIC-<pid>, for the NIC's fabric variable)
#   netns_make                makes the two hosts; FAIL (exit 1) if it cannot
#   netns_remove              for the EXIT trap: stops the programs still
#                             running in them ($side_b, and pair.sh's
#                             $server), which would keep a namespace, then
#                             deletes the namespaces and the fabric files
#   netns_rules LIMIT LABEL [ARG...]
#                             rules.cpp's two sides ($work/rules A|B DIR
#                             ARG...), B on host B and A on host A, each
#                             under softnic-run ($run) and a hard limit of
#                             LIMIT seconds, meeting in a fresh $work/meet;
#                             LABEL (may be empty) names the run in the
#                             ok and FAIL lines
#   netns_no_process_left KNOB
#                             no process of this run (one with KNOB, the
#                             NIC's fabric variable, set to netns_fabric)
#                             may be left; other runs' do not count
#
# The sourcing script sets $run and $work; a failed check prints FAIL and
# sets failed=1.
# shellcheck shell=sh disable=SC2034,SC2154 # host_a..., $run, $work and $failed are shared with the script

netns_need() {
    if [ -n "${SLUICETEST_SUBSET:-}" ] && [ "$SLUICETEST_SUBSET" != full ]; then
        echo "SKIP: $1's host test runs in the plain build only (subset $SLUICETEST_SUBSET)"
        exit 77
    fi
    [ "$(id -u)" = 0 ] || { echo "SKIP: hosts.sh makes network namespaces: root only"; exit 77; }
    command -v ip > /dev/null || { echo "SKIP: no ip (Debian: iproute2)"; exit 77; }
}

netns_hosts() {
    netns_prefix=$1
    # A run killed by SIGKILL runs no trap: remove what runs whose shell
    # is gone left.
    for ns in $(ip netns list | sed -n "s/^\\($1[AB][0-9][0-9]*\\).*/\\1/p"); do
        kill -0 "${ns#"$1"?}" 2> /dev/null || ip netns del "$ns"
    done
    for f in "$4"-*; do
        [ -e "$f" ] || continue
        pid=${f#"$4"-}
        kill -0 "${pid%%-*}" 2> /dev/null || rm -f "$f"
    done
    host_a=$1A$$ host_b=$1B$$
    address_a=$2 address_b=$3
    SOFTNIC_HOSTS=$address_a,$address_b
    export SOFTNIC_HOSTS
    netns_fabric=$4-$$
    side_b='' server=''  # none running yet
}

netns_make() {
    # Each namespace's end of the veth pair, then the pair goes with them.
    veth_a=${netns_prefix}va$$ veth_b=${netns_prefix}vb$$
    if ! { ip netns add "$host_a" && ip netns add "$host_b" &&
        ip link add "$veth_a" type veth peer name "$veth_b" &&
        ip link set "$veth_a" netns "$host_a" && ip link set "$veth_b" netns "$host_b" &&
        ip -n "$host_a" addr add "$address_a/24" dev "$veth_a" && ip -n "$host_b" addr add "$address_b/24" dev "$veth_b" &&
        ip -n "$host_a" link set "$veth_a" up && ip -n "$host_b" link set "$veth_b" up &&
        ip -n "$host_a" link set lo up && ip -n "$host_b" link set lo up; }; then
        echo "FAIL: making the hosts (network namespaces $host_a, $host_b)"
        exit 1
    fi
}

netns_remove() {
    for p in ${server:-} ${side_b:-}; do kill "$p" 2> /dev/null; done
    wait
    ip netns del "$host_a" 2> /dev/null
    ip netns del "$host_b" 2> /dev/null
    rm -f "$netns_fabric" "$netns_fabric"-h*
}

netns_rules() {
    limit=$1 label=$2
    shift 2
    rm -rf "$work/meet"
    mkdir "$work/meet"
    start=$(date +%s)
    timeout "$limit" ip netns exec "$host_b" "$run" "$work/rules" B "$work/meet" "$@" > "$work/rules-b" 2>&1 &
    side_b=$!
    timeout "$limit" ip netns exec "$host_a" "$run" "$work/rules" A "$work/meet" "$@" > "$work/rules-a" 2>&1
    a=$?
    wait "$side_b"
    b=$?
    side_b=''  # reaped: its number may go to another process
    if [ "$a" = 0 ] && [ "$b" = 0 ]; then
        echo "ok: every rule between hosts holds${label:+ ($label)}:" \
            "$(cat "$work/rules-a" "$work/rules-b" | grep -c '^ok') rules ($(($(date +%s) - start)) s)"
    else
        echo "FAIL: a rule between hosts is broken (${label:+$label; }exit $a on host A, $b on B)"
        grep -hv '^ok' "$work/rules-a" "$work/rules-b"
        failed=1
    fi
}

netns_no_process_left() {
    left=$(env -u "$1" grep -lsxzF "$1=$netns_fabric" /proc/[0-9]*/environ)
    if [ -n "$left" ]; then
        echo "FAIL: processes of the test are left: $(echo "$left" | tr -dc '0-9\n' | tr '\n' ' ')"
        failed=1
    fi
}
