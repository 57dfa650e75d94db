#!/usr/bin/env bash
# End-to-end: what a short process image costs, checked by what it does, not by a clock
# (the figures are bench/spawn's). Run under the preload shim and ospreyd, as osprey runs a
# program (the run's lock beside the profile):
#   static    ospreyd maps no shared object (no program interpreter) when the build linked
#             it whole (STATIC=1, meson's decision);
#   complete  a shell that runs /bin/true 20 times: 20 profiles of /bin/true, each complete
#             (its exit record read: "exit" exited, its CPU time there) though none waited
#             for its collector;
#   nowait    a descendant whose collector holds the run's lock does not wait at its exit for
#             its profile to be written: with the profile's directory locked (ospreyd takes
#             that lock to write), a child that outlives its collector's attach ends at once,
#             and its parent goes on; before, it waited the shim's 5 s and said "did not
#             finish writing";
#   exec      an image that exec'd before its collector started (started 0.3 s late here):
#             its collector builds no unwind rows from the next image's objects (their maps
#             under the same pid hold another ring), the next image's collector builds its own;
#   pause     an exec from a program whose collector is attached and idle does not wake it
#             (SIGURG) nor wait for two of its rounds: it reads that no round of signals is
#             under way (`asking`, proto/osp_ring.h) and goes on (strace: no kill before the
#             execve); the new image runs as plain;
#   greet     a later image (spawned, or exec'd in the same pid) greets the collector of the
#             process that started it, or of its pid's previous image, with its ring, and that
#             collector, once the greeting is answered and confirmed, starts its collector: of
#             a shell's 5 commands and 3 execs (each image waiting for its collector before it
#             execs), only the shell's own collector is started by the shim (OSPREY_DAEMON, a
#             wrapper that counts), and every image has its complete profile; before, each
#             image started its own;
#   at-once   images that exec at once (their collector still starting when the next image
#             greets it, which waits for its answer through the rest of that start) have their
#             complete profiles, and one collector in all (the shim started one only, the
#             counting wrapper says; or two where an answer missed its 100 ms); before, each
#             image started its own;
#   exchange  a collector follows a greeter only once it confirmed the answer: of three
#             greetings made to a profiled shell's collector from outside (tests/forks/
#             exchange.py, each with a file for a ring, into which a collector started for it
#             writes why it rejects it), one that read the answer and closed, one that closed
#             without reading it and one that confirmed, only the last is followed;
#   orphan    an image started by a process that has ended (its collector gone) starts one
#             of its own, and its profile is written;
#   once      a shell's command (bash: a fork that execs at once, nothing recorded) makes
#             one exchange with the shell's collector, its image's: the forked child sends
#             its greeting without waiting and gives it up at the exec, so of 3 commands each
#             pid confirms once (strace: sendmsg of "C"), and each image has its profile;
#             before, each confirmed twice (at the fork, then as the image);
#   follow    the greeted collector follows the later images in its own process: a shell's 5
#             commands and a 2-deep exec chain make one ospreyd process in all (strace), each
#             image's profile whole; before, one per image;
#   beyond    40 images at once: 32 followed in one process, a collector process for each
#             one beyond, every profile whole;
#   the program's output and exit status are as plain.
# Usage: e2e-spawn.sh SHIM_SO OSPREYD STATIC
set -uo pipefail

