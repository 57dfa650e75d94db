#!/usr/bin/env bash
# bench/loaded/ticks.sh [BUILD_DIR] [RUNS] [HOGS]: does ospreyd keep up on a busy machine?
# tests/waits/waits.c's pingpong (a client and a server thread trading short messages on a
# socket, 20,000+ guarded calls a second: rings written fast) is profiled at 997 Hz and 10 kHz
# beside HOGS busy loops (default: two per core), half of them in the program's session and
# half in sessions of their own (a build in another terminal, another user's job). Each run
# reads the raw file's collector.longest_late_us (how late ospreyd's tick came after its
# deadline) and `dropped` (periods lost, most to full rings); `perf record -e cpu-clock -g` on
# the same workload, interleaved, gives its samples and the LOST events of its own buffers.
set -uo pipefail
build=${1:-build}
runs=${2:-8}
hogs=${3:-$(($(nproc) * 2))}
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../tests/waits/waits.c
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-ticks.XXXXXX")
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null
  pkill -f "osprey-ticks-hog" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
gcc -O2 -g -fomit-frame-pointer "$src" -lpthread -o "$work/waits" || exit 1
have_perf=1
perf record -q -e cpu-clock -o "$work/probe.data" true >/dev/null 2>&1 || have_perf=0
hog='while :; do :; done # osprey-ticks-hog'
for i in $(seq 1 "$hogs"); do
  if [ $((i % 2)) = 0 ]; then
    setsid sh -c "$hog" &
  else
    sh -c "$hog" &
  fi
  pids+=($!)
done
sleep 1
for i in $(seq 1 "$runs"); do
  for hz in 997 10000; do
    OSPREY_PROFILE_HZ=$hz "$build/tools/osprey" "$work/waits" --profile -o "$work/o$i-$hz" \
      -- pingpong >/dev/null 2>&1 || continue
    python3 - "$work/o$i-$hz.raw.json" "$hz" >>"$work/rows" <<'PY'
import json, sys
raw = json.load(open(sys.argv[1]))
periods = sum(s[4] if len(s) > 4 else 1 for s in raw["samples"])
print("osprey", sys.argv[2], raw.get("collector", {}).get("longest_late_us", -1),
      raw["dropped"], periods)
PY
    if [ $have_perf = 1 ]; then
      perf record -q -e cpu-clock -F "$hz" -g -o "$work/p$i-$hz.data" "$work/waits" pingpong \
        >/dev/null 2>&1
      stats=$(perf report -i "$work/p$i-$hz.data" --stats 2>/dev/null)
      samples=$(awk '/SAMPLE events:/ {print $3; exit}' <<<"$stats")
      lost=$(awk '/LOST events:/ {print $3; exit}' <<<"$stats")
      echo "perf $hz -1 ${lost:-0} ${samples:-0}" >>"$work/rows"
    fi
  done
done
echo "pingpong, $runs runs a rate beside $hogs CPU hogs ($(nproc) cores; load $(cut -d' ' -f1 /proc/loadavg)):"
python3 - "$work/rows" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    tool, hz, late, dropped, periods = line.split()
    by.setdefault((tool, int(hz)), []).append((int(late), int(dropped), int(periods)))
print("| tool | rate | tick late, median / max (ms) | runs that lost any | lost of recorded, all runs |")
print("|---|---|---|---|---|")
for (tool, hz), v in sorted(by.items()):
    late = [l / 1000 for l, _, _ in v if l >= 0]
    lost = sum(d for _, d, _ in v)
    total = sum(p for _, _, p in v)
    span = "%.1f / %.1f" % (statistics.median(late), max(late)) if late else "-"
    print("| %s | %d Hz | %s | %d of %d | %d of %d (%.2f%%) |" %
          (tool, hz, span, sum(1 for _, d, _ in v if d), len(v), lost, total,
           100.0 * lost / total if total else 0))
PY
