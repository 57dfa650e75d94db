#!/usr/bin/env bash
# End-to-end: what another user can and cannot do (daemon/README.md, "What another user can and
# cannot do"). Run as root; each attack is made by nobody, in a directory every user may write
# (a sticky, world-writable scratch directory, as /tmp is), against root's profiles:
#   fifo-lock     a FIFO at DIR/.osprey-run.lock: a program profiled into DIR runs as plain
#                 (every run bounded by `timeout`): same output, same status, its profile
#                 written, one line saying the lock was not used;
#   held-lock     a file of nobody's there, held exclusively by nobody: the same;
#   link-lock     a symbolic link there, to a file of root's: the same;
#   held-dir      DIR itself flock'd by nobody: the profile is written all the same, nothing said;
#   sibling       a raw file of nobody's planted beside root's (DIR/run.raw.4242.json), and a
#                 symbolic link there to a raw file of root's (DIR/run.raw.4243.json): left out
#                 of root's `osprey report`, one line naming each;
#   cli-stem      root's `osprey PROGRAM -o DIR/cli` beside nobody's DIR/cli.raw.4242.json: the
#                 file is not removed (an earlier run's siblings are, when ours) and is left out
#                 of the report with one line;
#   attach-lock   /tmp/osprey-attach-PID.lock made, filled and held by nobody: root's attach is
#                 not refused and prints nothing nobody wrote; the private directory of root's
#                 made first by nobody ($TMPDIR/osprey-0): the attach goes on, one line says so;
#                 a refused attach (a process that is gone) leaves no lock file behind.
#                 Skipped, with a line, where perf events are refused.
# Usage: e2e-other-users.sh OSPREY SHIM_SO OSPREYD
set -uo pipefail

osprey=${1:?usage: e2e-other-users.sh OSPREY SHIM_SO OSPREYD}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
shim=${2:?}
daemon=${3:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
  skip "needs root, setpriv and the user nobody (the attacks are nobody's, against root)"
fi
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups "$@"; }
# hold_as_nobody FILE: nobody holds FILE's flock exclusively, in one process (its pid in $!,
# killed with it: no child of its lives on, holding the test's output open).
hold_as_nobody() {
  # shellcheck disable=SC2016 # $1 is the inner shell's
  setpriv --reuid nobody --regid nogroup --clear-groups \
    sh -c 'exec 9<"$1" && flock -x 9 && exec sleep 120' sh "$1" </dev/null >/dev/null 2>&1 &
}

shared=$(mktemp -d "${TMPDIR:-/tmp}/osprey-shared.XXXXXX") # everyone's, as /tmp
chmod 1777 "$shared"
attach_lock=
cleanup() {
  wait 2>/dev/null
  rm -rf "$shared"
  [ -n "$attach_lock" ] && rm -f "$attach_lock"
}
scratch_dir others cleanup

cat >"$work/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* Burns ARGV[1] seconds of CPU, says so, and ends with status 3. */
int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.3;
    struct timespec start, now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    volatile unsigned long sum = 0;
    do {
        for (int i = 0; i < 100000; i++)
            sum += (unsigned long)i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    } while ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 <
             seconds);
    printf("spun %.1f s\n", seconds);
    return 3;
}
EOF
gcc -O2 -g "$work/prog.c" -o "$work/prog" 2>"$work/build" || {
  echo "FAIL: cannot build the test program: $(cat "$work/build")" >&2
  exit 1
}

