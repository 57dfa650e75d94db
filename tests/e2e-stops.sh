#!/usr/bin/env bash
# End-to-end: profiles that end before their program does (tests/stops/stops.c).
#   - wait: where perf events are refused (REFUSE, `refuse perf_event_open`: the shim times the
#     waits by their calls), a thread blocked in pthread_cond_wait the whole run is still
#     blocked when `--duration 1` ends the profile: its wait so far is in the profile (at least
#     half the second, under pthread_cond_wait; it had no samples at all before), and the
#     program runs on to its end, its output and status its own.
#   - sandbox: a program that enters a seccomp filter 0.3 s in (refusing execve and kill): the
#     raw file's exit object says sampling ended there, why and when (proto/raw-format.md), the
#     report says so in one line, and the status (7) passes through.
#     (Before: the raw file did not say it, the report only that sampling stopped early.)
#   - collector killed / stopped: `stops hold` (it says "ready", then waits for stdin) through
#     osprey; once its collector has attached, another process of the user sends it SIGKILL or
#     SIGSTOP, then the program is let go. Its output and status are as plain, and its exit
#     says at once why the profile is missing (killed: `ospreyd was killed by signal 9`, a
#     zombie until osprey reaps it; stopped: `ospreyd (process N) was stopped (SIGSTOP)`, after
#     a second of it), never `did not finish writing … within 5 s` (before: the whole limit,
#     with that line, for both). The stopped collector, continued once the line is there,
#     writes the profile. As root, and as nobody where setpriv is there. Left stopped, osprey
#     stops waiting for it too, a second later, and says so (before: its 15 s, then `the
#     collector did not finish in time`).
#   - pidfd_open killed by a seccomp filter: the exit looks at the collector without it.
# Usage: e2e-stops.sh OSPREY SOURCE_DIR REFUSE
set -uo pipefail

