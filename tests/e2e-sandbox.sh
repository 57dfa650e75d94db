#!/usr/bin/env bash
# End-to-end: a sandbox that refuses what profiling needs, and says nothing else: its line names
# what refused it. `refuse sigprof` (a seccomp filter: rt_sigaction(SIGPROF) with an action
# fails with EPERM) around `osprey PROG --profile` (tests/stops/stops.c, `spin`): the program's
# output and status unchanged, and one line `cannot install the SIGPROF handler (rt_sigaction):
# Operation not permitted; profiling is off` (was `cannot start profiling: Operation not
# permitted`, which named nothing).
# A filter that kills (SECCOMP_RET_KILL_PROCESS) on one call the shim makes, as a strict
# allow-list kills on every call it does not list, around `stops spin` preloaded (`refuse
# kill-CALL`, and `trap-timer_create`: SECCOMP_RET_TRAP): the program's stdout and status as
# plain and one line naming the call, `a seccomp filter forbids CALL; profiling is off` (or
# `profiling goes on …` for a call only a feature needs: its profile written). Before: status
# 159 (SIGSYS) and no output at all. And `stops strict`, which enters such a filter itself (the
# shim's calls it does not make itself), then starts a thread, forks and execs: as plain.
# Usage: e2e-sandbox.sh OSPREY SOURCE_DIR REFUSE SHIM_SO OSPREYD
set -uo pipefail

osprey=${1:?usage: e2e-sandbox.sh OSPREY SOURCE_DIR REFUSE SHIM_SO OSPREYD}
src=${2:?}
refuse=${3:?}
shim=${4:?}
daemon=${5:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir sandbox

gcc -O2 -g -fno-omit-frame-pointer "$src/stops.c" -lpthread -o "$work/stops" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"

"$refuse" sigprof "$work/stops" spin >"$work/plain.out" 2>"$work/plain.err"
plain=$?
"$refuse" sigprof "$osprey" "$work/stops" --profile -o "$work/p" -- spin >"$work/out" 2>"$work/err"
expect_status "$plain" $? "refuse sigprof osprey stops spin"
cmp -s "$work/plain.out" "$work/out" || fail "stdout differs from the plain run's"
grep -q 'cannot install the SIGPROF handler (rt_sigaction): Operation not permitted; profiling is off' \
  "$work/err" || fail "no line naming rt_sigaction(SIGPROF): $(grep '^osprey:' "$work/err")"
grep -q 'cannot start profiling' "$work/err" && fail "a line that names nothing: $(grep 'cannot start' "$work/err")"

"$work/stops" spin >"$work/spin.out" 2>/dev/null
spin_status=$?
# kill_case CALL OFF_OR_ON: CALL killed by the filter; the line says profiling is off or goes on.
kill_case() {
  local what=$1 verdict=$2 name=${1#*-}
  [ "$name" = sigprof ] && name=rt_sigaction
  rm -f "$work/k.raw.json"
  "$refuse" "$what" LD_PRELOAD="$shim" OSPREY_PROFILE="$work/k.raw.json" OSPREY_DAEMON="$daemon" \
    "$work/stops" spin >"$work/k.out" 2>"$work/k.err"
  expect_status "$spin_status" $? "refuse $what stops spin"
  cmp -s "$work/spin.out" "$work/k.out" || fail "refuse $what: stdout differs from the plain run's"
  grep 'seccomp filter forbids' "$work/k.err" >"$work/k.lines"
  expect_one_line "$work/k.lines" "^osprey: a seccomp filter forbids $name; profiling $verdict" \
    "refuse $what: the line naming the call"
  if [ "$verdict" = "goes on" ] && [ ! -s "$work/k.raw.json" ]; then
    fail "refuse $what: profiling went on, yet no profile: $(cat "$work/k.err")"
  fi
}
for call in timer_create timer_settime memfd_create clone3 sigprof; do
  kill_case "kill-$call" "is off"
done
for call in process_vm_readv kill socket perf_event_open; do
  kill_case "kill-$call" "goes on"
done
kill_case trap-timer_create "is off"
# A new image under the same filter takes its parent's answer: the line once in the run.
# shellcheck disable=SC2016 # $0 is the inner shell's
"$refuse" kill-socket LD_PRELOAD="$shim" OSPREY_PROFILE="$work/h.raw.json" OSPREY_DAEMON="$daemon" \
  sh -c 'exec "$0" spin' "$work/stops" >"$work/h.out" 2>"$work/h.err"
expect_status "$spin_status" $? "refuse kill-socket sh -c 'exec stops spin'"
grep 'seccomp filter forbids' "$work/h.err" >"$work/h.lines"
expect_one_line "$work/h.lines" '^osprey: a seccomp filter forbids socket; profiling goes on' \
  "an exec'd image under the same filter"

# A filter the program enters itself, then a thread, a fork and an exec under it; again where
# perf events are refused (the shim then times the program's blocking calls, pthread_join's).
"$work/stops" strict >"$work/strict.plain" 2>/dev/null
plain=$?
for refused in none perf_event_open; do
  wrap=()
  [ "$refused" = none ] || wrap=("$refuse" "$refused")
  "${wrap[@]}" env LD_PRELOAD="$shim" OSPREY_PROFILE="$work/s.raw.json" OSPREY_DAEMON="$daemon" \
    "$work/stops" strict >"$work/strict.out" 2>"$work/strict.err"
  expect_status "$plain" $? "stops strict ($refused refused)"
  cmp -s "$work/strict.plain" "$work/strict.out" ||
    fail "stops strict ($refused refused): stdout differs from the plain run's"
  grep -q 'entered a seccomp sandbox' "$work/strict.err" ||
    fail "stops strict ($refused refused): no sandbox line"
  grep -q 'a seccomp filter forbids getpid; profiling is off' "$work/strict.err" ||
    fail "stops strict ($refused refused): the exec'd image did not say what its filter forbids:" \
      "$(cat "$work/strict.err")"
done

finish "a refused SIGPROF handler is named; a filter that kills on a call the shim makes kills nothing"
