#!/usr/bin/env bash
# End-to-end: a program that profiles itself with SIGPROF keeps its own samples, and Osprey's
# profile keeps the program's CPU time beside them (shim/README.md, "A program that profiles
# itself"). Each program runs plain, then profiled; both profiles are compared by CPU time,
# never by wall time (the machine may be loaded):
#   itimer         setitimer(ITIMER_PROF) and a signal() handler counting ticks at 100 Hz;
#   process-timer  timer_create(CLOCK_PROCESS_CPUTIME_ID, SIGEV_SIGNAL SIGPROF), SA_SIGINFO;
#   thread-timer   timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID SIGPROF) per thread;
#   go             a Go program built with cgo running runtime/pprof (Debian's golang-go,
#                  offline); its CPU profile's total read back with `go tool pprof -top`.
# Checks: the share of its CPU time the program's own profile saw (its ticks at 100 Hz, or
# pprof's total) profiled within 10% of its plain run's; Osprey's on-CPU time at least 90% of the CPU time the program
# used; no line saying sampling stopped.
# Usage: e2e-selfprof.sh TEST_SELFPROF SHIM_SO OSPREYD GO_SOURCE_DIR
set -uo pipefail

target=${1:?usage: e2e-selfprof.sh TEST_SELFPROF SHIM_SO OSPREYD GO_SOURCE_DIR}
shim=${2:?}
daemon=${3:?}
go_src=${4:?}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$here/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-selfprof.XXXXXX")
trap 'rm -rf "$work"' EXIT

profiled() { # profiled NAME PROGRAM ARGS...: stdout and stderr of a profiled run
  local name=$1
  shift
  OSPREY_DAEMON=$daemon OSPREY_PROFILE="$work/$name.raw.json" LD_PRELOAD=$shim "$@" \
    >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.status"
}

# compare NAME PLAIN_OWN PROFILED_OWN PROFILED_CPU_S: the share of its CPU time the program's
# own profile saw (PLAIN_OWN, PROFILED_OWN), and Osprey's on-CPU time against PROFILED_CPU_S.
compare() {
  python3 - "$work/$1.raw.json" "$@" <<'PY' || fail "$1: a profile lost samples (above)"
import sys
from checks import check, finish, load_raw, on_cpu_seconds
raw, name = sys.argv[1], sys.argv[2]
plain_own, profiled_own, cpu = (float(v) for v in sys.argv[3:6])
kept = on_cpu_seconds(load_raw(raw))
check(0.90 * plain_own <= profiled_own <= 1.10 * plain_own,
      "%s: its own profile saw %.3f of its CPU time profiled, %.3f plain" %
      (name, profiled_own, plain_own))
check(kept >= 0.90 * cpu, "%s: Osprey's profile %.3f s on CPU of the %.3f s it used" %
      (name, kept, cpu))
finish()
PY
}

no_stop_line() { # no_stop_line NAME: profiling went on, nothing said it stopped
  expect_status 0 "$(cat "$work/$1.status")" "$1 profiled"
  if grep -q "sampling stopped\|profiling is off" "$work/$1.err"; then
    fail "$1: profiling stopped:"
    cat "$work/$1.err" >&2
  fi
}

field() { sed -n "s/^$1 //p" "$2"; }

# A process-directed timer's signal still pending when the next is due merges with it (a
# loaded machine leaves the thread it picked waiting for a CPU while the other runs on): one
# burning thread there, two for the per-thread timers.
for mode in itimer:1 process-timer:1 thread-timer:2; do
  threads=${mode#*:}
  mode=${mode%:*}
  "$target" "$mode" 2 "$threads" >"$work/$mode.plain" || fail "$mode: the plain run failed"
  profiled "$mode" "$target" "$mode" 2 "$threads"
  no_stop_line "$mode"
  seen() { # the share of its CPU time its ticks stand for
    awk -v t="$(field ticks "$1")" -v e="$(field expected "$1")" 'BEGIN { print t / e }'
  }
  compare "$mode" "$(seen "$work/$mode.plain")" "$(seen "$work/$mode.out")" \
    "$(awk -v c="$(field cpu_ns "$work/$mode.out")" 'BEGIN { print c / 1e9 }')"
done

if ! command -v go >/dev/null; then
  skip_part "Go's runtime/pprof" "no go on PATH (Debian's golang-go, scripts/install-deps.sh)"
  finish "a program's own SIGPROF timers (setitimer, POSIX CPU timers) and Osprey's profile kept side by side"
fi
# Offline, in the test's own directory: no module download, no cache outside it.
export GO111MODULE=off GOPROXY=off GOFLAGS='' CGO_ENABLED=1 GOCACHE="$work/gocache" \
  GOPATH="$work/gopath" HOME="$work"
if ! go build -o "$work/selfprof-go" "$go_src/selfprof.go" 2>"$work/go-build.err"; then
  fail "go build of $go_src/selfprof.go failed:"
  cat "$work/go-build.err" >&2
else
  pprof_seen() { # PROFILE CPU_NS: the share of the CPU time the profile's samples stand for
    go tool pprof -top "$work/selfprof-go" "$1" 2>/dev/null | python3 -c '
import re, sys
units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}
m = re.search(r"Total samples = ([0-9.]+)(\w+)", sys.stdin.read())
print(float(m.group(1)) * units[m.group(2)] / (int(sys.argv[1]) / 1e9) if m else 0)' "$2"
  }
  "$work/selfprof-go" "$work/plain.pprof" 1 >"$work/go.plain" || fail "go: the plain run failed"
  profiled go "$work/selfprof-go" "$work/profiled.pprof" 1
  no_stop_line go
  compare go "$(pprof_seen "$work/plain.pprof" "$(field cpu_ns "$work/go.plain")")" \
    "$(pprof_seen "$work/profiled.pprof" "$(field cpu_ns "$work/go.out")")" \
    "$(awk -v c="$(field cpu_ns "$work/go.out")" 'BEGIN { print c / 1e9 }')"
fi
finish "a program's own SIGPROF timers (setitimer, POSIX CPU timers, Go's runtime/pprof) and Osprey's profile kept side by side"
