#!/usr/bin/env bash
# scripts/soak.sh [RUNS] [REV] [LOG]: does the suite ever fail by chance? RUNS fresh clones of
# REV (default 5 and HEAD), one after another, each running `CI=true bash .ci/run` as CI does,
# with a busy loop on every core for the whole time. One line per run in LOG (default
# soak.log beside the clones in $TMPDIR), with the failing tests' lines. Runs as root, as CI
# does (.ci/run installs with apt-get); a passing run takes 15-25 minutes on 2 busy cores.
set -uo pipefail
runs=${1:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$repo" rev-parse --short "${2:-HEAD}") || exit 2
base=$(mktemp -d "${TMPDIR:-/tmp}/osprey-soak.XXXXXX")
log=${3:-$base/soak.log}
hogs=()
cleanup() { kill "${hogs[@]}" 2>/dev/null; }
trap cleanup EXIT
echo "== $(date -u +%FT%TZ) $runs runs of $rev beside $(nproc) busy loops" | tee -a "$log"
for _ in $(seq 1 "$(nproc)"); do
  sh -c 'while :; do :; done' &
  hogs+=($!)
done
passed=0
for i in $(seq 1 "$runs"); do
  dir=$base/$i
  git clone -q "$repo" "$dir" && git -C "$dir" checkout -q "$rev" || exit 1
  start=$(date +%s)
  (cd "$dir" && CI=true bash .ci/run >"$dir.log" 2>&1)
  rc=$?
  [ "$rc" = 0 ] && passed=$((passed + 1))
  echo "run $i: exit $rc after $(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg)" |
    tee -a "$log"
  grep -E "FAIL|^not ok" "$dir.log" | sort -u | head -20 | tee -a "$log"
  rm -rf "$dir"
done
echo "== $passed of $runs passed ($(date -u +%FT%TZ)); logs: $base/N.log" | tee -a "$log"
[ "$passed" = "$runs" ]
