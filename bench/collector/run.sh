#!/bin/bash
# bench/collector/run.sh [BUILD] [RUNS] [HZ] — the collector's own cost beside the timer floor.
#
# One busy thread (busy.c, a fixed amount of work) run RUNS times (default 7) each: alone, under
# the timer floor (bench/floor/sigfloor.c, SIGFLOOR_TIMER=1: the thread's own timer at HZ and an
# empty handler) and under `osprey --profile -F HZ` (default 997). Prints per run the program's
# CPU (user + system, ms: its own getrusage at exit in each case, bench/collector/rusage.c),
# ospreyd's (`collector.cpu_ms`) and its wake-ups per second (wakeups.py: a count the machine's
# load does not blur) and the samples lost (`dropped`), then the medians and Osprey's added CPU
# (program + ospreyd - alone) over the floor's (floor - alone).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
runs=${2:-7}
hz=${3:-997}
work=${WORK:-4000000000}
build=$(cd "$build" && pwd)
tmp=$(mktemp -d /tmp/osprey-collector.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
clang -O2 -g -fno-omit-frame-pointer "$here/busy.c" -o "$tmp/busy"
clang -O2 -shared -fPIC "$here/../floor/sigfloor.c" -o "$tmp/libsigfloor.so" -lpthread
clang -O2 -shared -fPIC "$here/rusage.c" -o "$tmp/librusage.so"
cd "$tmp"
export RUSAGE_OUT="$tmp/rusage"
busy_ms() { # busy's own user + system CPU at its exit, ms (rusage.c: the same reading in each case)
    awk '$1 == "busy" { ms = $2 / 1000 } END { printf "%.1f\n", ms }' "$RUSAGE_OUT"
    rm -f "$RUSAGE_OUT"
}
cpu_ms() { # the command run with rusage.c preloaded (after LD_PRELOAD's others), then busy_ms
    LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$tmp/librusage.so" "$@" >/dev/null
    busy_ms
}
: >"$tmp/rows"
for i in $(seq "$runs"); do
    plain=$(cpu_ms ./busy "$work")
    floor=$(SIGFLOOR_TIMER=1 SIGFLOOR_HZ="$hz" LD_PRELOAD="$tmp/libsigfloor.so" cpu_ms ./busy "$work")
    rm -f w.raw*.json
    wake=$(LD_PRELOAD="$tmp/librusage.so" python3 "$here/wakeups.py" "$build/tools/osprey" "$tmp/busy" "$work" "$hz")
    prog=$(busy_ms)
    read -r coll dropped < <(python3 -c 'import json; d = json.load(open("w.raw.json")); print(d["collector"]["cpu_ms"], d.get("dropped", 0))')
    echo "run $i: plain $plain ms, floor $floor ms, osprey program $prog ms + ospreyd $coll ms ($wake), dropped $dropped"
    echo "$plain $floor $prog $coll" >>"$tmp/rows"
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
plain, floor, prog, coll = (statistics.median(c) for c in zip(*rows))
print(f"median: plain {plain:.0f} ms, floor +{floor - plain:.0f} ms, osprey program {prog:.0f} ms "
      f"(its getrusage at exit), ospreyd {coll:.0f} ms")
# Osprey's added CPU (program + ospreyd) over the timer floor's: the medians', and per run
# (each run's three are back to back, so the machine's load moves them together).
ratios = sorted((p + c - a) / (f - a) for a, f, p, c in rows if f > a)
ratio = (prog + coll - plain) / (floor - plain) if floor > plain else float("nan")
print(f"added CPU / timer floor's: of the medians {ratio:.2f}; per run, median "
      f"{statistics.median(ratios) if ratios else float('nan'):.2f} of {len(ratios)} "
      f"(runs whose floor cost nothing measurable left out: {len(rows) - len(ratios)})")
PY
