#!/usr/bin/env bash
# End-to-end: a collector started apart. A program started with OSPREY_RING=NAME makes its ring
# /dev/shm/osprey-ring-NAME and starts nothing; `ospreyd --attach-ring NAME --out PATH` attaches
# (proto/osp_ring_named.h). Every case checks the program's output and exit status against a
# plain run's and that nothing is left in /dev/shm:
#   before     ospreyd started first (it waits for the ring): the profile written, whole;
#   after      ospreyd started once the program (a shell that waits for it) runs: the
#              profile written, the exit status (3) kept;
#   alone      nobody attaches: one line says no profile was written;
#   exec       the image a profiled shell exec's says in one line it is not profiled;
#   fork       a forked child says in one line it is not profiled;
#   noexec     a program under a seccomp filter that forbids execve (tests/refuse.c): with
#              OSPREY_PROFILE its collector cannot start (no profile); with OSPREY_RING and
#              ospreyd started apart, its profile is written, its exit status (3) unchanged;
#   nobody     (as root) the name taken by nobody's object: the program runs on, one line,
#              unprofiled; ospreyd refuses nobody's object and a link, one line each.
# Usage: e2e-attach-ring.sh OSPREY SHIM_SO OSPREYD HOTSPOT REFUSE (tests/refuse.c)
set -uo pipefail

osprey=${1:?usage: e2e-attach-ring.sh OSPREY SHIM_SO OSPREYD HOTSPOT REFUSE}
shim=${2:?}
daemon=${3:?}
hotspot=${4:?}
noexec=("${5:?}" execve)
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir attach-ring
chmod 755 "$work"

# A name of this run's own, so that parallel runs never meet.
tag="e2e$$"
plain=$("$hotspot" 3000)

# no_leftovers CASE NAME: nothing of NAME's in /dev/shm.
no_leftovers() {
  local left
  left=$(find /dev/shm -maxdepth 1 -name "osprey-ring-$2*" 2>/dev/null)
  if [ -n "$left" ]; then
    fail "$1: left in /dev/shm: $left"
    rm -f /dev/shm/osprey-ring-"$2"*
  fi
}
# profiled CASE RAW: RAW is a profile whose hot function is checksum_block, its stacks whole.
profiled() {
  if [ ! -s "$2" ]; then
    fail "$1: no profile at $2"
    return
  fi
  "$osprey" report "$2" --format folded -o "${2%.json}" >"$work/$1.report" 2>&1 ||
    fail "$1: osprey report failed: $(cat "$work/$1.report")"
  python3 - "${2%.json}.folded" "$1" <<'PY' || failures=$((failures + 1))
import sys
rows = [l.rstrip("\n").rpartition(" ") for l in open(sys.argv[1])]
hot = sum(int(c) for s, _, c in rows if s.endswith(";checksum_block"))
whole = sum(int(c) for s, _, c in rows if s.endswith(";worker;checksum_block"))
total = sum(int(c) for s, _, c in rows)
# Samples taken before the collector attached follow frame pointers only: most are whole.
if hot * 2 < total or whole * 10 < hot * 8:
    print(f"FAIL: {sys.argv[2]}: checksum_block {hot} of {total} samples, {whole} whole",
          file=sys.stderr)
    sys.exit(1)
PY
}
# waiting CASE PID: ospreyd PID is in its wait for the ring (asleep between two looks), so
# that a program started now is attached to however loaded the machine is.
waiting() {
  for _ in $(seq 500); do
    grep -q nanosleep "/proc/$2/wchan" 2>/dev/null && return 0
    sleep 0.02
  done
  fail "$1: ospreyd $2 is not waiting for the ring"
}
# exited CASE RAW: RAW is a profile with samples, of a program that exited.
exited() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))
sys.exit(0 if len(r['samples']) >= 10 and r['exit']['status'] == 'exited' else 1)" "$2" ||
    fail "$1: the profile holds too few samples, or no exit"
}
# same_run CASE OUT STATUS: the program printed what a plain run does and exited 0.
same_run() {
  [ "$(cat "$2")" = "$plain" ] || fail "$1: output changed: $(cat "$2")"
  expect_status 0 "$3" "$1: the program"
}

