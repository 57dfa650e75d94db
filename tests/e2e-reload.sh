#!/usr/bin/env bash
# End-to-end: two libraries loaded one after the other at the same address. tests/reload/
# reload.c dlopens liba.so, burns 0.3 s of CPU in its burn_a, dlcloses it, then dlopens
# libb.so, which the loader maps where liba.so was, and burns 0.3 s in its burn_b. Profiled
# with `osprey --profile`: burn_a and burn_b each hold about half of the on-CPU time in the
# report, the folded file, the speedscope file and pprof (the images' load and unload times in the
# raw file tell the two apart). Skipped when the loader put libb.so elsewhere.
# Usage: e2e-reload.sh path/to/osprey SOURCE_DIR (tests/reload)
set -uo pipefail

osprey=$(realpath "${1:?usage: e2e-reload.sh path/to/osprey SOURCE_DIR}")
src=$(realpath "${2:?}")
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir reload

flags=(-O2 -g -fno-omit-frame-pointer)
for lib in a b; do
  gcc "${flags[@]}" -fPIC -shared -DBURN="burn_$lib" "$src/burn.c" -o "$work/lib$lib.so" \
    2>"$work/build" || { fail "lib$lib.so: build failed: $(cat "$work/build")"; finish ""; }
done
gcc "${flags[@]}" "$src/reload.c" -o "$work/reload" -ldl 2>"$work/build" ||
  { fail "reload: build failed: $(cat "$work/build")"; finish ""; }

args=("$work/liba.so" "$work/libb.so" 0.3)
"$work/reload" "${args[@]}" >"$work/plain.out"
plain_status=$?
expect_status 0 "$plain_status" "reload, plain"
grep -qx same "$work/plain.out" || skip "the loader put libb.so elsewhere than liba.so"

"$osprey" "$work/reload" --profile -o "$work/out/r" -- "${args[@]}" >"$work/stdout" \
  2>"$work/stderr"
expect_status 0 $? "osprey reload --profile"
# The program's own output passes through unchanged.
head -n 1 "$work/stdout" | grep -qx 'same' ||
  { grep -qx moved "$work/stdout" && skip "the loader put libb.so elsewhere (profiled run)"; }

python3 - "$work" <<'PY' || failures=$((failures + 1))
import json
import re
import sys

from checks import check, finish, load_raw, read_folded

work = sys.argv[1]
raw = load_raw(f"{work}/out/r.raw.json")
libs = [i for i in raw["images"] if re.search(r"/lib[ab]\.so$", i["path"])]
check(len(libs) == 2 and libs[0]["text"] == libs[1]["text"],
      f"liba.so and libb.so at one address in the raw file: {[(i['path'], i['text']) for i in libs]}")
a = [i for i in libs if i["path"].endswith("liba.so")]
check(a and "unloaded_ns" in a[0], "liba.so's unload time recorded")


def shares(pairs):
    """(frames, count) pairs: the share of the on-CPU time under burn_a and under burn_b."""
    total = sum(c for _, c in pairs)
    return {f: sum(c for fr, c in pairs if f in fr) / max(total, 1) for f in ("burn_a", "burn_b")}


def half(where, got):
    for f, share in got.items():
        check(0.35 <= share <= 0.65, f"{where}: {f} {share:.1%} of the on-CPU time (about half)")


half("folded", shares(read_folded(f"{work}/out/r.folded")))
s = json.load(open(f"{work}/out/r.speedscope.json"))
names = [f["name"] for f in s["shared"]["frames"]]
pairs = []
for p in s["profiles"]:
    for stack, w in zip(p["samples"], p["weights"]):
        frames = [names[i] for i in stack]
        if "(waiting)" not in frames:
            pairs.append((frames, w))
half("speedscope", shares(pairs))
finish()
PY

# The report's table (on stderr): both functions, each near half (TOTAL% column).
for f in burn_a burn_b; do
  pct=$(grep -E "  $f +[^ ]*burn\.c:" "$work/stderr" | grep -oE '[0-9.]+%' | sed -n 2p | tr -d %)
  if [ -z "$pct" ] || ! awk -v p="$pct" 'BEGIN { exit !(p >= 35 && p <= 65) }'; then
    fail "report: $f TOTAL ${pct:-missing}%, expected about 50%"
    cat "$work/stderr" >&2
  fi
done

# pprof: both functions, each near half (cum%), each from its own library's mapping.
if command -v go >/dev/null 2>&1; then
  go tool pprof -top "$work/out/r.pb.gz" >"$work/top" 2>"$work/err" ||
    fail "go tool pprof -top failed: $(cat "$work/err")"
  for f in burn_a burn_b; do
    pct=$(grep -E " $f\$" "$work/top" | grep -oE '[0-9.]+%' | sed -n 3p | tr -d %)
    if [ -z "$pct" ] || ! awk -v p="$pct" 'BEGIN { exit !(p >= 35 && p <= 65) }'; then
      fail "pprof: $f cum ${pct:-missing}%, expected about 50%: $(cat "$work/top")"
    fi
  done
  go tool pprof -raw "$work/out/r.pb.gz" >"$work/raw" 2>"$work/err" ||
    fail "go tool pprof -raw failed: $(cat "$work/err")"
  for lib in liba libb; do
    grep -qE "/$lib\.so " "$work/raw" || fail "pprof: no mapping of $lib.so"
  done
else
  skip_part "go tool pprof" "go is not installed"
fi

finish "libraries loaded one after another at one address: each named for its own samples"
