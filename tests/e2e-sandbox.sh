#!/usr/bin/env bash
# End-to-end: a sandbox that refuses what profiling needs, and says nothing else: its line names
# what refused it. `refuse sigprof` (a seccomp filter: rt_sigaction(SIGPROF) with an action
# fails with EPERM) around `osprey PROG --profile` (tests/stops/stops.c, `spin`): the program's
# output and status unchanged, and one line `cannot install the SIGPROF handler (rt_sigaction):
# Operation not permitted; profiling is off` (was `cannot start profiling: Operation not
# permitted`, which named nothing).
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

finish "a refused SIGPROF handler is named"