# before: ospreyd first, waiting for the ring.
name="$tag-before"
"$daemon" --attach-ring "$name" --out "$work/before.json" --timeout 60 2>"$work/before.daemon" &
collector=$!
waiting before "$collector"
OSPREY_RING=$name LD_PRELOAD=$shim "$hotspot" 3000 >"$work/before.out" 2>"$work/before.err"
same_run before "$work/before.out" $?
wait "$collector"
expect_status 0 $? "before: ospreyd ($(cat "$work/before.daemon"))"
[ -s "$work/before.err" ] && fail "before: the program said: $(cat "$work/before.err")"
profiled before "$work/before.json"
no_leftovers before "$name"

# after: the program first (a shell, which waits, with its builtins only, until a collector
# has taken its ring's name, then works and exits 3); ospreyd once its ring is there.
name="$tag-after"
mkfifo "$work/never"
# shellcheck disable=SC2016 # the script is the inner shell's
OSPREY_RING=$name LD_PRELOAD=$shim bash -c 'while [ -e "$1" ]; do read -rt 0.05 _ <>"$2"; done
  i=0; while [ $i -lt 50000 ]; do i=$((i + 1)); done; echo $i; exit 3' \
  after "/dev/shm/osprey-ring-$name" "$work/never" >"$work/after.out" 2>"$work/after.err" &
program=$!
for _ in $(seq 500); do
  [ -e "/dev/shm/osprey-ring-$name" ] && break
  sleep 0.02
done
"$daemon" --attach-ring "$name" --out "$work/after.json" 2>"$work/after.daemon"
expect_status 0 $? "after: ospreyd ($(cat "$work/after.daemon"))"
wait "$program"
expect_status 3 $? "after: the program"
[ "$(cat "$work/after.out")" = 50000 ] || fail "after: output changed: $(cat "$work/after.out")"
[ -s "$work/after.err" ] && fail "after: the program said: $(cat "$work/after.err")"
exited after "$work/after.json"
no_leftovers after "$name"

# alone: nobody attaches.
name="$tag-alone"
OSPREY_RING=$name LD_PRELOAD=$shim "$hotspot" 3000 >"$work/alone.out" 2>"$work/alone.err"
same_run alone "$work/alone.out" $?
expect_one_line "$work/alone.err" "no collector attached to ring $name" alone
no_leftovers alone "$name"

# exec: a shell's image is profiled, the one it exec's is not (one line), nothing is left.
name="$tag-exec"
OSPREY_RING=$name LD_PRELOAD=$shim bash -c "exec $hotspot 3000" >"$work/exec.out" \
  2>"$work/exec.err"
same_run exec "$work/exec.out" $?
grep -Eq "not profiled: a new image after process [0-9]+'s, profiled with OSPREY_RING=$name" "$work/exec.err" ||
  fail "exec: no line for the exec'd image: $(cat "$work/exec.err")"
[ "$(grep -c 'new image' "$work/exec.err")" -eq 1 ] || fail "exec: $(cat "$work/exec.err")"
no_leftovers exec "$name"

# fork: a forked child is not profiled, and says so in one line.
name="$tag-fork"
OSPREY_RING=$name LD_PRELOAD=$shim bash -c '(echo child); echo parent' >"$work/fork.out" \
  2>"$work/fork.err"
expect_status 0 $? "fork: the program"
[ "$(cat "$work/fork.out")" = "$(printf 'child\nparent')" ] || fail "fork: output changed"
[ "$(grep -c "forked by a process profiled with OSPREY_RING=$name, is not profiled" \
  "$work/fork.err")" -eq 1 ] || fail "fork: $(cat "$work/fork.err")"
no_leftovers fork "$name"

