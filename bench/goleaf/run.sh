#!/usr/bin/env bash
# A cgo Go program's frameless leaves under their caller (tests/goleaf/goleaf.go: main.hotA/B/C,
# no frame, under main.spin, built 3:2:1, two goroutines, 3 s), profiled RUNS times by each of:
# BUILD's osprey with BUILD's ospreyd (after), the same with BEFORE_BUILD's ospreyd (before:
# only the daemon's rows differ), and `perf record --call-graph dwarf` at the same rate. Prints
# tests/goleaf/split.py's figures per run: the share of the leaves' samples that reach main.spin
# and runtime.goexit, main.spin's inclusive share against its truth, and the split under it.
# Usage: bash bench/goleaf/run.sh RUNS BUILD_DIR [BEFORE_BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${1:?usage: run.sh RUNS BUILD_DIR [BEFORE_BUILD_DIR]}
build=$(cd "${2:?}" && pwd)
before=${3:+$(cd "$3" && pwd)}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-goleaf.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
export GO111MODULE=off GOPROXY=off GOFLAGS='' CGO_ENABLED=1 GOCACHE="$work/gocache" \
  GOPATH="$work/gopath" XDG_CACHE_HOME="$work/cache"
go build -o "$work/goleaf" "$root/tests/goleaf/goleaf.go"
split() { python3 "$root/tests/goleaf/split.py" "$@" | tr '\n' ' '; echo; }
for run in $(seq 1 "$runs"); do
  "$build/tools/osprey" "$work/goleaf" --profile -o "$work/after" -- 3 >/dev/null 2>&1
  echo "run $run after:  $(split folded "$work/after.folded")"
  if [ -n "$before" ]; then
    rm -rf "$work/cache"
    OSPREY_DAEMON=$before/daemon/ospreyd "$build/tools/osprey" "$work/goleaf" --profile \
      -o "$work/before" -- 3 >/dev/null 2>&1
    echo "run $run before: $(split folded "$work/before.folded")"
  fi
  if command -v perf >/dev/null; then
    perf record -q -F 997 --call-graph dwarf -o "$work/perf.data" -- "$work/goleaf" 3 \
      >/dev/null 2>&1
    echo "run $run perf:   $(split perf "$work/perf.data")"
  fi
  rm -rf "$work/cache"
done