# --- the run lock: nobody's FIFO, file or link at DIR/.osprey-run.lock ------------------------
# Generous bound: a loaded 2-core machine runs this 0.3 s program in well under 60 s; a hang
# before main (the FIFO's blocking open) never ends on its own.
timeout 60 "$work/prog" 0.3 >"$work/plain.out" 2>"$work/plain.err"
plain_status=$?
lock="$shared/.osprey-run.lock"
echo "root's file" >"$work/root-file"
for kind in fifo held link; do
  rm -f "$lock"
  holder=
  case $kind in
  fifo) as_nobody mkfifo "$lock" ;;
  held)
    as_nobody touch "$lock"
    hold_as_nobody "$lock"
    holder=$!
    pids+=("$holder")
    for _ in $(seq 100); do flock -n -s "$lock" true 2>/dev/null || break; sleep 0.05; done
    ;;
  link) as_nobody ln -s "$work/root-file" "$lock" ;;
  esac
  rm -f "$shared/$kind.raw.json"
  timeout 60 env OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$shared/$kind.raw.json" LD_PRELOAD="$shim" \
    "$work/prog" 0.3 >"$work/$kind.out" 2>"$work/$kind.err"
  status=$?
  [ "$status" -ne 124 ] || fail "$kind-lock: the profiled program hung (killed by timeout 60)"
  expect_status "$plain_status" "$status" "$kind-lock: profiled against plain"
  cmp -s "$work/plain.out" "$work/$kind.out" ||
    fail "$kind-lock: output differs: plain '$(cat "$work/plain.out")', profiled '$(cat "$work/$kind.out")'"
  expect_one_line "$work/$kind.err" \
    "\.osprey-run\.lock (is not a regular file|belongs to another user|is a symbolic link); not used as the run's lock" \
    "$kind-lock: the line saying what was lost"
  [ -s "$shared/$kind.raw.json" ] || fail "$kind-lock: no profile was written"
  [ "$(cat "$work/root-file")" = "root's file" ] || fail "$kind-lock: root's file was changed"
  if [ -n "$holder" ]; then
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
  fi
done
rm -f "$lock"

# --- the directory's own lock, held by nobody (anyone who can open /tmp can flock it) ---------
hold_as_nobody "$shared"
holder=$!
pids+=("$holder")
for _ in $(seq 100); do flock -n -s "$shared" true 2>/dev/null || break; sleep 0.05; done
timeout 60 env OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$shared/dir.raw.json" LD_PRELOAD="$shim" \
  "$work/prog" 0.3 >"$work/dir.out" 2>"$work/dir.err"
expect_status "$plain_status" $? "held-dir: profiled against plain"
cmp -s "$work/plain.out" "$work/dir.out" || fail "held-dir: output differs"
[ ! -s "$work/dir.err" ] || fail "held-dir: the profiled run said: $(cat "$work/dir.err")"
[ -s "$shared/dir.raw.json" ] || fail "held-dir: no profile was written"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null

# --- a raw file planted beside root's -----------------------------------------------------------
timeout 60 env OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$shared/run.raw.json" LD_PRELOAD="$shim" \
  "$work/prog" 0.3 >/dev/null 2>"$work/run.err"
if [ -s "$shared/run.raw.json" ]; then
  # The same profile as another process's: its start no earlier than the named file's.
  sed -e 's/^"pid":[0-9]*/"pid":4242/' -e 's|^"exe":"[^"]*"|"exe":"/planted/by/nobody"|' \
    "$shared/run.raw.json" >"$work/planted.json"
  chmod 644 "$work/planted.json"
  chmod 711 "$work"
  as_nobody cp "$work/planted.json" "$shared/run.raw.4242.json"
  sed -e 's/^"pid":[0-9]*/"pid":4243/' "$work/planted.json" >"$work/root-raw.json"
  as_nobody ln -s "$work/root-raw.json" "$shared/run.raw.4243.json"
  timeout 120 "$osprey" report "$shared/run.raw.json" -o "$work/report" >"$work/report.out" \
    2>"$work/report.err"
  expect_status 0 $? "sibling: osprey report"
  grep -q 'run\.raw\.4242\.json belongs to another user; left out' "$work/report.err" ||
    fail "sibling: no line names the planted file: $(cat "$work/report.err")"
  grep -q 'run\.raw\.4243\.json is a symbolic link; left out' "$work/report.err" ||
    fail "sibling: no line names the planted link: $(cat "$work/report.err")"
  if grep -l "planted/by/nobody" "$work"/report.* >"$work/merged" 2>/dev/null; then
    fail "sibling: the planted process is in root's report ($(tr '\n' ' ' <"$work/merged"))"
  fi
  grep -q "processes\|4242\|4243" "$work/report.out" &&
    fail "sibling: the report speaks of more processes: $(grep "processes\|4242\|4243" "$work/report.out")"
