#!/usr/bin/env bash
# The cost of reading Python frames (shim/python.c): bench/python/work.py (pure Python, 14
# frames deep) at 997 Hz with Python frames on, beside the same run with them off
# (OSPREY_PYTHON=0: the shim's own cost, timers and native walk) and unprofiled. Figures: the
# process's CPU time for the fixed work (its own clock, the handler included), median of RUNS;
# the added CPU over the unprofiled run, on against off.
# Usage: bash bench/python/run.sh [BUILD_DIR] [RUNS] [ROUNDS]
set -euo pipefail
python=/usr/bin/python3.11
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd) runs=${2:-5} rounds=${3:-4000}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-python-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$here/work.py" "$work/" && cd "$work"

cpu() { # MODE: the run's CPU seconds
  case $1 in
    plain) "$python" work.py "$rounds" ;;
    off) OSPREY_PYTHON=0 "$build/tools/osprey" "$python" --profile -F 997 --format folded \
      -o "$work/off" -- work.py "$rounds" 2>/dev/null ;;
    on) "$build/tools/osprey" "$python" --profile -F 997 --format folded -o "$work/on" \
      -- work.py "$rounds" 2>/dev/null ;;
  esac | awk '/^cpu /{print $2}'
}
declare -A all
for ((r = 0; r < runs; r++)); do
  for mode in plain off on; do all[$mode]+="$(cpu "$mode") "; done
done
python3 - "${all[plain]}" "${all[off]}" "${all[on]}" "$work/on.folded" <<'PY'
import statistics, sys
plain, off, on = (statistics.median(map(float, a.split())) for a in sys.argv[1:4])
print("CPU s, median: plain %.3f  python frames off %.3f  on %.3f" % (plain, off, on))
print("added over plain: off %.3f s (%.1f%%)  on %.3f s (%.1f%%)  on/off %.2fx"
      % (off - plain, 100 * (off - plain) / plain, on - plain, 100 * (on - plain) / plain,
         (on - plain) / (off - plain) if off > plain else float("nan")))
named = total = 0
for line in open(sys.argv[4]):
    stack, count = line.rsplit(" ", 1)
    total += int(count)
    named += int(count) * ("leaf (" in stack and "[py]" in stack)
print("on: %.1f%% of the samples name the Python leaf function" % (100.0 * named / total))
PY
