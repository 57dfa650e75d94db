#!/usr/bin/env bash
# bench/loaded/split.sh [BUILD_DIR] [RUNS] [HOGS]: a known split under CPU load, beside perf.
# tests/unwind/frameless.c (built as distributions build: gcc -O2, no frame pointers) spends
# 3 parts of its loop in leaf_a and 1 in leaf_b (a loop of about 0.8 ms); HOGS busy loops
# (default: one per core) share the CPUs with it. Each run profiles it with osprey and with
# `perf record -e cpu-clock -F 997 -g`, interleaved; printed: each tool's leaf_a share of
# leaf_a + leaf_b over the runs (min, median, max) and the samples a run. The truth is 0.75;
# a sampler whose samples land at the scheduler's ticks sees the loop at a few phases only
# and scatters around it far more than the samples' count explains.
set -uo pipefail
build=${1:-build}
runs=${2:-8}
hogs=${3:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../tests/unwind/frameless.c
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-split.XXXXXX")
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
gcc -O2 -g "$src" -lpthread -ldl -o "$work/frameless" || exit 1
have_perf=1
perf record -q -e cpu-clock -o "$work/probe.data" true >/dev/null 2>&1 || have_perf=0
for _ in $(seq 1 "$hogs"); do sh -c 'while :; do :; done' & pids+=($!); done
share() { # share FOLDED: "A/(A+B) A+B" from a folded file whose last frame is the leaf
  python3 - "$1" <<'PY'
import sys
a = b = 0
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    leaf = stack.split(";")[-1].split(" ")[0]
    a += int(count) if leaf == "leaf_a" else 0
    b += int(count) if leaf == "leaf_b" else 0
print("%.4f %d" % (a / (a + b) if a + b else 0, a + b))
PY
}
for i in $(seq 1 "$runs"); do
  "$build/tools/osprey" "$work/frameless" --profile -o "$work/o$i" -- 1.5 >/dev/null 2>&1 &&
    echo "osprey $(share "$work/o$i.folded")" >>"$work/shares"
  if [ $have_perf = 1 ]; then
    perf record -q -e cpu-clock -F 997 -g -o "$work/p$i.data" "$work/frameless" 1.5 >/dev/null 2>&1
    PYTHONPATH="$here/.." python3 - "$work/p$i.data" >"$work/p$i.folded" <<'PY'
import sys
from perfscript import perf_samples
for _, _, frames in perf_samples(sys.argv[1]):
    if frames:
        print(";".join(sym for _, sym, _ in reversed(frames)), 1)
PY
    echo "perf $(share "$work/p$i.folded")" >>"$work/shares"
  fi
done
echo "leaf_a's share of leaf_a + leaf_b (built 0.75), $runs runs beside $hogs CPU hogs ($(nproc) cores):"
python3 - "$work/shares" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    tool, s, n = line.split()
    by.setdefault(tool, []).append((float(s), int(n)))
print("| tool | min | median | max | stdev | samples a run |")
print("|---|---|---|---|---|---|")
for tool, v in by.items():
    s = [x for x, _ in v]
    n = statistics.median(y for _, y in v)
    sd = statistics.stdev(s) if len(s) > 1 else 0
    print("| %s | %.3f | %.3f | %.3f | %.3f (counting alone: %.3f) | %d |" %
          (tool, min(s), statistics.median(s), max(s), sd, (0.75 * 0.25 / n) ** 0.5, n))
PY
