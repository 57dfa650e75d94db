#!/usr/bin/env bash
# End-to-end: a program that profiles itself with SIGPROF keeps its own samples, and Osprey's
# profile keeps the program's CPU time beside them (shim/README.md, "A program that profiles
# itself"). Each program runs plain, then profiled; both profiles are compared by CPU time,
# never by wall time (the machine may be loaded):
#   itimer         setitimer(ITIMER_PROF) and a signal() handler counting ticks at 100 Hz;
#   process-timer  timer_create(CLOCK_PROCESS_CPUTIME_ID, SIGEV_SIGNAL SIGPROF), SA_SIGINFO;
#   thread-timer   timer_create(CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID SIGPROF) per thread;
#   raw-handler    the same, its handler installed by a raw rt_sigaction system call;
#   raw-mask       the same, each thread started with every signal blocked, then its mask set
#                  by a raw rt_sigprocmask and saved and restored through the C library (Go's);
#   go             a Go program built with cgo running runtime/pprof (Debian's golang-go,
#                  offline); its CPU profile's total read back with `go tool pprof -top`.
# Checks: the program's sleeping thread (nanosleep, 2 ms at a time, beside the work) has no
# more sleeps cut short (EINTR) profiled than plain (none); the share of its CPU time the program's own profile saw (its ticks at 100 Hz, or
# pprof's total) profiled within 10% of its plain run's; Osprey's on-CPU time at least 90% of
# the CPU time the program used; no line saying sampling stopped. A pair of runs whose figures
# stray is run again, twice at most (see `each`).
# Usage: e2e-selfprof.sh TEST_SELFPROF SHIM_SO OSPREYD GO_SOURCE_DIR
set -uo pipefail

target=${1:?usage: e2e-selfprof.sh TEST_SELFPROF SHIM_SO OSPREYD GO_SOURCE_DIR}
shim=${2:?}
daemon=${3:?}
go_src=${4:?}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$here/lib.sh"
scratch_dir selfprof

profiled() { # profiled NAME PROGRAM ARGS...: stdout and stderr of a profiled run
  local name=$1
  shift
  OSPREY_DAEMON=$daemon OSPREY_PROFILE="$work/$name.raw.json" LD_PRELOAD=$shim "$@" \
    >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.status"
}

field() { sed -n "s/^$1 //p" "$2"; }

# seen NAME OUT: the share of its CPU time the program's own profile saw in a run whose
# output is OUT: its ticks at 100 Hz, or the Go program's pprof total (`go tool pprof -top`).
seen() {
  if [ "$1" = go ]; then
    go tool pprof -top "$work/selfprof-go" "${2%.*}.pprof" 2>/dev/null | python3 -c '
import re, sys
units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}
m = re.search(r"Total samples = ([0-9.]+)(\w+)", sys.stdin.read())
print(float(m.group(1)) * units[m.group(2)] / (int(sys.argv[1]) / 1e9) if m else 0)' \
      "$(field cpu_ns "$2")"
  else
    awk -v t="$(field ticks "$2")" -v e="$(field expected "$2")" 'BEGIN { print t / e }'
  fi
}

