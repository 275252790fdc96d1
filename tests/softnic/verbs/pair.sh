# tests/softnic/verbs/pair.sh - sourced by acceptance.sh and hosts.sh: the
# checks they share, of programs run on the software NIC.  The sourcing
# script sets $run (softnic-run) and $work (a scratch folder); a failed
# check prints FAIL and its output, and sets failed=1.
# shellcheck shell=sh disable=SC2034,SC2154 # $run, $work and $failed are the sourcing script's

# need_programs: skips (77) without ibverbs-utils and perftest, or without
# a C++ compiler; fails if the NIC does not build.
need_programs() {
    for p in ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong ib_write_lat ib_read_lat ib_send_bw; do
        command -v "$p" > /dev/null || { echo "SKIP: $p is not installed (Debian: ibverbs-utils, perftest)"; exit 77; }
    done
    command -v "${CXX:-g++}" > /dev/null || { echo "SKIP: no C++ compiler to build the software NIC"; exit 77; }
    "$run" --lib-dir > /dev/null || { echo "FAIL: building the software NIC"; exit 1; }
}

# pair NAME EXPECT WHO CMD ARGS...: CMD as server (with $server_args, in
# $server_in: a command prefix such as "ip netns exec NS", empty: here),
# then as client (with $client_args, in $client_in) to $server_host
# (default localhost), on a port of this run; both must exit 0 within
# 60 s, and print EXPECT (WHO both), or the client must (WHO client:
# ib_read_lat's server measures nothing).  rdma-core's pingpongs run with
# -c: the server checks the payload it received last (a byte per page)
# and says "invalid data in page N" for each wrong one, which fails the
# pair; with $corrupt set, the pair passes only when it says so.
pair() {
    name=$1 expect=$2 who=$3
    shift 3
    # A port below the ephemeral range (32768 up) that no socket of the
    # server's network namespace uses.
    port=$((10000 + ($$ + $(date +%N | sed 's/^0*//;s/^$/0/')) % 20000))
    # shellcheck disable=SC2086 # $server_in, $client_in and the arguments are lists
    while ${server_in:-} ss -Htan "sport = :$port" 2> /dev/null | grep -q .; do
        port=$((10000 + (port - 9999) % 20000))
    done
    # shellcheck disable=SC2086
    timeout 60 ${server_in:-} "$run" "$@" ${server_args:-} -p "$port" > "$work/server" 2>&1 &
    server=$!
    # The client connects once the server listens; pingpong clients do not retry.
    i=0
    # shellcheck disable=SC2086
    while [ $i -lt 100 ] && ! ${server_in:-} ss -ltn 2> /dev/null | grep -q ":$port "; do
        sleep 0.1
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    timeout 60 ${client_in:-} "$run" "$@" ${client_args:-} -p "$port" "${server_host:-localhost}" > "$work/client" 2>&1
    client=$?
    wait "$server"
    srv=$?
    server=''  # reaped: its number may go to another process
    invalid=$(cat "$work/server" "$work/client" | grep -c "invalid data in page")
    if [ "$client" = 0 ] && [ "$srv" = 0 ] && grep -q "$expect" "$work/client" &&
        { [ "$who" = client ] || grep -q "$expect" "$work/server"; } &&
        if [ -n "${corrupt:-}" ]; then [ "$invalid" -gt 0 ]; else [ "$invalid" = 0 ]; fi; then
        echo "ok: $name: $(grep "$expect" "$work/client" | tail -1 | tr -s ' \t' ' ')${corrupt:+; $invalid wrong pages reported}"
    else
        echo "FAIL: $name: client exit $client, server exit $srv, $invalid wrong pages reported"
        echo "--- client"; tail -20 "$work/client"
        echo "--- server"; tail -20 "$work/server"
        failed=1
    fi
}

# rdma_core_pairs: rdma-core's and perftest's programs, in pairs.
rdma_core_pairs() {
    pair "ibv_rc_pingpong -c" "iters in" both ibv_rc_pingpong -c -n 500
    pair "ibv_rc_pingpong -c -e (completion events)" "iters in" both ibv_rc_pingpong -c -e -n 500
    pair "ibv_ud_pingpong -c" "iters in" both ibv_ud_pingpong -c -n 500
    pair "ibv_srq_pingpong -c" "iters in" both ibv_srq_pingpong -c -n 500
    pair "ib_write_lat" "^ 2 *200 " both ib_write_lat -d softnic0 -n 200
    pair "ib_read_lat" "^ 2 *200 " client ib_read_lat -d softnic0 -n 200
    pair "ib_send_bw" "^ 65536 *1000 " both ib_send_bw -d softnic0 -n 1000
}

# roce_pairs: ibv_rc_pingpong and ibv_ud_pingpong on RoCE ports, where
# the programs address each other by GID.
roce_pairs() {
    SOFTNIC_LINK_LAYER=eth
    export SOFTNIC_LINK_LAYER
    pair "ibv_rc_pingpong -c -g 0 on RoCE ports" "iters in" both ibv_rc_pingpong -c -g 0 -n 200
    pair "ibv_ud_pingpong -c -g 0 on RoCE ports" "iters in" both ibv_ud_pingpong -c -g 0 -n 200
    unset SOFTNIC_LINK_LAYER
}

# no_process_left: no process of this run (one with its SOFTNIC_FABRIC)
# may be left; those of other runs beside it do not count.  acceptance.sh's
# (hosts.sh has ../common/netns.sh's, which every NIC's hosts.sh uses).
no_process_left() {
    left=$(env -u SOFTNIC_FABRIC grep -lsxzF "SOFTNIC_FABRIC=$SOFTNIC_FABRIC" /proc/[0-9]*/environ)
    if [ -n "$left" ]; then
        echo "FAIL: processes of the test are left: $(echo "$left" | tr -dc '0-9\n' | tr '\n' ' ')"
        failed=1
    fi
}
