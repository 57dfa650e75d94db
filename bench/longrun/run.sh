#!/usr/bin/env bash
# A long run: busy.c's THREADS busy threads (default 8) profiled at RATE Hz (default 997) for
# SECONDS (default 120; 3600 for an hour) under the preload shim, and ospreyd's memory read
# from /proc/PID/status (VmRSS, VmHWM, RssAnon) every STEP seconds meanwhile. Prints one row
# per reading, then ospreyd's peak (the raw file's collector.peak_rss_kb, which counts the
# write at the end), its growth in MB per hour (RSS from the first minute's end, or the first
# quarter of a shorter run, to the end, projected to an hour), the raw file's size, how long the
# program waited at exit for its profile, and, beside it, `perf record -F RATE -g`'s output
# for the same program and duration (PERF=0 skips it).
# Usage: bash bench/longrun/run.sh [BUILD_DIR] [SECONDS]
#   env: THREADS=8 RATE=997 STEP=(SECONDS/40, at least 2) PERF=1 OSPREYD_SPILL_SAMPLES=...
#        KEEP=PATH (the raw file is copied there, for bench/longrun/aggregate.py)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
seconds=${2:-120}
threads=${THREADS:-8}
rate=${RATE:-997}
step=${STEP:-$((seconds / 40 > 2 ? seconds / 40 : 2))}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-longrun.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 -fno-omit-frame-pointer -pthread "$here/busy.c" -o "$work/busy"
out="$work/p.raw.json"

kb() { awk -v k="$1" '$1 == k":" {print $2}' "$2" 2>/dev/null || true; }
mb() { awk -v kb="$1" 'BEGIN {printf "%.1f", kb / 1024}'; }

start=$(date +%s%N)
( # the end is when the program has exited: after its profile was written (or its wait gave up)
  OSPREY_DAEMON="$build/daemon/ospreyd" OSPREY_PROFILE="$out" OSPREY_PROFILE_HZ="$rate" \
    LD_PRELOAD="$build/shim/libospreyprof.so" "$work/busy" "$threads" "$seconds"
  date +%s%N >"$work/end"
) &
prog=$!
daemon=""
for _ in $(seq 100); do # its collector, by the output path on its command line
  daemon=$(pgrep -f -- "--out $out" | head -1 || true)
  [ -n "$daemon" ] && break
  sleep 0.1
done
[ -n "$daemon" ] || { echo "no ospreyd found for $out" >&2; exit 1; }
echo "ospreyd $daemon, $threads threads at $rate Hz for $seconds s, a reading every $step s"
echo "| t (s) | VmRSS MB | VmHWM MB | RssAnon MB |"
echo "|---|---|---|---|"
base_t="" base_rss="" last_t=0 last_rss=0 last_hwm=0
settle=$((seconds / 4 < 60 ? seconds / 4 : 60))
while kill -0 "$prog" 2>/dev/null && [ -r "/proc/$daemon/status" ]; do
  cp "/proc/$daemon/status" "$work/status" 2>/dev/null || break
  t=$((($(date +%s%N) - start) / 1000000000))
  rss=$(kb VmRSS "$work/status") hwm=$(kb VmHWM "$work/status") anon=$(kb RssAnon "$work/status")
  [ -n "$rss" ] || break
  echo "| $t | $(mb "$rss") | $(mb "$hwm") | $(mb "$anon") |"
  if [ -z "$base_t" ] && [ "$t" -ge "$settle" ]; then base_t=$t base_rss=$rss; fi
  last_t=$t last_rss=$rss last_hwm=$hwm
  for _ in $(seq $((step * 5))); do # a reading every STEP s; the end seen within 0.2 s
    kill -0 "$prog" 2>/dev/null || break
    sleep 0.2
  done
done
wait "$prog"
end=$(cat "$work/end")
wall=$(awk -v ns=$((end - start)) 'BEGIN {printf "%.2f", ns / 1e9}')
peak=$(tail -c 4096 "$out" | grep -o '"peak_rss_kb":[0-9]*' | cut -d: -f2)
rows=$(awk '/^"samples":\[/ {on = 1; next} on && /^\[/ {n++} on && /^\]/ {on = 0} END {print n + 0}' "$out")
size=$(stat -c %s "$out")
per_hour() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN {if (t > 0) printf "%.1f", (b - a) / 1024 * 3600 / t; else print "-"}'; }
echo
echo "ospreyd peak (collector.peak_rss_kb): $(mb "$peak") MB; last VmHWM read $(mb "$last_hwm") MB"
if [ -n "$base_t" ] && [ "$last_t" -gt "$base_t" ]; then
  echo "ospreyd VmRSS $(mb "$base_rss") MB at ${base_t} s -> $(mb "$last_rss") MB at ${last_t} s:" \
    "$(per_hour "$base_rss" "$last_rss" $((last_t - base_t))) MB per hour"
fi
echo "raw file: $(mb $((size / 1024))) MB, $rows sample rows ($(awk -v r="$rows" -v s="$seconds" 'BEGIN {printf "%.0f", r / s}') a second);" \
  "$(per_hour 0 $((size / 1024)) "$seconds") MB per hour"
[ -z "${KEEP:-}" ] || cp "$out" "$KEEP"
echo "program wall $wall s for $seconds s of work (the rest: starting, and the profile written at exit)"
if [ "${PERF:-1}" = 1 ] && command -v perf >/dev/null; then
  perf record -q -F "$rate" -g -o "$work/perf.data" "$work/busy" "$threads" "$seconds" 2>/dev/null
  psize=$(stat -c %s "$work/perf.data")
  echo "perf record -F $rate -g, same program and duration: $(mb $((psize / 1024))) MB;" \
    "$(per_hour 0 $((psize / 1024)) "$seconds") MB per hour"
fi
