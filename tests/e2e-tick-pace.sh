#!/usr/bin/env bash
# End-to-end: ospreyd's tick while the program sleeps (`osprey /bin/sleep 3 --profile -F 997`):
# no thread fills a ring, so the tick grows to its longest interval (16 ms at 997 Hz,
# daemon/README.md, "The tick's pace") and ospreyd wakes about 62 times a second (125 when
# the interval stopped at 8 ms). Counted from /proc/PID/status (voluntary context switches of
# its main thread) over 2 s of the sleep: a loaded machine makes ticks late, which lowers the
# count (each deadline is the last one plus the interval, and a tick 10 intervals late drops
# the missed ones), never raises it beyond the catch-up of one stall. The bound, 95 a second,
# leaves that margin. The profile ends as the program's: its exit status, no sample lost.
# Usage: e2e-tick-pace.sh OSPREY
set -uo pipefail

osprey=${1:?usage: e2e-tick-pace.sh OSPREY}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir tick-pace

# descendants PID: every process under PID.
descendants() {
  local k kids
  kids=$(cat /proc/"$1"/task/*/children 2>/dev/null)
  for k in $kids; do
    echo "$k"
    descendants "$k"
  done
}
# wakeups PID: its main thread's voluntary context switches so far.
wakeups() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$1/status" 2>/dev/null; }

"$osprey" /bin/sleep --profile -F 997 -o "$work/p" --format folded -- 3 >/dev/null 2>"$work/err" &
run=$!
daemon=
for _ in $(seq 100); do
  for k in $(descendants "$run"); do
    [ "$(cat "/proc/$k/comm" 2>/dev/null)" = ospreyd ] && daemon=$k
  done
  [ -n "$daemon" ] && break
  sleep 0.02
done
if [ -z "$daemon" ]; then
  fail "no ospreyd under osprey's run: $(cat "$work/err")"
else
  sleep 0.7 # past the unwind tables' builds and the tick's first doublings
  first=$(wakeups "$daemon")
  sleep 2
  last=$(wakeups "$daemon")
  if [ -z "$first" ] || [ -z "$last" ]; then
    fail "ospreyd ended before the sleep did"
  elif [ $(((last - first) / 2)) -gt 95 ]; then
    fail "ospreyd woke $(((last - first) / 2)) times a second while the program slept (at most 95)"
  fi
fi
wait "$run"
expect_status 0 $? "osprey /bin/sleep 3"
dropped=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("dropped", 0))' \
  "$work/p.raw.json" 2>/dev/null)
[ "$dropped" = 0 ] || fail "the raw file says dropped ${dropped:-(no raw file)}"
finish "ok: ospreyd's tick grows idle while the program sleeps"
