#!/usr/bin/env bash
# End-to-end: a sandbox that refuses what profiling needs, and says nothing else: its line names
# what refused it. `refuse sigprof` (a seccomp filter: rt_sigaction(SIGPROF) with an action
# fails with EPERM) around `osprey PROG --profile` (tests/stops/stops.c, `spin`): the program's
# output and status unchanged, and one line `cannot install the SIGPROF handler (rt_sigaction):
# Operation not permitted; profiling is off` (was `cannot start profiling: Operation not
# permitted`, which named nothing). And the collector killed during the run (below).
# Usage: e2e-sandbox.sh OSPREY SOURCE_DIR REFUSE
set -uo pipefail

osprey=${1:?usage: e2e-sandbox.sh OSPREY SOURCE_DIR REFUSE}
src=${2:?}
refuse=${3:?}
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

# The collector killed while the program runs (another process of the user: SIGKILL to the
# ospreyd that is this run's osprey's child, `stops wait`: 3 s): the program's output and status
# unchanged, and its exit says the collector ended (a zombie until osprey reaps it, after the
# program) instead of waiting its whole limit for it (`did not finish writing … within 5 s`).
"$osprey" "$work/stops" --profile -o "$work/k" -- wait >"$work/k.out" 2>"$work/k.err" &
ospid=$!
collector=
for _ in $(seq 1 40); do
  collector=$(pgrep -P "$ospid" -x ospreyd) && break
  sleep 0.05
done
if [ -n "$collector" ]; then
  kill -KILL "$collector"
  wait "$ospid"
  expect_status 0 $? "osprey stops wait, its collector killed"
  grep -qx woken "$work/k.out" || fail "collector killed: the program's output: $(cat "$work/k.out")"
  grep -q 'ospreyd ended before writing' "$work/k.err" ||
    fail "collector killed: no line saying so: $(grep '^osprey:' "$work/k.err")"
  grep -q 'did not finish writing' "$work/k.err" &&
    fail "collector killed: waited its limit: $(grep 'did not finish' "$work/k.err")"
else
  wait "$ospid"
  fail "collector killed: no ospreyd under osprey $ospid within 2 s"
fi

finish "a refused SIGPROF handler is named; a killed collector is told at once"
