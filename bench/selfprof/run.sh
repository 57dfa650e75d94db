#!/usr/bin/env bash
# Programs that profile themselves with SIGPROF, plain and profiled by each BUILD given (a
# build before a change beside one after it, in the same run): tests/test-selfprof.c's five
# modes (setitimer(ITIMER_PROF) on one thread, a CLOCK_PROCESS_CPUTIME_ID timer on one thread,
# CLOCK_THREAD_CPUTIME_ID timers on two, the same with the handler installed by a raw
# rt_sigaction, and with the threads' masks set as Go's runtime sets them) and tests/selfprof-go (Go with cgo, runtime/pprof, two
# goroutines), 2 s of CPU time each. Prints, per run, the share of its CPU time the program's
# own profile saw (its ticks at 100 Hz; pprof's total from `go tool pprof -top`) and Osprey's
# on-CPU seconds against the CPU time the program used, and for the C programs the sleeps of
# their sleeping thread cut short (EINTR). Ratios of CPU time, never wall time.
# Usage: bash bench/selfprof/run.sh RUNS BUILD_DIR [BUILD_DIR...]
#        (test-selfprof is taken from the first BUILD_DIR)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
runs=${1:?usage: run.sh RUNS BUILD_DIR [BUILD_DIR...]}
shift
[ $# -ge 1 ] || { echo "usage: run.sh RUNS BUILD_DIR [BUILD_DIR...]" >&2; exit 2; }
builds=()
for b in "$@"; do builds+=("$(cd "$b" && pwd)"); done
target=${builds[0]}/tests/test-selfprof
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-selfprof.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
export GO111MODULE=off GOPROXY=off GOFLAGS='' CGO_ENABLED=1 GOCACHE="$work/gocache" \
  GOPATH="$work/gopath"
have_go=0
if command -v go >/dev/null && go build -o "$work/selfprof-go" "$root/tests/selfprof-go/selfprof.go"; then
  have_go=1
fi
field() { sed -n "s/^$1 //p" "$2"; }
pprof_seen() { # PROFILE CPU_NS
  go tool pprof -top "$work/selfprof-go" "$1" 2>/dev/null | python3 -c '
import re, sys
units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}
m = re.search(r"Total samples = ([0-9.]+)(\w+)", sys.stdin.read())
print("%.3f" % (float(m.group(1)) * units[m.group(2)] / (int(sys.argv[1]) / 1e9) if m else 0))' "$2"
}
kept() { # RAW: Osprey's on-CPU seconds
  PYTHONPATH="$root/tests" python3 -c '
import sys
from checks import load_raw, on_cpu_seconds
print("%.3f" % on_cpu_seconds(load_raw(sys.argv[1])))' "$1"
}
# one NAME BUILD|plain: prints "own SHARE cpu SECONDS [osprey SECONDS]"
one() {
  local name=$1 build=$2 out=$work/out raw=$work/raw.json
  local -a cmd env=()
  case $name in
  itimer | process-timer) cmd=("$target" "$name" 2 1) ;;
  thread-timer | raw-handler | raw-mask) cmd=("$target" "$name" 2 2) ;;
  go) cmd=("$work/selfprof-go" "$work/p.pprof" 1) ;;
  esac
  [ "$build" = plain ] || env=(OSPREY_DAEMON="$build/daemon/ospreyd" OSPREY_PROFILE="$raw"
    LD_PRELOAD="$build/shim/libospreyprof.so")
  rm -f "$raw"
  env "${env[@]}" "${cmd[@]}" >"$out" 2>"$work/err"
  local cpu own
  cpu=$(awk -v c="$(field cpu_ns "$out")" 'BEGIN { printf "%.3f", c / 1e9 }')
  if [ "$name" = go ]; then
    own=$(pprof_seen "$work/p.pprof" "$(field cpu_ns "$out")")
  else
    own=$(awk -v t="$(field ticks "$out")" -v e="$(field expected "$out")" 'BEGIN { printf "%.3f", t / e }')
  fi
  local cut=""
  [ "$name" = go ] || cut=", sleeps cut short $(field cut "$out")"
  if [ "$build" = plain ]; then
    echo "own $own of cpu $cpu s$cut"
  else
    sleep 0.3 # the collector writes the raw file as the program exits
    echo "own $own of cpu $cpu s, osprey $(kept "$raw") s$cut$(grep -q 'sampling stopped' "$work/err" && echo ', "sampling stopped"')"
  fi
}
programs=(itimer process-timer thread-timer)
"$target" raw-handler 0.01 1 >/dev/null 2>&1 && programs+=(raw-handler raw-mask)
[ "$have_go" = 1 ] && programs+=(go)
for name in "${programs[@]}"; do
  for ((i = 1; i <= runs; i++)); do
    echo "$name run $i plain: $(one "$name" plain)"
    for b in "${builds[@]}"; do echo "$name run $i $b: $(one "$name" "$b")"; done
  done
done
