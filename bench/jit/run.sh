#!/usr/bin/env bash
# Unnamed share of node's on-CPU self time (bench/jit/hot.js: sorting, V8's builtins, and
# integer arithmetic in JIT code), Osprey beside perf, without and with --perf-basic-prof:
# the percentage of samples whose leaf frame no symbol names (bench/jit/unnamed.py).
# Osprey's from its .folded (on-CPU), perf's from `perf report --sort sym` of `perf record -g
# -F 997`, read while its map is still there. With BEFORE_BUILD, the same for that build.
# Usage: bash bench/jit/run.sh [BUILD_DIR] [RUNS] [MILLISECONDS]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
runs=${2:-3}
ms=${3:-3000}
node=$(command -v node) || { echo "node is not installed" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-jit-bench.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
cp "$here/hot.js" "$work/hot.js"
cd "$work"

osprey_share() { # BUILD NAME ARGS...: Osprey's unnamed share
  local b=$1 name=$2
  shift 2
  "$b/tools/osprey" "$node" --profile --format folded -o "$work/$name" -- "$@" hot.js "$ms" \
    >"$name.out" 2>&1
  local pid
  pid=$(python3 -c "import json; print(json.load(open('$name.raw.json'))['pid'])")
  rm -f "/tmp/perf-$pid.map"
  python3 "$here/unnamed.py" folded "$name.folded"
}
perf_share() { # NAME ARGS...: perf's
  local name=$1
  shift
  perf record -q -g -F 997 -o "$name.data" -- "$node" "$@" hot.js "$ms" >/dev/null 2>&1
  python3 "$here/unnamed.py" perf "$name.data"
  local pid
  pid=$(perf script -i "$name.data" -F pid 2>/dev/null | awk '{print $1; exit}')
  [ -z "$pid" ] || rm -f "/tmp/perf-$pid.map"
}

printf '%-22s %-6s %s\n' "mode" "run" "unnamed %: osprey${BEFORE_BUILD:+ / before} / perf"
for mode in plain perf-basic-prof; do
  args=()
  [ "$mode" = plain ] || args=(--perf-basic-prof)
  for i in $(seq "$runs"); do
    o=$(osprey_share "$build" "o-$mode-$i" "${args[@]}")
    b=""
    [ -z "${BEFORE_BUILD:-}" ] || b=" / $(osprey_share "$BEFORE_BUILD" "b-$mode-$i" "${args[@]}")"
    p=$(perf_share "p-$mode-$i" "${args[@]}")
    printf '%-22s %-6s %s%s / %s\n' "$mode" "$i" "$o" "$b" "$p"
  done
done
