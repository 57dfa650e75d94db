#!/bin/bash
# bench/collector/run.sh [BUILD] [RUNS] [HZ] — the collector's own cost beside the timer floor.
#
# One busy thread (busy.c, a fixed amount of work) run RUNS times (default 7) each: alone, under
# the timer floor (bench/floor/sigfloor.c, SIGFLOOR_TIMER=1: the thread's own timer at HZ and an
# empty handler) and under `osprey --profile -F HZ` (default 997). Prints per run the program's
# CPU (user + system, ms: getrusage of the run; under Osprey the raw file's process_cpu_ns),
# ospreyd's (`collector.cpu_ms`) and its wake-ups per second (wakeups.py: a count the machine's
# load does not blur) and the samples lost (`dropped`), then the medians.
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
cd "$tmp"
cpu_ms() { # the command's user + system CPU, ms (getrusage of its children: µs, not /usr/bin/time's 10 ms)
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(round((r.ru_utime + r.ru_stime) * 1000, 1))' "$@"
}
: >"$tmp/rows"
for i in $(seq "$runs"); do
    plain=$(cpu_ms ./busy "$work")
    floor=$(SIGFLOOR_TIMER=1 SIGFLOOR_HZ="$hz" LD_PRELOAD="$tmp/libsigfloor.so" cpu_ms ./busy "$work")
    rm -f w.raw*.json
    wake=$(python3 "$here/wakeups.py" "$build/tools/osprey" "$tmp/busy" "$work" "$hz")
    read -r prog coll dropped < <(python3 -c 'import json; d = json.load(open("w.raw.json")); print(round(d["process_cpu_ns"] / 1e6), d["collector"]["cpu_ms"], d.get("dropped", 0))')
    echo "run $i: plain $plain ms, floor $floor ms, osprey program $prog ms + ospreyd $coll ms ($wake), dropped $dropped"
    echo "$plain $floor $prog $coll" >>"$tmp/rows"
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
plain, floor, prog, coll = (statistics.median(c) for c in zip(*rows))
print(f"median: plain {plain:.0f} ms, floor +{floor - plain:.0f} ms, osprey program {prog:.0f} ms "
      f"(its raw file's process_cpu_ns), ospreyd {coll:.0f} ms")
PY
