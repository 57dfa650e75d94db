#!/usr/bin/env bash
# `osprey dump PID`: every thread's current stack, once (tests/top/threads.c: the main thread
# burns CPU in spin_here, "napper" sleeps 2 ms at a time in nap_here, "reader" blocks in
# read_here reading its stdin). The running thread's stack is spin_here under main; the
# napper's is where it blocks, nap_here under napper; the reader never runs while dump looks:
# its stack, read where it blocks when the attach began, is read_here under reader, waiting,
# and nothing is said on stderr. The program is left as it was: the same
# threads and descriptors, and the reader's read still returns the line sent to it afterwards.
# A pid that does not exist: one line and a non-zero status. Where perf events are refused
# (perf_event_paranoid 3), skipped.
# Usage: e2e-dump.sh OSPREY SOURCE_DIR
set -uo pipefail
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-dump.sh OSPREY SOURCE_DIR}")
src=$(realpath "${2:?usage: e2e-dump.sh OSPREY SOURCE_DIR}")
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$paranoid" -gt 2 ] && [ "$(id -u)" -ne 0 ]; then
  skip "perf events are not allowed here (perf_event_paranoid $paranoid)"
fi

pid=
cleanup() {
  exec 3>&- 2>/dev/null
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
}
scratch_dir dump cleanup
cd "$work" || exit 1

gcc -O2 -g -fno-omit-frame-pointer -pthread "$src/threads.c" -o "$work/threads" 2>"$work/build" ||
  { fail "build failed: $(cat "$work/build")"; finish ""; }
mkfifo "$work/in"
"$work/threads" <"$work/in" >"$work/threads.out" 2>&1 &
pid=$!
exec 3>"$work/in" # the reader's stdin, held open: its read blocks until a line is sent
for _ in $(seq 100); do grep -q ready "$work/threads.out" && break; sleep 0.05; done
grep -q ready "$work/threads.out" || { fail "the test program did not start"; finish ""; }
reader=$(grep -l '^reader$' /proc/"$pid"/task/*/comm | cut -d/ -f5)
napper=$(grep -l '^napper$' /proc/"$pid"/task/*/comm | cut -d/ -f5)
snapshot() {
  {
    ls "/proc/$pid/task"
    for fd in /proc/"$pid"/fd/*; do echo "$fd $(readlink "$fd")"; done
  } >"$1"
}
snapshot "$work/before"

# --- a pid that does not exist ------------------------------------------------------------------
if "$osprey" dump 999999999 >"$work/missing.out" 2>"$work/missing.err"; then
  fail "osprey dump of a pid that does not exist exited 0"
fi
expect_one_line "$work/missing.err" "^osprey: .*no process 999999999" "osprey dump of a missing pid"
[ ! -s "$work/missing.out" ] || fail "osprey dump of a missing pid wrote to stdout"

# --- the dump ------------------------------------------------------------------------------------
"$osprey" dump "$pid" >"$work/dump.out" 2>"$work/dump.err"
expect_status 0 $? "osprey dump"
out=$(cat "$work/dump.out")
grep -Eq "^Process $pid \(threads\): 3 threads" <<<"$out" || fail "no header naming 3 threads: $out"
# the block of one thread: from its "Thread TID" line to the next blank line
block() { awk -v t="Thread $1 " 'index($0, t) == 1 { on = 1 } on && /^$/ { exit } on' "$work/dump.out"; }
main=$(block "$pid")
grep -q ': running' <<<"$main" || fail "the main thread is not running: $main"
grep -A1 -E '^    spin_here \(threads\.c\)$' <<<"$main" | grep -Eq '^    main \(threads\.c\)$' ||
  fail "the main thread's stack is not spin_here under main: $main"
nap=$(block "$napper")
grep -q ': waiting' <<<"$nap" || fail "the napper is not waiting: $nap"
grep -A1 -E '^    nap_here \(threads\.c\)$' <<<"$nap" | grep -Eq '^    napper \(threads\.c\)$' ||
  fail "the napper's stack is not nap_here under napper: $nap"
read_block=$(block "$reader")
grep -q ': waiting' <<<"$read_block" || fail "the reader is not waiting: $read_block"
grep -A1 -E '^    read_here(\.constprop\.[0-9]+)? \(threads\.c\)$' <<<"$read_block" | grep -Eq '^    reader \(threads\.c\)$' ||
  fail "the reader's stack is not read_here under reader: $read_block"
[ -s "$work/dump.err" ] && fail "osprey dump said on stderr: $(cat "$work/dump.err")"

# --- the program as it was --------------------------------------------------------------------------
kill -0 "$pid" 2>/dev/null || fail "the program did not survive osprey dump"
sleep 0.2
snapshot "$work/after"
diff "$work/before" "$work/after" >"$work/diff" ||
  fail "the program's threads or descriptors changed: $(cat "$work/diff")"
echo hello >&3
for _ in $(seq 100); do grep -q '^read: hello$' "$work/threads.out" && break; sleep 0.05; done
grep -q '^read: hello$' "$work/threads.out" ||
  fail "the reader's read did not return the line sent after the dump: $(cat "$work/threads.out")"

finish "osprey dump printed the running, the blocking and the blocked thread, and left the program as it was"