else
  fail "sibling: the profiled run wrote no profile: $(cat "$work/run.err")"
fi

# --- root's osprey run at a stem in the shared directory: nobody's raw file there is kept -------
as_nobody cp "$work/planted.json" "$shared/cli.raw.4242.json"
(cd "$work" && timeout 120 env OSPREY_DAEMON="$daemon" "$osprey" "$work/prog" --profile \
  -o "$shared/cli" -- 0.3) >"$work/cli.out" 2>"$work/cli.err"
expect_status "$plain_status" $? "cli-stem: osprey passes the program's status"
[ -e "$shared/cli.raw.4242.json" ] || fail "cli-stem: root's run removed nobody's raw file"
grep -q 'cli\.raw\.4242\.json belongs to another user; left out' "$work/cli.err" ||
  fail "cli-stem: no line says nobody's raw file was left out: $(cat "$work/cli.err")"

# --- attach's lock --------------------------------------------------------------------------------
sleep 120 >/dev/null 2>&1 &
target=$!
pids+=("$target")
attach() { # attach NAME TMPDIR ARGS...: root's attach, its private directory under TMPDIR
  local name=$1 tmp=$2
  shift 2
  (cd "$work" && timeout 120 env -u XDG_RUNTIME_DIR TMPDIR="$tmp" OSPREY_DAEMON="$daemon" \
    "$osprey" attach "$@" -o "$work/$name") >"$work/$name.log" 2>&1
}
attach probe "$work" "$target" --duration 0.5
probe=$?
if [ "$probe" -ne 0 ] && grep -qi "perf\|not allowed\|cannot attach" "$work/probe.log"; then
  skip_part "attach-lock" "perf events are refused here: $(head -1 "$work/probe.log")"
else
  expect_status 0 "$probe" "attach-lock: the plain attach ($(head -1 "$work/probe.log"))"
  # nobody's lock at the name root's attach used to take, with words of nobody's in it
  attach_lock=/tmp/osprey-attach-$target.lock
  rm -f "$attach_lock"
  as_nobody sh -c "echo 'WORDS-OF-NOBODY' >'$attach_lock'"
  hold_as_nobody "$attach_lock"
  pids+=($!)
  for _ in $(seq 100); do flock -n -s "$attach_lock" true 2>/dev/null || break; sleep 0.05; done
  attach held "$work" "$target" --duration 0.5
  expect_status 0 $? "attach-lock: root's attach beside nobody's held lock"
  grep -q "already being profiled\|WORDS-OF-NOBODY" "$work/held.log" &&
    fail "attach-lock: refused, or nobody's words printed: $(cat "$work/held.log")"
  # nobody made the directory root's lock would go in first
  as_nobody mkdir -m 0777 "$shared/osprey-0"
  attach taken "$shared" "$target" --duration 0.5
  expect_status 0 $? "attach-lock: root's attach with its directory taken"
  [ "$(grep -c "$shared/osprey-0 belongs to another user); a second attach to process $target is not refused" "$work/taken.log")" = 1 ] ||
    fail "attach-lock: no line says the directory was another user's: $(cat "$work/taken.log")"
  grep -q "already being profiled\|WORDS-OF-NOBODY" "$work/taken.log" &&
    fail "attach-lock: refused, or nobody's words printed: $(cat "$work/taken.log")"
  # a refused attach: the process is gone
  true &
  gone=$!
  wait "$gone"
  if attach gone "$work" "$gone" --duration 0.5; then
    fail "attach-lock: an attach to a process that is gone succeeded"
  fi
  for left in "/tmp/osprey-attach-$gone.lock" "$work/osprey-0/osprey-attach-$gone.lock"; do
    [ ! -e "$left" ] || fail "attach-lock: the refused attach left $left behind"
  done
  rm -f "/tmp/osprey-attach-$gone.lock"
fi

finish "e2e-other-users: nobody's FIFO, file and link at the run lock; planted raw files; attach's lock"
