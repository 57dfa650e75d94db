#!/usr/bin/env bash
# One workload of spawner.c, this build and BEFORE_DIR's alternating, REPS pairs: each run's
# CPU time (every process of it: `perf stat -e task-clock`) and wall time until every profile
# is written (the run's lock free), one line a run. run.sh interleaves every workload and
# prints medians; this one shows the pairs, for a workload whose figures move between runs.
# Usage: bash bench/spawn/pairs.sh BUILD_DIR BEFORE_DIR MODE N REPS
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
before=$(cd "$2" && pwd)
mode=$3 n=$4 reps=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-pairs.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 "$here/spawner.c" -o "$work/spawner"
for _ in $(seq "$reps"); do
  for tool in osprey before; do
    b=$build
    [ "$tool" = before ] && b=$before
    rm -rf "$work/out" && mkdir "$work/out" && : >"$work/out/.osprey-run.lock"
    start=$(date +%s%N)
    perf stat -x, -e task-clock -o "$work/stat" env OSPREY_DAEMON="$b/daemon/ospreyd" \
      OSPREY_PROFILE="$work/out/p.raw.json" LD_PRELOAD="$b/shim/libospreyprof.so" \
      "$work/spawner" "$mode" "$n" 2>/dev/null
    flock -w 60 "$work/out/.osprey-run.lock" true
    end=$(date +%s%N)
    echo "$mode $tool cpu $(awk -F, '/task-clock/ {printf "%d", $1}' "$work/stat") ms" \
      "wall $(((end - start) / 1000000)) ms"
  done
done
