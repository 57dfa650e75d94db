#!/bin/bash
# bench/collector/handler.sh [BUILD] [RUNS] [HZ] — what the handler costs a busy thread per
# signal, beside the timer floor, in two measures other than a whole run's CPU time (plain
# `busy` moves by more than the floor costs on a loaded 2-core machine): the count of system
# calls, which the load does not blur, and the share of the thread's time outside its loop,
# which it does less but still does (interrupts and preemptions land there too: the floor's
# share went from 2.6% to 4.2% in five runs at load 10-16).
#
# One busy thread (busy.c, WORK rounds, default 4e9) run RUNS times (default 3) each: alone,
# under the timer floor (bench/floor/sigfloor.c, SIGFLOOR_TIMER=1) and under `osprey --profile
# -F HZ` (default 997), and with BEFORE_BUILD set under that build's too, interleaved. Per run:
# - system calls the profiled process tree made, per signal delivered (`perf stat` on the
#   tracepoints syscalls:sys_enter_{timer_settime,clock_gettime} and signal:signal_deliver;
#   ospreyd's own are among them: it reads no clock through clock_gettime's system call);
# - the share of the busy thread's CPU time spent outside its loop (`perf record -e cpu-clock
#   -F 20000`, the task's own clock, the first and last 0.2 s left out): signal delivery, the
#   handler, the return; minus the same share alone, over the floor's.
# Needs root (the tracepoints, the kernel's symbols): prints why and exits 0 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
hz=${3:-997}
work=${WORK:-4000000000}
if [ "$(id -u)" != 0 ] || ! perf stat -e signal:signal_deliver true >/dev/null 2>&1; then
    echo "handler.sh: needs root and perf's tracepoints; skipped"
    exit 0
fi
tmp=$(mktemp -d /tmp/osprey-handler.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
clang -O2 -g -fno-omit-frame-pointer "$here/busy.c" -o "$tmp/busy"
clang -O2 -shared -fPIC "$here/../floor/sigfloor.c" -o "$tmp/libsigfloor.so" -lpthread
builds=("after=$build")
[ -n "${BEFORE_BUILD:-}" ] && builds=("before=$(cd "$BEFORE_BUILD" && pwd)" "${builds[@]}")
outside() { # perf.data -> % of busy's steady CPU samples outside work()
    perf script -i "$1" -F comm,time,ip,sym --comm busy 2>/dev/null | python3 -c '
import sys
rows = []
for line in sys.stdin:
    p = line.split()
    if len(p) >= 3:
        rows.append((float(p[1].rstrip(":")), p[3] if len(p) > 3 else "?"))
t0, t1 = rows[0][0] + 0.2, rows[-1][0] - 0.2
sel = [s for t, s in rows if t0 <= t <= t1]
loop = "work"
print("%.3f" % (100 * sum(s != loop for s in sel) / len(sel)))'
}
calls() { # the command under perf stat: "settime gettime signals"
    perf stat -x, -e syscalls:sys_enter_timer_settime,syscalls:sys_enter_clock_gettime,signal:signal_deliver \
        -o "$tmp/stat" -- "$@" >/dev/null 2>&1
    awk -F, '/^[0-9]/ { v[++n] = $1 } END { print v[1], v[2], v[3] }' "$tmp/stat"
}
rec() { perf record -q -e cpu-clock -F 20000 -o "$tmp/perf.data" -- "$@" >/dev/null 2>&1; outside "$tmp/perf.data"; }
cd "$tmp"
: >"$tmp/rows"
for i in $(seq "$runs"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    plain=$(rec ./busy "$work")
    floor=$(SIGFLOOR_TIMER=1 SIGFLOOR_HZ="$hz" LD_PRELOAD="$tmp/libsigfloor.so" rec ./busy "$work")
    echo "run $i (load $load): outside the loop plain $plain%, floor $floor%"
    for b in "${builds[@]}"; do
        name=${b%%=*} dir=${b#*=}
        prof=(env "$dir/tools/osprey" ./busy --profile -F "$hz" -o "$tmp/p" --format folded -- "$work")
        read -r settime gettime signals < <(calls "${prof[@]}")
        samples=$(python3 -c 'import json; print(len(json.load(open("p.raw.json"))["samples"]))')
        osp=$(rec "${prof[@]}")
        echo "  $name: outside the loop $osp%; per signal timer_settime $(echo "$settime $signals" | awk '{printf "%.2f", $1/$2}'), clock_gettime $(echo "$gettime $signals" | awk '{printf "%.2f", $1/$2}') ($signals signals, $samples rows)"
        echo "$name $plain $floor $osp $settime $gettime $signals" >>"$tmp/rows"
    done
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
by = {}
for l in open(sys.argv[1]):
    n, plain, floor, osp, st, gt, sig = l.split()
    by.setdefault(n, []).append(tuple(map(float, (plain, floor, osp, st, gt, sig))))
for n, rows in by.items():
    ratios = [(o - p) / (f - p) for p, f, o, *_ in rows if f > p]
    per = [(st + gt) / sig for *_, st, gt, sig in rows]
    print(f"{n}: handler's share over the floor's, per run {', '.join(f'{r:.2f}' for r in ratios)} "
          f"(median {statistics.median(ratios) if ratios else float('nan'):.2f}); "
          f"timer_settime + clock_gettime per signal, median {statistics.median(per):.2f}")
PY
