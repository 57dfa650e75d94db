#!/usr/bin/env bash
# End-to-end, as root with nobody for the other user: another user cannot poison root's
# unwind-row cache. nobody runs Debian's python3 against a copy of the C library whose
# .eh_frame says every frame is the outermost (tests/cache/undefine-ra.py; the build id
# unchanged); root attaches to it with a cache that does not hold the C library yet, then
# profiles a program whose time is mostly inside the C library
# (bench/compare/programs/libc_heavy.c: qsort with its comparator, memcpy, strlen):
#   - the share of on-CPU samples whose stacks reach main is what it was before the attack
#     (99.8% -> 99.6%; it was 0.3% when the copy's rows were kept in root's cache as libc's);
#   - no cache file of root's came from the copy: the attach keeps none for the C library, and
#     with root's cache holding the real library's rows, a second attack leaves every cache
#     file as it was (same bytes);
#   - the copy's run is unwound for the attach itself (its profile is written);
#   - `osprey cache prune` leaves a file outside the build-id cache, reached through a
#     build-id directory that is a link, where it is; a build-id cache directory of nobody's
#     is not used: one line says so, nothing is written in it.
# Needs root, setpriv and /usr/bin/python3; skipped otherwise.
# Usage: e2e-cache.sh OSPREY SOURCE_DIR PROGRAMS_DIR
set -uo pipefail

