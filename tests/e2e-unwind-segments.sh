#!/usr/bin/env bash
# End-to-end: one unwind build an object, however many executable segments it has. An object
# with several PF_X segments (node has three) is mapped once a segment; ospreyd built and
# published the whole object's rows once a mapping (node: 372,203 rows three times, 1.19 M
# rows and 19 MB in all, each copy ~190 ms of the collector's loop thread on a loaded machine:
# its tick 0.3-0.5 s late and 232 of the kernel's switch records lost). tests/unwind/segments.c
# has two; its raw file's collector.unwind.images must count each object once, and its samples
# in the far segment still reach main.
# Usage: e2e-unwind-segments.sh OSPREY UNWIND_DIR
set -uo pipefail

osprey=${1:?usage: e2e-unwind-segments.sh OSPREY UNWIND_DIR}
src=${2:?usage: e2e-unwind-segments.sh OSPREY UNWIND_DIR}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir unwind-segments

cc -O2 -g -fno-omit-frame-pointer -fPIE -pie -Wl,--section-start=far_text=0x200000 \
  "$src/segments.c" -o "$work/segments" 2>"$work/build" ||
  { fail "cannot build segments.c: $(cat "$work/build")"; finish "no"; }
segments=$(readelf -lW "$work/segments" | grep -c 'LOAD.* R E ')
[ "$segments" = 2 ] || skip "the linker made $segments executable segments, not 2"

"$osprey" "$work/segments" --profile -o "$work/seg" --format folded >"$work/out" 2>"$work/err"
expect_status 0 $? "osprey segments --profile"
python3 - "$work/seg.raw.json" "$work/seg.folded" <<'PY' || failures=$((failures + 1))
import sys
from checks import check, finish, load_raw, read_folded
raw = load_raw(sys.argv[1])
unwind = raw.get("collector", {}).get("unwind", {})
objects = {i["path"] for i in raw["images"] if i.get("text_size", 0) > 0}
check(unwind.get("images", 0) + unwind.get("failed", 0) <= len(objects),
      "%d objects mapped, %d built (%d failed), %d rows" % (
          len(objects), unwind.get("images", 0), unwind.get("failed", 0), unwind.get("rows", 0)))
far = [(frames, n) for frames, n in read_folded(sys.argv[2]) if "far_work" in frames]
total = sum(n for _, n in far)
whole = sum(n for frames, n in far if "main" in frames)
check(total > 0 and whole >= 0.9 * total,
      "%d of %d samples in far_work (the second segment) reach main" % (whole, total))
finish()
PY
finish "one unwind build for an object of two executable segments"
