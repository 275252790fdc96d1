#!/bin/sh
# The machine as the ranks see it (src/core/topology.hpp), on a faked one:
# two-sockets.xml, two packages of one PU each, each its own NUMA node and
# a NIC pair (softnic0/eth0 near package 0, softnic1/eth1 near package 1).
# sluice-info --topology describes it; with HWLOC_THISSYSTEM=1 (bindings
# are this machine's, whose PUs 0 and 1 it names) and sluicerun --bind=core,
# each rank says under SLUICE_VERBOSE where it runs and its nearest NICs,
# and smp places its queues and segment on its own node (the kernel here
# has node 0 only, so rank 1's placement is the decision, refused);
# --bind=none leaves memory to first touch.  Then host identity: two ranks
# with the same host name but different /dev/shm mounts are two hosts.
# Skips (77) without hwloc.  tests/topology/README.md.
set -u
builddir=${SLUICETEST_BUILDDIR:?}
srcdir=${SLUICETEST_SRCDIR:?}
xml=$srcdir/tests/topology/two-sockets.xml
if ! "$builddir/sluicerun" --help 2>&1 | grep -q -- "--bind=core"; then
    echo "SKIP: this build has no hwloc (install libhwloc-dev and configure again)"
    exit 77
fi
[ "$(nproc)" -ge 2 ] || { echo "SKIP: the faked machine's PUs 0 and 1 need two CPUs here"; exit 77; }
failed=0
ok() { echo "ok: $1"; }
fail() {
    echo "FAIL: $1"
    printf '%s\n' "$log" | tail -15
    failed=1
}
# has WHAT PATTERN: $log holds PATTERN.
has() { if printf '%s\n' "$log" | grep -q -- "$2"; then ok "$1"; else fail "$1: output lacks: $2"; fi; }

echo "=== sluice-info --topology on two-sockets.xml"
log=$(HWLOC_XMLFILE=$xml "$builddir/sluice-info" --topology 2>&1)
has "the machine: two packages, two NUMA nodes" "2 package(s), 2 NUMA node(s), 2 core(s), 2 PU(s) (read from a file"
has "package 1 holds PU 1 and NUMA node 1" "package 1: PUs 1, NUMA node(s) 1"
has "softnic0 is near package 0" "NIC softnic0 (InfiniBand/RDMA): near PUs 0, package(s) 0, NUMA node(s) 0"
has "eth1 is near package 1" "NIC eth1 (network): near PUs 1, package(s) 1, NUMA node(s) 1"
has "this process, unbound, against the file's PUs" "this process: not bound (PUs 0-1, package 0,1, NUMA node 0,1), nearest NICs: softnic0, eth0, softnic1, eth1"
log=$("$builddir/sluice-info" --topology 2>&1)
has "this machine: at least one package" "[1-9][0-9]* package(s)"

echo "=== ranks bound a core each, under SLUICE_VERBOSE"
run() {  # run BIND: 2 ranks of the basic case on the faked machine
    log=$(HWLOC_XMLFILE=$xml HWLOC_THISSYSTEM=1 SLUICE_VERBOSE=1 timeout 60 \
        "$builddir/sluicerun" --bind="$1" -n 2 -- "$builddir/tests/mp/sluice-mp-test" basic 2>&1)
    code=$?
}
run core
[ "$code" = 0 ] && ok "the job passes" || fail "the job ended with $code"
has "rank 0: PU 0, package 0, its NICs" "sluice\[rank 0\] placement: bound to PUs 0 (package 0, NUMA node 0), nearest NICs: softnic0, eth0"
has "rank 1: PU 1, package 1, its NICs" "sluice\[rank 1\] placement: bound to PUs 1 (package 1, NUMA node 1), nearest NICs: softnic1, eth1"
has "rank 0's queues on NUMA node 0" "sluice\[rank 0\] smp: queues in: on NUMA node 0"
has "rank 1's queues meant for NUMA node 1 (this kernel has none)" "sluice\[rank 1\] smp: queues in: .*NUMA node 1"
run none
[ "$code" = 0 ] && ok "unbound: the job passes" || fail "unbound: the job ended with $code"
has "unbound: both packages" "sluice\[rank 0\] placement: not bound (PUs 0-1, package 0,1, NUMA node 0,1)"
has "unbound: memory left to first touch" "sluice\[rank 0\] smp: queues in: bound across 2 NUMA nodes: left to first touch"

echo "=== host identity"
# Rank 1 in a mount namespace of its own with a fresh /dev/shm: the same
# host name, but it cannot map rank 0's shared memory, so it is another host
# and the network conduit carries their traffic.
if unshare -m true 2> /dev/null; then
    wrapper=$(mktemp)
    trap 'rm -f "$wrapper"' EXIT
    cat > "$wrapper" << 'EOF'
#!/bin/sh
if [ "$SLUICE_RANK" = 1 ]; then
    exec unshare -m sh -c 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$0" "$@"' "$@"
fi
exec "$@"
EOF
    chmod +x "$wrapper"
    log=$(SLUICE_VERBOSE=1 timeout 60 "$builddir/sluicerun" -n 2 -- "$wrapper" "$builddir/tests/mp/sluice-mp-test" rma 2>&1)
    code=$?
    [ "$code" = 0 ] && ok "ranks of one host name, two /dev/shm: the rma case passes" ||
        fail "ranks of one host name, two /dev/shm: the job ended with $code"
    has "... as two hosts" "running: 2 hosts, 1 ranks on this host"
else
    echo "not run: host identity (unshare -m is not allowed here)"
fi
exit $failed
