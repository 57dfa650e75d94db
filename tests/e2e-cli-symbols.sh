#!/usr/bin/env bash
# End-to-end tests of what makes a profile readable later: build ids in the raw file and the
# pprof mappings, the build-id cache that keeps a C file's scratch build, a rebuilt binary
# refused in one line, --symfs, `osprey diff` naming functions across runs, `go tool pprof
# -disasm`/-list on a profiled binary, and views that never rewrite a run's files.
# Usage: e2e-cli-symbols.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-cli-symbols.sh path/to/osprey}")
build=$(dirname "$(dirname "$osprey")")
shim="$build/shim/libospreyprof.so"
daemon="$build/daemon/ospreyd"
scratch_dir cli-symbols
mkdir -p "$work/a" "$work/b" "$work/symfs"
export XDG_CACHE_HOME="$work/cache"
unset OSPREY_BUILDID_CACHE OSPREY_BUILDID_CACHE_MAX
cache="$XDG_CACHE_HOME/osprey/buildid"

# build_id FILE: the GNU build id readelf reads.
build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *//p'; }
# raw_main_build_id RAW: the main image's build id as the raw file records it.
raw_main_build_id() { jq -r '.exe as $e | .images[] | select(.path == $e) | .build_id // ""' "$1"; }

# Two functions whose shares the arguments set.
cat >"$work/a/two.c" <<'EOF2'
#include <stdint.h>
#include <stdlib.h>
static volatile uint64_t sink;
static __attribute__((noinline)) void spin_a(long n)
{
    uint64_t x = sink;
    for (long i = 0; i < n; i++)
        x = x * 6364136223846793005u + 1;
    sink = x;
}
static __attribute__((noinline)) void spin_b(long n)
{
    uint64_t x = sink;
    for (long i = 0; i < n; i++)
        x = x * 2862933555777941757u + 3;
    sink = x;
}
int main(int argc, char **argv)
{
    spin_a(atol(argv[1]));
    spin_b(atol(argv[2]));
    return 0;
}
EOF2

# 1. A C file profiled: its scratch build is gone afterwards, but the raw file names its build
# id and the binary is in the cache under it.
cd "$work/a" || exit 1
"$osprey" two.c --profile -o base -- 600000000 200000000 >out 2>err
expect_status 0 $? "profiling two.c"
[ -f base.raw.json ] || { echo "FAIL: no raw profile: $(cat err)" >&2; exit 1; }
id=$(raw_main_build_id base.raw.json)
[ -n "$id" ] || fail "the raw file records no build id for the main image"
[ -f "$cache/$id/two" ] || fail "the scratch build is not in the cache as $cache/$id/two"
[ "$(build_id "$cache/$id/two")" = "$id" ] || fail "the cached binary's build id is not the raw file's"
grep -q "base.raw.json" err || fail "the written: list does not name the raw file: $(cat err)"
# text_offset is the PF_X segment's file offset, as readelf reads it from the kept binary.
offset=$(jq -r '.exe as $e | .images[] | select(.path == $e) | .text_offset' base.raw.json)
expected=$(($(readelf -lW "$cache/$id/two" | awk '$1 == "LOAD" && / R E / { print $2; exit }')))
[ "$offset" = "$expected" ] || fail "text_offset $offset, readelf says $expected"

# 2. Reported again from another directory, the scratch build gone: names intact.
cd "$work/b" || exit 1
"$osprey" report ../a/base.raw.json -o again >out 2>err
expect_status 0 $? "report from another directory"
grep -q "not found" err && fail "report again: an object is missing: $(cat err)"
grep -q ';spin_a ' again.folded || fail "report again: no spin_a in the folded stacks: $(cat again.folded)"
grep -q 'two+0x' again.folded && fail "report again: hex frames of the program: $(cat again.folded)"

# Without the cache the frames are the object's own addresses, and one line says why.
XDG_CACHE_HOME="$work/empty-cache" "$osprey" report ../a/base.raw.json -o nocache >out 2>err
grep -q "1 object file not found" err || fail "no cache: no missing-object line: $(cat err)"
grep -Eq ';two\+0x[0-9a-f]+ ' nocache.folded || fail "no cache: frames not two+0xOFFSET: $(cat nocache.folded)"

# ... and the run's own outputs are not rewritten by a report that could only do worse.
before=$(sha256sum ../a/base.* | sort)
XDG_CACHE_HOME="$work/empty-cache" "$osprey" report ../a/base.raw.json >out 2>err
expect_status 0 $? "report without the objects, default stem"
[ "$(sha256sum ../a/base.* | sort)" = "$before" ] || fail "a report without the objects rewrote the run's files"
grep -q "written: nothing (objects of this profile are not here" out ||
  fail "no line saying why nothing was written: $(cat out)"

