#!/usr/bin/env bash
# shim-rate.sh — measure the sampling rate and drops (a benchmark, not a pass/fail test).
# Usage: bench/shim-rate.sh BUILD_DIR THREADS HZ [MS]
# Runs test-shim-target's busy mode (THREADS threads spinning MS ms) under the preloaded shim
# with test-shim-consumer as the ring consumer, and prints per-thread SAMPLE records per
# second (over each thread's first..last sample) and the drop count.
set -euo pipefail
build=$(cd "$1" && pwd); threads=$2; hz=$3; ms=${4:-3000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
LD_PRELOAD="$build/shim/libospreyprof.so" OSPREY_PROFILE="$out/rate.txt" \
  OSPREY_PROFILE_HZ="$hz" OSPREY_DAEMON="$build/tests/test-shim-consumer" \
  "$build/tests/test-shim-target" busy "$threads" "$ms" >/dev/null
awk -v hz="$hz" -v threads="$threads" '
  $1 == "dropped" { dropped = $2 }
  $1 == "thread" && $5 == "thread" && $10 > $9 {
    rate = ($6 - 1) * 1e9 / ($10 - $9); oncpu = ($6 - $7) * 1e9 / ($10 - $9)
    seen += ($6 + $8) * 1e9 / ($10 - $9)
    n++; sum += rate; sumcpu += oncpu
    if (min == "" || rate < min) min = rate
    if (rate > max) max = rate }
  END {
    printf "%d busy threads at %d Hz: SAMPLE records/s per thread mean %.0f (%.1f%%), min %.0f, max %.0f; on-CPU mean %.0f; SAMPLE+REPEAT mean %.0f; dropped %d\n",
      n, hz, sum / n, 100 * sum / n / hz, min, max, sumcpu / n, seen / n, dropped }' "$out/rate.txt"
