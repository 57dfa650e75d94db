#!/usr/bin/env bash
# End-to-end profile of the bundled example: `osprey examples/hotspot.c --profile`, then
# every export is parsed and checked for its structure and for the known hot function,
# checksum_block; the same for the prebuilt example run under the preload shim, and for
# `osprey report` on the kept raw file.
# Usage: e2e-profile.sh path/to/osprey path/to/examples/hotspot.c path/to/built/hotspot
set -uo pipefail

osprey=${1:?usage: e2e-profile.sh OSPREY HOTSPOT_C HOTSPOT_EXE}
hotspot_c=${2:?usage: e2e-profile.sh OSPREY HOTSPOT_C HOTSPOT_EXE}
hotspot_exe=${3:?usage: e2e-profile.sh OSPREY HOTSPOT_C HOTSPOT_EXE}
blocks=8000
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir e2e

# check_exports STEM WHAT: parse every output written at STEM and check its structure.
check_exports() {
  python3 - "$1" <<'PY' || fail "$2: exports do not have the expected structure"
import json, re, sys
import checks
from checks import check

stem = sys.argv[1]
checks.where = stem + ": "
checks.verbose = False  # a check per frame, node and folded line: failures only

# speedscope: shared frame table, one sampled profile per fiber, root-first index arrays.
speedscope = json.load(open(stem + ".speedscope.json"))
check(speedscope.get("$schema") == "https://www.speedscope.app/file-format-schema.json",
      "speedscope: $schema")
frames = speedscope["shared"]["frames"]
check(len(frames) > 0, "speedscope: no frames")
check(all(isinstance(f.get("name"), str) for f in frames), "speedscope: frame without a name")
check(any(f["name"] == "checksum_block" for f in frames), "speedscope: no checksum_block frame")
# The profiler's own frames are in no output: no shim source, no osp__/osp_prof_ function.
import os.path
own = [f["name"] + " " + f.get("file", "") for f in frames
       if f["name"].startswith(("osp__", "osp_prof_"))
       or "/shim/" in os.path.normpath(f.get("file", "/"))]
check(not own, "speedscope: the profiler's own frames: %r" % own[:5])
profiles = speedscope["profiles"]
check(len(profiles) >= 2, "speedscope: expected a profile per thread (main and worker)")
total_samples = 0
for profile in profiles:
    check(profile["type"] == "sampled", "speedscope: profile type")
    check(re.fullmatch(r"[^;]+-[0-9]+( \((main|thread)\))?", profile["name"]) is not None,
          "speedscope: profile name " + profile["name"])
    check(len(profile["samples"]) == len(profile["weights"]), "speedscope: samples vs weights")
    check(all(0 <= i < len(frames) for s in profile["samples"] for i in s),
          "speedscope: frame index out of range")
    check(profile["endValue"] >= profile["startValue"], "speedscope: end before start")
    total_samples += len(profile["samples"])
check(total_samples > 0, "speedscope: no samples")

# cpuprofile: node tree, samples naming nodes, one time delta per sample.
cpuprofile = json.load(open(stem + ".cpuprofile"))
nodes = {node["id"]: node for node in cpuprofile["nodes"]}
check(len(nodes) == len(cpuprofile["nodes"]), "cpuprofile: duplicate node ids")
for node in cpuprofile["nodes"]:
    frame = node["callFrame"]
    for key in ("functionName", "scriptId", "url", "lineNumber"):
        check(key in frame, "cpuprofile: callFrame without " + key)
    check(("columnNumber" in frame) == (frame["lineNumber"] >= 0),
          "cpuprofile: a columnNumber without a line, or a line without one")
    check(all(child in nodes for child in node.get("children", [])),
          "cpuprofile: child id not a node")
check(any(n["callFrame"]["functionName"] == "checksum_block" for n in cpuprofile["nodes"]),
      "cpuprofile: no checksum_block node")
check(len(cpuprofile["samples"]) == len(cpuprofile["timeDeltas"]),
      "cpuprofile: samples vs timeDeltas")
check(len(cpuprofile["samples"]) > 0, "cpuprofile: no samples")
check(all(s in nodes for s in cpuprofile["samples"]), "cpuprofile: sample is not a node")
check(cpuprofile["endTime"] >= cpuprofile["startTime"], "cpuprofile: end before start")

# profile.json: totals, fibers, functions sorted by self, lines.
summary = json.load(open(stem + ".profile.json"))
check(summary["version"] == 1, "profile.json: version")
totals = summary["totals"]
check(totals["samples"] == totals["on_cpu"] + totals["waiting"], "profile.json: totals add up")
check(totals["on_cpu"] > 0, "profile.json: no on-CPU samples")
check(len(summary["fibers"]) >= 2, "profile.json: expected two fibers")
functions = summary["functions"]
# checksum_block does the example's work in its own loop (no helper to inline), so it leads
# by self time and holds most of the on-CPU time.
check(len(functions) > 0 and functions[0]["name"] == "checksum_block",
      "profile.json: hottest function is %r" % (functions[0]["name"] if functions else None))
checksum = [f for f in functions if f["name"] == "checksum_block"]
check(len(checksum) == 1 and checksum[0]["total_pct"] >= 50,
      "profile.json: checksum_block is not most of the time: %r" % checksum)
check(all(a["self"] >= b["self"] for a, b in zip(functions, functions[1:])),
      "profile.json: functions not sorted by self")
check(len(checksum) == 1 and checksum[0]["file"].endswith("hotspot.c"),
      "profile.json: checksum_block's file")
lines = summary["lines"]
check(len(lines) > 0 and all(l["line"] > 0 for l in lines), "profile.json: lines")

# folded: "frame;frame;... count" lines.
folded = open(stem + ".folded").read().splitlines()
check(len(folded) > 0, "folded: empty")
for line in folded:
    stack, _, count = line.rpartition(" ")
    check(stack != "" and count.isdigit() and int(count) > 0, "folded: bad line " + line)
check(any("checksum_block" in line.split(" ")[0].split(";") for line in folded),
      "folded: no checksum_block frame")

checks.finish()
PY
}