# 3. A binary rebuilt between profiling and reporting: one line naming it, no wrong names.
cd "$work/a" || exit 1
clang -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o prog two.c ||
  { echo "FAIL: cannot build" >&2; exit 1; }
cp prog "$work/symfs/prog"
OSPREY_PROFILE="$work/a/prog.raw.json" OSPREY_DAEMON="$daemon" LD_PRELOAD="$shim" \
  ./prog 600000000 100000 >/dev/null
[ -f prog.raw.json ] || { echo "FAIL: no raw profile of prog" >&2; exit 1; }
# Rebuilt with two functions more ahead of the others: every address moves.
{ printf 'int extra_one(int x) { return x * 3; }\nint extra_two(int x) { return extra_one(x) + 7; }\n'
  cat two.c; } >two-rebuilt.c
clang -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o prog two-rebuilt.c ||
  { echo "FAIL: cannot rebuild" >&2; exit 1; }
"$osprey" report prog.raw.json -o rebuilt --format folded >out 2>err
expect_status 0 $? "report after a rebuild"
grep 'is not the object that ran' err >mismatch
expect_one_line mismatch "prog is not the object that ran \\(build id [0-9a-f]+, the profile's [0-9a-f]+\\)" \
  "the rebuilt binary's line"
grep -Eq ';(spin_a|spin_b|extra_one|extra_two|main)( |;)' rebuilt.folded && fail "rebuilt: names from the wrong binary: $(cat rebuilt.folded)"
grep -Eq ';prog\+0x' rebuilt.folded || fail "rebuilt: frames not prog+0xOFFSET: $(cat rebuilt.folded)"
# --ignore-build-id uses it anyway, and says so in the line and in every name it gives.
"$osprey" report prog.raw.json -o forced --format folded --ignore-build-id >out 2>err
expect_status 0 $? "report --ignore-build-id"
grep 'is not the object that ran' err >forced-line
expect_one_line forced-line "prog is not the object that ran .*used anyway \\(--ignore-build-id\\)" \
  "the --ignore-build-id line"
grep -q ' \[other build\]' forced.folded || fail "--ignore-build-id: names not marked: $(cat forced.folded)"
grep -Eq ';(spin_a|spin_b|main)(;| [0-9]+$)' forced.folded &&
  fail "--ignore-build-id: an unmarked name from the other build: $(cat forced.folded)"
# --symfs finds the binary that ran (by name; its build id checked).
"$osprey" report prog.raw.json -o symfs --format folded --symfs "$work/symfs" >out 2>err
grep -q 'is not the object that ran' err && fail "--symfs: still refused: $(cat err)"
grep -q ';spin_a ' symfs.folded || fail "--symfs: no spin_a: $(cat symfs.folded)"

# 4. osprey diff of two runs of the C file names the function whose share moved.
"$osprey" two.c --profile -o new -- 200000000 600000000 >/dev/null 2>err
expect_status 0 $? "profiling two.c again"
"$osprey" diff base.raw.json new.raw.json >"diff" 2>err
expect_status 0 $? "osprey diff"
# a row: self base (share, time), new, DELTA, total base, new, DELTA, FUNCTION (file)
awk 'NF > 1 && $NF == "(two.c)" && $(NF-1) == "spin_a" && $5 + 0 < 0 { found = 1 } END { exit !found }' diff ||
  fail "diff: spin_a did not lose share: $(cat diff)"
awk 'NF > 1 && $NF == "(two.c)" && $(NF-1) == "spin_b" && $5 + 0 > 0 { found = 1 } END { exit !found }' diff ||
  fail "diff: spin_b did not gain share: $(cat diff)"
grep -q '0x' diff && fail "diff: addresses instead of functions: $(cat diff)"

