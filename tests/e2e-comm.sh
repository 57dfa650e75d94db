#!/usr/bin/env bash
# End-to-end: a process is named by its command, as the kernel and perf name it, not by the
# file its executable link points to (Debian's redis-server is a link to redis-check-rdb). A
# program (tests/stops/stops.c, `spin`) run through a link named `renamed-prog`, twice from one
# shell: the raw file's `comm` says renamed-prog (its `exe` the real file), and so do the
# folded stacks' roots, speedscope's name, trace.json's process names, pprof's comm labels and
# the report's process lines. (Before: `stops` everywhere.)
# Usage: e2e-comm.sh OSPREY SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-comm.sh OSPREY SOURCE_DIR}
src=${2:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir comm

gcc -O2 -g -fno-omit-frame-pointer "$src/stops.c" -lpthread -o "$work/stops" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"
ln -s stops "$work/renamed-prog"

"$osprey" /bin/sh --profile -o "$work/p" -- -c "'$work/renamed-prog' spin; '$work/renamed-prog' spin" \
  >"$work/out" 2>"$work/err"
expect_status 0 $? "osprey"
settle_collectors "$work"
python3 - "$work" <<'PY' || failures=$((failures + 1))
import glob, gzip, json, sys
from checks import check, finish, load_raw, read_folded
work = sys.argv[1]
raws = [load_raw(p) for p in glob.glob(f"{work}/p.raw*.json")]
named = [r for r in raws if r.get("comm") == "renamed-prog"]
check(len(named) == 2, f"two raw files with comm renamed-prog ({[r.get('comm') for r in raws]})")
check(all(r["exe"].endswith("/stops") for r in named), "their exe is the file the link names")
roots = {frames[0].rsplit("-", 1)[0] for frames, _ in read_folded(f"{work}/p.folded")}
check("renamed-prog" in roots and "stops" not in roots, f"folded roots by command: {sorted(roots)}")
trace = json.load(open(f"{work}/p.trace.json"))
names = [e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"]
check(sum(n.startswith("renamed-prog ") for n in names) == 2, f"trace.json's processes: {names}")
pprof = gzip.open(f"{work}/p.pb.gz").read()
check(b"renamed-prog" in pprof and b"\x05stops" not in pprof, "pprof's comm labels")
finish()
PY
grep -Eq 'process [0-9]+ \(renamed-prog\)' "$work/err" ||
  fail "the report's process lines: $(grep -E '^ *process [0-9]+' "$work/err")"

finish "a process is named by its command, not its executable's real path"
