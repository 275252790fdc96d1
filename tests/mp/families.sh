# tests/mp/families.sh - sourced by the scripts that run sluice-mp-gtest's
# network instances again in a variant of their conduit (another provider,
# other queue sizes, other hosts): which suites such a run leaves out.
#
# The client families (atomic domains, teams and collectives, VIS,
# completion, negotiated-payload AMs) reach a conduit only through its AM
# and RMA paths, which the transport suites exercise in every variant.
# They run over each conduit once, in its default form (sluice-mp-gtest's
# Net instances, and the conduit's own script where the shared suites
# leave it out); a variant run adds only the families whose conduit code
# the variant changes, named by the script (ofi's providers: AtomicDomains,
# each provider's atomic path).
mp_client_families_but_atomics='Net/Coll*:Net/Vis*:Net/Completion*:Net/AmPrepare*'
mp_client_families="Net/Atomic*:$mp_client_families_but_atomics"

# mp_filter POSITIVE [EXCLUDED]: a --gtest_filter value of the POSITIVE
# patterns without EXCLUDED (patterns joined by ':', either may be empty).
mp_filter() {
    if [ -n "${2:-}" ]; then
        printf '%s:-%s\n' "$1" "$2"
    else
        printf '%s\n' "$1"
    fi
}