shim=${1:?usage: e2e-spawn.sh SHIM_SO OSPREYD STATIC}
daemon=${2:?}
static=${3:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir spawn

if [ "$static" = 1 ] && readelf -l "$daemon" | grep -q 'INTERP'; then
  fail "static: $daemon has a program interpreter: $(readelf -l "$daemon" | grep -A1 INTERP)"
fi

run() { # run NAME COMMAND...: profiled into $work/NAME/ as osprey runs it, waiting for the lock
  local name=$1
  shift
  mkdir -p "$work/$name"
  : >"$work/$name/.osprey-run.lock"
  OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$work/$name/p.raw.json" LD_PRELOAD="$shim" \
    "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.status"
  flock -w 60 "$work/$name/.osprey-run.lock" true ||
    fail "$name: the run's lock still held after 60 s"
}

# --- complete -----------------------------------------------------------------------------
# The shell waits until its own collector runs, then starts its 20 short commands.
# shellcheck disable=SC2016 # the $ expand in the shell's script, not here
wait_collector='for i in $(seq 200); do pgrep -f "ring-name /osprey-$$-" >/dev/null && break;
  sleep 0.05; done; sleep 0.3'
# shellcheck disable=SC2016
script="$wait_collector"'; for i in $(seq 20); do /bin/true; done; echo done; exit 3'
sh -c "$script" >"$work/plain.out"
plain_status=$?
run complete sh -c "$script"
expect_status "$plain_status" "$(cat "$work/complete.status")" "complete: exit status"
cmp -s "$work/plain.out" "$work/complete.out" ||
  fail "complete: output differs from the plain run's"
python3 - "$work/complete" <<'EOF' || fail "complete: profiles"
import glob, json, os, sys
d = sys.argv[1]
files = glob.glob(os.path.join(d, "p.raw*.json"))
true_images, bad = 0, []
for f in files:
    raw = json.load(open(f))
    if raw["exe"].endswith("/true"):
        true_images += 1
        if raw.get("exit", {}).get("status") != "exited":
            bad.append("%s: exit %s" % (os.path.basename(f), raw.get("exit")))
        # Its CPU time, which the report's sampling line checks the samples against: from its
        # exit record, since it did not wait for its collector (before: none of the 20 had it).
        if not raw.get("process_cpu_ns"):
            bad.append("%s: no process_cpu_ns" % os.path.basename(f))
if bad:
    sys.exit("incomplete profiles: " + "; ".join(bad))
if true_images != 20:
    sys.exit("%d profiles of /bin/true, expected 20 (of %d files)" %
             (true_images, len(files)))
EOF

# --- nowait -------------------------------------------------------------------------------
# The child (a profiled bash, which ends by exit(3): dash ends by _exit, and no exit handler
# of its runs) waits until its collector runs, then a little for the attach; ospreyd cannot
# write while the directory is locked, which it stays until the parent has seen the child end
# (the marker), or 30 s.
mkdir -p "$work/nowait"
(flock "$work/nowait" sh -c "for i in \$(seq 600); do [ -e '$work/marker' ] && exit 0;
  sleep 0.05; done") &
holder=$!
for _ in $(seq 100); do
  # The holder has the lock once a try fails.
  flock -n "$work/nowait" true 2>/dev/null || break
  sleep 0.05
done
child="$wait_collector; echo child"
run nowait sh -c "bash -c '$child'; touch '$work/marker'; echo parent"
wait "$holder"
expect_status 0 "$(cat "$work/nowait.status")" "nowait: exit status"
printf 'child\nparent\n' | cmp -s - "$work/nowait.out" ||
  fail "nowait: output: $(cat "$work/nowait.out")"
# (The run's first process waits for its own profile, which its collector writes once the
# marker is there: it says nothing either.)
if grep -q "did not finish writing" "$work/nowait.err"; then
  fail "nowait: a process waited for its collector at exit: $(cat "$work/nowait.err")"
fi
[ "$(find "$work/nowait" -name 'p.raw*.json' | wc -l)" -ge 2 ] ||
  fail "nowait: expected the parent's and the child's profiles, got: $(ls -A "$work/nowait")"

# --- exec ---------------------------------------------------------------------------------
late="$work/late-ospreyd"
printf '#!/bin/sh\nsleep 0.3\nexec %s "$@"\n' "$daemon" >"$late"
chmod +x "$late"
mkdir -p "$work/exec"
: >"$work/exec/.osprey-run.lock"
OSPREY_DAEMON="$late" OSPREY_PROFILE="$work/exec/p.raw.json" LD_PRELOAD="$shim" \
  sh -c 'exec sleep 1' >"$work/exec.out" 2>"$work/exec.err"
expect_status 0 $? "exec: exit status"
flock -w 60 "$work/exec/.osprey-run.lock" true || fail "exec: the run's lock still held after 60 s"
python3 - "$work/exec" <<'EOF' || fail "exec: rows"
import glob, json, os, sys
d = sys.argv[1]
first = json.load(open(os.path.join(d, "p.raw.json")))
later = [json.load(open(f)) for f in glob.glob(os.path.join(d, "p.raw.*.json"))]
rows = lambda raw: raw.get("collector", {}).get("unwind", {}).get("images")
if rows(first) != 0:
    sys.exit("the exec'd-away sh's collector built rows for %s images" % rows(first))
if len(later) != 1 or not rows(later[0]):
    sys.exit("the sleep image's collector: %s" % [(r["exe"], rows(r)) for r in later])
EOF

# --- greet --------------------------------------------------------------------------------
counting="$work/counting-ospreyd"
printf '#!/bin/sh\necho started >>"%s"\nexec %s "$@"\n' "$work/started" "$daemon" >"$counting"
chmod +x "$counting"
greet_run() { # greet_run NAME SCRIPT: profiled with the counting collector, the run waited for
  mkdir -p "$work/$1"
  : >"$work/$1/.osprey-run.lock"
  : >"$work/started"
  OSPREY_DAEMON="$counting" OSPREY_PROFILE="$work/$1/p.raw.json" LD_PRELOAD="$shim" \
    sh -c "$2" >"$work/$1.out" 2>"$work/$1.err"
  expect_status 0 $? "$1: exit status"
  flock -w 60 "$work/$1/.osprey-run.lock" true || fail "$1: the run's lock still held after 60 s"
}
profiles() { # profiles DIR [images]: "exe status" of each profile; with "images", the images'
  # only, not a forked child's (a shell's fork sampled before its exec has a profile of its own,
  # as any forked child that recorded something: more likely on a loaded machine)
  python3 - "$@" <<'EOF'
import glob, json, os, sys
for f in glob.glob(os.path.join(sys.argv[1], "p.raw*.json")):
    raw = json.load(open(f))
    if sys.argv[2:] == ["images"] and raw.get("forked"):
        continue
    print(os.path.basename(raw["exe"]), raw.get("exit", {}).get("status"))
EOF
}
# $work/level N: waits for its own collector (the one named with its ring, in its maps), then
# execs level N-1; level 0 execs /bin/true.
# shellcheck disable=SC2016 # expanded by the level script
# Builtins only, but for pgrep and sleep: a forked shell would be an image of its own.
printf '%s\n' 'while read -r _ _ _ _ _ path; do' \
  '  case "$path" in */osprey-$$-*) ring=${path##*/}; ring=${ring%% *}; break ;; esac' \
  'done </proc/$$/maps' \
  'i=0; while [ $i -lt 600 ] && ! pgrep -f "ring-name /$ring" >/dev/null; do' \
  '  sleep 0.05; i=$((i + 1)); done' \
  'sleep 0.3' '[ "$1" -gt 0 ] && exec sh "$0" $(($1 - 1))' 'exec /bin/true' >"$work/level"
# shellcheck disable=SC2016 # the $ expand in the shell's script, not here
greet_run greet "$wait_collector"'; for i in 1 2 3 4 5; do /bin/true; done;
  exec sh '"'$work/level'"' 1'
# One collector, the shell's; a second only where a greeting's answer missed its 100 ms (a
# loaded machine: the image then starts its own, and its profile is whole all the same).
[ "$(wc -l <"$work/started")" -le 2 ] ||
  fail "greet: $(wc -l <"$work/started") collectors started by the shim, expected the shell's only"
got=$(profiles "$work/greet" images | grep -E '^(dash|sh|true) ' | sort | uniq -c |
  awk '{print $1, $2, $3}' | tr '\n' ';')
[ "$got" = "3 dash vanished;6 true exited;" ] || [ "$got" = "3 sh vanished;6 true exited;" ] ||
  fail "greet: profiles (count, image, end): $got"
[ ! -s "$work/greet.err" ] || fail "greet: said: $(cat "$work/greet.err")"

# --- at-once ------------------------------------------------------------------------------
greet_run at-once 'exec sh -c "exec sh -c \"exec /bin/true\""'
got=$(profiles "$work/at-once" images | grep -E '^(dash|sh|true) ' | sort | uniq -c |
  awk '{print $1, $2, $3}' | tr '\n' ';')
[ "$got" = "3 dash vanished;1 true exited;" ] || [ "$got" = "3 sh vanished;1 true exited;" ] ||
  fail "at-once: profiles (count, image, end): $got"
[ ! -s "$work/at-once.err" ] || fail "at-once: said: $(cat "$work/at-once.err")"
[ "$(wc -l <"$work/started")" -le 2 ] ||
  fail "at-once: $(wc -l <"$work/started") collectors started by the shim for 4 images, expected 1"

# --- exchange -----------------------------------------------------------------------------
here=$(dirname "$(realpath "$0")")
mkdir -p "$work/exchange"
: >"$work/exchange/.osprey-run.lock"
OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$work/exchange/p.raw.json" LD_PRELOAD="$shim" \
  sh -c "$wait_collector; sleep 1" >"$work/exchange.out" 2>"$work/exchange.err" &
target=$!
python3 "$here/forks/exchange.py" "$target" "$here/../proto/osp_ring.h" "$work/exchange" \
  >"$work/exchange.said" 2>&1 || fail "exchange: $(cat "$work/exchange.said")"
wait "$target"
expect_status 0 $? "exchange: exit status"
flock -w 60 "$work/exchange/.osprey-run.lock" true || fail "exchange: the run's lock still held"
[ "$(tr '\n' ';' <"$work/exchange.said")" = "gaveup T left;noread unread left;confirmed T followed;" ] ||
  fail "exchange: (greeting, answer, followed): $(cat "$work/exchange.said")"

# --- orphan -------------------------------------------------------------------------------
# The shell ends at once; its background child starts /bin/true 0.5 s later, when the shell's
# collector has written its profile and gone.
greet_run orphan '(sleep 0.5; /bin/true; touch '"'$work/orphan.done'"') & exit 0'
for _ in $(seq 200); do [ -e "$work/orphan.done" ] && break; sleep 0.05; done
flock -w 60 "$work/orphan/.osprey-run.lock" true || fail "orphan: the run's lock still held"
got=$(profiles "$work/orphan" | tr '\n' ';')
[[ ";$got" == *";true exited;"* ]] || fail "orphan: no complete profile of /bin/true: $got"

# --- pause --------------------------------------------------------------------------------
if ! command -v strace >/dev/null 2>&1 || ! strace -qq -o /dev/null true 2>/dev/null; then
  # scripts/install-deps.sh installs it: under CI its absence is a failure; a container that
  # forbids ptrace is said, not failed.
  if ! command -v strace >/dev/null 2>&1; then
    skip_part "pause" "strace is not installed"
  else
    skip_part "pause" "ptrace is not allowed here" "CI's container may forbid ptrace"
  fi
  finish "e2e-spawn: ok"
fi
mkdir -p "$work/pause"
: >"$work/pause/.osprey-run.lock"
strace -f -qq -e trace=kill,execve -o "$work/pause.trace" -E OSPREY_DAEMON="$daemon" \
  -E OSPREY_PROFILE="$work/pause/p.raw.json" -E LD_PRELOAD="$shim" \
  sh -c "$wait_collector; exec /bin/true" >"$work/pause.out" 2>"$work/pause.err"
expect_status 0 $? "pause: exit status"
flock -w 60 "$work/pause/.osprey-run.lock" true ||
  fail "pause: the run's lock still held after 60 s"
# The shell is the first process traced; what it did before it became /bin/true:
shell=$(awk 'NR == 1 {print $1}' "$work/pause.trace")
awk -v pid="$shell" '$1 == pid && /execve\("\/bin\/true"/ {exit} $1 == pid' "$work/pause.trace" \
  >"$work/pause.before"
if grep -q 'SIGURG' "$work/pause.before"; then
  fail "pause: the exec woke the collector: $(grep SIGURG "$work/pause.before")"
fi
# (strace pads a pid to five columns: a shorter one is followed by more than one space)
grep -Eq "^$shell +execve\\(\"/bin/true\"" "$work/pause.trace" ||
  fail "pause: no exec of /bin/true in the trace: $(head -5 "$work/pause.trace")"

# --- once ---------------------------------------------------------------------------------
# At 10 Hz a child is seldom sampled before its exec (its first sample is due after a
# random 0-100 ms of CPU; one there is a record, kept, and its greeting confirmed before the
# exec): of five commands at most one may confirm twice, where waiting at the fork made all
# five confirm twice.
mkdir -p "$work/once" "$work/once.trace"
: >"$work/once/.osprey-run.lock"
strace -ff -qq -e trace=sendmsg,execve -e signal=none -s 4 -o "$work/once.trace/t" \
  -E OSPREY_PROFILE_HZ=10 -E OSPREY_DAEMON="$daemon" -E OSPREY_PROFILE="$work/once/p.raw.json" \
  -E LD_PRELOAD="$shim" bash -c "$wait_collector; /bin/true; /bin/true; /bin/true; /bin/true; /bin/true; exit 0" \
  >"$work/once.out" 2>"$work/once.err"
expect_status 0 $? "once: exit status"
flock -w 60 "$work/once/.osprey-run.lock" true ||
  fail "once: the run's lock still held after 60 s"
# One file a pid: the confirms of each pid that became /bin/true, before and after its exec.
once=""
while IFS= read -r f; do
  once+="$(grep -c 'iov_base="C", iov_len=1' "$f") "
done < <(grep -l 'execve("/bin/true".* = 0$' "$work/once.trace"/t.*)
[ "$(echo "$once" | wc -w)" = 5 ] || fail "once: not 5 images of /bin/true traced: $once"
[ "$(echo "$once" | tr ' ' '\n' | grep -c '^[2-9]')" -le 1 ] ||
  fail "once: commands confirmed more than once (confirms per command: $once)"
n=$(find "$work/once" -name 'p.raw.*.json' | wc -l)
[ "$n" -ge 5 ] || fail "once: $n profiles of the shell's 5 commands"

# --- follow -------------------------------------------------------------------------------
# The collector greeted follows each later image in its own process: a shell's 5 commands
# and a 2-deep exec chain (each level waiting for its collector) make one ospreyd process in
# all (strace: the execs of ospreyd, the shim's and any ospreyd's own), or two where a
# greeting's answer missed its 100 ms on a loaded machine (that image then starts its own);
# every image has its whole profile, and the run's lock is held until the last is written.
# Before, the greeted collector started an ospreyd for each image (the waits' pgrep and sleep
# included): 16 in all.
mkdir -p "$work/follow"
: >"$work/follow/.osprey-run.lock"
strace -f -qq -e trace=execve -e signal=none -o "$work/follow.trace" \
  -E OSPREY_DAEMON="$daemon" -E OSPREY_PROFILE="$work/follow/p.raw.json" -E LD_PRELOAD="$shim" \
  sh -c "$wait_collector"'; for i in 1 2 3 4 5; do /bin/true; done;
  exec sh '"'$work/level'"' 1' >"$work/follow.out" 2>"$work/follow.err"
expect_status 0 $? "follow: exit status"
flock -w 60 "$work/follow/.osprey-run.lock" true ||
  fail "follow: the run's lock still held after 60 s"
started=$(grep -c 'execve("[^"]*/ospreyd".* = 0$' "$work/follow.trace")
{ [ "$started" -ge 1 ] && [ "$started" -le 2 ]; } ||
  fail "follow: $started ospreyd processes for the shell and its later images, expected 1"
got=$(profiles "$work/follow" images | grep -E '^(dash|sh|true) ' | sort | uniq -c |
  awk '{print $1, $2, $3}' | tr '\n' ';')
[ "$got" = "3 dash vanished;6 true exited;" ] || [ "$got" = "3 sh vanished;6 true exited;" ] ||
  fail "follow: profiles (count, image, end): $got"

# --- beyond -------------------------------------------------------------------------------
# More images at once than one collector follows (OSPD_MAX_FOLLOWED, 32): a shell's 40
# background sleeps, alive together; the first 32 are followed in the shell's collector's
# process, each one beyond gets a collector process of its own (their command lines name the
# run's output), and every image has its whole profile.
mkdir -p "$work/beyond"
: >"$work/beyond/.osprey-run.lock"
# shellcheck disable=SC2016 # the $ expand in the shell's script, not here
OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$work/beyond/p.raw.json" LD_PRELOAD="$shim" \
  sh -c "$wait_collector"'; for i in $(seq 40); do sleep 3 & done; sleep 1.5;
  pgrep -fc -- "--out '"$work/beyond/"'" >'"'$work/beyond.count'"'; wait' \
  >"$work/beyond.out" 2>"$work/beyond.err"
expect_status 0 $? "beyond: exit status"
flock -w 60 "$work/beyond/.osprey-run.lock" true ||
  fail "beyond: the run's lock still held after 60 s"
[ "$(cat "$work/beyond.count")" -ge 2 ] ||
  fail "beyond: $(cat "$work/beyond.count") collector processes for 40 images at once, expected more than one"
# The 40, the shell's sleep 1.5 and its waits' own.
got=$(profiles "$work/beyond" | grep -E '^sleep ' | sort | uniq -c | awk '{print $1, $2, $3}')
{ [ "$(echo "$got" | wc -l)" = 1 ] && [ "${got%% *}" -ge 41 ] && [ "${got#* }" = "sleep exited" ]; } ||
  fail "beyond: profiles of sleep (count, image, end): $got"

finish "e2e-spawn: ok"
