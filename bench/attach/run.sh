#!/usr/bin/env bash
# bench/attach/run.sh BUILD_DIR [SECONDS]: osprey attach beside perf record -p on a live
# redis-server driven by redis-benchmark: throughput unattached, attached to osprey, attached
# to perf (-g, and --call-graph dwarf), all at 997 Hz; osprey's ptrace sampler (what attach
# falls back to where perf events are refused: OSPREYD_SAMPLER=ptrace, 100 Hz) beside perf -g at
# 100 Hz; and osprey's attach and detach latency
# (from the command's start to sampling, and from the stop to the raw file). Prints one table.
set -uo pipefail
build=${1:?usage: run.sh BUILD_DIR [SECONDS]}
seconds=${2:-8}
osprey=$build/tools/osprey
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-bench-attach.XXXXXX")
port=$((20000 + RANDOM % 20000))
redis-server --port "$port" --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
requests=$((seconds * 60000))
bench() { # requests per second of SET and GET
  redis-benchmark -p "$port" -n "$requests" -c 50 -t set,get -q 2>/dev/null |
    awk -F'[: ]+' '/requests per second/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { s += $i; n++; break } } END { printf "%.0f", s / n }'
}
row() { printf '%-34s %10s %8s\n' "$1" "$2" "$3"; }
base=$(bench)
row "configuration" "req/s" "ratio"
row "unattached" "$base" "1.000"
for mode in osprey perf-fp perf-dwarf osprey-ptrace perf-fp-100; do
  case $mode in
  osprey) "$osprey" attach "$server" -o "$work/o" >"$work/$mode.log" 2>&1 & ;;
  perf-fp) perf record -F 997 -g -p "$server" -o "$work/perf.data" >"$work/$mode.log" 2>&1 & ;;
  perf-dwarf) perf record -F 997 --call-graph dwarf -p "$server" -o "$work/perf.data" >"$work/$mode.log" 2>&1 & ;;
  osprey-ptrace) OSPREYD_SAMPLER=ptrace "$osprey" attach "$server" -o "$work/o" >"$work/$mode.log" 2>&1 & ;;
  perf-fp-100) perf record -F 100 -g -p "$server" -o "$work/perf.data" >"$work/$mode.log" 2>&1 & ;;
  esac
  prof=$!
  sleep 1
  got=$(bench)
  kill -TERM "$prof"
  wait "$prof"
  row "attached: $mode" "$got" "$(awk -v a="$got" -v b="$base" 'BEGIN { printf "%.3f", a / b }')"
done
# Latency: attach (command start to the events enabled: the collector's start_unix_ns) and
# detach (the stop to the raw file written: its end_unix_ns to the file's mtime is the write).
for _ in 1 2 3; do
  t0=$(date +%s%N)
  "$build/daemon/ospreyd" --attach-pid "$server" --out "$work/l.raw.json" --duration 0.5
  t1=$(date +%s%N)
  python3 - "$work/l.raw.json" "$t0" "$t1" <<'PY'
import json, sys
raw = json.load(open(sys.argv[1]))
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
print(f"latency run: attach {(raw['start_unix_ns'] - t0) / 1e6:.1f} ms, detach and write {(t1 - raw['end_unix_ns']) / 1e6:.1f} ms")
PY
done
