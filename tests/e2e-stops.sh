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
grep -Eq 'thread [0-9]+ \(thread\) +running +[0-9.]+% +waiting +([5-9][0-9]|100)\.[0-9]%' \
  "$work/wait.err" || fail "wait: the waiting thread's line: $(grep -E 'thread [0-9]+ \(thread\)' "$work/wait.err")"
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

finish "a wait in progress at a --duration stop is in the profile; a seccomp sandbox's stop recorded"