osprey=${1:?usage: e2e-cache.sh OSPREY SOURCE_DIR PROGRAMS_DIR}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
src=${2:?}
programs=${3:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || [ ! -x /usr/bin/python3 ]; then
  skip "needs root, setpriv and /usr/bin/python3 (a process of nobody's against root's cache)"
fi
scratch_dir cache
chmod 755 "$work"

gcc -O2 -g "$programs/libc_heavy.c" -o "$work/libc_heavy" 2>"$work/build" ||
  fail "build failed: $(cat "$work/build")"
libc=$(ldd /usr/bin/python3 | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -f "$libc" ] || fail "no C library found for python3: $(ldd /usr/bin/python3)"
mkdir "$work/evil" && chown nobody "$work/evil"
copy=$work/evil/$(basename "$libc")
{ python3 "$src/undefine-ra.py" "$libc" "$copy" >/dev/null && chown nobody "$copy"; } ||
  fail "the altered copy of $libc was not made"

# share STEM: the share of on-CPU samples in STEM.folded whose stack holds main, in percent.
share() {
  awk '{ n = $NF; total += n; if ((";" $1 ";") ~ /;main;/) hit += n }
       END { printf "%.1f\n", total ? 100 * hit / total : 0 }' "$1.folded"
}
# profile CACHE STEM: root profiles libc_heavy with the unwind cache CACHE.
profile() {
  XDG_CACHE_HOME=$1 "$osprey" "$work/libc_heavy" --profile -o "$2" >"$2.out" 2>"$2.err" ||
    fail "$2: osprey exited $? ($(tail -n 3 "$2.err"))"
}
# attack CACHE STEM: nobody runs python3 against the altered copy; root attaches for 1 s.
attack() {
  LD_LIBRARY_PATH=$work/evil setpriv --reuid nobody --regid nogroup --clear-groups \
    /usr/bin/python3 -c 'print("ready", flush=True)
while True: pass' >"$2.victim" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 100); do grep -q ready "$2.victim" && break; sleep 0.05; done
  grep -q "$work/evil/" "/proc/$pid/maps" || fail "$2: nobody's program did not map the copy"
  XDG_CACHE_HOME=$1 "$osprey" attach "$pid" --duration 1 -o "$2" >"$2.report" 2>&1 ||
    fail "$2: osprey attach exited $? ($(tail -n 3 "$2.report"))"
  [ -s "$2.folded" ] || fail "$2: the attach wrote no profile"
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
# cache_sums CACHE: each cache file and its bytes' checksum.
cache_sums() { (cd "$1/osprey/unwind" 2>/dev/null && sha256sum -- * 2>/dev/null | sort); }

# Before: root's profiles with a cache of its own, the second one from it.
profile "$work/clean" "$work/before1"
profile "$work/clean" "$work/before"
before=$(share "$work/before")
# The attack, on a cache that does not hold the C library yet; then root's profiles.
attack "$work/root" "$work/attack1"
libc_rows=$(readelf -n "$libc" | awk '/Build ID/ { print $3 ".rows" }')
[ -e "$work/root/osprey/unwind/$libc_rows" ] &&
  fail "the attach kept rows of nobody's copy as the C library's ($libc_rows)"
profile "$work/root" "$work/after1"
profile "$work/root" "$work/after"
after=$(share "$work/after")
echo "stacks reaching main: before the attack $before%, after $after% (first runs $(share "$work/before1")% and $(share "$work/after1")%)"
awk -v b="$before" -v a="$after" 'BEGIN { exit !(b >= 80 && a >= b - 10) }' ||
  fail "stacks reaching main: $before% before the attack, $after% after"
# A second attack, with the real library's rows in root's cache: every file as it was.
cache_sums "$work/root" >"$work/sums-before"
[ -s "$work/sums-before" ] || fail "root's profiles kept no unwind rows"
attack "$work/root" "$work/attack2"
cache_sums "$work/root" >"$work/sums-after"
diff "$work/sums-before" "$work/sums-after" >"$work/sums-diff" ||
  fail "root's cache changed under the second attack: $(cat "$work/sums-diff")"
profile "$work/root" "$work/again"
again=$(share "$work/again")
awk -v b="$before" -v a="$again" 'BEGIN { exit !(a >= b - 10) }' ||
  fail "stacks reaching main after the second attack: $again% (before: $before%)"

# The build-id cache: `osprey cache prune` never leaves it (a build-id directory that is a link
# to a directory outside: its file stays), and one of nobody's is not used (one line).
buildid=$work/buildid
OSPREY_BUILDID_CACHE=$buildid "$osprey" "$work/libc_heavy" --profile -o "$work/kept" >/dev/null 2>&1 ||
  fail "a profile with the build-id cache $buildid failed"
mkdir "$work/outside" && echo keep >"$work/outside/victim" && touch -d 2001-01-01 "$work/outside/victim"
ln -s "$work/outside" "$buildid/00ff00ff"
OSPREY_BUILDID_CACHE=$buildid "$osprey" cache prune --max-size 0 >"$work/prune.out" 2>&1 ||
  fail "osprey cache prune exited $? ($(cat "$work/prune.out"))"
[ -f "$work/outside/victim" ] || fail "osprey cache prune removed a file outside the cache"
grep -q "pruned 1 object" "$work/prune.out" || fail "prune: $(cat "$work/prune.out")"
mkdir "$work/foreign" && chown nobody "$work/foreign"
OSPREY_BUILDID_CACHE=$work/foreign "$osprey" cache >"$work/foreign.out" 2>"$work/foreign.err" &&
  fail "osprey cache on nobody's directory: exit status 0"
expect_one_line "$work/foreign.err" "foreign: the directory is another user's: not used" \
  "osprey cache on nobody's directory"
OSPREY_BUILDID_CACHE=$work/foreign "$osprey" "$work/libc_heavy" --profile -o "$work/foreign-run" \
  >/dev/null 2>"$work/foreign-run.err" || fail "a profile with nobody's build-id cache failed"
grep -q "another user's: not used" "$work/foreign-run.err" ||
  fail "no line says nobody's build-id cache was not used: $(cat "$work/foreign-run.err")"
[ -z "$(ls -A "$work/foreign")" ] || fail "something was written in nobody's build-id cache"
# A run of several programs says it once, naming each.
printf '#!/bin/sh\n"%s" >/dev/null\n/bin/true\n' "$work/libc_heavy" >"$work/two.sh"
chmod +x "$work/two.sh"
OSPREY_BUILDID_CACHE=$work/foreign "$osprey" "$work/two.sh" --profile -o "$work/foreign-two" \
  >/dev/null 2>"$work/foreign-two.err" || fail "a profile of two programs with nobody's cache failed"
if [ "$(grep -c "cannot keep" "$work/foreign-two.err")" != 1 ] ||
  ! grep "cannot keep" "$work/foreign-two.err" | grep -q "libc_heavy, .*true"; then
  fail "not one line naming both programs: $(cat "$work/foreign-two.err")"
fi
finish "cache: another user's copy of the C library left root's cache and profiles alone ($before% -> $after%, $again% reach main)"
