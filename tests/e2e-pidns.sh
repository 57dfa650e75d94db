#!/usr/bin/env bash
# End-to-end: a program run in a pid namespace of its own, `osprey unshare --pid --fork
# --mount-proc PROG`, as sandboxes run programs (bwrap, unshare). The forked child is the
# namespace's pid 1: its session's leader is outside it (getsid says 0), which is no daemon's
# setsid, and its exit kills every other process of the namespace, the collector it started
# among them, so it waits for its profile as a run's first process does. PROG (tests/stops/stops.c,
# `spin`: 0.3 s in spin) is in the report, its stdout and status unchanged. Before: `process 1
# left the session (a daemon) after its parent's collector ended; it is not profiled`, only
# unshare's own 10 ms in the profile. The same under bwrap (below), and under bwrap with only
# the output directory writable. Root only (unshare --pid).
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

# bwrap: the program is a later pid of the namespace (bwrap's own first process is pid 1, not
# profiled: a raw clone), in a network namespace of its own too, where the run's collector
# cannot be greeted; the collector it starts dies with the namespace unless it waits for it.
# Before: no raw file of stops, nothing said.
# The program: bc, a few hundred milliseconds of pi (its collector, busy at its end, is the
# one the namespace's end killed: stops' 0.3 s was written in time).
if ! command -v bwrap >/dev/null 2>&1; then
  skip_part "bwrap" "bubblewrap is not installed (apt-get install bubblewrap)"
elif ! command -v bc >/dev/null 2>&1; then
  skip_part "bwrap" "bc is not installed (apt-get install bc)"
else
  printf 'scale=900\n4*a(1)\nquit\n' >"$work/pi.bc"
  bc -lq "$work/pi.bc" >"$work/b-plain.out"
  "$osprey" "$(command -v bwrap)" --profile -o "$work/b" -- --ro-bind / / --dev /dev --proc /proc \
    --bind /tmp /tmp --unshare-all --die-with-parent "$(command -v bc)" -lq "$work/pi.bc" \
    >"$work/b.out" 2>"$work/b.err"
  expect_status 0 $? "osprey bwrap … bc"
  cmp -s "$work/b-plain.out" "$work/b.out" || fail "bwrap: bc's stdout differs from the plain run's"
  settle_collectors "$work"
  grep -Eq 'process [0-9]+ \(bc\)' "$work/b.err" ||
    fail "bwrap: no process line for bc: $(grep -E '^ *process|^osprey:' "$work/b.err")"
  # Only the output directory writable (a read-only root, /tmp included), as a sandbox that
  # lets a program write its results and nothing else: the profile's scratch is beside the
  # outputs, so bc's raw file is written. Before: `ospreyd could not write the profile:
  # /tmp/osprey-…/profile.raw.4.json: Read-only file system`, no bc in the report.
  mkdir -p "$work/only"
  cp "$work/pi.bc" "$work/only/pi.bc"
  "$osprey" "$(command -v bwrap)" --profile -o "$work/only/b" -- --ro-bind / / --dev /dev \
    --proc /proc --bind "$work/only" "$work/only" --unshare-all --die-with-parent \
    "$(command -v bc)" -lq "$work/only/pi.bc" >"$work/only.out" 2>"$work/only.err"
  expect_status 0 $? "osprey bwrap (only the output directory writable) … bc"
  cmp -s "$work/b-plain.out" "$work/only.out" ||
    fail "bwrap, only the output directory writable: bc's stdout differs from the plain run's"
  settle_collectors "$work/only"
  grep -Eq 'process [0-9]+ \(bc\)' "$work/only.err" ||
    fail "bwrap, only the output directory writable: no process line for bc: $(grep -E '^ *process|^osprey:' "$work/only.err")"
  leftover=$(find "$work/only" -name '.osprey-*')
  [ -z "$leftover" ] || fail "bwrap, only the output directory writable: scratch left: $leftover"
fi

finish "a program in a pid namespace of its own is profiled"
