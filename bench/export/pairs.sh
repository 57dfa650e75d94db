#!/usr/bin/env bash
# Two builds of `osprey` on one raw profile, run one after the other N times (interleaved, so a
# loaded machine's swings fall on both): each run's wall, user and system time and peak RSS
# (/usr/bin/time), the load average, the bytes of every output, and OSPREY_TIMING=1's stage
# lines in DIR/timing-<name>-<i>.txt.
#   bash bench/export/pairs.sh BEFORE_OSPREY AFTER_OSPREY RAW [RUNS] [DIR]
set -euo pipefail
before="$(realpath "$1")" after="$(realpath "$2")" raw="$(realpath "$3")"
runs="${4:-7}"
dir="${5:-$(mktemp -d "${TMPDIR:-/tmp}/osprey-pairs-XXXXXX")}"
mkdir -p "$dir"
for i in $(seq 1 "$runs"); do
  for name in before after; do
    exe="$before"
    [ "$name" = after ] && exe="$after"
    rm -rf "$dir/out-$name" && mkdir "$dir/out-$name"
    OSPREY_TIMING=1 /usr/bin/time -f "$name wall %e s user %U s sys %S s peak %M kB" \
      "$exe" report "$raw" -o "$dir/out-$name/big" >/dev/null 2>"$dir/timing-$name-$i.txt"
    echo "$(grep '^\(before\|after\) wall' "$dir/timing-$name-$i.txt")  load" \
      "$(cut -d' ' -f1 /proc/loadavg)  outputs $(cat "$dir/out-$name"/big.* | wc -c) bytes"
  done
done
# Each stage's CPU (the thread that ran it), median over the runs.
python3 - "$dir" <<'PY'
import glob, re, statistics, sys
for name in ("before", "after"):
    cpu = {}
    for path in sorted(glob.glob(f"{sys.argv[1]}/timing-{name}-*.txt")):
        for line in open(path):
            m = re.match(r"osprey: timing: (.+?)\s+[\d.]+ s\s+\(this thread's CPU ([\d.]+) s\)", line)
            if m:
                cpu.setdefault(m.group(1), []).append(float(m.group(2)))
    print(name + ": " + ", ".join(f"{k} {statistics.median(v):.3f} s" for k, v in cpu.items()))
PY
