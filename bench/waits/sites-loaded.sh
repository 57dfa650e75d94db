#!/usr/bin/env bash
# Where a loaded machine's pingpong client waits: tests/waits/waits.c's pingpong at 997 Hz beside
# HOGS busy loops (default 8), RUNS runs (default 8) of each build given, interleaved (the load
# falls on all alike). Per run, the main thread's waiting (the kernel's waited_ns) and its
# share at each site: recv_site (its 1.5 s of requests), its final pthread_join (a wait of its
# own), send_site (its sends never block), and any other stack by its leaf; then per build how
# many runs had recv_site under 95% of the waiting (e2e-waits' bound, before the join was left
# out of it) and the share at the right site (recv_site and the join), least and mean.
# Usage: bash bench/waits/sites-loaded.sh BUILD [BUILD...] [-- RUNS [HOGS]]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:?usage: sites-loaded.sh BUILD [BUILD...] [-- RUNS [HOGS]]}"
builds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do builds+=("$(cd "$1" && pwd)"); shift; done
[ $# -gt 0 ] && shift
runs=${1:-8}
hogs=${2:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -fomit-frame-pointer "$root/tests/waits/waits.c" -lpthread -o "$work/waits"
pids=()
for _ in $(seq "$hogs"); do (while :; do :; done) & pids+=($!); done
for i in $(seq "$runs"); do
  for b in "${!builds[@]}"; do
    OSPREY_PROFILE_HZ=997 "${builds[$b]}/tools/osprey" "$work/waits" --profile -o "$work/$b-$i" \
      -- pingpong >"$work/$b-$i.out" 2>"$work/$b-$i.err" || echo "build $b run $i: exit $?"
  done
done
kill "${pids[@]}"
for b in "${!builds[@]}"; do
  echo "== ${builds[$b]}"
  python3 - "$runs" "$work/$b" <<'PY'
import collections, json, sys
runs, stem = int(sys.argv[1]), sys.argv[2]
shares, rights = [], []
for i in range(1, runs + 1):
    raw = json.load(open("%s-%d.raw.json" % (stem, i)))
    main = [t for t in raw["threads"] if t["fiber"] == 0][0]
    root = "%s-%d" % (raw["exe"].rsplit("/", 1)[-1], main["tid"])
    by = collections.Counter()
    for line in open("%s-%d.offcpu.folded" % (stem, i)):
        frames, count = line.rsplit(" ", 1)
        f = frames.split(";")
        if f[0] != root:
            continue
        site = next((s for s in ("recv_site", "send_site")
                     if any(x == s or x.startswith(s + ".") for x in f)), None)
        if site is None:
            site = "join" if any("pthread_join" in x or "clockjoin" in x for x in f) else f[-1]
        by[site] += int(count) / raw["rate_hz"]
    waited = main["waited_ns"] / 1e9
    shares.append(by["recv_site"] / waited if waited else 0)
    rights.append((by["recv_site"] + by["join"]) / waited if waited else 0)
    print("run %d: waited %.3f s; %s; none %.3f s" % (
        i, waited, ", ".join("%s %.1f%%" % (k, 100 * v / waited) for k, v in by.most_common()),
        max(0.0, waited - sum(by.values()))))
print("recv_site under 95%%: %d of %d runs; right site: least %.1f%%, mean %.1f%%" % (
    sum(s < 0.95 for s in shares), runs, 100 * min(rights), 100 * sum(rights) / runs))
PY
done
