# tests/portals/udp-buffers.sh - sourced by the tests that run the Portals 4
# reference implementation.  Its UDP transport never retransmits: a
# datagram a full socket receive buffer drops hangs the job.  Sockets get
# net.core.rmem_default (212992 bytes on Debian 12, about 90 of its
# datagrams); these tests need 16 MiB, enough for a rank that other
# tests keep off the CPU for a while under make -j.
#
# portals_udp_buffers: true when rmem_default is at least 16 MiB, or was
# raised to it (root); otherwise it says why and returns 1 (the caller
# skips).  The caller's EXIT trap runs portals_udp_restore, which puts
# back what it raised.
portals_udp_buffers() {
    want=16777216
    now=$(cat /proc/sys/net/core/rmem_default 2> /dev/null || echo 0)
    [ "$now" -ge "$want" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "SKIP: net.core.rmem_default is $now; the Portals 4 reference implementation over UDP needs $want (run as root, or raise it)"
        return 1
    fi
    max=$(cat /proc/sys/net/core/rmem_max)
    portals_udp_saved="$now $max"
    [ "$max" -ge "$want" ] || echo "$want" > /proc/sys/net/core/rmem_max
    echo "$want" > /proc/sys/net/core/rmem_default
    echo "net.core.rmem_default raised from $now to $want for this run (the reference implementation's UDP transport)"
}
portals_udp_saved=
portals_udp_restore() {
    [ -n "$portals_udp_saved" ] || return 0
    # shellcheck disable=SC2086 # two numbers
    set -- $portals_udp_saved
    echo "$1" > /proc/sys/net/core/rmem_default
    echo "$2" > /proc/sys/net/core/rmem_max
}