# attempt NAME FINAL PROGRAM ARGS...: a plain run, then a profiled one (the Go program's
# profile file is its run's name with .pprof). The checks pass, or fail when FINAL is 1; a
# failure before the last attempt says so and returns 1 (another pair is run).
attempt() {
  local name=$1 final=$2
  shift 2
  local -a plain_args=("$@") profiled_args=("$@")
  if [ "$name" = go ]; then
    plain_args=("$1" "$work/$name.plain.pprof" "${@:3}")
    profiled_args=("$1" "$work/$name.pprof" "${@:3}")
  fi
  if ! "${plain_args[@]}" >"$work/$name.plain" 2>"$work/$name.plain-err"; then
    fail "$name: the plain run failed:"
    cat "$work/$name.plain-err" >&2
    return 0
  fi
  profiled "$name" "${profiled_args[@]}"
  expect_status 0 "$(cat "$work/$name.status")" "$name profiled"
  if grep -q "sampling stopped\|profiling is off" "$work/$name.err"; then
    fail "$name: profiling stopped:"
    cat "$work/$name.err" >&2
    return 0 # said, not noise: no other pair
  fi
  if [ "$name" != go ]; then
    # The program's own CPU-time timers never fire on its sleeping thread; ours must not either.
    local cut_plain cut_profiled
    cut_plain=$(field cut "$work/$name.plain")
    cut_profiled=$(field cut "$work/$name.out")
    if [ "${cut_profiled%% *}" -gt "${cut_plain%% *}" ]; then
      fail "$name: sleeps cut short (EINTR): $cut_profiled profiled, $cut_plain plain"
      return 0
    fi
  fi
  seen "$name" "$work/$name.plain" >>"$work/$name.plains"
  python3 - "$work/$name.raw.json" "$name" "$final" "$work/$name.plains" \
    "$(seen "$name" "$work/$name.out")" "$(field cpu_ns "$work/$name.out")" <<'PY'
import sys
from checks import check, finish, load_raw, on_cpu_seconds
raw, name, final = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
plains = [float(line) for line in open(sys.argv[4])]
plain_own, profiled_own, cpu = plains[-1], float(sys.argv[5]), int(sys.argv[6]) / 1e9
kept = on_cpu_seconds(load_raw(raw))
own = "%s: its own profile saw %.3f of its CPU time profiled, %.3f plain" % (
    name, profiled_own, plain_own)
osprey = "%s: Osprey's profile %.3f s on CPU of the %.3f s it used" % (name, kept, cpu)
own_ok = 0.90 * plain_own <= profiled_own <= 1.10 * plain_own
osprey_ok = kept >= 0.90 * cpu
if not final and not (own_ok and osprey_ok):
    print("  again (a loaded machine's noise, or a loss): " + (own if not own_ok else osprey))
    sys.exit(1)
# The plain runs themselves further apart than the margin: the machine's accounting, not the
# profiler, decides; the program's own figure cannot be judged here (said, not failed).
noisy = max(plains) > 1.10 * min(plains)
if not own_ok and noisy:
    print("  unjudged: %s (plain runs %s)" % (own, ", ".join("%.3f" % v for v in plains)))
    check(osprey_ok, osprey)
    sys.exit(3 if osprey_ok else 1)
check(own_ok, own)
check(osprey_ok, osprey)
finish()
PY
  local rc=$?
  if [ "$rc" -eq 3 ]; then
    skip_part "$name: its own profile against plain" "the plain runs strayed more than 10% apart" \
      "the kernel's tick-sampled CPU time on a loaded machine"
    return 0
  fi
  if [ "$rc" -ne 0 ] && [ "$final" = 1 ]; then fail "$name: a profile lost samples (above)"; fi
  return "$rc"
}

# each NAME PROGRAM ARGS...: up to three pairs of runs. The program's own count of a
# setitimer(ITIMER_PROF) is the kernel's tick-sampled CPU time, and under load it strays from
# the CPU clock (plain runs 0.53-1.15 of it in runs of bench/selfprof/run.sh beside other
# builds; 0.995 on a quiet machine), as Go's own profile does (0.71-0.98): a pair that strays
# is run again, and where the plain runs themselves are more than 10% apart the program's own
# figure is left unjudged (said). Osprey's figure and the cut sleeps are judged every time: a
# lost profile (0.05 of Osprey's, a tenth of Go's) fails every pair.
each() {
  local name=$1
  shift
  attempt "$name" 0 "$@" || attempt "$name" 0 "$@" || attempt "$name" 1 "$@"
}

# A process-directed timer's signal still pending when the next is due merges with it (a
# loaded machine leaves the thread it picked waiting for a CPU while the other runs on): one
# burning thread there, two for the per-thread timers.
each itimer "$target" itimer 2 1
each process-timer "$target" process-timer 2 1
each thread-timer "$target" thread-timer 2 2
# A handler installed behind the C library (a raw rt_sigaction, as Go's runtime does where cgo
# gives it no sigaction): put behind ours at the next thread's start, and one line says so.
if "$target" raw-handler 0.01 1 >/dev/null 2>&1; then
  each raw-handler "$target" raw-handler 2 2
  expect_one_line "$work/raw-handler.err" "set its SIGPROF handler without the C library" \
    "raw-handler: the line"
  # Threads started with every signal blocked whose mask is then set behind the C library, as
  # Go's runtime sets it: the view of SIGPROF blocked the shim kept for them is not held to.
  each raw-mask "$target" raw-mask 2 2
else
  skip_part "a handler installed by a raw rt_sigaction, a mask set by a raw rt_sigprocmask" \
    "no inline system call for this machine" "only x86-64 and arm64 have one in test-selfprof.c"
fi

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
  each go "$work/selfprof-go" PROFILE 1
fi
finish "a program's own SIGPROF timers (setitimer, POSIX CPU timers, Go's runtime/pprof) and Osprey's profile kept side by side"
