#!/usr/bin/env bash
# bench/attach/ptrace-cost.sh BUILD_DIR [SECONDS]: what sampling from outside costs, sampler by
# sampler, on THREADS busy threads (bench/workloads/spin.c, built without frame pointers) and
# on one busy and THREADS blocked ones: osprey's ptrace sampler (OSPREYD_SAMPLER=ptrace, what
# attach falls back to where perf events are refused, 100 Hz), the same stopping every thread
# at every round as py-spy does (OSPREYD_SAMPLER=ptrace-all), osprey's perf-event sampler
# (997 Hz), and `perf record -g` at 100 Hz (perf's way, for scale). Per row: the profiler's own
# CPU per second of wall time, and for ptrace the threads' time stopped (per stop, and per
# second of their CPU time: the share of the program's time taken from it). Figures come from
# the raw file's `collector` (cpu_ms, ptrace) and /proc for perf; wall-time throughput is left
# out on purpose: on a shared machine it is the neighbours' load, not the profiler's.
set -uo pipefail
build=${1:?usage: ptrace-cost.sh BUILD_DIR [SECONDS]}
seconds=${2:-4}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-bench-ptrace.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
gcc -O2 -fomit-frame-pointer -I"$here/../workloads" "$here/../workloads/spin.c" -lpthread \
  -o "$work/spin" || exit 1
printf '#include <unistd.h>\n#include <pthread.h>\n#include <stdlib.h>\nstatic void *b(void *a) { pause(); return a; }\nint main(int c, char **v) { pthread_t t; for (int i = 0; i < atoi(v[1]); i++) pthread_create(&t, 0, b, 0); volatile unsigned long x = 0; for (;;) x++; }\n' >"$work/blocked.c"
gcc -O2 "$work/blocked.c" -lpthread -o "$work/blocked" || exit 1
ticks=$(getconf CLK_TCK)
cpu_of() { awk -v hz="$ticks" '{ sub(/.*\) /, ""); printf "%.0f", ($12 + $13) * 1000 / hz }' "/proc/$1/stat"; }
printf '%-28s %-10s %12s %12s %14s\n' "program" "sampler" "cost ms/s" "stop us" "stopped ms/s"
for case in "spin 1" "spin 4" "spin 16" "blocked 16"; do
  read -r program threads <<<"$case"
  for sampler in ptrace ptrace-all perf perf-record-100; do
    if [ "$program" = spin ]; then "$work/spin" "$threads" $((seconds + 3)) >/dev/null & else "$work/blocked" "$threads" & fi
    target=$!
    sleep 0.5
    case $sampler in
    ptrace | ptrace-all | perf)
      choice=()
      [ "$sampler" != perf ] && choice=("OSPREYD_SAMPLER=$sampler")
      env "${choice[@]}" "$build/daemon/ospreyd" --attach-pid "$target" --out "$work/r.raw.json" \
        --duration "$seconds" 2>/dev/null
      python3 - "$work/r.raw.json" "$seconds" "$case" "$sampler" <<'PY'
import json, sys
raw = json.load(open(sys.argv[1]))
s = float(sys.argv[2])
c = raw["collector"]
p = c.get("ptrace", {})
stops = p.get("stops", 0)
per_stop = p.get("stopped_ns", 0) / stops / 1e3 if stops else 0
cpu = c.get("events_cpu_ns", 0) / 1e9
share = p.get("stopped_ns", 0) / 1e6 / cpu if cpu else 0
print(f"{sys.argv[3]:<28} {sys.argv[4]:<10} {c['cpu_ms'] / s:12.1f} {per_stop:12.1f} {share:14.2f}")
PY
      ;;
    perf-record-100)
      perf record -F 100 -g -p "$target" -o "$work/perf.data" >/dev/null 2>&1 &
      rec=$!
      sleep "$seconds"
      used=$(cpu_of "$rec")
      kill -INT "$rec"
      wait "$rec" 2>/dev/null
      printf '%-28s %-10s %12.1f %12s %14s\n' "$case" "perf -g" "$(awk -v u="$used" -v s="$seconds" 'BEGIN { print u / s }')" "-" "-"
      ;;
    esac
    kill "$target" 2>/dev/null
    wait "$target" 2>/dev/null
  done
done
