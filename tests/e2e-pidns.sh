#!/usr/bin/env bash
# End-to-end: a program run in a pid namespace of its own, `osprey unshare --pid --fork
# --mount-proc PROG`, as sandboxes run programs (bwrap, unshare). The forked child is the
# namespace's pid 1: its session's leader is outside it (getsid says 0), which is no daemon's
# setsid, and its exit kills every other process of the namespace, the collector it started
# among them, so it waits for its profile as a run's first process does. PROG (tests/stops/stops.c,
# `spin`: 0.3 s in spin) is in the report, its stdout and status unchanged. Before: `process 1
# left the session (a daemon) after its parent's collector ended; it is not profiled`, only
# unshare's own 10 ms in the profile. Root only (unshare --pid).
# Usage: e2e-pidns.sh OSPREY SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-pidns.sh OSPREY SOURCE_DIR}
src=${2:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (unshare --pid)"
unshare --pid --fork --mount-proc true 2>/dev/null || skip "unshare --pid --fork --mount-proc refused here"
scratch_dir pidns

gcc -O2 -g -fno-omit-frame-pointer "$src/stops.c" -lpthread -o "$work/stops" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"

unshare --pid --fork --mount-proc "$work/stops" spin >"$work/plain.out" 2>"$work/plain.err"
plain=$?
"$osprey" "$(command -v unshare)" --profile -o "$work/p" -- --pid --fork --mount-proc \
  "$work/stops" spin >"$work/out" 2>"$work/err"
expect_status "$plain" $? "osprey unshare --pid --fork --mount-proc stops spin"
cmp -s "$work/plain.out" "$work/out" || fail "stdout differs from the plain run's"
settle_collectors "$work"
grep -q 'left the session' "$work/err" && fail "a daemon's line: $(grep 'left the session' "$work/err")"
grep -Eq 'process 1 \(stops\)' "$work/err" ||
  fail "no process line for stops, pid 1 of its namespace: $(grep -E '^ *process|^osprey:' "$work/err")"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import glob, sys
from checks import check, finish, load_raw, on_cpu_seconds
work = sys.argv[1]
raws = [load_raw(p) for p in glob.glob(f"{work}/p.raw*.json")]
mine = [r for r in raws if r["exe"].endswith("/stops")]
check(len(mine) == 1, f"one raw file of stops ({[r['exe'] for r in raws]})")
if mine:
    seconds = on_cpu_seconds(mine[0])
    # spin runs 0.3 s of wall time: its CPU time is what a loaded machine gave it
    check(seconds >= 0.01, f"stops's spin sampled: {seconds:.3f} s on-CPU")
finish()
PY

finish "a program that is pid 1 of a namespace of its own is profiled"
