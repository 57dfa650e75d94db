#!/usr/bin/env bash
# End-to-end: a cgo Go program's frameless leaf functions keep their caller. Its `.eh_frame`
# covers the C parts only; Go's functions are described in `.debug_frame`, which ospreyd reads
# where `.eh_frame` leaves gaps (daemon/cfi-rows.c, unwind-table.c). tests/goleaf/goleaf.go:
# three leaf loops with no frame (main.hotA/B/C, no rbp pushed) under main.spin, built 3:2:1,
# on two goroutines, cgo on so the preload shim applies.
#   rows     cfi-compare --full: the translator's rows are libdw's, and more of them than the
#            same binary's without `.debug_frame` (both builders fill the gaps); the same for
#            gofmt built without cgo (`.debug_frame` alone);
#   caller   main.spin's inclusive share of the on-CPU samples within 3 points of its truth
#            (the share whose leaf is one of the three or spin: each of them is spin's), and
#            >= 95% of the leaves' samples reach main.spin and runtime.goexit;
#   split    hotA:hotB:hotC under main.spin within 3 points of the leaves' own split (the walk
#            loses none of them), and within 8 of the built 50.0/33.3/16.7.
# Skipped (77) without go. Usage: e2e-goleaf.sh OSPREY CFI_COMPARE SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-goleaf.sh OSPREY CFI_COMPARE SOURCE_DIR}
compare=${2:?}
src=${3:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
command -v go >/dev/null 2>&1 || skip "no go on PATH (Debian's golang-go, scripts/install-deps.sh)"
scratch_dir goleaf

# Offline, in the test's own directory: no module download, no cache outside it.
export GO111MODULE=off GOPROXY=off GOFLAGS='' CGO_ENABLED=1 GOCACHE="$work/gocache" \
  GOPATH="$work/gopath" HOME="$work" XDG_CACHE_HOME="$work/cache"
go build -o "$work/goleaf" "$src/goleaf.go" 2>"$work/go-build.err" ||
  { fail "go build of $src/goleaf.go failed: $(cat "$work/go-build.err")"; finish ""; }
objdump -d --no-show-raw-insn "$work/goleaf" >"$work/goleaf.s" 2>/dev/null
for leaf in hotA hotB hotC; do
  sed -n "/<main\.$leaf>:/,/^\$/p" "$work/goleaf.s" | grep -q "push.*%rbp" &&
    fail "main.$leaf pushes a frame pointer: not the frameless leaf this test needs"
done

# The rows: both builders the same, .debug_frame's rows added to .eh_frame's.
rows_of() { "$compare" --full --verbose "$1" | sed -n 's/^.*: \([0-9]*\) rows, .*/\1/p' | head -n 1; }
"$compare" --full "$work/goleaf" >"$work/compare.out" 2>&1
if ! grep -q "translated 1," "$work/compare.out" || ! grep -q ", differing 0$" "$work/compare.out"; then
  fail "rows: the translator's rows are not libdw's: $(cat "$work/compare.out")"
fi
# A Go program without cgo has .debug_frame alone (Go's gofmt, from the toolchain's sources).
if CGO_ENABLED=0 go build -o "$work/gofmt" cmd/gofmt 2>"$work/gofmt-build.err"; then
  "$compare" --full "$work/gofmt" >"$work/compare-gofmt.out" 2>&1
  if ! grep -q "translated 1," "$work/compare-gofmt.out" ||
    ! grep -q ", differing 0$" "$work/compare-gofmt.out"; then
    fail "rows of gofmt (.debug_frame alone): $(cat "$work/compare-gofmt.out")"
  fi
else
  fail "go build cmd/gofmt failed: $(cat "$work/gofmt-build.err")"
fi
objcopy --remove-section .debug_frame "$work/goleaf" "$work/goleaf-eh"
with=$(rows_of "$work/goleaf")
without=$(rows_of "$work/goleaf-eh")
[ "${with:-0}" -gt $((${without:-0} + 1000)) ] ||
  fail "rows: $with rows with .debug_frame, $without without (its rows were not added)"

"$osprey" "$work/goleaf" --profile -o "$work/goleaf" -- 3 >"$work/goleaf.out" 2>"$work/goleaf.err" ||
  fail "osprey exited $? ($(tail -n 3 "$work/goleaf.err"))"
grep -q "^goleaf 1 " "$work/goleaf.out" || fail "the program's output changed: $(cat "$work/goleaf.out")"
python3 "$src/split.py" folded "$work/goleaf.folded" >"$work/split" ||
  fail "no shares from $work/goleaf.folded"
cat "$work/split"
v() { sed -n "s/^$1 //p" "$work/split"; }
# A shim that walks no goroutine's stack ends every stack at its leaf, whatever the rows say.
if ! grep -q "runtime\.goexit" "$work/goleaf.folded"; then
  skip_part "the caller and the split" "no stack reaches runtime.goexit: this shim does not walk goroutine stacks"
  finish "the rows of a cgo Go program and of gofmt"
fi
python3 - "$work/split" <<'PY' || fail "the caller or the split (above)"
import sys
from checks import check, finish
v = dict(line.split() for line in open(sys.argv[1]))
f = {k: float(x) for k, x in v.items()}
check(f["leaves"] >= 300, "%d samples in the three leaves (want >= 300)" % f["leaves"])
check(f["reach"] >= 95.0, "%.1f%% of the leaves' samples reach main.spin and runtime.goexit "
      "(want >= 95%%)" % f["reach"])
check(abs(f["caller"] - f["caller_truth"]) <= 3.0,
      "main.spin inclusive %.1f%%, truth %.1f%% (within 3 points)" % (f["caller"], f["caller_truth"]))
for leaf, built in (("hotA", 50.0), ("hotB", 33.3), ("hotC", 16.7)):
    got, own = f["split_" + leaf], f["own_" + leaf]
    check(abs(got - own) <= 3.0, "%s under main.spin %.1f%%, its own share %.1f%% (within 3 points)"
          % (leaf, got, own))
    check(abs(got - built) <= 8.0, "%s under main.spin %.1f%%, built %.1f%% (within 8 points)"
          % (leaf, got, built))
finish()
PY
finish "a cgo Go program's frameless leaves keep their caller: .debug_frame's rows where .eh_frame has none"
