#!/usr/bin/env bash
# End-to-end: stacks deeper than a record's 128 frames (shim/README.md, "Stacks deeper than a
# record"). tests/unwind/deep.c (gcc -O2, no frame pointers): main -> descend 300 deep -> run_for,
# about 43 KiB of stack, profiled through the CLI with an unwind cache of the test's own.
#   warm    the second run (the rows cached): >= 95% of the on-CPU periods reach main, each
#           stack with one "[… N frames]" frame (N 150-200), and their walks say the outermost
#           frame (stack_ends 1). Before the walk went on past the cap: none (cut at 128).
#   cold    an empty cache and every row build held back 300 ms (OSPREYD_UNWIND_DELAY_MS): the
#           samples before the rows were ready (>= 3), walked by ospreyd from the copies of
#           their stacks (32 KiB, read on from the live stack), >= 90% the same. Before the
#           copies were read on: 267 of 491 (the rest cut where the copy ended).
# Usage: e2e-deep.sh OSPREY SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-deep.sh OSPREY SOURCE_DIR}
src=${2:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir deep

gcc -O2 -g "$src/deep.c" -o "$work/deep" 2>"$work/deep.build" ||
  fail "deep: build failed: $(cat "$work/deep.build")"

# profile NAME [ENV...]: deep run for 1 s of CPU under the CLI, its folded stacks written.
profile() {
  local name=$1
  shift
  env "$@" XDG_CACHE_HOME="$work/cache" "$osprey" "$work/deep" --profile -o "$work/$name" -- 1.0 \
    >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: osprey exited $? ($(tail -n 3 "$work/$name.err"))"
}
mkdir -p "$work/cache"
profile fill
profile warm

# check_deep NAME WINDOW SHARE: of the on-CPU periods of NAME's samples in WINDOW (all, or
# cold: before the rows were ready), SHARE at least reach main with one marker frame, and as
# many say their walk reached the outermost frame.
check_deep() {
  python3 - "$work" "$@" <<'PY'
import json, os, subprocess, sys
from checks import check, finish, load_raw, on_cpu, periods, rooted_past_marker, stack_whole
work, name, window, share = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
osprey = os.environ["OSPREY"]
raw = load_raw(os.path.join(work, name + ".raw.json"))
stem = os.path.join(work, name + "-" + window)
if window == "cold":
    ready = raw.get("collector", {}).get("unwind", {}).get("ready_ns", 0)
    check(ready > 0, "%s: the rows were ready at %.0f ms" % (name, ready / 1e6))
    raw["samples"] = [s for s in raw["samples"] if s[0] < ready]
with open(stem + ".raw.json", "w") as f:
    json.dump(raw, f)
subprocess.run([osprey, "report", stem + ".raw.json", "-o", stem, "--format", "folded"],
               check=True, stdout=subprocess.DEVNULL)
total, rooted = rooted_past_marker(stem + ".folded", "run_for", 150, 200)
want = 3 if window == "cold" else 100
check(total >= want, "%s %s: %d on-CPU samples in run_for (want >= %d)" % (name, window, total, want))
check(total and rooted / total >= share,
      "%s %s: %d of %d on-CPU samples in run_for reach main past one [… N frames] (want >= %.0f%%)"
      % (name, window, rooted, total, 100 * share))
all_cpu = periods(raw, on_cpu)
outer = periods(raw, lambda s: on_cpu(s) and stack_whole(raw, s[2]))
check(all_cpu and outer / all_cpu >= share,
      "%s %s: %d of %d on-CPU periods say their walk reached the outermost frame (want >= %.0f%%)"
      % (name, window, outer, all_cpu, 100 * share))
finish()
PY
}
OSPREY=$osprey check_deep warm all 0.95 || fail "warm: deep stacks cut (see above)"
rm -rf "$work/cache" && mkdir -p "$work/cache"
profile cold OSPREYD_UNWIND_DELAY_MS=300
OSPREY=$osprey check_deep cold cold 0.90 || fail "cold: deep stacks cut before the rows (see above)"

finish "a stack 300 deep reaches main past one marker frame, walked by rows and from a copy read on to 43 KiB"
