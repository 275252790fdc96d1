# shellcheck shell=bash
# tests/portals/udp-buffers.sh - sourced by the tests that run the Portals 4
# reference implementation.  Its UDP transport never retransmits: a
# datagram a full socket receive buffer drops hangs the job.  Sockets get
# net.core.rmem_default (212992 bytes on Debian 12, about 90 of its
# datagrams); these tests need 64 MiB, enough for a rank that other
# tests keep off the CPU for a while under make -j.
#
# portals_udp_buffers: true when rmem_default is at least 64 MiB, or was
# raised to it (root); otherwise it says why and returns 1 (the caller
# skips).  The caller's EXIT trap runs portals_udp_restore.
#
# Several of these scripts run at once under make -j, and the first one
# to finish must not lower the buffers under the others.  So as root each
# holds a shared flock on $portals_udp_lock.users while it runs, the
# values found before any raise are kept in $portals_udp_lock.saved, and
# the last script out (the one that gets the lock exclusively) puts them
# back.  $portals_udp_lock.mutex makes the check-and-raise and the
# release-and-restore one step each.
#
# portals_udp_drops [NETNS...]: the datagrams UDP dropped for want of
# receive buffer space (RcvbufErrors in /proc/net/snmp), summed over the
# network namespaces named, or in this one.  A script that owns its
# namespaces compares it before and after a job: a failed job with drops
# met the reference implementation's limit, not (necessarily) a bug.
portals_udp_want=67108864
portals_udp_lock=/tmp/sluice-portals-udp
portals_udp_users=

portals_udp_buffers() {
    local now max mutex
    [ -z "$portals_udp_users" ] || return 0
    if [ "$(id -u)" != 0 ]; then
        now=$(cat /proc/sys/net/core/rmem_default 2> /dev/null || echo 0)
        [ "$now" -ge "$portals_udp_want" ] && return 0
        echo "SKIP: net.core.rmem_default is $now; the Portals 4 reference implementation over UDP needs $portals_udp_want (run as root, or raise it)"
        return 1
    fi
    exec {mutex}> "$portals_udp_lock.mutex"
    flock -x "$mutex"
    exec {portals_udp_users}> "$portals_udp_lock.users"
    flock -s "$portals_udp_users"
    now=$(cat /proc/sys/net/core/rmem_default)
    max=$(cat /proc/sys/net/core/rmem_max)
    if [ "$now" -lt "$portals_udp_want" ]; then
        [ -s "$portals_udp_lock.saved" ] || echo "$now $max" > "$portals_udp_lock.saved"
        [ "$max" -ge "$portals_udp_want" ] || echo "$portals_udp_want" > /proc/sys/net/core/rmem_max
        echo "$portals_udp_want" > /proc/sys/net/core/rmem_default
        echo "net.core.rmem_default raised from $now to $portals_udp_want while the Portals tests run (the reference implementation's UDP transport)"
    fi
    flock -u "$mutex"
    exec {mutex}>&-
}

portals_udp_restore() {
    [ -n "$portals_udp_users" ] || return 0
    local mutex saved
    exec {mutex}> "$portals_udp_lock.mutex"
    flock -x "$mutex"
    flock -u "$portals_udp_users"
    if flock -n -x "$portals_udp_users" && [ -s "$portals_udp_lock.saved" ]; then
        saved=$(cat "$portals_udp_lock.saved")
        # shellcheck disable=SC2086 # two numbers
        set -- $saved
        echo "$1" > /proc/sys/net/core/rmem_default
        echo "$2" > /proc/sys/net/core/rmem_max
        rm -f "$portals_udp_lock.saved"
    fi
    flock -u "$portals_udp_users"
    exec {portals_udp_users}>&-
    portals_udp_users=
    flock -u "$mutex"
    exec {mutex}>&-
}

portals_udp_drops() {
    local ns total=0 n
    for ns in "${@:-}"; do
        n=$(${ns:+ip netns exec "$ns"} awk '/^Udp:/ { if (!col) { for (i = 2; i <= NF; ++i) if ($i == "RcvbufErrors") col = i }
                                                      else print $col }' /proc/net/snmp)
        total=$((total + ${n:-0}))
    done
    echo "$total"
}