# check_report FILE WHAT: the first row of the top-10 table names checksum_block.
check_report() {
  local first
  first=$(sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -A1 -E "SELF%.*FUNCTION" | sed -n 2p)
  case "$first" in
    *" checksum_block "*) ;;
    *) fail "$2: the report's first top-10 row is not checksum_block: '$first'"
       cat "$1" >&2 ;;
  esac
}

# --- a C file built for profiling ----------------------------------------------------------
expected=$("$hotspot_exe" "$blocks")
"$osprey" "$hotspot_c" --profile -o "$work/out/hotspot" -- "$blocks" >"$work/stdout" 2>"$work/stderr"
status=$?
[ "$status" -eq 0 ] || { fail "osprey hotspot.c --profile: exit $status"; cat "$work/stderr" >&2; }
# stdout is not a terminal here: it carries the program's bytes alone, the report goes to
# stderr.
[ "$(cat "$work/stdout")" = "$expected" ] ||
  fail "the program's output changed under the profiler: $(cat "$work/stdout")"
for ext in raw.json speedscope.json cpuprofile folded profile.json pb.gz trace.json; do
  [ -s "$work/out/hotspot.$ext" ] || fail "missing output hotspot.$ext"
done
[ -f "$work/out/hotspot.offcpu.folded" ] || fail "missing output hotspot.offcpu.folded"
check_report "$work/stderr" "hotspot.c --profile"
check_exports "$work/out/hotspot" "hotspot.c --profile"

# --- `osprey report` on the kept raw file ----------------------------------------------------
"$osprey" report "$work/out/hotspot.raw.json" --binary "$work/no-such-binary" >/dev/null 2>&1 &&
  fail "report with a missing --binary succeeded"
cp "$work/out/hotspot.raw.json" "$work/again.raw.json"
# The scratch build is gone; the main image's symbols come from nowhere, so only check the
# report runs and writes its outputs at the default stem.
"$osprey" report "$work/again.raw.json" >"$work/report-stdout" 2>"$work/report-stderr"
status=$?
[ "$status" -eq 0 ] || { fail "osprey report: exit $status"; cat "$work/report-stderr" >&2; }
for ext in speedscope.json cpuprofile folded profile.json; do
  [ -s "$work/again.$ext" ] || fail "osprey report did not write again.$ext"
done

# --- an executable, profiled through LD_PRELOAD -----------------------------------------------
"$osprey" "$hotspot_exe" --profile -o "$work/pre/hotspot" -- "$blocks" >"$work/stdout" \
  2>"$work/stderr"
status=$?
[ "$status" -eq 0 ] || { fail "osprey HOTSPOT_EXE --profile: exit $status"; cat "$work/stderr" >&2; }
[ "$(cat "$work/stdout")" = "$expected" ] ||
  fail "the executable's output changed under the preload shim"
check_report "$work/stderr" "executable --profile"
check_exports "$work/pre/hotspot" "executable --profile"

# The raw file of the executable names a binary that still exists: `osprey report` on it
# symbolizes again, with --binary pointing at the same file.
"$osprey" report "$work/pre/hotspot.raw.json" --binary "$hotspot_exe" -o "$work/rep/hotspot" \
  >"$work/report-stdout" 2>"$work/report-stderr"
status=$?
[ "$status" -eq 0 ] || { fail "osprey report --binary: exit $status"; cat "$work/report-stderr" >&2; }
check_report "$work/report-stdout" "osprey report --binary"
check_exports "$work/rep/hotspot" "osprey report --binary"

finish "end-to-end profile checks passed"
