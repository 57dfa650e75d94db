#!/usr/bin/env bash
# End-to-end: a program run in a pid namespace of its own, `osprey unshare --pid --fork
# --mount-proc PROG`, as sandboxes run programs (bwrap, unshare). The forked child is the
# namespace's pid 1: its session's leader is outside it (getsid says 0), which is no daemon's
# setsid, and its exit kills every other process of the namespace, the collector it started
# among them, so it waits for its profile as a run's first process does. PROG (tests/stops/stops.c,
# `spin`: 0.3 s in spin) is in the report, its stdout and status unchanged. Before: `process 1
# left the session (a daemon) after its parent's collector ended; it is not profiled`, only
# unshare's own 10 ms in the profile. The same under bwrap (below), and under bwrap with only
# the output directory writable; without --mount-proc, where the collector's /proc is the
# host's (below); and `osprey attach` from outside into such a namespace. Root only (unshare
# --pid).
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

# The host's /proc kept (`unshare --pid --fork` without --mount-proc, firejail, container
# runtimes that share /proc): the collector, in the namespace, reads /proc/<namespace pid>,
# which there is another process (the host's pid 1 for the namespace's). stops (spin) is
# named stops, and its stacks reach their root (the unwind tables built from stops' maps);
# tests/forks/forks.c (clone3: a child burns 0.3 s in work_b, its parent waits for it) has its
# forked child profiled too. Before: `process 1 (process_api)` (the host's pid 1's name), no
# unwind table built (the maps read were the host process's) and none of stops' stacks whole;
# the forked child's profile missing (`ospreyd did not finish writing …profile.raw.4.json`).
whole_share() { # whole_share RAW: the share of RAW's on-CPU periods whose stack reached its root
  python3 - "$1" <<'PY'
import sys
from checks import load_raw, on_cpu, stack_whole, weight
raw = load_raw(sys.argv[1])
rows = [(weight(r), r[2]) for r in raw["samples"] if on_cpu(r)]
total = sum(w for w, _ in rows)
print(f"{sum(w for w, s in rows if stack_whole(raw, s)) / total:.3f}" if total else "0")
PY
}
if ! unshare --pid --fork true 2>/dev/null; then
  skip_part "the host's /proc" "unshare --pid --fork refused here"
else
  mkdir -p "$work/h" "$work/hf"
  "$osprey" "$(command -v unshare)" --profile -o "$work/h/p" -- --pid --fork "$work/stops" spin \
    >"$work/h.out" 2>"$work/h.err"
  expect_status "$plain" $? "osprey unshare --pid --fork stops spin (the host's /proc)"
  cmp -s "$work/plain.out" "$work/h.out" || fail "the host's /proc: stdout differs from the plain run's"
  settle_collectors "$work/h"
  grep -Eq 'process 1 \(stops\)' "$work/h.err" ||
    fail "the host's /proc: no process line for stops: $(grep -E '^ *process|^osprey:' "$work/h.err")"
  raw=$(grep -l '"exe": *"[^"]*/stops"' "$work"/h/p.raw*.json | head -1)
  if [ -z "$raw" ]; then
    fail "the host's /proc: no raw file of stops"
  else
    grep -q '"comm": *"stops"' "$raw" || fail "the host's /proc: $raw names another process: $(grep -o '"comm": *"[^"]*"' "$raw")"
    share=$(whole_share "$raw")
    # stops' spin: the rows of its objects are built from its maps within a few milliseconds
    # (stack copies walk the samples taken before); 0 when the maps read are another process's
    python3 -c "import sys; sys.exit(float('$share') < 0.5)" ||
      fail "the host's /proc: $share of stops' on-CPU periods reach their root (expected >= 0.5)"
  fi

  build_forks "$(dirname "$src")/forks" "$work"
  "$work/forks" clone3 >"$work/hf-plain.out" 2>/dev/null
  "$osprey" "$(command -v unshare)" --profile -o "$work/hf/p" -- --pid --fork "$work/forks" clone3 \
    >"$work/hf.out" 2>"$work/hf.err"
  expect_status 0 $? "osprey unshare --pid --fork forks clone3 (the host's /proc)"
  roles() { awk '{print $1}' "$1" | sort; } # who said it, not the pid and CPU it said
  [ "$(roles "$work/hf-plain.out")" = "$(roles "$work/hf.out")" ] ||
    fail "the host's /proc: forks' stdout differs from the plain run's: $(cat "$work/hf.out")"
  settle_collectors "$work/hf"
  grep -q 'did not finish' "$work/hf.err" && fail "the host's /proc: $(grep 'did not finish' "$work/hf.err")"
  python3 - "$work/hf" <<'PY' || failures=$((failures + 1))
import glob, sys
from checks import check, finish, load_raw, on_cpu, on_cpu_seconds, stack_whole, weight
raws = [load_raw(p) for p in glob.glob(f"{sys.argv[1]}/p.raw*.json")]
children = [r for r in raws if r.get("forked") and r["exe"].endswith("/forks")]
check(len(children) == 1, f"the host's /proc: one raw file of forks' child ({[(r['pid'], r.get('comm')) for r in raws]})")
for child in children:
    check(child.get("comm") == "forks", f"the host's /proc: the child is named {child.get('comm')}")
    seconds = on_cpu_seconds(child)
    check(seconds >= 0.01, f"the host's /proc: the child's work_b sampled: {seconds:.3f} s on-CPU")
    rows = [(weight(r), r[2]) for r in child["samples"] if on_cpu(r)]
    whole = sum(w for w, s in rows if stack_whole(child, s))
    check(whole * 2 >= sum(w for w, _ in rows), f"the host's /proc: {whole} of the child's {sum(w for w, _ in rows)} on-CPU periods reach their root")
finish()
PY
fi

# `osprey attach` from outside into such a namespace: the pid given is the host's, the
# collector's /proc the host's; stops (wait: 3 s in spin) is sampled and named.
if unshare --pid --fork true 2>/dev/null; then
  unshare --pid --fork "$work/stops" wait >"$work/a-prog.out" 2>&1 &
  launcher=$!
  target=
  for _ in $(seq 50); do
    target=$(pgrep -P "$launcher" -x stops) && break
    sleep 0.1
  done
  if [ -z "$target" ]; then
    fail "attach: stops did not start in its namespace"
  else
    "$osprey" attach "$target" --duration 1 -o "$work/a" >"$work/a.report" 2>&1
    expect_status 0 $? "osprey attach $target (pid 1 of its namespace)"
    python3 - "$work/a.raw.json" "$target" <<'PY' || failures=$((failures + 1))
import sys
from checks import check, finish, load_raw, on_cpu_seconds
raw = load_raw(sys.argv[1])
check(raw["pid"] == int(sys.argv[2]) and raw.get("comm") == "stops",
      f"attach: the raw file names process {raw['pid']} ({raw.get('comm')})")
check(on_cpu_seconds(raw) >= 0.01, f"attach: stops's spin sampled: {on_cpu_seconds(raw):.3f} s")
finish()
PY
  fi
  wait "$launcher"
fi

finish "a program in a pid namespace of its own is profiled"