osprey=${1:?usage: e2e-stops.sh OSPREY SOURCE_DIR REFUSE}
src=${2:?}
refuse=${3:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir stops

gcc -O2 -g -fno-omit-frame-pointer "$src/stops.c" -lpthread -o "$work/stops" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"

# wait: the stop at --duration flushes the wait in progress.
"$refuse" perf_event_open "$osprey" "$work/stops" --profile --duration 1 -o "$work/wait" -- wait \
  >"$work/wait.out" 2>"$work/wait.err"
expect_status 0 $? "wait: osprey"
grep -qx woken "$work/wait.out" || fail "wait: the program did not run to its end"
python3 - "$work/wait.raw.json" <<'PY' || failures=$((failures + 1))
import sys
from checks import check, finish, load_raw, waiting, weight
raw = load_raw(sys.argv[1])
check(raw.get("waits", {}).get("timed_by") == "shim", "wait: the shim timed the waits")
period = 1.0 / raw["rate_hz"]
waited = sum(weight(r) for r in raw["samples"] if waiting(r)) * period
check(waited >= 0.5, f"wait: {waited:.2f} s waiting in a 1 s profile (at least 0.5 s)")
finish()
PY
# The waiter never named itself: the report names it by the process's command.
grep -Eq 'thread [0-9]+ \(stops\) +running +[0-9.]+% +waiting +([5-9][0-9]|100)\.[0-9]%' \
  "$work/wait.err" || fail "wait: the waiting thread's line: $(grep -E 'thread [0-9]+ ' "$work/wait.err")"
grep -q 'pthread_cond_wait' "$work/wait.offcpu.folded" ||
  fail "wait: no wait under pthread_cond_wait in wait.offcpu.folded"

# sandbox: the raw file and the report say when sampling stopped, and why.
"$osprey" "$work/stops" --profile -o "$work/sandbox" -- sandbox >"$work/sandbox.out" \
  2>"$work/sandbox.err"
expect_status 7 $? "sandbox: osprey"
grep -qx sandboxed "$work/sandbox.out" || fail "sandbox: the program did not run to its end"
python3 - "$work/sandbox.raw.json" <<'PY' || failures=$((failures + 1))
import sys
from checks import check, finish, load_raw
ended = load_raw(sys.argv[1])["exit"].get("sampling_ended", {})
check(ended.get("reason") == "seccomp", f"sandbox: exit.sampling_ended says seccomp ({ended})")
# 0.3 s of spinning before the sandbox: the instant after it, well before the program's end.
at = ended.get("at_ns", 0) / 1e9
check(0.3 <= at < 5, f"sandbox: sampling ended at {at:.2f} s (0.3 s or later)")
finish()
PY
grep 'sampling stopped' "$work/sandbox.err" >"$work/sandbox.line"
expect_one_line "$work/sandbox.line" \
  '^sampling stopped at [0-9]+\.[0-9]{2} s: the program entered a seccomp sandbox$' \
  "sandbox: the report's line"

# collector killed / stopped: NAME SIGNAL [COMMAND PREFIX...] (setpriv for nobody).
"$work/stops" hold </dev/null >"$work/hold-plain.out" 2>/dev/null
plain=$?
collector_gone() {
  local name=$1 sig=$2
  shift 2
  local in=$work/$name.in out=$work/$name.out err=$work/$name.err
  rm -f "$in" && mkfifo "$in" && chmod 0666 "$in"
  "$@" "$osprey" "$work/stops" --profile -o "$work/$name/p" -- hold <"$in" >"$out" 2>"$err" &
  local ospid=$! collector=''
  exec 3>"$in"
  for _ in $(seq 300); do grep -qx ready "$out" && break; sleep 0.1; done
  # The run's collector: osprey's child (its subreaper), once it has mapped the ring.
  for _ in $(seq 300); do
    collector=$(pgrep -P "$ospid" -x ospreyd | head -1)
    [ -n "$collector" ] && grep -Eq 'memfd:osprey-[0-9]+-' "/proc/$collector/maps" 2>/dev/null && break
    collector=
    sleep 0.1
  done
  if [ -z "$collector" ]; then
    exec 3>&-
    wait "$ospid"
    fail "$name: no attached collector under osprey $ospid: $(cat "$err")"
    return
  fi
  kill -"${sig%-LEFT}" "$collector"
  echo go >&3
  exec 3>&-
  if [ "$sig" = STOP-LEFT ]; then
    # Left stopped: osprey too stops waiting for it (a second), then it is continued.
    wait "$ospid"
    expect_status "$plain" $? "$name: osprey"
    kill -CONT "$collector"
    grep -q "^osprey: warning: no profile was written (the collector, process $collector, is stopped: SIGSTOP)$" \
      "$err" || fail "$name: osprey's line: $(grep '^osprey:' "$err")"
    grep -q "^osprey: ospreyd (process $collector) was stopped (SIGSTOP) before writing " "$err" ||
      fail "$name: no line saying the collector was stopped: $(grep '^osprey:' "$err")"
    return
  fi
  if [ "$sig" = STOP ]; then
    # The program's line, then the collector continued (or the shim's limit before: 5 s).
    for _ in $(seq 600); do
      grep -Eq 'was stopped|did not finish writing' "$err" && break
      sleep 0.1
    done
    kill -CONT "$collector"
  fi
  wait "$ospid"
  expect_status "$plain" $? "$name: osprey"
  cmp -s "$work/hold-plain.out" "$out" ||
    fail "$name: the program's output: $(cat "$out"), plain $(cat "$work/hold-plain.out")"
  grep -q 'did not finish writing' "$err" &&
    fail "$name: the exit waited its whole limit: $(grep 'did not finish' "$err")"
  if [ "$sig" = KILL ]; then
    grep -q '^osprey: ospreyd was killed by signal 9 (Killed) before writing .*; the profile is missing$' \
      "$err" || fail "$name: no line saying the collector was killed: $(grep '^osprey:' "$err")"
  else
    grep -q "^osprey: ospreyd (process $collector) was stopped (SIGSTOP) before writing " "$err" ||
      fail "$name: no line saying the collector was stopped: $(grep '^osprey:' "$err")"
    # Continued before osprey's second ran out (a loaded machine may take longer to look):
    # the profile is there.
    grep -q 'is stopped: SIGSTOP' "$err" || [ -s "$work/$name/p.raw.json" ] ||
      fail "$name: the collector, continued, did not write the profile: $(grep '^osprey:' "$err")"
  fi
}
mkdir -p "$work/killed" "$work/stopped" "$work/stopped-left"
collector_gone killed KILL
collector_gone stopped STOP
collector_gone stopped-left STOP-LEFT
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  mkdir -p "$work/killed-nobody" "$work/stopped-nobody"
  chmod 0777 "$work/killed-nobody" "$work/stopped-nobody"
  chmod a+rx "$work" "$work/stops"
  mkdir -p "$work/cache-nobody" && chmod 0777 "$work/cache-nobody"
  nobody=(setpriv --reuid nobody --regid nogroup --clear-groups env TMPDIR=/tmp
    OSPREY_BUILDID_CACHE="$work/cache-nobody")
  collector_gone killed-nobody KILL "${nobody[@]}"
  collector_gone stopped-nobody STOP "${nobody[@]}"
else
  skip_part "the collector killed and stopped as nobody" "needs root, setpriv and nobody"
fi

# pidfd_open killed by a filter the program boots under (`refuse kill-pidfd_open`): the exit
# looks at its collector by its pid, never by the call (which would kill the program: 159), and
# says why the profile is missing (the collector, under the same filter, dies of it).
"$refuse" kill-pidfd_open "$osprey" "$work/stops" --profile -o "$work/pidfd" -- spin \
  >"$work/pidfd.out" 2>"$work/pidfd.err"
expect_status 0 $? "pidfd_open killed: osprey"
grep -q '^osprey: a seccomp filter forbids pidfd_open; ' "$work/pidfd.err" ||
  fail "pidfd_open killed: no line naming it: $(grep '^osprey:' "$work/pidfd.err")"
grep -q '^osprey: ospreyd was killed by signal 31 .* before writing ' "$work/pidfd.err" ||
  fail "pidfd_open killed: the collector's end: $(grep '^osprey:' "$work/pidfd.err")"

finish "a wait in progress at a --duration stop is in the profile; a seccomp sandbox's stop recorded; a killed or stopped collector told at the program's exit"
