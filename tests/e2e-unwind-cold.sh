#!/usr/bin/env bash
# End-to-end: whole stacks from the first sample, before the unwind rows exist (shim/README.md,
# "Stack copies while rows are built"). tests/unwind/frameless.c built without frame pointers
# (gcc -O2; clang -O2 -fomit-frame-pointer), profiled through the CLI with an unwind cache of
# the test's own, empty, and every row build held back 300 ms (OSPREYD_UNWIND_DELAY_MS, as a
# large object's on a loaded machine): the samples of the first 100 ms, all taken before any
# row was published, are walked by ospreyd from the copies of their stacks once the rows come.
# Of the on-CPU samples in run_for/middle/leaf_a/leaf_b in the first 100 ms (>= 3: a loaded
# machine gives few) and in all the time before the rows were ready (>= 20), >= 90% and >= 95%
# reach main or worker, and as many of the on-CPU periods there say their walk reached the
# outermost frame (stack_ends 1). Before the copies, 11-72% did (the leaf alone, or guessed).
# Usage: e2e-unwind-cold.sh OSPREY SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-unwind-cold.sh OSPREY SOURCE_DIR}
src=${2:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir unwind-cold

build() { # build OUT COMPILER FLAGS...
  local out=$1 compiler=$2
  shift 2
  "$compiler" "$@" -o "$work/$out" 2>"$work/$out.build" || fail "$out: build failed: $(cat "$work/$out.build")"
}
build frameless-gcc gcc -O2 -g "$src/frameless.c" -lpthread -ldl
build frameless-clang clang -O2 -g -fomit-frame-pointer "$src/frameless.c" -lpthread -ldl

for name in gcc clang; do
  mkdir -p "$work/cache-$name"
  OSPREYD_UNWIND_DELAY_MS=300 XDG_CACHE_HOME="$work/cache-$name" \
    "$osprey" "$work/frameless-$name" --profile -o "$work/$name" -- 1.0 \
    >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: osprey exited $? ($(tail -n 3 "$work/$name.err"))"
  # The first 100 ms, and everything before the rows were ready, as raw files the report reads.
  python3 - "$work/$name.raw.json" "$work/$name" <<'PY' || fail "$name: no raw file of the first 100 ms"
import json, sys
from checks import load_raw
raw = load_raw(sys.argv[1])
ready = raw.get("collector", {}).get("unwind", {}).get("ready_ns", 0)
if not ready or ready < 100_000_000:
    sys.exit("the rows were ready at %.0f ms, not after the window this test looks at" % (ready / 1e6))
samples = raw["samples"]
for stem, end in (("early", 100_000_000), ("cold", ready)):
    raw["samples"] = [s for s in samples if s[0] < end]
    with open(sys.argv[2] + "-" + stem + ".raw.json", "w") as f:
        json.dump(raw, f)
PY
  for stem in early cold; do
    "$osprey" report "$work/$name-$stem.raw.json" -o "$work/$name-$stem" --format folded \
      >/dev/null 2>"$work/$name-$stem.err" ||
      fail "$name: osprey report exited $? ($(tail -n 3 "$work/$name-$stem.err"))"
  done
done

# A compiler driver (gcc -c: the driver, cc1, as), whose only on-CPU row may be the CPU time
# its exit pays: every process's on-CPU rows say why their walks ended.
"$osprey" gcc --profile -o "$work/driver" -- -O2 -c "$src/frameless.c" -I"$src" -o "$work/f.o" \
  >"$work/driver.out" 2>"$work/driver.err" ||
  fail "driver: osprey exited $? ($(tail -n 3 "$work/driver.err"))"
python3 - "$work" <<'PY' || fail "a process's on-CPU rows say no stop reason (see above)"
import glob, os, sys
from checks import check, finish, load_raw, on_cpu
files = glob.glob(os.path.join(sys.argv[1], "driver.raw*.json"))
check(len(files) >= 2, "driver: %d raw files (want the driver's and cc1's at least)" % len(files))
for path in files:
    raw = load_raw(path)
    ends = raw.get("stack_ends") or []
    cpu = [s for s in raw["samples"] if on_cpu(s)]
    if cpu:
        said = sum(1 for s in cpu if s[2] < len(ends) and ends[s[2]] != 0)
        check(said == len(cpu), "%s (%s): %d of %d on-CPU rows say why their walk ended"
              % (os.path.basename(path), os.path.basename(raw.get("exe", "?")), said, len(cpu)))
finish()
PY

python3 - "$work" <<'PY' || fail "stacks of the first 100 ms cut (see above)"
import os, sys
from checks import check, finish, load_raw, on_cpu, read_folded, weight

work = sys.argv[1]
ours = ("leaf_a", "leaf_b", "middle", "run_for")
# The first 100 ms hold few samples on a loaded machine: at least 3 there, 20 before the rows;
# one sample the shim could not copy (its ring a quarter full before a late ospreyd attached)
# is a tenth of ten, hence 90% there (the tree before the copies: 11-72%).
for name in ("gcc", "clang"):
    for stem, label, want, share in (("early", "in the first 100 ms", 3, 0.90),
                                     ("cold", "before the rows were ready", 20, 0.95)):
        rows = [([fr.split(" ")[0] for fr in frames[1:]], count)
                for frames, count in read_folded(os.path.join(work, "%s-%s.folded" % (name, stem)))]
        mine = [(fr, c) for fr, c in rows if any(f in ours for f in fr)]
        total = sum(c for fr, c in mine)
        rooted = sum(c for fr, c in mine if "main" in fr or "worker" in fr)
        check(total >= want, "%s: %d on-CPU samples in the program's functions %s (want >= %d)"
              % (name, total, label, want))
        check(total and rooted / total >= share,
              "%s: %.1f%% of them reach main or worker (want >= %.0f%%)"
              % (name, 100.0 * rooted / total if total else 0, 100 * share))
        raw = load_raw(os.path.join(work, "%s-%s.raw.json" % (name, stem)))
        ends = raw.get("stack_ends", [])
        cpu = [s for s in raw["samples"] if on_cpu(s)]
        outer = sum(weight(s) for s in cpu if s[2] < len(ends) and ends[s[2]] == 1)
        all_cpu = sum(weight(s) for s in cpu)
        check(all_cpu and outer / all_cpu >= share,
              "%s: %.1f%% of the on-CPU periods %s say the walk reached the outermost frame "
              "(want >= %.0f%%)" % (name, 100.0 * outer / all_cpu if all_cpu else 0, label,
                                   100 * share))
finish()
PY

finish "whole stacks in the first 100 ms, before the unwind rows were published: gcc, clang; a compiler driver's rows say why they ended"