# 5. go tool pprof -disasm and -list on the profiled binary (at its recorded path), and on a C
# file's run after its scratch build is gone: the mapping names the build-id cache's copy, with
# the build id (the Go toolchain's pprof reads none, so a copy found through PPROF_BINARY_PATH
# was refused as a mismatch).
# pprof_disasm_list PB WHAT: go tool pprof -disasm=spin_a and -list=spin_a on PB show samples
# on spin_a's instructions and on its loop's line.
pprof_disasm_list() {
  go tool pprof -disasm=spin_a "$1" >out 2>err
  grep -q 'ROUTINE ======================== spin_a' out ||
    fail "go tool pprof -disasm=spin_a ($2): $(cat out err)"
  grep -Eq '^ +[0-9.]+m?s +[0-9.]+m?s +[0-9a-f]+: ' out ||
    fail "go tool pprof -disasm ($2): no instruction carries samples: $(cat out)"
  go tool pprof -list=spin_a "$1" >out 2>err
  grep -q 'ROUTINE ======================== spin_a in .*two.c' out ||
    fail "go tool pprof -list=spin_a ($2): $(cat out err)"
  grep -Eq '^ +[0-9.]+m?s +[0-9.]+m?s +[0-9]+: +x = x \* 6364136223846793005u' out ||
    fail "go tool pprof -list ($2): the loop's line carries no time: $(cat out)"
}
if command -v go >/dev/null 2>&1; then
  cd "$work/a" || exit 1
  go tool pprof -raw base.pb.gz >out 2>&1
  mapping=$(sed -n '/^Mappings/,$p' out | grep " $id ")
  echo "$mapping" | grep -q " $cache/$id/two $id " ||
    fail "the C file's run names no cached copy in its pprof mapping: $(sed -n '/^Mappings/,$p' out)"
  pprof_disasm_list base.pb.gz "a C file's run, its scratch build gone"
  cd "$work/b" || exit 1
  clang -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o disasm "$work/a/two.c"
  "$osprey" ./disasm --profile -o disasm -- 600000000 100000 >/dev/null 2>err
  pprof_disasm_list disasm.pb.gz "a binary of ours"
  go tool pprof -raw disasm.pb.gz >out 2>&1
  mapping=$(sed -n '/^Mappings/,$p' out | grep ' /.*/disasm ')
  echo "$mapping" | grep -q "$(build_id disasm)" || fail "pprof mapping without the build id: $mapping"
  echo "$mapping" | grep -Eq '/0x1000 ' || fail "pprof mapping's file offset is not the code's: $mapping"
  cd "$work/a" || exit 1
else
  skip_part "the go tool pprof checks" "go is not installed"
fi

# The build's version is every output's exporter.
version=$("$osprey" --version | sed 's/^osprey //')
[ -n "$version" ] || fail "osprey --version printed no version"
[ "$(jq -r .exporter base.speedscope.json)" = "osprey $version" ] ||
  fail "speedscope exporter: $(jq -r .exporter base.speedscope.json), not osprey $version"
[ "$(jq -r .otherData.exporter base.trace.json)" = "osprey $version" ] ||
  fail "trace exporter: $(jq -r .otherData.exporter base.trace.json), not osprey $version"
if command -v go >/dev/null 2>&1; then
  [ "$(go tool pprof -comments base.pb.gz 2>/dev/null)" = "osprey $version" ] ||
    fail "pprof comment: $(go tool pprof -comments base.pb.gz 2>&1), not osprey $version"
fi

# 6. A view leaves the run's files byte-identical and writes nothing; -o or --format writes.
sums() { sha256sum base.* | sort; }
before=$(sums)
ls base.* >files.before
"$osprey" report base.raw.json --focus spin_a >out 2>err
expect_status 0 $? "report --focus"
[ "$(sums)" = "$before" ] || fail "--focus rewrote the run's files"
printf "%s\n" base.* | diff - files.before >/dev/null || fail "--focus added files: $(ls base.*)"
grep -q "written: nothing (a view of the profile)" out || fail "--focus: no 'written: nothing' line: $(cat out)"
for view in "--fiber 0" "--ignore spin_b" "--inverted" "--top 3" "--list spin_a"; do
  # shellcheck disable=SC2086
  "$osprey" report base.raw.json $view >out 2>err
  expect_status 0 $? "report $view"
  [ "$(sums)" = "$before" ] || fail "$view rewrote the run's files"
done
"$osprey" report base.raw.json --focus spin_a --format folded >out 2>err
expect_status 0 $? "report --focus --format folded"
grep -q '^  base.folded$' out || fail "--format folded: not listed as written: $(cat out)"
grep -q 'spin_b' base.folded && fail "--focus spin_a --format folded: spin_b in base.folded"

# 7. The cache: listed, pruned to a bound.
"$osprey" cache >out 2>err
expect_status 0 $? "osprey cache"
grep -q "^build-id cache: $cache$" out || fail "osprey cache: $(cat out)"
grep -Eq '^  [1-9][0-9]* objects?, ' out || fail "osprey cache: no objects counted: $(cat out)"
"$osprey" cache prune --max-size 0 >out 2>err
expect_status 0 $? "osprey cache prune"
grep -Eq '^  0 objects, 0\.0 MiB' out || fail "prune --max-size 0 kept something: $(cat out)"
[ -z "$(ls -A "$cache")" ] || fail "prune --max-size 0: $cache not empty: $(ls -A "$cache")"
"$osprey" cache prune --max-size lots >out 2>err
expect_status 2 $? "prune with a bad size"

finish "e2e-cli-symbols: build ids, the cache, a rebuilt binary, --symfs, diff, pprof -disasm, views"