# noexec: the sandbox forbids execve. Its collector cannot be started by the shim ...
"${noexec[@]}" "OSPREY_PROFILE=$work/sandboxed.json" "LD_PRELOAD=$shim" "$hotspot" 3000 \
  >"$work/sandboxed.out" 2>"$work/sandboxed.err"
same_run sandboxed "$work/sandboxed.out" $?
[ -e "$work/sandboxed.json" ] && fail "sandboxed: ospreyd was started despite the filter"
grep -q "ospreyd ended before it attached" "$work/sandboxed.err" ||
  fail "sandboxed: $(cat "$work/sandboxed.err")"
# ... one started apart profiles it, and its exit status stays its own.
name="$tag-noexec"
"$daemon" --attach-ring "$name" --out "$work/noexec.json" --timeout 60 2>"$work/noexec.daemon" &
collector=$!
waiting noexec "$collector"
# shellcheck disable=SC2016 # the loop is the inner shell's
"${noexec[@]}" "OSPREY_RING=$name" "LD_PRELOAD=$shim" /bin/bash -c \
  'i=0; while [ $i -lt 100000 ]; do i=$((i + 1)); done; echo $i; exit 3' \
  >"$work/noexec.out" 2>"$work/noexec.err"
status=$?
expect_status 3 "$status" "noexec: the program"
[ "$(cat "$work/noexec.out")" = 100000 ] || fail "noexec: output changed: $(cat "$work/noexec.out")"
[ -s "$work/noexec.err" ] && fail "noexec: the program said: $(cat "$work/noexec.err")"
wait "$collector"
expect_status 0 $? "noexec: ospreyd ($(cat "$work/noexec.daemon"))"
[ -s "$work/noexec.json" ] || fail "noexec: no profile"
exited noexec "$work/noexec.json"
no_leftovers noexec "$name"

# nobody: another user's object, or link, at the name.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
  skip_part "nobody's ring name" "needs root, setpriv and the user nobody"
else
  name="$tag-nobody"
  setpriv --reuid nobody --regid nogroup --clear-groups \
    sh -c "umask 077; : >/dev/shm/osprey-ring-$name; ln -s $work/before.json /dev/shm/osprey-ring-$name-link"
  OSPREY_RING=$name LD_PRELOAD=$shim "$hotspot" 3000 >"$work/nobody.out" 2>"$work/nobody.err"
  same_run nobody "$work/nobody.out" $?
  expect_one_line "$work/nobody.err" "osprey-ring-$name is there already.*profiling is off" \
    "nobody: the program"
  "$daemon" --attach-ring "$name" --out "$work/nobody.json" --timeout 1 2>"$work/nobody.daemon"
  expect_status 1 $? "nobody: ospreyd"
  expect_one_line "$work/nobody.daemon" "osprey-ring-$name belongs to another user" \
    "nobody: ospreyd"
  "$daemon" --attach-ring "$name-link" --out "$work/link.json" --timeout 1 2>"$work/link.daemon"
  expect_status 1 $? "link: ospreyd"
  expect_one_line "$work/link.daemon" "osprey-ring-$name-link is a symbolic link" "link: ospreyd"
  [ -e "$work/nobody.json" ] || [ -e "$work/link.json" ] && fail "nobody: a profile was written"
  [ -e "/dev/shm/osprey-ring-$name" ] || fail "nobody: nobody's object was removed"
  rm -f "/dev/shm/osprey-ring-$name" "/dev/shm/osprey-ring-$name-link"
  no_leftovers nobody "$name"
fi

# A ring that never comes: ospreyd gives up at its timeout with one line.
"$daemon" --attach-ring "$tag-never" --out "$work/never.json" --timeout 0.2 2>"$work/never.daemon"
expect_status 1 $? "never: ospreyd"
expect_one_line "$work/never.daemon" "no ring .*osprey-ring-$tag-never within 0.2 s" "never: ospreyd"

finish "attach-ring: before, after, alone, exec, fork, noexec, nobody and timeout cases pass"
