# shellcheck shell=sh
# tests/portals/udp-buffers.sh - sourced by the tests that run the Portals 4
# reference implementation.  Its UDP transport never retransmits: a
# datagram a full socket receive buffer drops hangs the job.  Sockets get
# net.core.rmem_default (212992 bytes on Debian 12, about 90 of its
# datagrams); these tests need 64 MiB, enough for a rank that other
# tests keep off the CPU for a while under make -j.
#
# Its datagrams reach 64 KiB, which IP cuts into some 44 fragments on a
# 1500-byte link: a flood between namespaces is tens of thousands of
# packets, and the kernel's backlog of received packets per CPU
# (net.core.netdev_max_backlog, 1000) overflows when the receiving CPU is
# busy elsewhere.  Losing one fragment loses the datagram.  So as root the
# backlog is raised to 100000 as well.
#
# portals_udp_buffers: true when rmem_default is at least 64 MiB, or was
# raised to it (root); otherwise it says why and returns 1 (the caller
# skips).  The caller's EXIT trap runs portals_udp_restore.
#
# Several of these scripts run at once under make -j, and the first one
# to finish must not lower the buffers under the others.  So as root each
# holds a shared flock on $portals_udp_lock.users (file descriptor 8)
# while it runs, the values found before any raise are kept in
# $portals_udp_lock.saved, and the last script out (the one that gets the
# lock exclusively) puts them back.  $portals_udp_lock.mutex (descriptor
# 7, held briefly) makes the check-and-raise and the release-and-restore
# one step each.  POSIX sh: some callers are #!/bin/sh.
#
# portals_udp_drops [NETNS...]: the datagrams UDP dropped for want of
# receive buffer space (RcvbufErrors in /proc/net/snmp) and those IP could
# not put together from their fragments (ReasmFails), summed over the
# network namespaces named, or in this one, plus the packets every CPU's
# backlog dropped (/proc/net/softnet_stat, the whole machine's).  A script
# compares it before and after a job: a failed job with drops met the
# reference implementation's limit, not (necessarily) a bug.
portals_udp_want=67108864
portals_udp_backlog=100000
portals_udp_lock=/tmp/sluice-portals-udp
portals_udp_users=

portals_udp_buffers() {
    [ -z "$portals_udp_users" ] || return 0
    if [ "$(id -u)" != 0 ]; then
        portals_udp_now=$(cat /proc/sys/net/core/rmem_default 2> /dev/null || echo 0)
        [ "$portals_udp_now" -ge "$portals_udp_want" ] && return 0
        echo "SKIP: net.core.rmem_default is $portals_udp_now; the Portals 4 reference implementation over UDP needs $portals_udp_want (run as root, or raise it)"
        return 1
    fi
    exec 7> "$portals_udp_lock.mutex"
    flock -x 7
    exec 8> "$portals_udp_lock.users"
    flock -s 8
    portals_udp_users=1
    portals_udp_now=$(cat /proc/sys/net/core/rmem_default)
    portals_udp_max=$(cat /proc/sys/net/core/rmem_max)
    portals_udp_queue=$(cat /proc/sys/net/core/netdev_max_backlog)
    if [ "$portals_udp_now" -lt "$portals_udp_want" ] || [ "$portals_udp_queue" -lt "$portals_udp_backlog" ]; then
        [ -s "$portals_udp_lock.saved" ] ||
            echo "$portals_udp_now $portals_udp_max $portals_udp_queue" > "$portals_udp_lock.saved"
    fi
    if [ "$portals_udp_now" -lt "$portals_udp_want" ]; then
        [ "$portals_udp_max" -ge "$portals_udp_want" ] || echo "$portals_udp_want" > /proc/sys/net/core/rmem_max
        echo "$portals_udp_want" > /proc/sys/net/core/rmem_default
        echo "net.core.rmem_default raised from $portals_udp_now to $portals_udp_want while the Portals tests run (the reference implementation's UDP transport)"
    fi
    if [ "$portals_udp_queue" -lt "$portals_udp_backlog" ]; then
        echo "$portals_udp_backlog" > /proc/sys/net/core/netdev_max_backlog
        echo "net.core.netdev_max_backlog raised from $portals_udp_queue to $portals_udp_backlog while the Portals tests run"
    fi
    flock -u 7
    exec 7>&-
}

portals_udp_restore() {
    [ -n "$portals_udp_users" ] || return 0
    exec 7> "$portals_udp_lock.mutex"
    flock -x 7
    flock -u 8
    if flock -n -x 8 && [ -s "$portals_udp_lock.saved" ]; then
        # shellcheck disable=SC2046 # two numbers
        set -- $(cat "$portals_udp_lock.saved")
        echo "$1" > /proc/sys/net/core/rmem_default
        echo "$2" > /proc/sys/net/core/rmem_max
        [ -z "${3:-}" ] || echo "$3" > /proc/sys/net/core/netdev_max_backlog
        rm -f "$portals_udp_lock.saved"
    fi
    flock -u 8
    exec 8>&-
    portals_udp_users=
    flock -u 7
    exec 7>&-
}

# portals_rerun_why DROPS: whether a failed run met the reference
# implementation's lost datagram, so that it runs once more (a second
# failure stands): DROPS (portals_udp_drops' difference over the run) is
# above 0, or the run's output, on standard input, says a rank took its
# silent peer for dead (SLUICE_PORTALS_PEER_TIMEOUT): not every loss shows
# in those counters.  Prints the reason; returns 1 when there is none.
portals_rerun_why() {
    if [ "$1" -gt 0 ]; then
        echo "while UDP dropped $1 datagrams (RcvbufErrors, ReasmFails, backlog; the reference implementation never resends them)"
        return 0
    fi
    portals_rerun_silent=$(grep -m1 -oE 'rank [0-9]+ \(over [^)]*\) has answered nothing for [0-9.]+ s') || return 1
    echo "with \"$portals_rerun_silent\" (a lost datagram, or a hang of ours: a second failure says which)"
}

portals_udp_drops() {
    [ $# -gt 0 ] || set -- ""
    # softnet_stat: a line per CPU, its second field the drops, in hex.
    portals_udp_total=$(awk '{
            v = 0
            for (i = 1; i <= length($2); ++i) v = v * 16 + index("0123456789abcdef", tolower(substr($2, i, 1))) - 1
            n += v
        } END { print n + 0 }' /proc/net/softnet_stat 2> /dev/null || echo 0)
    for portals_udp_ns in "$@"; do
        portals_udp_n=$(${portals_udp_ns:+ip netns exec "$portals_udp_ns"} awk '
            $1 == "Udp:" || $1 == "Ip:" {
                if (!(($1) in col)) { for (i = 2; i <= NF; ++i) if ($i == "RcvbufErrors" || $i == "ReasmFails") col[$1] = i; if (!(($1) in col)) col[$1] = 0 }
                else if (col[$1]) n += $(col[$1])
            }
            END { print n + 0 }' /proc/net/snmp)
        portals_udp_total=$((portals_udp_total + ${portals_udp_n:-0}))
    done
    echo "$portals_udp_total"
}
