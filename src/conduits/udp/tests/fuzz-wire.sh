#!/bin/sh
# src/conduits/udp/tests/fuzz-wire.sh - bounded fuzzing of the udp datagram
# decoder (src/conduits/udp/tests/README.md, "Fuzzing").  SLUICETEST_FUZZ_SECONDS sets the time per fuzzer
# (default 20; 5 in the sanitizer subsets, whose build already instruments
# the g++ driver).
b="${SLUICETEST_BUILDDIR:-.}/src/conduits/udp/tests"
seconds="${SLUICETEST_FUZZ_SECONDS:-20}"
[ -n "$SLUICETEST_SUBSET" ] && seconds="${SLUICETEST_FUZZ_SECONDS:-5}"

echo "g++ mutation driver, ${seconds} s:"
"$b/fuzz-udp-wire" "$seconds" || exit 1

if [ -z "$SLUICETEST_SUBSET" ] && [ -x "$b/fuzz-udp-wire-libfuzzer" ]; then
    work=$(mktemp -d) || exit 1
    trap 'rm -rf "$work"' EXIT
    mkdir "$work/corpus" || exit 1
    "$b/fuzz-udp-wire" --seeds "$work/corpus" || exit 1
    echo "libFuzzer (address, undefined), ${seconds} s:"
    # A finding is written under $work; its bytes are printed before the test fails.
    "$b/fuzz-udp-wire-libfuzzer" -max_total_time="$seconds" -max_len=2048 -print_final_stats=1 \
        -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
    status=$?
    tail -n 25 "$work/log"
    # Besides the status, look for what libFuzzer writes on a finding.
    found=0
    for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
        [ -f "$f" ] || continue
        found=1
        echo "finding: $f"
        od -A d -t x1 "$f" | head -n 20
    done
    [ "$found" -eq 0 ] || exit 1
    [ "$status" -eq 0 ] || { echo "libFuzzer exited with status $status"; exit 1; }
elif [ -z "$SLUICETEST_SUBSET" ]; then
    echo "no libFuzzer build (configure found no clang++ -fsanitize=fuzzer): g++ driver only"
fi
exit 0
