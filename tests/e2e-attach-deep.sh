#!/usr/bin/env bash
# End-to-end: stacks deeper than a record's 128 frames from outside the program (daemon/README.md,
# "Attach: stacks deeper than a record"). tests/attach/deep.c (frame pointers): main ->
# deep_descend 300 deep -> deep_spin, about 10 KiB of stack, started without the profiler:
#   perf    `osprey attach PID --duration 2` with perf events: >= 90% of the on-CPU samples in
#           deep_spin reach main past one "[… N frames]" frame (N 150-200), and as many say
#           their walk reached the outermost frame (stack_ends 1); the program's output and
#           exit status are its own. Before the attach walks went on past the cap: none (cut
#           at 128, "depth cap").
#   ptrace  the same attach under `refuse perf_event_open` (the ptrace sampler, 100 Hz, 3 s).
#   dump    `osprey dump PID`: the running thread's stack is deep_spin, one "[… N frames]" line
#           (the marker alone, no location) and main below it.
# Where perf events are refused (perf_event_paranoid 3), the perf and dump parts are skipped;
# where ptrace is not allowed, the ptrace part.
# Usage: e2e-attach-deep.sh OSPREY SOURCE_DIR REFUSE
set -uo pipefail

osprey=${1:?usage: e2e-attach-deep.sh OSPREY SOURCE_DIR REFUSE}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
src=${2:?}
refuse=${3:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir attach-deep

gcc -O2 -g -fno-omit-frame-pointer "$src/deep.c" -o "$work/deep" 2>"$work/build" ||
  { fail "build failed: $(cat "$work/build")"; finish ""; }

# start NAME SECONDS: the deep program for SECONDS, its pid in $pid once it spins at the bottom.
start() {
  "$work/deep" "$2" >"$work/$1.out" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do grep -q ready "$work/$1.out" && break; sleep 0.05; done
  grep -q ready "$work/$1.out" || fail "$1: the program did not start"
}
# ended NAME: the program ran to its end, its output and exit status its own.
ended() {
  wait "$pid"
  expect_status 0 $? "$1: the program's exit status"
  [ "$(cat "$work/$1.out")" = "$(printf 'ready\ndone 300')" ] ||
    fail "$1: the program's output changed: $(cat "$work/$1.out")"
}

# check_deep NAME MIN: of the on-CPU samples of NAME's profile in deep_spin (at least MIN),
# >= 90% reach main past one marker frame, and >= 90% of the on-CPU periods say their walk
# reached the outermost frame.
check_deep() {
  python3 - "$work" "$@" <<'PY'
import sys
from checks import check, finish, load_raw, on_cpu, periods, rooted_past_marker, stack_whole
work, name, least = sys.argv[1], sys.argv[2], int(sys.argv[3])
total, rooted = rooted_past_marker("%s/%s.folded" % (work, name), "deep_spin", 150, 200)
check(total >= least, "%s: %d on-CPU samples in deep_spin (want >= %d)" % (name, total, least))
check(total and rooted / total >= 0.9,
      "%s: %d of %d on-CPU samples in deep_spin reach main past one [… N frames] (want >= 90%%)"
      % (name, rooted, total))
raw = load_raw("%s/%s.raw.json" % (work, name))
all_cpu = periods(raw, on_cpu)
outer = periods(raw, lambda s: on_cpu(s) and stack_whole(raw, s[2]))
check(all_cpu and outer / all_cpu >= 0.9,
      "%s: %d of %d on-CPU periods say their walk reached the outermost frame (want >= 90%%)"
      % (name, outer, all_cpu))
finish()
PY
}

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$paranoid" -gt 2 ] && [ "$(id -u)" -ne 0 ]; then
  skip_part "perf, dump" "perf events are not allowed here (perf_event_paranoid $paranoid)"
else
  # --- perf events ------------------------------------------------------------------------------
  start perf 6
  "$osprey" attach "$pid" --duration 2 -o "$work/perf" >"$work/perf.report" 2>&1
  expect_status 0 $? "perf: osprey attach"
  ended perf
  check_deep perf 50 || fail "perf: deep stacks cut (see above)"

  # --- osprey dump ------------------------------------------------------------------------------
  start dump 5
  "$osprey" dump "$pid" >"$work/dump.txt" 2>"$work/dump.err"
  expect_status 0 $? "dump: osprey dump"
  ended dump
  # The running thread's user frames, leaf first (its kernel frames, [k], left out): deep_spin
  # (or the clock it reads, called from there), one marker, main below it.
  awk '/^    / && !/^    \[k\] / { sub(/^    /, ""); sub(/ \(.*$/, ""); print }' "$work/dump.txt" \
    >"$work/dump.frames"
  head -n 2 "$work/dump.frames" | grep -qx deep_spin ||
    fail "dump: the stack does not start at deep_spin: $(head -n 3 "$work/dump.frames")"
  [ "$(grep -Ec '^\[… [0-9]+ frames\]$' "$work/dump.frames")" -eq 1 ] ||
    fail "dump: not one [… N frames] line: $(grep -c . "$work/dump.frames") frames"
  # The marker is no code: no location after it (it was "(?)").
  grep -Eq '^    \[… [0-9]+ frames\]$' "$work/dump.txt" ||
    fail "dump: the [… N frames] line is not the marker alone: $(grep -F '[…' "$work/dump.txt")"
  sed -n '/^\[… /,$p' "$work/dump.frames" | grep -qx main ||
    fail "dump: main is not below the [… N frames] line: $(tail -n 5 "$work/dump.frames")"
  [ -s "$work/dump.err" ] && fail "dump: said on stderr: $(cat "$work/dump.err")"
fi

# --- ptrace (perf events refused) -------------------------------------------------------------------
scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
if ! "$refuse" perf_event_open true; then
  skip_part ptrace "no seccomp filter can be installed here"
elif [ "$scope" -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
  skip_part ptrace "kernel.yama.ptrace_scope is $scope: attaching to a process not our child needs root"
else
  start ptrace 7
  "$refuse" perf_event_open "$osprey" attach "$pid" --duration 3 -o "$work/ptrace" \
    >"$work/ptrace.report" 2>"$work/ptrace.err"
  expect_status 0 $? "ptrace: osprey attach"
  grep -q "by ptrace" "$work/ptrace.err" || fail "ptrace: no line saying ptrace samples instead"
  ended ptrace
  check_deep ptrace 10 || fail "ptrace: deep stacks cut (see above)"
fi

finish "a stack 300 deep reaches main past one marker frame from outside: perf events, ptrace, osprey dump"
