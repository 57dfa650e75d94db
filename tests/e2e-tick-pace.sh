#!/usr/bin/env bash
# End-to-end: ospreyd's tick while the program sleeps (`osprey /bin/sleep 3 --profile -F 997`):
# no thread fills a ring, so ospreyd naps until the shim wakes it (a ring half full) or its
# 250 ms nap ends (daemon/README.md, "Napping until there is work"): about 4 wake-ups a second
# (62 when the tick was paced by the fill up to 16 ms, 125 when it stopped at 8 ms). Counted from
# /proc/PID/status (voluntary context switches of its main thread) over 2 s of the sleep: a
# loaded machine makes ticks late, which lowers the count, never raises it beyond the
# catch-up of one stall. The bound, 15 a second, leaves that margin. The profile ends as the
# program's: its exit status, no sample lost.
# Usage: e2e-tick-pace.sh OSPREY
set -uo pipefail

osprey=${1:?usage: e2e-tick-pace.sh OSPREY}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir tick-pace

"$osprey" /bin/sleep --profile -F 997 -o "$work/p" --format folded -- 3 >/dev/null 2>"$work/err" &
run=$!
daemon=$(ospreyd_under "$run")
if [ -z "$daemon" ]; then
  fail "no ospreyd under osprey's run: $(cat "$work/err")"
else
  sleep 0.7 # past the unwind tables' builds and the tick's first doublings
  rate=$(wakes_per_second "$daemon")
  if [ -z "$rate" ]; then
    fail "ospreyd ended before the sleep did"
  elif [ "$rate" -gt 15 ]; then
    fail "ospreyd woke $rate times a second while the program slept (at most 15)"
  else
    echo "ospreyd woke $rate times a second while the program slept"
  fi
fi
wait "$run"
expect_status 0 $? "osprey /bin/sleep 3"
dropped=$(raw_dropped "$work/p.raw.json")
[ "$dropped" = 0 ] || fail "the raw file says dropped ${dropped:-(no raw file)}"
finish "ok: ospreyd naps while the program sleeps"
