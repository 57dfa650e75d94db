#!/usr/bin/env bash
# On-CPU shares of a real event loop, Osprey beside perf: redis-server (Debian's) on loopback
# under redis-benchmark, once profiled by Osprey, once by `perf record -e cpu-clock -g`; prints
# each one's share of on-CPU samples by the first user-space function (perf charges the
# kernel's work in a system call to the call, and so should Osprey).
# Usage: bash bench/waits/redis.sh [BUILD_DIR] [REQUESTS]   (needs redis-server, redis-benchmark,
# redis-cli, perf)
set -euo pipefail
build=$(realpath "${1:-build}")
requests=${2:-200000}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-redis.XXXXXX")
trap 'rm -rf "$work"' EXIT

run() { # run osprey|perf
  local port=$((6400 + RANDOM % 500))
  local server=(redis-server --port "$port" --save "" --appendonly no --daemonize no)
  case $1 in
    osprey) OSPREY_PROFILE="$work/osprey.raw.json" OSPREY_DAEMON="$build/daemon/ospreyd" \
      LD_PRELOAD="$build/shim/libospreyprof.so" "${server[@]}" >/dev/null 2>&1 & ;;
    perf) perf record -q -e cpu-clock -F 997 -g -o "$work/perf.data" -- "${server[@]}" \
      >/dev/null 2>&1 & ;;
  esac
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-benchmark -p "$port" -n "$requests" -c 20 -q -t set,get >/dev/null 2>&1
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait
}
run osprey
run perf
"$build/tools/osprey" report "$work/osprey.raw.json" -o "$work/osprey" >/dev/null 2>&1
python3 - "$work" <<'PY'
import collections, json, os, subprocess, sys
work = sys.argv[1]
raw = json.load(open(work + "/osprey.raw.json"))
main = [t for t in raw["threads"] if t["fiber"] == 0][0]
root = "%s-%d;" % (os.path.basename(raw["exe"]), main["tid"])  # the main thread's folded root
def top(counter, total, name):
    print("%s (%d on-CPU samples):" % (name, total))
    for fn, n in counter.most_common(4):
        print("  %-28s %5.1f%%" % (fn, 100.0 * n / total))
osp = collections.Counter()
for line in open(work + "/osprey.folded"):
    frames, count = line.rsplit(" ", 1)
    if frames.startswith(root):
        osp[frames.split(";")[-1]] += int(count)
top(osp, sum(osp.values()), "osprey, main thread, leaf function")
out = subprocess.run(["perf", "script", "-i", work + "/perf.data", "-F", "comm,tid,ip,sym,dso"],
                     capture_output=True, text=True).stdout
perf = collections.Counter()
for block in out.split("\n\n"):
    lines = [l for l in block.strip().split("\n") if l.strip()]
    if not lines or "redis-server" not in lines[0]:
        continue
    user = next((l.split()[1] for l in lines[1:] if "[kernel" not in l and len(l.split()) > 1), "?")
    perf[user] += 1
top(perf, sum(perf.values()), "perf -e cpu-clock -g, first user-space function")
PY
