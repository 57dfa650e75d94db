#!/usr/bin/env bash
# End-to-end on arm64 under emulation: tests/arm64/hot.c (two threads, main -> run_for ->
# middle -> leaf_a / leaf_b in a 3:1 split, and worker -> run_for -> ...) cross-built for
# arm64 with frame pointers and without, run under qemu-aarch64 with the arm64 preload shim,
# and (without frame pointers) linked with the arm64 shim archive.
# The shim spawns the native ospreyd (the emulated program's execve of a host binary runs it
# on the host), which drains the same shared memory and builds the arm64 unwind rows from the
# program's objects (daemon/README.md). Checked: the program's output and exit status come
# through; the raw profile says linux-aarch64 with rows for every image and none failed;
# >= 95% of the samples in the program's functions reach main or the thread's worker, with
# run_for;middle;leaf_* whole, in the split that was built; both threads are there.
# Usage: e2e-arm64.sh ARM64_BUILD_DIR NATIVE_BUILD_DIR SOURCE_DIR
set -uo pipefail

arm64=$(cd "${1:?usage: e2e-arm64.sh ARM64_BUILD_DIR NATIVE_BUILD_DIR SOURCE_DIR}" && pwd)
native=$(cd "${2:?}" && pwd)
src=$(cd "${3:?}" && pwd)
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir arm64
qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static) ||
  skip "qemu-aarch64 is not installed (scripts/install-deps.sh installs qemu-user)"

build() { # build OUT FLAGS...
  local out=$1
  shift
  aarch64-linux-gnu-gcc -O2 -g "$src/hot.c" -o "$work/$out" "$@" -lpthread 2>"$work/$out.build" ||
    fail "$out: build failed: $(cat "$work/$out.build")"
}
build hot-fp -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
build hot-nofp -fomit-frame-pointer
build hot-archive -fomit-frame-pointer -Wl,--whole-archive "$arm64/shim/libospreyprof.a" \
  -Wl,--no-whole-archive -ldl -lrt

for variant in fp nofp archive; do
  program=$work/hot-$variant
  "$qemu" "$program" 0.2 3 >"$work/$variant.plain" 2>&1
  expect_status 3 $? "$variant: unprofiled"
  preload=(-E LD_PRELOAD="$arm64/shim/libospreyprof.so")
  [ "$variant" = archive ] && preload=() # it boots the shim itself
  OSPREY_PROFILE="$work/$variant.raw.json" OSPREY_DAEMON="$native/daemon/ospreyd" \
    "$qemu" "${preload[@]}" "$program" 3 3 >"$work/$variant.out" 2>"$work/$variant.err"
  expect_status 3 $? "$variant: profiled under qemu-aarch64 ($(tail -n 3 "$work/$variant.err"))"
  sed 's/some rounds/ROUNDS/' "$work/$variant.plain" >"$work/$variant.want"
  sed 's/some rounds/ROUNDS/' "$work/$variant.out" >"$work/$variant.got"
  cmp -s "$work/$variant.want" "$work/$variant.got" ||
    fail "$variant: output differs under profiling: $(cat "$work/$variant.out")"
  # The program writes nothing to stderr; a line of the profiler's own (samples lost on a
  # loaded machine) is shown, not failed.
  grep -v '^osprey: ' "$work/$variant.err" >"$work/$variant.foreign" &&
    fail "$variant: the run said: $(cat "$work/$variant.err")"
  grep '^osprey: ' "$work/$variant.err" || true
  "$native/tools/osprey" report "$work/$variant.raw.json" -o "$work/$variant" \
    >"$work/$variant.report" 2>&1 || fail "$variant: osprey report exited $?"
done

python3 - "$work" <<'PY' || fail "arm64 profiles wrong (see above)"
import os, sys
from checks import check, finish, load_raw, read_folded

work = sys.argv[1]

for name in ("fp", "nofp", "archive"):
    raw = load_raw(os.path.join(work, name + ".raw.json"))
    unwind = raw.get("collector", {}).get("unwind", {})
    check(raw.get("platform") == "linux-aarch64", "%s: platform %s" % (name, raw.get("platform")))
    check(all(i.get("arch") == "aarch64" for i in raw["images"]),
          "%s: every image is aarch64" % name)
    check(unwind.get("images", 0) >= 3 and unwind.get("failed", 1) == 0,
          "%s: unwind rows for %s images, %s failed" % (name, unwind.get("images"), unwind.get("failed")))
    rows = [(parts[0], [p.split(" ")[0] for p in parts[1:]], count)
            for parts, count in read_folded(os.path.join(work, name + ".folded"))]
    ours = [(fiber, fr, c) for fiber, fr, c in rows
            if any(f in ("leaf_a", "leaf_b", "middle", "run_for") for f in fr)]
    total = sum(c for _, _, c in ours)
    rooted = sum(c for _, fr, c in ours if "main" in fr or "worker" in fr)
    chained = sum(c for _, fr, c in ours if "run_for;middle;leaf_" in ";".join(fr))
    check(total >= 400, "%s: %d on-CPU samples in the program's functions (want >= 400)" % (name, total))
    check(total and rooted / total >= 0.95,
          "%s: %.1f%% of them reach main or worker (want >= 95%%)"
          % (name, 100.0 * rooted / total if total else 0))
    check(total and chained / total >= 0.9,
          "%s: %.1f%% show run_for;middle;leaf_*" % (name, 100.0 * chained / total if total else 0))
    a = sum(c for _, fr, c in ours if fr and fr[-1] == "leaf_a")
    b = sum(c for _, fr, c in ours if fr and fr[-1] == "leaf_b")
    check(a + b and 0.65 <= a / (a + b) <= 0.85,
          "%s: leaf_a has %.2f of leaf_a + leaf_b (built 0.75)" % (name, a / (a + b) if a + b else 0))
    mains = sum(c for _, fr, c in ours if "main" in fr)
    workers = sum(c for _, fr, c in ours if "worker" in fr)
    check(mains >= total * 0.2 and workers >= total * 0.2,
          "%s: both threads sampled (main %d, worker %d)" % (name, mains, workers))
    report = open(os.path.join(work, name + ".report")).read()
    top = [l.split()[5] for l in report.splitlines() if l.startswith(("█", "▉", "▏")) and len(l.split()) > 5][:2]
    check(top == ["leaf_a", "leaf_b"], "%s: the report's top two are %s" % (name, top))

finish()
PY

finish "arm64 under qemu-aarch64: hot.c with and without frame pointers through the preload shim, and linked with the archive; native ospreyd"
